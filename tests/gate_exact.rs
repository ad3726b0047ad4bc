//! Approvals for exact arguments (EXACT-1..5) through `Agent::run`, `Agent::resume` and a conversation's reset: the
//! fake `cowsay` app's gated `cow think` runs for real, the model is scripted and the gate a recording double (the
//! terminal prompt itself is in tests/gate_tmux.rs).

mod common;

use common::gate::RecordingGate;
use common::turns::{call_with, done, result_of, turn};
use fisk_ai::agent::{Agent, NextStep, RunEvent, RunOptions, TerminalReason};
use fisk_ai::gate::{ConfirmGate, Decision, Remember};
use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::session::{FileSessionStore, Journal, SessionId, SessionStore};
use std::sync::{Arc, Mutex};

struct App {
    dir: tempfile::TempDir,
}

impl App {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        common::fake_app(dir.path(), "cowsay");
        App { dir }
    }

    fn config(&self, remember: &str) -> fisk_ai::Config {
        let app = self.dir.path().join("cowsay");
        // `feed` (impact:rw) is gated too, for a call with a number.
        let yaml = format!(
            "identity: cows\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\nharness:\n  confirm_tags: \
             [impact:rw]\n  approvals: {{remember: {remember}}}\n",
            app.display()
        );
        fisk_ai::Config::from_yaml_str(&yaml).unwrap()
    }

    fn store(&self) -> FileSessionStore {
        FileSessionStore::new(self.dir.path().join("runs"))
    }

    async fn agent(&self, remember: &str, provider: &Arc<ScriptedProvider>, gate: impl ConfirmGate + 'static) -> Agent {
        let b =
            Agent::builder().config(self.config(remember)).provider_arc(provider.clone()).session_store(self.store());
        b.gate(gate).build().await.unwrap()
    }
}

fn think(id: &str, input: &str) -> Block {
    call_with(id, "cow_think", input)
}

