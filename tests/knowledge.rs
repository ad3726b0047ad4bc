//! The knowledge index (KNOW-1..): chunking, incremental indexing, the single writer, pins, confinement, the
//! lexical, vector and fused rankings against a loopback embeddings server, and the `knowledge_search` tool.
#![cfg(feature = "knowledge")]

mod common;

use common::embed::{EmbedServer, cosine, vector};
use fisk_ai::knowledge::{HttpEmbedder, IndexOptions, KnowledgeBase, KnowledgeSearchTool, Tier};
use fisk_ai::tool::{CallContext, Tool, ToolInput};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A copy of the test corpus in a fresh directory (so edits stay local), and a knowledge base over it.
fn corpus() -> (tempfile::TempDir, KnowledgeBase) {
    let dir = tempfile::tempdir().unwrap();
    common::fs::copy_dir(&common::root().join("tests/fixtures/knowledge/corpus"), &dir.path().join("corpus"));
    let kb = KnowledgeBase::new(dir.path().join("idx")).with_path("corpus", dir.path());
    (dir, kb)
}

fn with_embedder(kb: KnowledgeBase, server: &EmbedServer, model: &str) -> KnowledgeBase {
    kb.with_embedder(Arc::new(HttpEmbedder::new(&server.base_url, model)), "", "")
}

async fn index(kb: &KnowledgeBase) -> fisk_ai::knowledge::IndexReport {
    kb.index(IndexOptions::new(), &()).await.unwrap()
}

async fn citations(kb: &KnowledgeBase, query: &str, tier: Tier) -> Vec<String> {
    let found = kb.search_with(query, Some(20), tier).await.unwrap().expect("built");
    found.hits.into_iter().map(|h| h.citation).collect()
}

#[tokio::test]
async fn know_3_chunks_follow_headings_carry_titles_and_line_ranges_and_keep_code_blocks_whole() {
    let (_dir, kb) = corpus();
    let report = index(&kb).await;
    assert_eq!(report.to_string(), "indexed 3 files (0 unchanged, 0 removed)");
    assert_eq!(report.chunks, 4 + 3 + 1);
    let expect = [
        ("corpus/runbook.md#1", "Operations runbook", 1, 3),
        ("corpus/runbook.md#2", "Operations runbook > Restarting the server", 5, 13),
        ("corpus/runbook.md#3", "Operations runbook > Backups", 15, 17),
        ("corpus/runbook.md#4", "Operations runbook > Backups > Restoring a backup", 19, 21),
        ("corpus/guides/tls.txt#1", "tls.txt", 1, 3),
    ];
    for (citation, title, start, end) in expect {
        let hit = kb.show(citation).unwrap().unwrap_or_else(|| panic!("{citation} is indexed"));
        assert_eq!((hit.title.as_str(), hit.line_start, hit.line_end), (title, start, end), "{citation}");
    }
    let code = kb.show("corpus/runbook.md#2").unwrap().unwrap();
    assert!(code.text.contains("```sh\n# this comment is not a heading\nsystemctl restart"), "{}", code.text);
    assert!(code.text.trim_end().ends_with("```"), "the code block is whole: {}", code.text);
    assert_eq!(code.headings, ["Operations runbook", "Restarting the server"]);
    assert!(kb.show("corpus/runbook.md#9").unwrap().is_none());
    assert!(kb.show("no-ordinal").is_err());
}

