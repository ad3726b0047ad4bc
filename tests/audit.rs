//! The audit trail (AUD-1..10) through the agent loop and the file sink: a real fake application (mcp-app), a
//! scripted model, a recording gate; the trail is read back from the file and its chain checked. The MCP surface
//! (with an OAuth caller) is in tests/audit_mcp.rs, the JetStream sink and a2a in tests/audit_jetstream.rs.

mod common;

use common::gate::RecordingGate;
use common::turns::{call_with, done, result_of, turn};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::async_trait;
use fisk_ai::audit::{AuditSink, AuditTrail, Entry, Event, FileSink, verify_file};
use fisk_ai::gate::Decision;
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::policy::{PolicyCall, PolicyHook, Verdict};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        Setup { dir: tempfile::tempdir().unwrap() }
    }

    fn trail(&self) -> PathBuf {
        self.dir.path().join("audit/trail.jsonl")
    }

    /// The configuration with the file sink at [`trail`](Self::trail) and nothing else under `audit`.
    fn file_config(&self) -> fisk_ai::Config {
        fisk_ai::Config::from_yaml_str(&self.yaml(&format!("    file: {}\n", self.trail().display()))).unwrap()
    }

    fn yaml(&self, audit: &str) -> String {
        let app = common::fake_app(self.dir.path(), "mcp-app");
        format!(
            "identity: aud\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\nharness:\n  audit:\n{audit}",
            app.display()
        )
    }

    fn ran(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ran")).unwrap_or_default()
    }

    /// One turn of `calls`, then an answer; the results by call id.
    async fn run(
        &self,
        builder: fisk_ai::AgentBuilder,
        calls: &[(&str, &str, &str)],
        answers: &[Decision],
    ) -> Vec<(String, bool)> {
        let blocks = calls.iter().map(|(id, tool, input)| call_with(id, tool, input)).collect();
        let provider = Arc::new(ScriptedProvider::new([turn(blocks), done()]));
        let (gate, _log) = RecordingGate::new(answers);
        let agent = builder.provider_arc(provider.clone()).gate(gate).build().await.unwrap();
        let out = agent.run("go", RunOptions::new()).await;
        assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
        let messages = provider.requests().last().unwrap().messages.clone();
        calls.iter().map(|(id, _, _)| result_of(&messages, id)).collect()
    }
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The events of the records of the call whose request id is `request`, in order.
fn events_of(records: &[Value], request: &str) -> Vec<String> {
    records.iter().filter(|r| r["request"] == request).map(|r| r["event"].as_str().unwrap().to_owned()).collect()
}

fn record<'a>(records: &'a [Value], request: &str, event: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["request"] == request && r["event"] == event)
        .unwrap_or_else(|| panic!("{request} {event}: {records:#?}"))
}

