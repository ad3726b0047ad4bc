//! The knowledge index against hostile documents, endpoints and neighbours (KNOW-15..KNOW-22): what a document,
//! an embeddings endpoint or another local user controls cannot grow a result, reach the model or the terminal raw,
//! lead a read out of the roots, or cost the operator the index they had.
#![cfg(feature = "knowledge")]

mod common;

use async_trait::async_trait;
use common::embed::{EmbedServer, INJECTED};
use fisk_ai::knowledge::{
    Embedder, HttpEmbedder, IndexOptions, IndexProgress, KnowledgeBase, KnowledgeSearchTool, MAX_CHUNK_TOKENS,
    MAX_HEADING_CHARS, MAX_SKIPPED_LISTED, Tier, estimate_tokens,
};
use fisk_ai::tool::{CallContext, Tool, ToolInput};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A directory with `docs/ops.md` and a knowledge base over `docs`, indexing into `idx`.
fn small() -> (tempfile::TempDir, KnowledgeBase) {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("docs/ops.md"), "# Ops\n\n## Restart\n\nRestart the server with systemctl.\n");
    write(&dir.path().join("docs/guides/tls.md"), "# TLS\n\nRotate the certificate every quarter.\n");
    let kb = KnowledgeBase::new(dir.path().join("idx")).with_path("docs", dir.path());
    (dir, kb)
}

/// [`small`] with the fake embeddings endpoint of `server`, indexed once.
async fn small_embedded(server: &EmbedServer) -> (tempfile::TempDir, KnowledgeBase) {
    let (dir, kb) = small();
    let kb = kb.with_embedder(Arc::new(HttpEmbedder::new(&server.base_url, "fake-32")), "", "");
    kb.index(IndexOptions::new(), &()).await.unwrap();
    (dir, kb)
}

/// KNOW-15: a `--reindex` that fails (the embedder goes down half way) leaves the index it was rebuilding as it
/// was: the same files, the same vectors, searchable with both tiers.
#[tokio::test]
async fn know_15_a_failed_reindex_leaves_the_old_index_whole_and_searchable() {
    let server = EmbedServer::start().await;
    let (_dir, kb) = small_embedded(&server).await;
    let before = kb.stats().unwrap().unwrap();
    assert!(before.vectors > 0);
    server.seen.failing.store(true, Ordering::SeqCst);
    let e = kb.index(IndexOptions::new().reindex(true), &()).await.unwrap_err();
    assert!(e.to_string().contains(&server.base_url), "{e}");
    server.seen.failing.store(false, Ordering::SeqCst);
    let after = kb.stats().unwrap().unwrap();
    assert_eq!((after.files, after.chunks, after.vectors), (before.files, before.chunks, before.vectors));
    let found = kb.search("restart the server", None).await.unwrap().unwrap();
    assert_eq!(found.tier, Tier::Fused);
    assert_eq!(found.hits[0].citation, "docs/ops.md#2");
}

/// A host's embedder that works until told to fail, then errs with terminal escapes and an instruction.
#[derive(Default)]
struct Loud {
    failing: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl Embedder for Loud {
    fn model(&self) -> &str {
        "loud"
    }
    async fn embed(&self, texts: &[String]) -> fisk_ai::Result<Vec<Vec<f32>>> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(fisk_ai::Error::new(fisk_ai::ErrorKind::Provider, INJECTED));
        }
        Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
    }
}

/// KNOW-16: what an embeddings endpoint says reaches the model and the terminal only sanitized: a malformed reply
/// is reported by position, never quoted; a host embedder's error loses its escapes in warnings and errors.
#[tokio::test]
async fn know_16_an_endpoint_cannot_put_escapes_or_instructions_in_warnings_or_errors() {
    let server = EmbedServer::start().await;
    let (_dir, kb) = small_embedded(&server).await;
    *server.seen.hostile.lock().unwrap() = "inject";
    let found = kb.search("restart the server", None).await.unwrap().unwrap();
    assert!(found.warnings[0].contains("malformed reply"), "{:?}", found.warnings);
    assert!(!found.warnings[0].contains("IGNORE"), "the reply is not quoted: {:?}", found.warnings);
    let e = kb.index(IndexOptions::new().reindex(true), &()).await.unwrap_err().to_string();
    assert!(e.contains("malformed reply") && !e.contains("IGNORE"), "{e}");

    let loud = Arc::new(Loud::default());
    let (_dir2, kb) = small();
    let kb = kb.with_embedder(loud.clone(), "", "");
    kb.index(IndexOptions::new(), &()).await.unwrap();
    loud.failing.store(true, Ordering::SeqCst);
    let found = kb.search("restart the server", None).await.unwrap().unwrap();
    assert_eq!(found.tier, Tier::Lexical);
    let e = kb.index(IndexOptions::new().reindex(true), &()).await.unwrap_err().to_string();
    for text in [&found.warnings[0], &e] {
        assert!(text.contains("IGNORE PREVIOUS"), "the words stay, for the operator: {text:?}");
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "no escapes: {text:?}");
    }
}