#[tokio::test]
async fn know_4_5_reindex_skips_unchanged_files_and_follows_an_edit_a_delete_and_a_rename() {
    let server = EmbedServer::start().await;
    let (dir, kb) = corpus();
    let kb = with_embedder(kb, &server, "fake-32");
    index(&kb).await;
    let embedded = server.seen.inputs.load(Ordering::SeqCst);
    assert_eq!(embedded, 8, "every passage embedded once");
    let again = index(&kb).await;
    assert_eq!(again.to_string(), "indexed 0 files (3 unchanged, 0 removed)");
    assert_eq!(server.seen.inputs.load(Ordering::SeqCst), embedded, "nothing unchanged is embedded again");

    let corpus = dir.path().join("corpus");
    let runbook = corpus.join("runbook.md");
    let text = std::fs::read_to_string(&runbook).unwrap().replace("vault bucket", "cold storage archive");
    std::fs::write(&runbook, text).unwrap();
    std::fs::remove_file(corpus.join("guides/tls.txt")).unwrap();
    std::fs::rename(corpus.join("guides/streams.md"), corpus.join("streams-moved.md")).unwrap();
    let report = index(&kb).await;
    // The edit and the rename's new name are indexed; the delete and the rename's old name removed.
    assert_eq!(report.to_string(), "indexed 2 files (0 unchanged, 2 removed)");
    assert_eq!(
        server.seen.inputs.load(Ordering::SeqCst) - embedded,
        1,
        "only the edited passage is embedded; the renamed file's passages keep their vectors"
    );
    let found = citations(&kb, "cold storage archive", Tier::Lexical).await;
    assert_eq!(found.first().map(String::as_str), Some("corpus/runbook.md#3"));
    assert!(citations(&kb, "vault", Tier::Lexical).await.is_empty(), "the old text is gone");
    assert!(citations(&kb, "certificate", Tier::Lexical).await.is_empty(), "the deleted file is gone");
    assert_eq!(citations(&kb, "purging", Tier::Lexical).await, ["corpus/streams-moved.md#2"]);
    let sources: Vec<String> = kb.sources().unwrap().unwrap().into_iter().map(|s| s.path).collect();
    assert_eq!(sources, ["corpus/runbook.md", "corpus/streams-moved.md"]);

    // Touched without a change: counted unchanged, not re-chunked.
    let t = std::fs::File::options().write(true).open(&runbook).unwrap();
    t.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(index(&kb).await.to_string(), "indexed 0 files (2 unchanged, 0 removed)");
    let dry = kb.index(IndexOptions::new().dry_run(true), &()).await.unwrap();
    assert_eq!(dry.to_string(), "would index 0 files (2 unchanged, 0 removed)");
}

#[tokio::test]
async fn know_7_a_second_writer_is_refused_while_the_lock_is_held_and_readers_still_search() {
    let (dir, kb) = corpus();
    index(&kb).await;
    let lock = std::fs::File::options().write(true).open(dir.path().join("idx/index.lock")).unwrap();
    lock.try_lock().unwrap();
    let e = kb.index(IndexOptions::new(), &()).await.unwrap_err();
    assert!(e.to_string().contains("another indexer is writing the index"), "{e}");
    assert!(e.to_string().contains("index.lock"), "{e}");
    assert!(kb.remove("corpus/runbook.md").await.is_err());
    assert!(kb.reset().is_err());
    assert!(!citations(&kb, "restart", Tier::Lexical).await.is_empty(), "the agent's read-only search still works");
    lock.unlock().unwrap();
    assert_eq!(index(&kb).await.unchanged, 3);
}

#[tokio::test]
async fn know_7_the_index_is_private_and_a_shared_directory_is_refused() {
    let (dir, kb) = corpus();
    index(&kb).await;
    let idx = dir.path().join("idx");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&idx), 0o700);
    for f in ["index.sqlite3", "index.lock", "index.sqlite3-wal", "index.sqlite3-shm"] {
        if idx.join(f).exists() {
            assert_eq!(mode(&idx.join(f)), 0o600, "{f}");
        }
    }
    std::fs::set_permissions(&idx, std::fs::Permissions::from_mode(0o770)).unwrap();
    let e = kb.index(IndexOptions::new(), &()).await.unwrap_err();
    assert!(e.to_string().contains("open to its group or other users"), "{e}");
    let fresh = KnowledgeBase::new(dir.path().join("idx2")).with_path("corpus", dir.path());
    let e = fresh.search("restart", None).await.unwrap();
    assert!(e.is_none(), "never built reads as not built");
}

#[tokio::test]
async fn know_8_a_changed_model_or_prefix_refuses_search_and_indexing_until_reindex() {
    let server = EmbedServer::start().await;
    let (_dir, kb) = corpus();
    let a = with_embedder(kb.clone(), &server, "model-a");
    index(&a).await;
    let b = with_embedder(kb.clone(), &server, "model-b");
    let e = b.search("restart", None).await.unwrap_err();
    assert!(e.to_string().contains("the embedding model is \"model-a\" in the index but \"model-b\""), "{e}");
    assert!(e.to_string().contains("--reindex"), "{e}");
    let e = b.index(IndexOptions::new(), &()).await.unwrap_err();
    assert!(e.to_string().contains("--reindex"), "{e}");
    let prefixed = kb.clone().with_embedder(Arc::new(HttpEmbedder::new(&server.base_url, "model-a")), "query: ", "");
    assert!(prefixed.search("restart", None).await.unwrap_err().to_string().contains("query prefix"));
    let lexical = kb.clone();
    assert!(lexical.search("restart", None).await.unwrap_err().to_string().contains("embedding model"));
    let rebuilt = b.index(IndexOptions::new().reindex(true), &()).await.unwrap();
    assert_eq!(rebuilt.indexed, 3);
    assert!(b.search("restart", None).await.unwrap().is_some());
    assert!(a.search("restart", None).await.is_err(), "now the old model is the mismatch");
}