#[tokio::test]
async fn aud_1_every_decision_point_of_an_agent_call_is_recorded_with_its_caller_and_the_chain_verifies() {
    let s = Setup::new();
    let config = s.file_config();
    let calls = [
        ("ok", "echo", r#"{"words":["hi"]}"#),
        ("unknown", "nope", "{}"),
        ("invalid", "echo", r#"{"words":5}"#),
        ("approved", "purge", r#"{"target":"a"}"#),
        ("declined", "purge", r#"{"target":"b"}"#),
        ("failed", "fail", "{}"),
    ];
    let results = s.run(Agent::builder().config(config), &calls, &[Decision::Once, Decision::Decline]).await;
    assert!(results[0].0.contains("echo: hi"), "{results:?}");
    assert_eq!(s.ran(), "purge a\n", "only the approved purge ran");
    let all = records(&s.trail());
    assert_eq!(events_of(&all, "ok"), ["requested", "validated", "run", "finished"]);
    assert_eq!(events_of(&all, "unknown"), ["requested", "refused"]);
    assert_eq!(events_of(&all, "invalid"), ["requested", "refused"]);
    assert_eq!(events_of(&all, "approved"), ["requested", "validated", "gated", "approved", "run", "finished"]);
    assert_eq!(events_of(&all, "declined"), ["requested", "validated", "gated", "declined"]);
    assert_eq!(events_of(&all, "failed"), ["requested", "validated", "run", "finished"]);

    let requested = record(&all, "ok", "requested");
    let user = fisk_ai::audit::local_user();
    assert_eq!((requested["caller"].as_str(), requested["agent"].as_str()), (Some(user.as_str()), Some("aud")));
    assert_eq!((requested["surface"].as_str(), requested["tool"].as_str()), (Some("agent"), Some("echo")));
    // The SHA-256 of the input exactly as the model sent it.
    assert_eq!(requested["input_digest"].as_str(), Some(sha256_hex(r#"{"words":["hi"]}"#).as_str()));
    assert!(requested.get("input").is_none(), "the input itself only with include_input");
    assert!(record(&all, "unknown", "refused")["reason"].as_str().unwrap().contains("unknown tool \"nope\""));
    assert!(record(&all, "invalid", "refused")["reason"].as_str().unwrap().contains("property \"words\""));
    let run = record(&all, "ok", "run");
    assert_eq!(run["argv"], json!(["echo", "--", "hi"]));
    let app = common::fake_app(s.dir.path(), "mcp-app");
    assert_eq!(run["program"].as_str(), Some(app.to_str().unwrap()), "the executable, beside its arguments");
    let finished = record(&all, "ok", "finished");
    assert_eq!((finished["exit_code"].as_i64(), finished["truncated"].as_bool()), (Some(0), Some(false)));
    assert!(finished["bytes"].as_u64().unwrap() > 0);
    assert_eq!(record(&all, "failed", "finished")["exit_code"].as_i64(), Some(7));
    assert_eq!(record(&all, "approved", "gated")["trigger"].as_str(), Some("ai:confirm"));
    assert_eq!(record(&all, "approved", "gated")["command"].as_str(), Some("purge -- a"));
    assert_eq!(record(&all, "approved", "approved")["answer"].as_str(), Some("once"));
    assert_eq!(record(&all, "declined", "declined")["answer"].as_str(), Some("declined"));
    // One call id for all the records of a call, a different one per call.
    let ids: std::collections::BTreeSet<&str> = all.iter().map(|r| r["call"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), calls.len());
    // AUD-2: every record fits the published schema.
    let schema: Value = serde_json::from_str(fisk_ai::audit::RECORD_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for r in &all {
        assert!(validator.is_valid(r), "{r}");
    }
    let verified = verify_file(s.trail()).unwrap();
    assert_eq!(verified.records, all.len() as u64);
}

#[tokio::test]
async fn aud_4_the_file_is_0600_and_include_input_records_the_input_text() {
    let s = Setup::new();
    let yaml = s.yaml(&format!("    file: {}\n    include_input: true\n", s.trail().display()));
    let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
    s.run(Agent::builder().config(config), &[("c", "echo", r#"{"words":["secret"]}"#)], &[]).await;
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(s.trail()).unwrap().permissions().mode() & 0o777, 0o600);
    let all = records(&s.trail());
    assert_eq!(record(&all, "c", "requested")["input"].as_str(), Some(r#"{"words":["secret"]}"#));
}

/// AUD-8: without `include_input`, an input the schema refuses leaves no trace of its values in the trail (the
/// validator's message quotes the offending value; the record keeps the kind of refusal and the property only);
/// with it, the refusal's whole text is kept.
#[tokio::test]
async fn aud_8_a_refused_input_s_values_reach_the_trail_only_with_include_input() {
    const VALUE: &str = "tok-7f3a9c";
    let input = format!(r#"{{"words":"{VALUE}"}}"#);
    for include in [false, true] {
        let s = Setup::new();
        let yaml = s.yaml(&format!("    file: {}\n    include_input: {include}\n", s.trail().display()));
        let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
        let results = s.run(Agent::builder().config(config), &[("bad", "echo", &input)], &[]).await;
        assert!(results[0].1 && results[0].0.contains(VALUE), "the model reads the full error: {results:?}");
        let text = std::fs::read_to_string(s.trail()).unwrap();
        let reason = record(&records(&s.trail()), "bad", "refused")["reason"].as_str().unwrap_or_default().to_owned();
        assert!(reason.contains("property \"words\""), "{reason}");
        assert_eq!(text.contains(VALUE), include, "include_input: {include}\n{text}");
    }
}

/// AUD-2: what a caller or a tool chose is cut to the record's bounds (a tool name to 256 bytes, texts such as the
/// command line to 4 KiB, the input to 256 KiB), while the digest still covers the whole input, so one call cannot
/// make a record the reader or a NATS message refuses.
#[tokio::test]
async fn aud_2_a_huge_tool_name_command_line_and_input_are_cut_to_the_record_s_bounds() {
    use sha2::{Digest, Sha256};
    let s = Setup::new();
    let yaml = s.yaml(&format!("    file: {}\n    include_input: true\n", s.trail().display()));
    let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
    let name = "t".repeat(10_000);
    // Three words of 100 KB: each within the kernel's 128 KiB per argument, 300 KB in all.
    let words: Vec<String> = ["a", "b", "c"].iter().map(|w| w.repeat(100_000)).collect();
    let input = serde_json::json!({ "words": words }).to_string();
    let results = s.run(Agent::builder().config(config), &[("long", &name, "{}"), ("big", "echo", &input)], &[]).await;
    assert!(results[0].1, "an unknown tool is refused: {:?}", &results[0].0[..200.min(results[0].0.len())]);
    assert!(!results[1].1, "the big call runs");
    let all = records(&s.trail());
    for r in all.iter().filter(|r| r["request"] == "long") {
        let tool = r["tool"].as_str().unwrap();
        assert!(tool.len() <= 256 + 3 && tool.starts_with("ttt") && tool.ends_with("..."), "{} bytes", tool.len());
    }
    let requested = record(&all, "big", "requested");
    let kept = requested["input"].as_str().unwrap();
    assert!(kept.len() <= (256 << 10) + 3 && kept.ends_with("..."), "input kept: {} bytes", kept.len());
    assert!(input.starts_with(kept.trim_end_matches("...")));
    let digest: String = Sha256::digest(input.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    assert!(requested["input_digest"].as_str().unwrap().contains(&digest), "the digest covers the whole input");
    let run = record(&all, "big", "run");
    let command = run["command"].as_str().unwrap();
    assert!(command.len() <= 4096 + 3 && command.ends_with("..."), "command line kept: {} bytes", command.len());
    // Beyond the argv, which is what ran and is kept whole, every record stays within the bounds.
    for mut r in all {
        r.as_object_mut().unwrap().remove("argv");
        assert!(r.to_string().len() < (256 << 10) + (16 << 10), "{} bytes", r.to_string().len());
    }
}

/// A hook that rewrites every `echo` to say `redacted`, and replaces results that mention `hi`.
struct Rewriter;

#[async_trait]
impl PolicyHook for Rewriter {
    async fn before(&self, call: &PolicyCall<'_>) -> Verdict {
        match call.tool {
            "echo" => Verdict::Rewrite(json!({"words": ["redacted"]})),
            _ => Verdict::Deny("not today".to_owned()),
        }
    }

    async fn after(&self, _call: &PolicyCall<'_>, out: &fisk_ai::ToolOutput) -> Option<fisk_ai::ToolOutput> {
        out.content().contains("redacted").then(|| fisk_ai::ToolOutput::success("[withheld]"))
    }
}

#[tokio::test]
async fn aud_1_a_policy_verdict_its_rewrite_and_a_redaction_are_recorded() {
    let s = Setup::new();
    let config = s.file_config();
    let harness = fisk_ai::Harness::builder().config(config).policy(Arc::new(Rewriter)).build().await.unwrap();
    let calls = [("rw", "echo", r#"{"words":["hi"]}"#), ("deny", "fail", "{}")];
    let results = s.run(Agent::builder().harness(Arc::new(harness)), &calls, &[]).await;
    assert_eq!(results[0].0, "[withheld]");
    let all = records(&s.trail());
    assert_eq!(events_of(&all, "rw"), ["requested", "validated", "policy", "run", "redacted", "finished"]);
    let policy = record(&all, "rw", "policy");
    assert_eq!(policy["verdict"].as_str(), Some("rewrite"));
    let rewritten = r#"{"words":["redacted"]}"#;
    assert_eq!(
        record(&all, "rw", "requested")["input_digest"].as_str(),
        Some(sha256_hex(r#"{"words":["hi"]}"#).as_str())
    );
    assert_eq!(policy["input_digest"].as_str(), Some(sha256_hex(rewritten).as_str()), "the rewritten input's");
    assert_eq!(record(&all, "rw", "run")["argv"], json!(["echo", "--", "redacted"]));
    assert_eq!(events_of(&all, "deny"), ["requested", "validated", "policy"]);
    assert_eq!(record(&all, "deny", "policy")["verdict"].as_str(), Some("deny"));
    assert!(record(&all, "deny", "policy")["reason"].as_str().unwrap().contains("not today"));
    verify_file(s.trail()).unwrap();
}

/// A sink that cannot write: the AuditSink seam, as a full disk or an unreachable stream would look.
struct Unwritable;

#[async_trait]
impl AuditSink for Unwritable {
    async fn append(&self, _entries: &[Entry]) -> fisk_ai::Result<()> {
        Err(fisk_ai::Error::audit("audit file /var/log/trail: No space left on device"))
    }

    fn describe(&self) -> String {
        "file /var/log/trail".to_owned()
    }
}

async fn with_trail(
    s: &Setup,
    trail: AuditTrail,
    calls: &[(&str, &str, &str)],
    answers: &[Decision],
) -> Vec<(String, bool)> {
    let config = fisk_ai::Config::from_yaml_str(&s.yaml("    {}\n").replace("  audit:\n    {}\n", "")).unwrap();
    let harness = fisk_ai::Harness::builder().config(config).audit(trail).build().await.unwrap();
    s.run(Agent::builder().harness(Arc::new(harness)), calls, answers).await
}

#[tokio::test]
async fn aud_6_a_sink_that_cannot_write_refuses_every_call_and_nobody_is_asked() {
    let s = Setup::new();
    let trail = AuditTrail::new(Arc::new(Unwritable)).agent("aud");
    let calls = [("plain", "echo", r#"{"words":["hi"]}"#), ("gated", "purge", r#"{"target":"a"}"#)];
    let results = with_trail(&s, trail, &calls, &[Decision::Once]).await;
    for (text, is_error) in &results {
        assert!(*is_error, "{text}");
        assert!(text.contains("did not run: its audit record could not be written"), "{text}");
        // The sink's details (a path, an OS error) are the operator's, logged; the caller is not told them.
        assert!(!text.contains("/var/log/trail"), "{text}");
    }
    assert_eq!(s.ran(), "", "nothing ran unrecorded");
}

#[tokio::test]
async fn aud_6_fail_open_runs_the_call_with_a_warning() {
    let s = Setup::new();
    let trail = AuditTrail::new(Arc::new(Unwritable)).agent("aud").fail_open(true);
    let results = with_trail(&s, trail, &[("gated", "purge", r#"{"target":"a"}"#)], &[Decision::Once]).await;
    assert!(!results[0].1, "{results:?}");
    assert_eq!(s.ran(), "purge a\n");
    let config =
        fisk_ai::Config::from_yaml_str(&s.yaml(&format!("    file: {}\n    fail_open: true\n", s.trail().display())))
            .unwrap();
    let harness = fisk_ai::Harness::builder().config(config).build().await.unwrap();
    assert!(harness.warnings().iter().any(|w| w.kind() == "audit_fail_open"), "{:?}", harness.warnings());
}

#[tokio::test]
async fn aud_6_a_trail_that_cannot_be_opened_stops_the_build_naming_the_file() {
    let s = Setup::new();
    std::fs::write(s.dir.path().join("plain"), "a file, not a directory").unwrap();
    let path = s.dir.path().join("plain/trail.jsonl");
    let config = fisk_ai::Config::from_yaml_str(&s.yaml(&format!("    file: {}\n", path.display()))).unwrap();
    let err = fisk_ai::Harness::builder().config(config).build().await.unwrap_err();
    assert_eq!(err.kind(), fisk_ai::ErrorKind::Audit);
    assert!(err.to_string().contains(&path.display().to_string()), "{err}");
    // A trail others may read is refused, never loosened or used as is.
    let wide = s.dir.path().join("wide.jsonl");
    std::fs::write(&wide, "").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = FileSink::open(&wide, 1 << 20).unwrap_err();
    assert!(err.to_string().contains("mode 644"), "{err}");
}

fn entry(tool: &str) -> Entry {
    Entry::new(Event::Requested, "other", tool)
}

async fn write_trail(path: &Path, n: usize, rotate: u64) {
    let sink = FileSink::open(path, rotate).unwrap();
    for i in 0..n {
        sink.append(&[entry(&format!("tool{i}"))]).await.unwrap();
    }
}

#[tokio::test]
async fn aud_3_an_edited_deleted_or_reordered_line_is_caught_at_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trail.jsonl");
    write_trail(&path, 5, 1 << 20).await;
    assert_eq!(verify_file(&path).unwrap().records, 5);
    let lines: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
    let cases: [(&str, Vec<String>, &str, u64); 5] = [
        (
            "edited",
            {
                let mut l = lines.clone();
                l[1] = l[1].replace("tool1", "tool9");
                l
            },
            "line 3",
            2,
        ),
        (
            "deleted",
            {
                let mut l = lines.clone();
                l.remove(2);
                l
            },
            "line 3",
            2,
        ),
        (
            "reordered",
            {
                let mut l = lines.clone();
                l.swap(1, 2);
                l
            },
            "line 2",
            1,
        ),
        ("first deleted", lines[1..].to_vec(), "line 1", 0),
        (
            "field added",
            {
                let mut l = lines.clone();
                l[1] = l[1].replacen('{', r#"{"admin":true,"#, 1);
                l
            },
            "line 2",
            1,
        ),
    ];
    for (what, tampered, at, seq) in cases {
        let copy = dir.path().join(what.replace(' ', "-"));
        std::fs::write(&copy, tampered.join("\n") + "\n").unwrap();
        let broken = verify_file(&copy).unwrap_err();
        assert!(broken.at.ends_with(at), "{what}: {broken}");
        assert_eq!(broken.expected_seq, seq, "{what}: {broken}");
    }
}

#[tokio::test]
async fn aud_4_rotation_keeps_one_chain_across_files_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trail.jsonl");
    write_trail(&path, 12, 600).await;
    // A crash midway through a write leaves an incomplete line, never acknowledged: reopening cuts it.
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(br#"{"v":1,"seq":12,"pr"#).unwrap();
    // Reopened (a restart): the chain goes on from the last record.
    write_trail(&path, 3, 600).await;
    let verified = verify_file(&path).unwrap();
    assert_eq!(verified.records, 15);
    assert!(verified.files.len() > 3, "rotated: {:?}", verified.files);
    let seqs: Vec<u64> = verified.files.iter().flat_map(|f| records(f)).map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..15).collect::<Vec<_>>());
    // A rotated file removed from the middle breaks the chain where it was.
    std::fs::remove_file(&verified.files[1]).unwrap();
    let broken = verify_file(&path).unwrap_err();
    assert!(broken.to_string().contains("is missing or moved"), "{broken}");
}

/// AUD-10: settled records (acknowledged once written, synced after) and durable ones, appended from many tasks at
/// once across rotations, form one chain; each acknowledged record is in the file when its append returns, and
/// the trail reopens after the last of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aud_10_settled_and_durable_records_interleaved_keep_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trail.jsonl");
    let sink = Arc::new(FileSink::open(&path, 4096).unwrap());
    let tasks = (0..8).map(|t| {
        let (sink, path) = (sink.clone(), path.clone());
        tokio::spawn(async move {
            for i in 0..25 {
                let name = format!("t{t}-{i}");
                if i % 2 == 0 {
                    sink.append(&[entry(&name)]).await.unwrap();
                } else {
                    sink.append_settled(&[entry(&name)]).await.unwrap();
                }
                // A rotation between listing the files and reading one can hide a record from one look, never from
                // several.
                let quoted = format!("\"{name}\"");
                let written = (0..5).any(|_| trail_text(&path).contains(&quoted));
                assert!(written, "{name} was acknowledged but is not written");
            }
        })
    });
    for task in futures::future::join_all(tasks).await {
        task.unwrap();
    }
    drop(Arc::into_inner(sink).unwrap());
    write_trail(&path, 1, 4096).await;
    let verified = verify_file(&path).unwrap();
    assert_eq!(verified.records, 201);
    assert!(verified.files.len() > 2, "rotated: {:?}", verified.files);
}

/// The text of the trail at `path` and of its rotated files, read while it may be written.
fn trail_text(path: &Path) -> String {
    let name = path.file_name().unwrap().to_str().unwrap();
    let mut text = String::new();
    for e in std::fs::read_dir(path.parent().unwrap()).unwrap().flatten() {
        let file = e.file_name().into_string().unwrap();
        if file.starts_with(name) && !file.ends_with(".lock") {
            text.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    text
}

#[tokio::test]
async fn aud_4_a_second_writer_of_the_same_trail_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trail.jsonl");
    let first = FileSink::open(&path, 1 << 20).unwrap();
    let err = FileSink::open(&path, 1 << 20).unwrap_err();
    assert!(err.to_string().contains("another process is writing this trail"), "{err}");
    drop(first);
}

#[test]
fn aud_7_cli_audit_verify_exits_0_on_a_whole_chain_and_1_naming_the_first_broken_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trail.jsonl");
    tokio::runtime::Runtime::new().unwrap().block_on(write_trail(&path, 4, 1 << 20));
    let out = common::example_cli(&["audit", "verify", path.to_str().unwrap()], dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("4 record(s)"));
    let text = std::fs::read_to_string(&path).unwrap().replace("tool2", "toolX");
    std::fs::write(&path, text).unwrap();
    let out = common::example_cli(&["audit", "verify", path.to_str().unwrap()], dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 4 (record 3)"), "{stderr}");
}

/// AUD-1 with EXACT-1: an approval for these exact arguments is recorded as `exact`; the same call again runs on
/// that allowance (`allowance_exact`, nobody asked), and a call with other arguments is asked again.
#[tokio::test]
async fn aud_1_exact_approvals_and_the_calls_they_allow_are_recorded_by_their_answer() {
    let s = Setup::new();
    let config = s.file_config();
    let calls = [
        ("first", "purge", r#"{"target":"a"}"#),
        ("again", "purge", r#"{"target":"a"}"#),
        ("other", "purge", r#"{"target":"b"}"#),
    ];
    let decisions = [Decision::ForConversationExact, Decision::Once];
    s.run(Agent::builder().config(config), &calls, &decisions).await;
    assert_eq!(s.ran(), "purge a\npurge a\npurge b\n");
    let all = records(&s.trail());
    let answer = |request: &str| record(&all, request, "approved")["answer"].as_str().map(str::to_owned);
    assert_eq!(answer("first").as_deref(), Some("exact"));
    assert_eq!(answer("again").as_deref(), Some("allowance_exact"));
    assert_eq!(answer("other").as_deref(), Some("once"));
    fisk_ai::audit::verify_file(s.trail()).unwrap();
}

/// The lowercase hex SHA-256 of `text`.
fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}
