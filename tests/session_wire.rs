//! The journal's wire contract (SESS-5..12): records this SDK writes validate against the reference's own JSON
//! Schemas, so the Go reference and this SDK read each other's journals.
//!
//! The schemas are third-party files and never committed: `.ci/run` exports `FISK_AI_WIRE_SCHEMAS` (the
//! `fixtures/wire` folder beside the checkout). The tests that need them are `#[ignore]`d, so a plain `cargo test`
//! reports them as ignored; run with `--ignored`, a missing folder fails them.

use fisk_ai::agent::TerminalReason;
use fisk_ai::llm::{Block, Message, StopReason, Usage};
use fisk_ai::session::{
    AssistantRecord, Journal, JournalRecord, Meta, Payload, TerminalRecord, ToolResultRecord, UserRecord,
};
use fisk_ai::tool::ToolInput;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn schemas_dir() -> PathBuf {
    match std::env::var_os("FISK_AI_WIRE_SCHEMAS").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("session"),
        None => panic!("needs FISK_AI_WIRE_SCHEMAS=<shared>/fixtures/wire (the reference's schemas; .ci/run sets it)"),
    }
}

/// Resolves the schemas' relative `$ref`s (`session.common.json`) from the same folder, offline.
struct Folder(PathBuf);

impl jsonschema::Retrieve for Folder {
    fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let name = uri.path().as_str().rsplit('/').next().unwrap_or_default();
        // `$id`s are `.../session.common.json` while the file is `common.json`.
        let file = self.0.join(name.strip_prefix("session.").unwrap_or(name));
        Ok(serde_json::from_slice(&std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?)?)
    }
}

fn validator(dir: &Path, kind: &str) -> jsonschema::Validator {
    let path = dir.join(format!("session.{kind}.json"));
    let schema: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .with_retriever(Folder(dir.to_path_buf()))
        .build(&schema)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One record of every kind the reference defines, as this SDK writes them, with every optional field exercised.
fn our_records() -> Vec<JournalRecord> {
    let fp = serde_json::from_str(
        r#"{"provider":"anthropic","model":"m","system_hash":"a","tools_hash":"b","thinking_mode":"summarized","max_tokens":1000,"max_iterations":5}"#,
    )
    .unwrap();
    let raw =
        serde_json::value::RawValue::from_string(r#"{"type":"server_tool_use","id":"s1","input":{}}"#.into()).unwrap();
    let turn = Message::assistant(vec![
        Block::Thinking { text: "plan".into(), signature: "c2ln".into() },
        Block::Provider { kind: "server_tool_use".into(), raw },
        Block::text("narration"),
        Block::ToolUse { id: "c1".into(), name: "a".into(), input: ToolInput::from_json(r#"{"n":1.50}"#).unwrap() },
    ]);
    let usage = Usage { input_tokens: 10, output_tokens: 5, cache_read_tokens: 100, cache_creation_tokens: 50 };
    let mut meta = Meta::new("2Y3bF3m7c8vQZp1d0kXgG6rJc9T", fp, "the prompt");
    meta.interactive = Some(true);
    vec![
        JournalRecord::new(1, Payload::Meta(meta)),
        JournalRecord::new(2, Payload::Assistant(AssistantRecord::new(1, turn, StopReason::ToolUse, usage))),
        JournalRecord::new(3, Payload::ToolResult(ToolResultRecord::new("c1", "out", true, true))),
        JournalRecord::new(4, Payload::ToolResult(ToolResultRecord::new("c1", "out", false, false))),
        JournalRecord::new(5, Payload::User(UserRecord::new(Message::user("follow-up")))),
        JournalRecord::new(6, Payload::Terminal(TerminalRecord::new(TerminalReason::Error, Some("boom".into())))),
        JournalRecord::new(7, Payload::Terminal(TerminalRecord::new(TerminalReason::Suspended, None))),
    ]
}

#[test]
#[ignore = "needs the wire schemas (FISK_AI_WIRE_SCHEMAS); .ci/run provides them"]
fn sess_5_12_every_record_we_write_validates_against_the_reference_schemas() {
    let dir = schemas_dir();
    let mut checked = 0;
    for record in our_records() {
        let line = record.to_json();
        let value: Value = serde_json::from_slice(&line).unwrap();
        let kind = record.payload.key();
        let v = validator(&dir, kind);
        let errors: Vec<String> = v.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{kind} record {}: {errors:?}", String::from_utf8_lossy(&line));
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
#[ignore = "needs the wire schemas (FISK_AI_WIRE_SCHEMAS); .ci/run provides them"]
fn sess_13_the_schemas_reject_what_fold_rejects_so_the_contract_test_can_fail() {
    let dir = schemas_dir();
    let v = validator(&dir, "meta");
    let bad = serde_json::json!({"seq": 1, "protocol": "io.choria.fisk-ai.v1.session.meta",
        "meta": {"version": 4, "run_id": "x", "created": "yesterday", "fingerprint": {}, "extra": 1}});
    assert!(!v.is_valid(&bad), "an unknown key and a bad date-time must fail validation");
}

/// The reference-shaped fixture journal: its text and its records.
fn reference_journal() -> (String, Vec<JournalRecord>) {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/session/reference-journal.json"),
    )
    .unwrap();
    let records = text.lines().map(|l| JournalRecord::from_json(l.as_bytes()).unwrap()).collect();
    (text, records)
}

#[test]
#[ignore = "needs the wire schemas (FISK_AI_WIRE_SCHEMAS); .ci/run provides them"]
fn sess_13_the_reference_shaped_fixture_validates_against_the_reference_schemas() {
    let dir = schemas_dir();
    let (text, records) = reference_journal();
    for (line, r) in text.lines().zip(&records) {
        let value: Value = serde_json::from_str(line).unwrap();
        assert!(validator(&dir, r.payload.key()).is_valid(&value), "fixture line {line}");
    }
}

#[test]
fn sess_13_a_journal_in_the_reference_shape_folds_with_its_pending_call() {
    // A journal shaped by the reference's schemas (nanosecond offset timestamp, no cache counters on the first
    // turn, a remote result): it folds, and its unanswered call is pending.
    let (_, records) = reference_journal();
    let j = Journal::fold(records).unwrap();
    assert_eq!(j.meta.fingerprint.provider, "anthropic");
    assert_eq!((j.llm_calls, j.tool_calls, j.remote_tool_calls), (2, 2, 1));
    assert_eq!(j.usage.cache_read_tokens, 1200);
    assert_eq!(j.messages.len(), 4, "prompt, turn 1, its results, turn 2");
    let pending: Vec<&str> = j.pending.as_ref().unwrap().unanswered().map(|c| c.id.as_str()).collect();
    assert_eq!(pending, ["toolu_03"]);
}