#[tokio::test]
async fn know_9_links_out_of_the_roots_non_utf8_and_oversize_files_are_skipped_and_reported() {
    let (dir, kb) = corpus();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "# Secret\n\nthe launch code is swordfish\n").unwrap();
    let corpus = dir.path().join("corpus");
    std::os::unix::fs::symlink(outside.path().join("secret.md"), corpus.join("linked.md")).unwrap();
    std::os::unix::fs::symlink(outside.path(), corpus.join("linked-dir")).unwrap();
    std::fs::write(corpus.join("latin1.md"), b"caf\xe9 au lait\n").unwrap();
    let big = vec![b'a'; fisk_ai::knowledge::MAX_FILE_BYTES as usize + 1];
    std::fs::write(corpus.join("big.md"), big).unwrap();
    std::fs::write(corpus.join("nul.md"), b"text\0more").unwrap();
    let report = index(&kb).await;
    assert_eq!(report.indexed, 3, "{report:?}");
    let reason = |name: &str| {
        let s = report.skipped.iter().find(|s| s.path.ends_with(name)).unwrap_or_else(|| panic!("{name}: {report:?}"));
        s.reason.clone()
    };
    assert!(reason("linked.md").contains("symbolic link"));
    assert!(reason("linked-dir").contains("symbolic link"));
    assert!(reason("latin1.md").contains("not UTF-8"));
    assert!(reason("big.md").contains("over the cap"));
    assert!(reason("nul.md").contains("NUL"));
    assert!(citations(&kb, "swordfish launch code", Tier::Lexical).await.is_empty(), "nothing outside the roots");
    // A file indexed before and unreadable now leaves the index.
    std::fs::write(corpus.join("guides/tls.txt"), b"\xff\xfe").unwrap();
    let report = index(&kb).await;
    assert_eq!(report.removed, 1, "{report:?}");
    assert!(citations(&kb, "certificate", Tier::Lexical).await.is_empty());
}

#[tokio::test]
async fn know_2_queries_are_words_ored_and_operators_or_punctuation_are_never_interpreted() {
    let (_dir, kb) = corpus();
    index(&kb).await;
    // One word that matches and one that does not: still found (no implicit AND).
    assert_eq!(citations(&kb, "zebra purging", Tier::Lexical).await, ["corpus/guides/streams.md#2"]);
    for hostile in [
        "\"",
        "restart\"",
        "NEAR(restart backup)",
        "title: restart",
        "rest*",
        "restart AND",
        "-restart",
        "^restart",
        "(((",
        "restart OR NOT",
        "",
        "   ",
        "'; DROP TABLE chunks; --",
    ] {
        let found = kb.search(hostile, None).await.unwrap_or_else(|e| panic!("{hostile:?}: {e}"));
        assert!(found.is_some(), "{hostile:?}");
    }
    assert_eq!(fisk_ai::knowledge::fts_query("title: NEAR(a* b2"), Some("\"title\" OR \"near\" OR \"b2\"".into()));
    // Function words are left out when anything else is asked, kept when nothing else is.
    assert_eq!(fisk_ai::knowledge::fts_query("how do I restart it"), Some("\"restart\"".into()));
    assert_eq!(fisk_ai::knowledge::fts_query("what is it"), Some("\"what\" OR \"is\" OR \"it\"".into()));
    assert!(!citations(&kb, "'; DROP TABLE chunks; --", Tier::Lexical).await.contains(&"x".to_owned()));
    assert!(!citations(&kb, "restart", Tier::Lexical).await.is_empty(), "the table is still there");
}

