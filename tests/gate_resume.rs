//! Recorded gate answers on resume (GATE-6's first step, GATE-12, GATE-14) through `Agent::run` and
//! `Agent::resume`, with a recording gate double and the fake `gate-app` whose commands append their name to a
//! `ran` file.

mod common;

use common::gate::{GateApp, RecordingGate};
use common::turns::{call, done, turn};
use fisk_ai::Error;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::gate::{ConfirmGate, Decision};
use fisk_ai::llm::{Block, Message, ScriptedProvider, StopReason, Usage};
use fisk_ai::session::{
    AssistantRecord, ConfirmChoice, ConfirmRecord, FileSessionStore, JournalRecord, Meta, Payload, SessionId,
    SessionStore, ToolResultRecord,
};
use std::sync::Arc;

/// The shared fake `gate-app`, plus a session store in its directory.
struct Setup(GateApp);

impl std::ops::Deref for Setup {
    type Target = GateApp;
    fn deref(&self) -> &GateApp {
        &self.0
    }
}

impl Setup {
    fn new() -> Self {
        Setup(GateApp::new())
    }

    fn store(&self) -> FileSessionStore {
        FileSessionStore::new(self.dir.path().join("runs"))
    }

    async fn agent(&self, provider: &Arc<ScriptedProvider>, gate: impl ConfirmGate + 'static) -> Agent {
        let b = Agent::builder().config(self.config()).provider_arc(provider.clone()).session_store(self.store());
        b.gate(gate).build().await.unwrap()
    }

    /// Write a journal by hand: the meta record of `agent`'s fingerprint, then `rest`.
    async fn journal(&self, agent: &Agent, id: &SessionId, rest: Vec<Payload>) -> Result<(), Error> {
        let mut w = self.store().create(id).await?;
        w.append(&JournalRecord::new(1, Payload::Meta(Meta::new(id.as_str(), agent.fingerprint().clone(), "p"))))
            .await?;
        for (i, p) in rest.into_iter().enumerate() {
            w.append(&JournalRecord::new(i as u64 + 2, p)).await?;
        }
        Ok(())
    }
}

fn assistant(blocks: Vec<Block>) -> Payload {
    Payload::Assistant(AssistantRecord::new(1, Message::assistant(blocks), StopReason::ToolUse, Usage::default()))
}

fn answer(choice: ConfirmChoice, id: &str, tool: &str) -> Payload {
    Payload::Confirm(ConfirmRecord::answer(choice, id, tool, tool, "ai:confirm"))
}

#[tokio::test]
async fn gate_12_14_an_interrupted_run_resumes_keeping_its_allowance_and_asks_the_pending_call_again() {
    let s = Setup::new();
    let sid = SessionId::new("interrupted").unwrap();
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("c1", "alpha"), call("c2", "beta")])]));
    let (gate, first) = RecordingGate::new(&[Decision::ForConversation, Decision::Abort]);
    let out = s.agent(&provider, gate).await.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(out.reason, TerminalReason::Suspended, "{:?}", out.error);
    assert_eq!(first.asked(), ["alpha", "beta"]);
    assert_eq!(s.ran(), ["alpha"], "the interrupted call did not run");

    // On resume beta is asked again (GATE-12) and declined; alpha's allowance survives (GATE-14), so its next call
    // runs without asking.
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("c3", "alpha")]), done()]));
    let (gate, second) = RecordingGate::new(&[Decision::Decline]);
    let out = s.agent(&provider, gate).await.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(second.asked(), ["beta"]);
    assert_eq!(s.ran(), ["alpha", "alpha"], "beta never ran");
}

#[tokio::test]
async fn gate_6_14_a_recorded_answer_comes_before_the_allowance_and_the_no_operator_check() {
    let s = Setup::new();
    let sid = SessionId::new("recorded").unwrap();
    let setup = s.agent(&Arc::new(ScriptedProvider::new([])), RecordingGate::new(&[]).0).await;
    // c0 allowed alpha for the conversation and ran; then the run stopped with c1 (alpha) answered "decline" and
    // c2 (beta) answered "once", neither run yet.
    s.journal(
        &setup,
        &sid,
        vec![
            assistant(vec![call("c0", "alpha")]),
            answer(ConfirmChoice::Always, "c0", "alpha"),
            Payload::ToolResult(ToolResultRecord::new("c0", "ran alpha", false, false)),
            assistant(vec![call("c1", "alpha"), call("c2", "beta")]),
            answer(ConfirmChoice::Decline, "c1", "alpha"),
            answer(ConfirmChoice::Once, "c2", "beta"),
        ],
    )
    .await
    .unwrap();
    // Nobody can be asked now, and this gate would approve anything if it were asked anyway.
    let (gate, log) = RecordingGate::unreachable();
    let provider = Arc::new(ScriptedProvider::new([done()]));
    let out = s.agent(&provider, gate).await.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert!(log.asked().is_empty(), "recorded answers are applied without asking");
    assert_eq!(s.ran(), ["beta"], "the recorded decline beat alpha's allowance; the recorded once beat 'no operator'");
    let c1 = out.messages.iter().flat_map(|m| &m.content).find_map(|b| match b {
        Block::ToolResult { tool_use_id, content, .. } if tool_use_id == "c1" => Some(content.clone()),
        _ => None,
    });
    assert!(c1.unwrap().contains("operator declined"), "c1 got the GATE-10 decline");
}