/// KNOW-16, the tool: warnings sit under the note that frames them as untrusted, escapes gone.
#[tokio::test]
async fn know_16_the_tool_frames_embedder_warnings_as_untrusted() {
    let server = EmbedServer::start().await;
    let (_dir, kb) = small_embedded(&server).await;
    server.seen.failing.store(true, Ordering::SeqCst);
    let tool = KnowledgeSearchTool::new(kb);
    let out = tool.call(&ToolInput::from_json(r#"{"query":"restart"}"#).unwrap(), &CallContext::new()).await;
    let body: serde_json::Value = serde_json::from_str(out.content()).unwrap();
    assert!(body["note"].as_str().unwrap().contains("warnings"), "{body}");
    assert!(body["warnings"][0].as_str().unwrap().contains("HTTP 500"), "{body}");
}

/// KNOW-17: a document's headings are cut to [`MAX_HEADING_CHARS`] each, and titles and citations count against
/// `max_injected_tokens` with the text, so headings cannot grow a result past the bound.
#[tokio::test]
async fn know_17_huge_headings_are_capped_and_count_against_the_injected_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = String::new();
    for level in 1..=6 {
        doc.push_str(&format!("{} {}\n\nrestart step {level}\n\n", "#".repeat(level), "H".repeat(50_000)));
    }
    write(&dir.path().join("docs/huge.md"), &doc);
    let budget = 1000;
    let kb = KnowledgeBase::new(dir.path().join("idx"))
        .with_path("docs", dir.path())
        .with_max_injected_tokens(budget)
        .with_top_k(20);
    kb.index(IndexOptions::new(), &()).await.unwrap();
    let found = kb.search("restart step", Some(20)).await.unwrap().unwrap();
    assert!(found.hits.iter().all(|h| h.headings.iter().all(|t| t.chars().count() == MAX_HEADING_CHARS)));
    let tool = KnowledgeSearchTool::new(kb);
    let out =
        tool.call(&ToolInput::from_json(r#"{"query":"restart step","top_k":20}"#).unwrap(), &CallContext::new()).await;
    let body: serde_json::Value = serde_json::from_str(out.content()).unwrap();
    let spent: usize = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| ["citation", "title", "text"].iter().map(|k| estimate_tokens(r[k].as_str().unwrap())).sum::<usize>())
        .sum();
    assert!(spent <= budget, "{spent} estimated tokens for a budget of {budget}");
    assert!(body["omitted"].as_u64().unwrap() > 0, "{body}");
}

/// KNOW-17, escapes: control characters cost what JSON makes of them (`\u0001` is six characters), so a passage
/// of them cannot reach the model at six times the budget.
#[tokio::test]
async fn know_17_control_characters_count_at_their_json_escaped_width() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..200).map(|_| format!("restart {}\n", "\u{1}".repeat(60))).collect();
    write(&dir.path().join("docs/ctl.md"), &body);
    let budget = 300;
    let kb = KnowledgeBase::new(dir.path().join("idx")).with_path("docs", dir.path()).with_max_injected_tokens(budget);
    kb.index(IndexOptions::new(), &()).await.unwrap();
    let tool = KnowledgeSearchTool::new(kb);
    let out = tool.call(&ToolInput::from_json(r#"{"query":"restart"}"#).unwrap(), &CallContext::new()).await;
    let body: serde_json::Value = serde_json::from_str(out.content()).unwrap();
    let results = body["results"].as_array().unwrap();
    assert!(!results.is_empty());
    let spent: usize = results.iter().map(|r| serde_json::to_string(r).unwrap().len()).sum();
    assert!(spent.div_ceil(4) <= budget, "{spent} JSON characters for a budget of {budget} tokens");
}

/// KNOW-18: an unclosed code fence over a megabyte is cut into passages of the usual bound, so no passage (or
/// embedder request) is the size of the file.
#[tokio::test]
async fn know_18_a_runaway_code_fence_is_cut_into_bounded_passages() {
    let server = EmbedServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..40_000).map(|i| format!("echo line {i} of a fence nobody closed\n")).collect();
    write(&dir.path().join("docs/runaway.md"), &format!("# Runaway\n\n```sh\n{body}"));
    let kb = KnowledgeBase::new(dir.path().join("idx")).with_path("docs", dir.path()).with_embedder(
        Arc::new(HttpEmbedder::new(&server.base_url, "fake-32")),
        "",
        "",
    );
    let report = kb.index(IndexOptions::new(), &()).await.unwrap();
    assert!(report.chunks > 1000, "{report:?}");
    let found = kb.search_with("echo line 39999", Some(20), Tier::Lexical).await.unwrap().unwrap();
    assert!(!found.hits.is_empty());
    assert!(found.hits.iter().all(|h| estimate_tokens(&h.text) <= MAX_CHUNK_TOKENS + 1));
    assert_eq!(server.seen.inputs.load(Ordering::SeqCst), report.chunks);
}

/// KNOW-19: a report lists at most [`MAX_SKIPPED_LISTED`] skipped files and counts the rest.
#[tokio::test]
async fn know_19_the_skipped_list_is_bounded_and_the_rest_counted() {
    let (dir, kb) = small();
    let outside = dir.path().join("outside.md");
    write(&outside, "secret\n");
    for i in 0..MAX_SKIPPED_LISTED + 7 {
        std::os::unix::fs::symlink(&outside, dir.path().join(format!("docs/link{i}.md"))).unwrap();
    }
    let report = kb.index(IndexOptions::new(), &()).await.unwrap();
    assert_eq!(report.skipped.len(), MAX_SKIPPED_LISTED);
    assert_eq!(report.skipped_unlisted, 7);
    assert_eq!(report.indexed, 2);
}

/// KNOW-20: an index directory under a directory other users can write (without the sticky bit) is refused,
/// naming that directory; a sticky one, like `/tmp`, is fine.
#[tokio::test]
async fn know_20_an_index_under_a_directory_others_can_write_is_refused() {
    let (dir, _) = small();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let kb = KnowledgeBase::new(shared.join("idx")).with_path("docs", dir.path());
    let e = kb.index(IndexOptions::new(), &()).await.unwrap_err().to_string();
    assert!(e.contains(&shared.display().to_string()) && e.contains("sticky"), "{e}");
    assert!(!shared.join("idx").exists(), "nothing created");
    // Through a link: the directories above where the link leads are checked too.
    let inner = shared.join("mine");
    std::fs::create_dir(&inner).unwrap();
    std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&inner, dir.path().join("link")).unwrap();
    let linked = KnowledgeBase::new(dir.path().join("link/idx")).with_path("docs", dir.path());
    let e = linked.index(IndexOptions::new(), &()).await.unwrap_err().to_string();
    assert!(e.contains(&shared.display().to_string()), "{e}");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    kb.index(IndexOptions::new(), &()).await.unwrap();
    linked.index(IndexOptions::new(), &()).await.unwrap();
}

