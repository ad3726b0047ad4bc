//! Conversations through `Agent::run` with a continuation (LOOP-15, LOOP-16, CONV-1..4): follow-ups, resets, the
//! session rotation of a checkpointed reset, and resuming a chat only as a chat. The fake `gate-app` (commands
//! `alpha` and `beta`, both gated) runs for real; the model is scripted and the gate a recording double.

mod common;

use common::gate::{GateApp, RecordingGate};
use common::turns::{call, turn};
use fisk_ai::agent::{Agent, NextStep, RunEvent, RunOptions, TerminalReason, TurnEnd};
use fisk_ai::gate::Decision;
use fisk_ai::llm::{Block, Message, Response, Role, ScriptedProvider, StopReason, Usage};
use fisk_ai::session::{FileSessionStore, Journal, SessionId, SessionStore};
use fisk_ai::tool::CancellationToken;
use std::sync::{Arc, Mutex};

fn answer(text: &str) -> Response {
    Response::new(vec![Block::text(text)], StopReason::EndTurn, Usage { output_tokens: 5, ..Usage::default() })
}

/// `gate-app` with at most one model call per prompt, so a follow-up only runs when it extends the cap.
fn setup() -> GateApp {
    GateApp::new()
}

fn store(app: &GateApp) -> FileSessionStore {
    FileSessionStore::new(app.dir.path().join("runs"))
}

async fn agent(app: &GateApp, provider: &Arc<ScriptedProvider>, gate: RecordingGate) -> Agent {
    let mut config = app.config();
    config.llm.budget.max_iterations = 2;
    let b = Agent::builder().config(config).provider_arc(provider.clone()).session_store(store(app));
    b.gate(gate).build().await.unwrap()
}

/// A continuation answering from `steps` in order (then `End`), keeping what it was told.
#[derive(Clone, Default)]
struct Script {
    steps: Arc<Mutex<Vec<NextStep>>>,
    told: Arc<Mutex<Vec<TurnEnd>>>,
}

impl Script {
    fn new(steps: Vec<NextStep>) -> Self {
        let mut steps = steps;
        steps.reverse();
        Script { steps: Arc::new(Mutex::new(steps)), told: Arc::default() }
    }

    fn options(&self) -> RunOptions {
        let me = self.clone();
        RunOptions::new().with_continuation(move |t: &TurnEnd| {
            me.told.lock().unwrap().push(t.clone());
            let step = me.steps.lock().unwrap().pop().unwrap_or(NextStep::End);
            async move { step }
        })
    }

    fn told(&self) -> Vec<TurnEnd> {
        self.told.lock().unwrap().clone()
    }
}

/// The text of each message of a request, as `role: text` (tool blocks by their ids).
fn shown(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let parts: Vec<String> = m
                .content
                .iter()
                .map(|b| match b {
                    Block::Text { text } => text.clone(),
                    Block::ToolUse { id, .. } => format!("call {id}"),
                    Block::ToolResult { tool_use_id, is_error, .. } => format!("result {tool_use_id} {is_error}"),
                    _ => "other".to_owned(),
                })
                .collect();
            format!("{}: {}", if m.role == Role::User { "user" } else { "assistant" }, parts.join(" | "))
        })
        .collect()
}

#[tokio::test]
async fn conv_1_a_follow_up_carries_the_earlier_turns_and_extends_the_iteration_cap() {
    let app = setup();
    // Turn one takes both model calls the cap allows; the follow-up runs only because it extends the cap.
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![call("c1", "alpha")]),
        answer("first"),
        turn(vec![call("c2", "alpha")]),
        answer("second"),
    ]));
    let (gate, log) = RecordingGate::new(&[Decision::ForConversation]);
    let script = Script::new(vec![NextStep::FollowUp("and again?".into())]);
    let out = agent(&app, &provider, gate).await.run("go", script.options()).await;
    assert_eq!((out.reason, out.answer.as_deref()), (TerminalReason::Completed, Some("second")), "{:?}", out.error);
    assert_eq!(log.asked(), ["alpha"], "the allowance holds across follow-ups");
    assert_eq!(app.ran(), ["alpha", "alpha"]);
    let third = &provider.requests()[2];
    assert_eq!(
        shown(&third.messages),
        ["user: go", "assistant: call c1", "user: result c1 false", "assistant: first", "user: and again?"]
    );
    let told = script.told();
    assert_eq!(told.len(), 2, "asked after each turn");
    assert_eq!((told[0].turn.llm_calls, told[0].total.llm_calls), (2, 2));
    assert_eq!((told[1].turn.llm_calls, told[1].total.llm_calls), (2, 4), "per turn and whole conversation");
    assert_eq!((told[1].turn.usage.output_tokens, told[1].total.usage.output_tokens), (5, 10));
    assert_eq!(out.stats.llm_calls, 4);
}