#[tokio::test]
async fn know_6_vector_ranking_is_by_cosine_and_fused_is_the_hand_computed_rrf_of_both() {
    let server = EmbedServer::start().await;
    let (_dir, kb) = corpus();
    let kb = with_embedder(kb, &server, "fake-32");
    index(&kb).await;
    let query = "restore the snapshot of a stream";
    let lexical = citations(&kb, query, Tier::Lexical).await;
    let vector_hits = kb.search_with(query, Some(20), Tier::Vector).await.unwrap().unwrap();
    // Vector only: every passage, best cosine first, by the test's own arithmetic.
    assert_eq!(vector_hits.hits.len(), 8);
    let q = vector(query);
    let cos: Vec<f64> = vector_hits.hits.iter().map(|h| cosine(&q, &vector(&h.text))).collect();
    assert!(cos.windows(2).all(|w| w[0] >= w[1] - 1e-6), "{cos:?}");
    for (h, c) in vector_hits.hits.iter().zip(&cos) {
        assert!((h.score - c).abs() < 1e-4, "{}: {} vs {c}", h.citation, h.score);
    }
    let vector: Vec<String> = vector_hits.hits.iter().map(|h| h.citation.clone()).collect();
    // Fused: 1/(60 + rank) summed over the lists a passage is in, ranks from 1.
    let mut expected: Vec<(String, f64)> = vector
        .iter()
        .map(|c| {
            let r = |l: &[String]| l.iter().position(|x| x == c).map_or(0.0, |p| 1.0 / (60.0 + p as f64 + 1.0));
            (c.clone(), r(&lexical) + r(&vector))
        })
        .collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1));
    let fused = kb.search_with(query, Some(20), Tier::Fused).await.unwrap().unwrap();
    assert_eq!(fused.tier, Tier::Fused);
    for (hit, (c, s)) in fused.hits.iter().zip(&expected) {
        assert!((hit.score - s).abs() < 1e-12, "{} {} vs {c} {s}", hit.citation, hit.score);
    }
    let order: Vec<String> = fused.hits.iter().map(|h| h.citation.clone()).collect();
    let scores: Vec<f64> = expected.iter().map(|e| e.1).collect();
    // Ties may order either way by score alone; the ids break them, so compare the groups of equal scores.
    for (i, (c, _)) in expected.iter().enumerate() {
        let tied: Vec<&String> = expected.iter().filter(|e| e.1 == scores[i]).map(|e| &e.0).collect();
        assert!(tied.contains(&&order[i]), "position {i}: {} not among {tied:?} ({c})", order[i]);
    }
    assert_eq!(order[0], "corpus/runbook.md#4", "both rankings agree on the restore passage");
    assert_eq!(kb.search("restore", None).await.unwrap().unwrap().tier, Tier::Fused, "the default with embeddings");
}

#[tokio::test]
async fn know_6_an_embedder_down_at_query_time_degrades_to_words_with_a_warning() {
    let server = EmbedServer::start().await;
    let (_dir, kb) = corpus();
    let kb = with_embedder(kb, &server, "fake-32");
    index(&kb).await;
    server.seen.failing.store(true, Ordering::SeqCst);
    let found = kb.search("restart the server", None).await.unwrap().unwrap();
    assert_eq!(found.tier, Tier::Lexical);
    assert_eq!(found.hits[0].citation, "corpus/runbook.md#2");
    assert_eq!(found.warnings.len(), 1);
    assert!(found.warnings[0].contains("embeddings unavailable, lexical results only"), "{:?}", found.warnings);
    assert!(found.warnings[0].contains("HTTP 500"), "{:?}", found.warnings);
    let url = server.base_url.clone();
    drop(server);
    tokio::task::yield_now().await;
    let found = kb.search("restart the server", None).await.unwrap().unwrap();
    assert_eq!(found.tier, Tier::Lexical);
    assert!(found.warnings[0].contains(&url), "names the endpoint: {:?}", found.warnings);
}

#[tokio::test]
async fn know_6_an_embedder_down_at_index_time_fails_loudly_naming_the_endpoint() {
    let port = common::net::RefusedPort::new();
    let (_dir, kb) = corpus();
    let url = format!("http://127.0.0.1:{}/v1", port.port());
    let kb = kb.with_embedder(Arc::new(HttpEmbedder::new(&url, "m")), "", "");
    let e = kb.index(IndexOptions::new(), &()).await.unwrap_err();
    assert_eq!(e.kind(), fisk_ai::ErrorKind::Knowledge);
    assert!(e.to_string().contains("indexing needs the embedder and it failed"), "{e}");
    assert!(e.to_string().contains(&format!("{url}/embeddings")), "{e}");
    let server = EmbedServer::start().await;
    server.seen.failing.store(true, Ordering::SeqCst);
    let (_dir, kb) = corpus();
    let e = with_embedder(kb, &server, "m").index(IndexOptions::new(), &()).await.unwrap_err();
    assert!(e.to_string().contains("HTTP 500"), "{e}");
}