/// Whether the call's result is the GATE-10 decline.
fn declined(provider: &ScriptedProvider, id: &str) -> bool {
    let last = provider.requests().last().unwrap().messages.clone();
    let (content, _) = result_of(&last, id);
    content.starts_with(r#"{"allowed":false"#)
}

#[tokio::test]
async fn exact_1_the_same_arguments_skip_the_prompt_and_different_ones_ask() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![think("c1", r#"{"message":"moo","name":"daisy"}"#)]),
        // The same arguments in another key order are the same call.
        turn(vec![think("c2", r#"{"name":"daisy","message":"moo"}"#)]),
        turn(vec![think("c3", r#"{"message":"moo","name":"bella"}"#)]),
        done(),
    ]));
    let (gate, log) = RecordingGate::new(&[Decision::ForConversationExact, Decision::Decline]);
    let allowed = Arc::new(Mutex::new(Vec::new()));
    let seen = allowed.clone();
    let options = RunOptions::new().with_events(move |e: &RunEvent<'_>| {
        if let RunEvent::AllowedExact { name, .. } = e {
            seen.lock().unwrap().push(name.to_string());
        }
    });
    let out = app.agent("tool", &provider, gate).await.run("go", options).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(log.asked(), ["cow_think", "cow_think"], "c2 was not asked, c3 was");
    assert!(log.requests().iter().all(|r| r.remember == Remember::Tool));
    assert!(!declined(&provider, "c1") && !declined(&provider, "c2"));
    assert!(declined(&provider, "c3"), "other arguments are asked again, and here declined");
    assert_eq!(*allowed.lock().unwrap(), ["cow_think"]);
}

/// Parsing makes `1e2` and `100` the same number, but a command is built from the number as written: the key tells
/// them apart, so approving one does not run the other unasked.
#[tokio::test]
async fn exact_1_the_same_number_written_another_way_is_another_call() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![call_with("c1", "feed", r#"{"cow":"daisy","amount":100}"#)]),
        turn(vec![call_with("c2", "feed", r#"{"amount":100,"cow":"daisy"}"#)]),
        turn(vec![call_with("c3", "feed", r#"{"cow":"daisy","amount":1e2}"#)]),
        done(),
    ]));
    let (gate, log) = RecordingGate::new(&[Decision::ForConversationExact, Decision::Decline]);
    let out = app.agent("tool", &provider, gate).await.run("go", RunOptions::new()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    let lines: Vec<String> = log.requests().iter().map(|r| r.command_line.clone()).collect();
    assert_eq!(lines.len(), 2, "c2 (same input, keys reordered) ran unasked; c3 was asked: {lines:?}");
    assert_ne!(lines[0], lines[1], "the two lines differ as the two commands do");
    assert!(!declined(&provider, "c2") && declined(&provider, "c3"));
}

#[tokio::test]
async fn exact_2_under_remember_exact_an_answer_for_any_arguments_covers_only_these() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![think("c1", r#"{"message":"moo"}"#)]),
        turn(vec![think("c2", r#"{"message":"moo"}"#), think("c3", r#"{"message":"rm -rf"}"#)]),
        done(),
    ]));
    // A host gate that offers "any arguments" anyway: the agent keeps the narrower scope.
    let (gate, log) = RecordingGate::new(&[Decision::ForConversation, Decision::Decline]);
    let out = app.agent("exact", &provider, gate).await.run("go", RunOptions::new()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(log.asked(), ["cow_think", "cow_think"]);
    assert!(log.requests().iter().all(|r| r.remember == Remember::Exact), "the gate is told the scope it may grant");
    assert!(!declined(&provider, "c2") && declined(&provider, "c3"));
}

#[tokio::test]
async fn exact_4_an_exact_allowance_is_journaled_and_honoured_on_resume() {
    let app = App::new();
    let sid = SessionId::new("exact-resume").unwrap();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![think("c1", r#"{"message":"moo"}"#)]),
        turn(vec![think("c2", r#"{"message":"moo"}"#), think("c3", r#"{"message":"baa"}"#)]),
    ]));
    let (gate, first) = RecordingGate::new(&[Decision::ForConversationExact, Decision::Abort]);
    let options = RunOptions::new().with_checkpoint(sid.clone());
    let out = app.agent("tool", &provider, gate).await.run("x", options).await;
    assert_eq!(out.reason, TerminalReason::Suspended, "{:?}", out.error);
    assert_eq!(first.asked(), ["cow_think", "cow_think"], "c1 asked, c2 allowed, c3 interrupted");

    let (records, _) = app.store().open(&sid).await.unwrap();
    let journal = Journal::fold(records).unwrap();
    assert_eq!(journal.allowed_exact.len(), 1, "{:?}", journal.allowed_exact);
    let (tool, digest) = journal.allowed_exact[0].clone();
    assert_eq!((tool.as_str(), digest.len()), ("cow_think", 64));
    let text = std::fs::read_to_string(app.store().journal_path(&sid)).unwrap();
    let line = text.lines().find(|l| l.contains(r#""always_exact""#)).expect("the answer is journaled");
    assert!(line.contains(&format!(r#""input_digest":"{digest}""#)), "{line}");

    // On resume the pending c3 is asked again (GATE-12); a later call with c1's arguments is not.
    let provider = Arc::new(ScriptedProvider::new([turn(vec![think("c4", r#"{"message":"moo"}"#)]), done()]));
    let (gate, second) = RecordingGate::new(&[Decision::Decline]);
    let out = app.agent("tool", &provider, gate).await.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(second.asked(), ["cow_think"]);
    assert!(!declined(&provider, "c4"));
}

#[tokio::test]
async fn exact_2_a_tool_wide_answer_is_not_restored_when_resumed_under_remember_exact() {
    let app = App::new();
    let sid = SessionId::new("tightened").unwrap();
    let provider = Arc::new(ScriptedProvider::new([turn(vec![
        think("c1", r#"{"message":"moo"}"#),
        call_with("c2", "feed", r#"{"cow":"daisy"}"#),
    ])]));
    let (gate, _) = RecordingGate::new(&[Decision::ForConversation, Decision::Abort]);
    let out = app.agent("tool", &provider, gate).await.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(out.reason, TerminalReason::Suspended, "{:?}", out.error);
    // Resumed after the operator tightened the setting: the pending c2 and a new call are both asked.
    let provider = Arc::new(ScriptedProvider::new([turn(vec![think("c3", r#"{"message":"moo"}"#)]), done()]));
    let (gate, log) = RecordingGate::new(&[Decision::Decline, Decision::Decline]);
    let out = app.agent("exact", &provider, gate).await.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(log.asked(), ["feed", "cow_think"], "cow_think's tool-wide answer was not restored");
}

fn answer(text: &str) -> Response {
    Response::new(vec![Block::text(text)], StopReason::EndTurn, Usage::default())
}

#[tokio::test]
async fn exact_5_a_reset_drops_exact_allowances() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![think("c1", r#"{"message":"moo"}"#)]),
        answer("first"),
        turn(vec![think("c2", r#"{"message":"moo"}"#)]),
        answer("after the reset"),
    ]));
    let (gate, log) = RecordingGate::new(&[Decision::ForConversationExact, Decision::Once]);
    let steps = Arc::new(Mutex::new(vec![NextStep::Reset(Some("fresh".into()))]));
    let options = RunOptions::new().with_continuation(move |_: &fisk_ai::agent::TurnEnd| {
        let step = steps.lock().unwrap().pop().unwrap_or(NextStep::End);
        async move { step }
    });
    let out = app.agent("tool", &provider, gate).await.run("go", options).await;
    assert_eq!(out.answer.as_deref(), Some("after the reset"), "{:?}", out.error);
    assert_eq!(log.asked(), ["cow_think", "cow_think"], "the same arguments are asked again after /clear");
}

#[test]
fn exact_2_remember_takes_tool_or_exact_and_nothing_else() {
    let parsed = fisk_ai::Config::from_yaml_str("harness:\n  approvals: {remember: exact}\n").unwrap();
    assert_eq!(parsed.harness.approvals.remember, Remember::Exact);
    let default = fisk_ai::Config::from_yaml_str("harness: {}\n").unwrap();
    assert_eq!(default.harness.approvals.remember, Remember::Tool);
    let err = fisk_ai::Config::from_yaml_str("harness:\n  approvals:\n    remember: args\n").unwrap_err();
    assert!(err.to_string().contains("`tool` or `exact`") && err.location().is_some_and(|l| l.line == 3), "{err}");
    let err = fisk_ai::Config::from_yaml_str("harness:\n  approvals:\n    bucket: B\n").unwrap_err();
    assert!(err.to_string().contains("bucket"), "a key of a later issue is refused until built: {err}");
}