#[tokio::test]
async fn conv_2_a_reset_clears_the_conversation_and_the_remembered_answers() {
    let app = setup();
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![call("c1", "alpha")]),
        answer("first"),
        turn(vec![call("c2", "alpha")]),
        answer("after the reset"),
        answer("after a bare reset"),
    ]));
    let (gate, log) = RecordingGate::new(&[Decision::ForConversation, Decision::Once]);
    let script = Script::new(vec![
        NextStep::Reset(Some("fresh".into())),
        NextStep::Reset(None),
        NextStep::FollowUp("later".into()),
    ]);
    let events = Arc::new(Mutex::new(0usize));
    let seen = events.clone();
    let options = script.options().with_events(move |e: &RunEvent<'_>| {
        if matches!(e, RunEvent::Reset) {
            *seen.lock().unwrap() += 1;
        }
    });
    let out = agent(&app, &provider, gate).await.run("go", options).await;
    assert_eq!(out.answer.as_deref(), Some("after a bare reset"), "{:?}", out.error);
    assert_eq!(log.asked(), ["alpha", "alpha"], "the answer for the conversation was forgotten at the reset");
    let requests = provider.requests();
    assert_eq!(shown(&requests[2].messages), ["user: fresh"], "only the reset's prompt");
    assert_eq!(shown(&requests[4].messages), ["user: later"], "a bare reset waits for the next prompt");
    assert_eq!(requests[4].system, requests[0].system, "the system prompt stays");
    assert_eq!(requests[4].tools, requests[0].tools, "the tools stay");
    let told = script.told();
    assert!(told[2].cleared && !told[1].cleared, "asked again right after the bare reset");
    assert_eq!(*events.lock().unwrap(), 2);
}

#[tokio::test]
async fn conv_3_a_checkpointed_reset_rotates_the_session_and_the_old_one_stays_resumable_with_its_answers() {
    let app = setup();
    let provider =
        Arc::new(ScriptedProvider::new([turn(vec![call("c1", "alpha")]), answer("first"), answer("fresh answer")]));
    let (gate, _) = RecordingGate::new(&[Decision::ForConversation]);
    let script = Script::new(vec![NextStep::Reset(Some("fresh".into()))]);
    let rotated = Arc::new(Mutex::new(Vec::new()));
    let seen = rotated.clone();
    let sid = SessionId::new("chat-one").unwrap();
    let options = script.options().with_checkpoint(sid.clone()).with_events(move |e: &RunEvent<'_>| {
        if let RunEvent::SessionRotated { previous, next } = e {
            seen.lock().unwrap().push((previous.to_string(), next.to_string()));
        }
    });
    let out = agent(&app, &provider, gate).await.run("go", options).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    let rotated = rotated.lock().unwrap().clone();
    assert_eq!(rotated.len(), 1);
    let (previous, next) = rotated[0].clone();
    assert_eq!(previous, "chat-one");
    assert_eq!(out.session_id.as_ref().map(SessionId::as_str), Some(next.as_str()));

    let fold = |id: &str| {
        let store = store(&app);
        let id = SessionId::new(id).unwrap();
        async move { Journal::fold(store.open(&id).await.unwrap().0).unwrap() }
    };
    let old = fold("chat-one").await;
    assert!(old.is_interactive());
    assert_eq!((old.status(), old.next.as_deref()), ("suspended", Some(next.as_str())));
    assert_eq!(shown(&old.messages).last().unwrap(), "assistant: first", "it ends where the reset happened");
    assert_eq!(old.allowed, ["alpha"], "its own answers");
    let new = fold(&next).await;
    assert!(new.is_interactive());
    assert_eq!((new.meta.prompt.as_str(), new.previous.as_deref()), ("fresh", Some("chat-one")));
    assert!(new.allowed.is_empty(), "no answer from before the reset");
    assert_eq!(new.status(), "completed");

    // The old session resumes on its own, as a chat, keeping its answers: alpha runs without asking.
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("c9", "alpha")]), answer("resumed")]));
    let (gate, log) = RecordingGate::new(&[]);
    let script = Script::new(vec![NextStep::FollowUp("more".into())]);
    let resumer = agent(&app, &provider, gate).await;
    let out = resumer.resume(&SessionId::new("chat-one").unwrap(), script.options()).await.unwrap();
    assert_eq!(out.answer.as_deref(), Some("resumed"), "{:?}", out.error);
    assert!(log.asked().is_empty());
    assert_eq!(shown(&provider.requests()[0].messages).last().unwrap(), "user: more");
}