async fn call(tool: &KnowledgeSearchTool, input: &str) -> (Value, bool) {
    let out = tool.call(&ToolInput::from_json(input).unwrap(), &CallContext::new()).await;
    (serde_json::from_str(out.content()).unwrap_or(Value::Null), out.is_error())
}

#[tokio::test]
async fn know_10_11_the_tool_answers_not_built_softly_then_framed_cited_and_bounded_results() {
    let (_dir, kb) = corpus();
    let tool = KnowledgeSearchTool::new(kb.clone().with_max_injected_tokens(60));
    let (out, err) = call(&tool, r#"{"query": "restart"}"#).await;
    assert!(!err, "a soft result: {out}");
    assert_eq!(out["status"], "index_not_built");
    assert!(out["message"].as_str().unwrap().contains("knowledge index"), "{out}");
    index(&kb).await;
    let (out, err) = call(&tool, r#"{"query": "restart the server backup", "top_k": 3}"#).await;
    assert!(!err, "{out}");
    assert!(out["note"].as_str().unwrap().contains("untrusted data"), "{out}");
    let results = out["results"].as_array().unwrap();
    assert_eq!(results[0]["citation"], "corpus/runbook.md#2");
    assert_eq!(results[0]["lines"], "5-13");
    assert_eq!(results[0]["title"], "Operations runbook > Restarting the server");
    // 60 estimated tokens: the first result's citation, title and keys take about 36, so its text gets the rest
    // (under 120 characters) and is cut; the rest are left out and counted.
    let text: usize = results.iter().map(|r| r["text"].as_str().unwrap().chars().count()).sum();
    assert!(text <= 120, "{text}: {out}");
    assert_eq!(results.last().unwrap()["truncated"], true, "{out}");
    assert_eq!(results.len() as u64 + out["omitted"].as_u64().unwrap_or(0), 3, "{out}");
    let spec = tool.spec();
    assert_eq!(spec.name(), "knowledge_search");
    assert!(spec.exposure().is_servable());
}

#[tokio::test]
async fn know_1_from_config_resolves_paths_and_the_index_directory_and_needs_the_key_variable() {
    let dir = tempfile::tempdir().unwrap();
    common::fs::copy_dir(&common::root().join("tests/fixtures/knowledge/corpus"), &dir.path().join("corpus"));
    let file = dir.path().join("agent.yaml");
    std::fs::write(&file, "identity: kb\nharness:\n  knowledge:\n    enabled: true\n    paths: [corpus]\n").unwrap();
    let config = fisk_ai::Config::load(&file).unwrap();
    let base = tempfile::tempdir().unwrap();
    let kb = KnowledgeBase::from_config(&config, Some(base.path())).unwrap();
    assert_eq!(kb.directory(), base.path().join("knowledge/kb"));
    assert_eq!(kb.paths(), [dir.path().canonicalize().unwrap().join("corpus").as_path()]);
    assert_eq!(index(&kb).await.indexed, 3);
    let yaml = "harness:\n  knowledge:\n    enabled: true\n    paths: [corpus]\n    directory: idx\n    embeddings:\n      \
                base_url: http://127.0.0.1:9/v1\n      model: m\n      api_key_env: FISK_AI_TEST_UNSET_EMBED_KEY\n";
    std::fs::write(&file, yaml).unwrap();
    let config = fisk_ai::Config::load(&file).unwrap();
    let e = KnowledgeBase::from_config(&config, None).unwrap_err();
    assert_eq!(e.key(), Some("harness.knowledge.embeddings.api_key_env"));
    assert!(e.to_string().contains("FISK_AI_TEST_UNSET_EMBED_KEY is not set"), "{e}");
    assert_eq!(e.location().map(|l| l.line), Some(9));
    let _ = PathBuf::new();
}

/// KNOW-10 through an agent run: the harness gives the model `knowledge_search`, and its result (cited, framed)
/// goes back in the next request.
#[tokio::test]
async fn know_10_an_agent_run_searches_knowledge_and_sends_the_passages_back_to_the_model() {
    use common::turns::{call_with, result_of, turn};
    use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
    use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
    let dir = tempfile::tempdir().unwrap();
    common::fs::copy_dir(&common::root().join("tests/fixtures/knowledge/corpus"), &dir.path().join("corpus"));
    let file = dir.path().join("agent.yaml");
    let yaml = "identity: kb\nsystem_prompt: Answer from the runbooks.\nllm:\n  model: test-model\nharness:\n  knowledge:\n    enabled: true\n    paths: [corpus]\n    \
                directory: idx\n";
    std::fs::write(&file, yaml).unwrap();
    let config = fisk_ai::Config::load(&file).unwrap();
    index(&KnowledgeBase::from_config(&config, None).unwrap()).await;
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![call_with("k1", "knowledge_search", r#"{"query": "purge a stream of stale orders"}"#)]),
        Response::new(
            vec![Block::text("Purge it (corpus/guides/streams.md#2).")],
            StopReason::EndTurn,
            Usage::default(),
        ),
    ]));
    let agent = Agent::builder().config(config).provider_arc(provider.clone()).build().await.unwrap();
    let outcome = agent.run("how do I clear stale orders?", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    let first = &provider.requests()[0];
    assert!(first.tools.iter().any(|(n, _)| n == "knowledge_search"), "offered to the model");
    let second = &provider.requests()[1];
    let (content, is_error) = result_of(&second.messages, "k1");
    assert!(!is_error, "{content}");
    let body: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(body["results"][0]["citation"], "corpus/guides/streams.md#2", "{body}");
    assert_eq!(body["results"][0]["title"], "Streams > Purging a stream");
}

/// KNOW-6 against a hostile embeddings endpoint: malformed, short, non-numeric, mis-sized, oversize and slow replies
/// fail an index run with a reason naming the endpoint, degrade a search to words, and never panic.
#[tokio::test]
async fn know_6_a_hostile_embeddings_endpoint_fails_indexing_and_degrades_search_without_a_panic() {
    let server = EmbedServer::start().await;
    let (_dir, kb) = corpus();
    let embedder = HttpEmbedder::new(&server.base_url, "fake-32").with_timeout(std::time::Duration::from_millis(500));
    let kb = kb.with_embedder(Arc::new(embedder), "", "");
    index(&kb).await;
    for (kind, why) in [
        ("garbage", "malformed reply"),
        ("count", "vectors for"),
        ("nan", "malformed reply"),
        ("dims", "dimensions"),
        ("zero_dims", "dimensions"),
        ("huge", "over 67108864 bytes"),
        ("slow", "timed out"),
    ] {
        *server.seen.hostile.lock().unwrap() = kind;
        let found = kb.search("restart the server", None).await.unwrap().unwrap();
        assert_eq!(found.tier, Tier::Lexical, "{kind}");
        assert!(found.warnings[0].contains(why), "{kind}: {:?}", found.warnings);
        assert_eq!(found.hits[0].citation, "corpus/runbook.md#2", "{kind}: the words still answer");
        let reindex = kb.index(IndexOptions::new().reindex(true), &()).await;
        if kind == "dims" {
            // Two consistent dimensions are a model's own choice: a reindex takes them, and pins them.
            assert_eq!(reindex.unwrap().embedded, 8);
        } else {
            let e = reindex.unwrap_err();
            assert!(e.to_string().contains(&server.base_url), "{kind}: {e}");
        }
        *server.seen.hostile.lock().unwrap() = "";
        kb.index(IndexOptions::new().reindex(true), &()).await.unwrap();
    }
}

/// KNOW-13: `remove` takes a file or a directory by exact, case-sensitive path; a name that only starts the same,
/// or has LIKE wildcards, removes nothing else.
#[tokio::test]
async fn know_13_remove_matches_a_file_or_a_directory_exactly() {
    let (_dir, kb) = corpus();
    index(&kb).await;
    for nothing in ["corpus/guide", "CORPUS/guides", "corpus/g%", "corpus/guides_", "corpus/runbook"] {
        assert_eq!(kb.remove(nothing).await.unwrap(), 0, "{nothing}");
    }
    assert_eq!(kb.remove("corpus/guides/").await.unwrap(), 2);
    assert_eq!(kb.remove("corpus/runbook.md").await.unwrap(), 1);
    assert!(kb.sources().unwrap().unwrap().is_empty());
}