/// Swaps `docs/guides` for a link to a directory outside the roots once the walk is done, before any file is read.
struct Swap {
    dir: std::path::PathBuf,
}

impl IndexProgress for Swap {
    fn start(&self, _files: usize) {
        let guides = self.dir.join("docs/guides");
        std::fs::rename(&guides, self.dir.join("moved")).unwrap();
        std::os::unix::fs::symlink(self.dir.join("elsewhere"), &guides).unwrap();
    }
}

/// KNOW-21: a directory swapped for a link between the walk and the read is not followed: the read opens each
/// component beneath the root without following links, so the file outside is never indexed.
#[tokio::test]
async fn know_21_a_directory_swapped_for_a_link_after_the_walk_is_not_followed() {
    let (dir, kb) = small();
    write(&dir.path().join("elsewhere/tls.md"), "# Stolen\n\nthe private signing passphrase zebracorn\n");
    let report = kb.index(IndexOptions::new(), &Swap { dir: dir.path().to_path_buf() }).await.unwrap();
    assert!(report.skipped.iter().any(|s| s.path.ends_with("guides/tls.md")), "{:?}", report.skipped);
    assert_eq!(report.indexed, 1);
    let found = kb.search_with("zebracorn passphrase", None, Tier::Lexical).await.unwrap().unwrap();
    assert!(found.hits.is_empty(), "{:?}", found.hits);
}

/// KNOW-22: an index run that finds nothing changed writes nothing (a `watch` cycle does not churn the database),
/// and searches run side by side on their own connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn know_22_an_idle_run_writes_nothing_and_concurrent_searches_agree() {
    let (dir, kb) = small();
    kb.index(IndexOptions::new(), &()).await.unwrap();
    let db = dir.path().join("idx/index.sqlite3");
    let watcher = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let version = |c: &rusqlite::Connection| c.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0)).unwrap();
    let before = version(&watcher);
    let report = kb.index(IndexOptions::new(), &()).await.unwrap();
    assert_eq!((report.indexed, report.unchanged), (0, 2));
    assert_eq!(version(&watcher), before, "an idle run committed a write");
    write(&dir.path().join("docs/ops.md"), "# Ops\n\n## Restart\n\nRestart the server with systemd-run.\n");
    kb.index(IndexOptions::new(), &()).await.unwrap();
    assert_ne!(version(&watcher), before, "an edit is written");

    let mut set = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let kb = kb.clone();
        set.spawn(
            async move { kb.search("rotate the certificate", None).await.unwrap().unwrap().hits[0].citation.clone() },
        );
    }
    while let Some(c) = set.join_next().await {
        assert_eq!(c.unwrap(), "docs/guides/tls.md#1");
    }
}
