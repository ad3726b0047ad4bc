//! `cli knowledge` (aliases `rag`, `k`; KNOW-13): the operator's commands as real processes, and `watch` following
//! an edit and an editor's rename-on-save.
#![cfg(all(feature = "knowledge", feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;

use common::embed::EmbedServer;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn setup(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir_all(corpus.join("guides")).unwrap();
    for f in ["runbook.md", "guides/streams.md", "guides/tls.txt"] {
        std::fs::copy(common::root().join("tests/fixtures/knowledge/corpus").join(f), corpus.join(f)).unwrap();
    }
    let yaml = format!("identity: kcli\nharness:\n  knowledge:\n    enabled: true\n    paths: [corpus]\n{extra}");
    std::fs::write(dir.path().join("agent.yaml"), yaml).unwrap();
    dir
}

fn cli(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = common::example_cli(args, dir).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn know_13_index_search_show_sources_stats_rm_and_reset_work_as_an_operator_uses_them() {
    let dir = setup("");
    let d = dir.path();
    let (ok, out, err) = cli(d, &["knowledge", "index"]);
    assert!(ok, "{err}");
    assert_eq!(out, "indexed 3 files (0 unchanged, 0 removed)\n", "one summary line; no progress bar off a terminal");
    let (_, out, _) = cli(d, &["rag", "index", "--dry-run"]);
    assert_eq!(out, "would index 0 files (3 unchanged, 0 removed)\n");
    let (ok, out, err) = cli(d, &["k", "search", "restore a backup", "--top-k", "2"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("1. corpus/runbook.md#4 Operations runbook > Backups > Restoring a backup (lines 19-21"),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).count(), 2, "{out}");
    let (ok, out, _) = cli(d, &["knowledge", "show", "corpus/runbook.md#2"]);
    assert!(ok);
    assert!(out.contains("systemctl restart nats-server\njournalctl"), "lines kept: {out}");
    let (ok, _, err) = cli(d, &["knowledge", "show", "corpus/runbook.md#99"]);
    assert!(!ok && err.contains("no such passage"), "{err}");
    let (ok, out, _) = cli(d, &["knowledge", "sources"]);
    assert!(ok);
    assert!(out.contains("│ corpus/runbook.md ") && out.contains("3 file(s)"), "{out}");
    let (ok, out, _) = cli(d, &["knowledge", "stats"]);
    assert!(ok);
    assert!(out.contains("│ chunks ") && out.contains("none (lexical only)"), "{out}");
    let (ok, out, _) = cli(d, &["knowledge", "rm", "corpus/guides"]);
    assert!(ok);
    assert_eq!(out, "removed 2 file(s) from the index\n");
    let (_, out, _) = cli(d, &["knowledge", "sources"]);
    assert!(out.contains("1 file(s)"), "{out}");
    let (ok, _, err) = cli(d, &["knowledge", "reset"]);
    assert!(!ok && err.contains("pass --force"), "{err}");
    let (ok, _, _) = cli(d, &["knowledge", "reset", "--force"]);
    assert!(ok);
    let (ok, _, err) = cli(d, &["knowledge", "search", "restore"]);
    assert!(!ok && err.contains("knowledge index"), "not built after a reset: {err}");
    let (ok, out, _) = cli(d, &["knowledge", "doctor"]);
    assert!(!ok && out.contains("not built") && out.contains("embeddings: not configured"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn know_13_doctor_makes_one_real_request_and_reports_the_dimension() {
    let server = EmbedServer::start().await;
    let extra = format!(
        "    embeddings:\n      base_url: {}\n      model: fake-32\n      api_key_env: KCLI_EMBED_KEY\n",
        server.base_url
    );
    let dir = setup(&extra);
    let d = dir.path().to_path_buf();
    let run = move |args: &'static [&'static str]| {
        let d = d.clone();
        tokio::task::spawn_blocking(move || {
            let out = common::example_cli(args, &d).env("KCLI_EMBED_KEY", "sk-test").output().unwrap();
            (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
        })
    };
    assert!(run(&["knowledge", "index"]).await.unwrap().0);
    let (ok, out) = run(&["knowledge", "doctor"]).await.unwrap();
    assert!(ok, "{out}");
    assert!(out.contains("embeddings: ok: 32 dimensions in "), "{out}");
    assert!(out.contains("ok: 3 files, 8 chunks, 8 vectors"), "{out}");
    assert_eq!(server.seen.auth.lock().unwrap().as_deref(), Some("Bearer sk-test"));
    server.seen.failing.store(true, std::sync::atomic::Ordering::SeqCst);
    let (ok, out) = run(&["knowledge", "doctor"]).await.unwrap();
    assert!(!ok && out.contains("embeddings: problem:") && out.contains("HTTP 500"), "{out}");
}

/// Read `watch`'s stdout until a line equal to `want` arrives (or the child's output ends); fails after a minute.
fn wait_for(lines: &std::sync::mpsc::Receiver<String>, want: &str) {
    let until = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while Instant::now() < until {
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(line) if line == want => return,
            Ok(line) => seen.push(line),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => break,
        }
    }
    panic!("watch never printed {want:?}; it printed {seen:?}");
}

#[test]
fn know_13_watch_reindexes_an_edit_and_an_editors_rename_on_save() {
    let dir = setup("");
    let mut child = common::example_cli(&["knowledge", "watch", "--debounce", "300ms"], dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    wait_for(&lines, "indexed 3 files (0 unchanged, 0 removed)");
    let runbook = dir.path().join("corpus/runbook.md");
    let text = std::fs::read_to_string(&runbook).unwrap();
    std::fs::write(&runbook, text.replace("vault bucket", "glacier archive")).unwrap();
    wait_for(&lines, "indexed 1 files (2 unchanged, 0 removed)");
    // An editor's save: write a new file beside it, rename it over the old one.
    let tmp = dir.path().join("corpus/.runbook.md.swp");
    std::fs::write(&tmp, text.replace("vault bucket", "tape library")).unwrap();
    std::fs::rename(&tmp, &runbook).unwrap();
    wait_for(&lines, "indexed 1 files (2 unchanged, 0 removed)");
    let _ = Command::new("kill").arg("-INT").arg(child.id().to_string()).status();
    let status = child.wait().unwrap();
    assert!(status.success(), "Ctrl-C ends watch cleanly: {status}");
    let (_, out, _) = cli(dir.path(), &["knowledge", "search", "tape library"]);
    assert!(out.starts_with("1. corpus/runbook.md#3 "), "the renamed-over file's new text is searchable: {out}");
}
