//! The confirmation gate as the agent loop applies it (GATE-6, GATE-10..14, invariant 6), through `Agent::run`
//! and `Agent::resume` with a recording gate double and a fake application whose commands append their name to a
//! `ran` file, so "the command never ran" is observed on disk rather than inferred from a result.

mod common;

use common::gate::{GateApp, RecordingGate};
use common::turns::{call, done, turn};
use fisk_ai::agent::{Agent, RunEvent, RunOptions, TerminalReason};
use fisk_ai::async_trait;
use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision};
use fisk_ai::llm::{Block, Message, Role, ScriptedProvider};
use fisk_ai::tool::{CallContext, CancellationToken, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use mockall::mock;
use std::sync::Arc;

/// The shared fake `gate-app`, plus how these tests build their agent.
struct App(GateApp);

impl std::ops::Deref for App {
    type Target = GateApp;
    fn deref(&self) -> &GateApp {
        &self.0
    }
}

impl App {
    fn new() -> Self {
        App(GateApp::new())
    }

    async fn agent(&self, provider: &Arc<ScriptedProvider>, gate: impl ConfirmGate + 'static) -> Agent {
        Agent::builder().config(self.config()).provider_arc(provider.clone()).gate(gate).build().await.unwrap()
    }
}

/// The tool results the loop sent back, by call id, from the conversation at the end of the run.
fn result_of(messages: &[Message], id: &str) -> String {
    for m in messages.iter().filter(|m| m.role == Role::User) {
        for b in &m.content {
            if let Block::ToolResult { tool_use_id, content, .. } = b
                && tool_use_id == id
            {
                return content.clone();
            }
        }
    }
    panic!("no result for {id}");
}

/// The GATE-10 reason of a declined call's result, or `None` when the call was not declined.
fn decline_reason(messages: &[Message], id: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(&result_of(messages, id)).ok()?;
    (v["allowed"] == false).then(|| v["reason"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn gate_11_an_allowance_for_one_tool_does_not_cover_another_gated_tool() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![call("1", "alpha")]),
        turn(vec![call("2", "beta"), call("3", "alpha")]),
        done(),
    ]));
    // alpha is allowed for the conversation; beta must still be asked, and is declined.
    let (gate, log) = RecordingGate::new(&[Decision::ForConversation, Decision::Decline]);
    let out = app.agent(&provider, gate).await.run("x", RunOptions::default()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(log.asked(), ["alpha", "beta"], "beta was asked although alpha was allowed");
    assert_eq!(app.ran(), ["alpha", "alpha"], "beta never ran; alpha's second call ran without asking");
    assert!(decline_reason(&out.messages, "2").unwrap().contains("operator declined"));
}

#[tokio::test]
async fn gate_10_a_decline_is_final_for_that_call_only() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", "alpha"), call("2", "alpha")]), done()]));
    let (gate, log) = RecordingGate::new(&[Decision::Decline, Decision::Once]);
    let out = app.agent(&provider, gate).await.run("x", RunOptions::default()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(log.asked(), ["alpha", "alpha"], "the next call of the declined tool is asked again");
    assert_eq!(app.ran(), ["alpha"], "only the approved call ran");
    let reason = decline_reason(&out.messages, "1").unwrap();
    assert!(reason.contains("final") && reason.contains("do not retry"), "{reason}");
    assert_eq!(decline_reason(&out.messages, "2"), None);
    assert!(result_of(&out.messages, "2").contains("ran alpha"));
}

#[tokio::test]
async fn gate_9_once_runs_one_call_and_leaves_the_next_one_gated() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", "alpha"), call("2", "alpha")]), done()]));
    let (gate, log) = RecordingGate::new(&[Decision::Once, Decision::Decline]);
    let out = app.agent(&provider, gate).await.run("x", RunOptions::default()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(log.asked(), ["alpha", "alpha"], "once is not an allowance");
    assert_eq!(app.ran(), ["alpha"]);
}

#[tokio::test]
async fn invariant_6_gate_6_nobody_to_ask_declines_without_asking_and_runs_nothing() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", "alpha"), call("2", "beta")]), done()]));
    // This gate would approve if asked: only the loop's own "cannot ask" check keeps the commands from running.
    let (gate, log) = RecordingGate::unreachable();
    let out = app.agent(&provider, gate).await.run("x", RunOptions::default()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert!(log.asked().is_empty(), "a gate that cannot ask is never asked");
    assert!(log.can_ask_calls() >= 2, "the loop checked whether anyone can be asked");
    assert!(app.ran().is_empty(), "nothing ran: {:?}", app.ran());
    for id in ["1", "2"] {
        assert!(decline_reason(&out.messages, id).unwrap().contains("no operator"));
    }
}

