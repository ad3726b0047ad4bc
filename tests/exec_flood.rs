//! Invariant 5 (EXEC-12): captured output is bounded in memory whatever the child writes. Alone in its own test
//! binary so the process's peak memory reflects this call only.

mod common;

use common::*;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::CallContext;

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn invariant_5_a_child_writing_1_gib_keeps_harness_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let doc = r#"{"name":"t","commands":[{"name":"flood","restricted_schema":{"type":"object"}}]}"#;
    let app = FiskApp::new(fake_app(dir.path(), "flood"));
    let tool = app.tools_from_model(AppModel::from_slice(doc.as_bytes()).unwrap()).unwrap().tools.remove(0);
    let before = peak_rss_kib();
    let out = tool.call(&raw("{}"), &CallContext::new()).await;
    let grown = peak_rss_kib().saturating_sub(before);
    let (output, code, truncated) = exec_output(out.content());
    assert_eq!(code, 0);
    assert!(truncated);
    assert_eq!(output.len(), 65536 + "\n...[output truncated]...\n".len());
    // 1 GiB went through; the harness kept at most a few buffers of it.
    assert!(grown < 32 * 1024, "peak RSS grew by {grown} KiB");
}