#[tokio::test]
async fn conv_4_a_chat_resumes_only_as_a_chat_and_a_one_shot_only_as_a_one_shot() {
    let app = setup();
    let chat = SessionId::new("a-chat").unwrap();
    let provider = Arc::new(ScriptedProvider::new([answer("hi")]));
    let out = agent(&app, &provider, RecordingGate::new(&[]).0)
        .await
        .run("go", Script::new(vec![]).options().with_checkpoint(chat.clone()))
        .await;
    assert_eq!(out.reason, TerminalReason::Completed);
    let one_shot = SessionId::new("a-run").unwrap();
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("c1", "alpha")])]));
    let (gate, _) = RecordingGate::new(&[Decision::Abort]);
    let out = agent(&app, &provider, gate).await.run("go", RunOptions::new().with_checkpoint(one_shot.clone())).await;
    assert_eq!(out.reason, TerminalReason::Suspended);

    let idle = Arc::new(ScriptedProvider::new([]));
    let agent = agent(&app, &idle, RecordingGate::new(&[]).0).await;
    let err = agent.resume(&chat, RunOptions::new()).await.unwrap_err().to_string();
    assert!(err.contains("a-chat is a chat session") && err.contains("chat --resume a-chat"), "{err}");
    let err = agent.resume(&one_shot, Script::new(vec![]).options()).await.unwrap_err().to_string();
    assert!(err.contains("a-run is a one-shot run") && err.contains("run --resume a-run"), "{err}");
    // A chat whose last turn completed reopens: nothing is sent until the next prompt.
    let script = Script::new(vec![]);
    let out = agent.resume(&chat, script.options()).await.unwrap();
    assert_eq!((out.reason, out.answer.as_deref()), (TerminalReason::Completed, Some("hi")));
    assert!(idle.requests().is_empty());
    assert_eq!(script.told().len(), 1, "asked for the next step first");
}

#[tokio::test]
async fn conv_1_a_cancelled_turn_ends_only_that_turn_and_a_cut_short_turns_calls_are_answered() {
    let app = setup();
    // Turn one's reply is cut at the output limit with a call in it (LOOP-6: not run); turn two is cancelled
    // before it starts; turn three answers.
    let cut = Response::new(vec![Block::text("partial"), call("c1", "alpha")], StopReason::MaxTokens, Usage::default());
    let provider = Arc::new(ScriptedProvider::new([cut, answer("done")]));
    let script = Script::new(vec![NextStep::FollowUp("go on".into()), NextStep::FollowUp("once more".into())]);
    let turns = Arc::new(Mutex::new(0usize));
    let options = script.options().with_continuation({
        let script = script.clone();
        let turns = turns.clone();
        Cancelling { script, turns }
    });
    let out = agent(&app, &provider, RecordingGate::new(&[]).0).await.run("go", options).await;
    assert_eq!(out.answer.as_deref(), Some("done"), "{:?}", out.error);
    let told = script.told();
    assert_eq!(told[0].reason, TerminalReason::Error, "LOOP-6's truncated reply");
    assert_eq!(told[1].error.as_deref(), Some("the turn was cancelled"));
    assert_eq!(told[1].turn.llm_calls, 0);
    assert!(app.ran().is_empty());
    let last = &provider.requests()[1];
    assert_eq!(
        shown(&last.messages),
        ["user: go", "assistant: partial | call c1", "user: result c1 true", "user: go on", "user: once more"]
    );

    // The run's own cancellation ends the conversation: the continuation is not asked.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let script = Script::new(vec![NextStep::FollowUp("never".into())]);
    let idle = Arc::new(ScriptedProvider::new([]));
    let out = agent(&app, &idle, RecordingGate::new(&[]).0).await.run("go", script.options().with_cancel(cancel)).await;
    assert_eq!(out.error.unwrap().to_string(), "the run was cancelled");
    assert!(script.told().is_empty());
}

/// The script's steps, with the second turn's token cancelled before it starts.
struct Cancelling {
    script: Script,
    turns: Arc<Mutex<usize>>,
}

#[fisk_ai::async_trait]
impl fisk_ai::agent::Continuation for Cancelling {
    async fn next(&self, turn: &TurnEnd) -> NextStep {
        self.script.told.lock().unwrap().push(turn.clone());
        self.script.steps.lock().unwrap().pop().unwrap_or(NextStep::End)
    }

    fn turn_cancel(&self, run: &CancellationToken) -> CancellationToken {
        let mut turns = self.turns.lock().unwrap();
        *turns += 1;
        let token = run.child_token();
        if *turns == 2 {
            token.cancel();
        }
        token
    }
}

#[tokio::test]
async fn conv_5_the_replys_deltas_reach_the_host_as_run_events_before_the_response() {
    let app = setup();
    let thinking = Block::Thinking { text: "hmm".into(), signature: "sig".into() };
    let reply = Response::new(vec![thinking, Block::text("the answer")], StopReason::EndTurn, Usage::default());
    let provider = Arc::new(ScriptedProvider::new([reply]));
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    let options = RunOptions::new().with_events(move |e: &RunEvent<'_>| match e {
        RunEvent::Delta { iteration, delta } => seen.lock().unwrap().push(format!("{iteration} {delta:?}")),
        RunEvent::LlmResponse { .. } => seen.lock().unwrap().push("response".to_owned()),
        _ => {}
    });
    let out = agent(&app, &provider, RecordingGate::new(&[]).0).await.run("go", options).await;
    assert_eq!(out.answer.as_deref(), Some("the answer"));
    assert_eq!(*log.lock().unwrap(), [r#"1 Thinking("hmm")"#, r#"1 Text("the answer")"#, "response"]);
}