#[tokio::test]
async fn invariant_6_gate_12_a_decline_or_an_abort_from_the_gate_never_runs_the_command() {
    // A gate maps end of input, an interrupt, a timeout or an error to Decline or Abort; neither may run anything.
    for (decision, reason) in [(Decision::Decline, TerminalReason::Completed), (Decision::Abort, TerminalReason::Error)]
    {
        let app = App::new();
        let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", "alpha")]), done()]));
        let (gate, log) = RecordingGate::new(&[decision]);
        let out = app.agent(&provider, gate).await.run("x", RunOptions::default()).await;
        assert_eq!(out.reason, reason, "{decision:?}: {:?}", out.error);
        assert_eq!(log.asked(), ["alpha"]);
        assert!(app.ran().is_empty(), "{decision:?} ran the command");
    }
}

/// An ungated custom tool that cancels the run when called, so the next gated call meets a cancelled run.
struct Canceller {
    spec: ToolSpec,
    token: CancellationToken,
}

#[async_trait]
impl Tool for Canceller {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        self.token.cancel();
        ToolOutput::success("cancelled the run")
    }
}

/// A run whose first call cancels it and whose second call is the gated `alpha`; returns alpha's decline reason.
async fn cancelled_then_gated(gate: RecordingGate) -> (String, Vec<String>) {
    let app = App::new();
    let token = CancellationToken::new();
    let canceller = Canceller {
        spec: ToolSpec::new("cancel", ToolKind::Custom, serde_json::json!({"type": "object"})),
        token: token.clone(),
    };
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", "cancel"), call("2", "alpha")]), done()]));
    let agent = Agent::builder()
        .config(app.config())
        .provider_arc(provider.clone())
        .gate(gate)
        .tool(canceller)
        .build()
        .await
        .unwrap();
    let out = agent.run("x", RunOptions::new().with_cancel(token)).await;
    (decline_reason(&out.messages, "2").expect("alpha was declined"), app.ran())
}

#[tokio::test]
async fn gate_6_no_operator_is_checked_before_a_cancelled_run() {
    let (gate, log) = RecordingGate::unreachable();
    let (reason, ran) = cancelled_then_gated(gate).await;
    assert!(reason.contains("no operator"), "{reason}");
    assert!(log.asked().is_empty());
    assert!(ran.is_empty());
}

#[tokio::test]
async fn gate_6_a_cancelled_run_declines_without_asking() {
    let (gate, log) = RecordingGate::new(&[Decision::Once]);
    let (reason, ran) = cancelled_then_gated(gate).await;
    assert!(reason.contains("cancelled"), "{reason}");
    assert!(log.asked().is_empty(), "nobody is asked once the run is cancelled");
    assert!(ran.is_empty());
}

#[tokio::test]
async fn gate_6_an_allowance_is_applied_before_the_no_operator_check() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![call("1", "alpha")]),
        turn(vec![call("2", "alpha"), call("3", "beta")]),
        done(),
    ]));
    let (gate, log) = RecordingGate::new(&[Decision::ForConversation]);
    // Once alpha is allowed, the operator goes away: alpha keeps running, beta is declined for want of an operator.
    let switch = log.clone();
    let events = move |e: &RunEvent<'_>| {
        if let RunEvent::Allowed { .. } = e {
            switch.set_can_ask(false);
        }
    };
    let out = app.agent(&provider, gate).await.run("x", RunOptions::new().with_events(events)).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(log.asked(), ["alpha"]);
    assert_eq!(app.ran(), ["alpha", "alpha"]);
    assert_eq!(decline_reason(&out.messages, "2"), None, "the allowance ran alpha without an operator");
    assert!(decline_reason(&out.messages, "3").unwrap().contains("no operator"));
}

mock! {
    Gate {}

    #[async_trait]
    impl ConfirmGate for Gate {
        fn can_ask(&self) -> bool;
        async fn confirm(&self, req: &ConfirmRequest) -> Decision;
    }
}

#[tokio::test]
async fn gate_6_7_an_askable_gate_is_asked_exactly_once_with_the_command_and_trigger() {
    let app = App::new();
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", "beta")]), done()]));
    let mut gate = MockGate::new();
    // The builder asks too (the GATE-5 start warning), so only "at least once" is fixed here; the order of the
    // loop's own checks is pinned by the recording-gate tests above.
    gate.expect_can_ask().times(1..).return_const(true);
    gate.expect_confirm()
        .withf(|r| r.tool == "beta" && r.command == "beta" && r.command_line == "beta" && r.trigger == "ai:confirm")
        .times(1)
        .return_const(Decision::Once);
    let out = app.agent(&provider, gate).await.run("x", RunOptions::default()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(app.ran(), ["beta"]);
}
