//! Compaction (COMP-1..9) over a scripted provider, and its request prefix over the real Anthropic provider on
//! loopback HTTP: the trigger, intact call/result pairs, the journal a resume folds without a model call, the
//! byte-identical prefix, and a failing summary.

mod common;
#[cfg(feature = "anthropic")]
mod fake_anthropic;

use common::tools::FakeTool;
use common::turns::call;
use fisk_ai::agent::{Agent, DEFAULT_COMPACTION_PROMPT, RunEvent, RunOptions, TerminalReason};
use fisk_ai::llm::{
    Block, Message, ProviderError, ProviderErrorKind, RecordedRequest, Response, Role, ScriptedProvider, StopReason,
    Usage,
};
use fisk_ai::session::{FileSessionStore, Journal, SessionId, SessionStore};
use fisk_ai::tool::{CancellationToken, ToolKind, ToolSpec};
use fisk_ai::{Config, ErrorKind};
use std::sync::{Arc, Mutex};

/// A window of 1000 tokens, compaction at half of it, one turn kept.
const COMPACTION: &str =
    "harness:\n  compaction:\n    trigger: 0.5\n    keep_recent_turns: 1\n    context_window: 1000\n";

fn config(extra: &str) -> Config {
    Config::from_yaml_str(&format!("identity: long\nsystem_prompt: Be brief.\nllm:\n  model: test-model\n{extra}"))
        .unwrap()
}

/// A tool call turn whose request and reply together counted `tokens`.
fn calling(id: &str, tokens: u64) -> Response {
    Response::new(vec![call(id, "probe")], StopReason::ToolUse, Usage { input_tokens: tokens, ..Usage::default() })
}

fn text(t: &str, stop: StopReason) -> Response {
    Response::new(vec![Block::text(t)], stop, Usage { input_tokens: 50, output_tokens: 7, ..Usage::default() })
}

async fn agent(provider: &Arc<ScriptedProvider>, extra: &str) -> Agent {
    let b = Agent::builder().config(config(extra)).provider_arc(provider.clone());
    b.tool(probe()).build().await.unwrap()
}

/// The test agent over `provider`, journaling to `store`.
async fn checkpointed(provider: &Arc<ScriptedProvider>, store: FileSessionStore) -> Agent {
    let b = Agent::builder().config(config(COMPACTION)).provider_arc(provider.clone()).session_store(store);
    b.tool(probe()).build().await.unwrap()
}

/// An in-process tool answering `ok`.
fn probe() -> FakeTool {
    FakeTool(ToolSpec::new("probe", ToolKind::Custom, serde_json::json!({"type": "object"})))
}

fn is_summary_request(r: &RecordedRequest) -> bool {
    r.system == [DEFAULT_COMPACTION_PROMPT.to_owned()]
}

/// Every tool call in `messages` is answered in the next message, and every result answers a call just before it.
fn assert_pairs_intact(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        for (id, _, _) in m.tool_uses() {
            let next = messages.get(i + 1).expect("a call's results follow it");
            assert!(
                next.content.iter().any(|b| matches!(b, Block::ToolResult { tool_use_id, .. } if tool_use_id == id)),
                "call {id} lost its result"
            );
        }
        for b in &m.content {
            if let Block::ToolResult { tool_use_id, .. } = b {
                let calls = i.checked_sub(1).map(|p| messages[p].tool_uses().any(|(id, _, _)| id == tool_use_id));
                assert_eq!(calls, Some(true), "result {tool_use_id} lost its call");
            }
        }
    }
}

/// The compaction events seen: tokens before and after, messages replaced.
type Seen = Arc<Mutex<Vec<(u64, u64, usize)>>>;

/// Records the compaction events.
fn compactions(seen: &Seen) -> impl Fn(&RunEvent<'_>) + Send + Sync + 'static {
    let seen = seen.clone();
    move |e: &RunEvent<'_>| {
        if let RunEvent::Compacted { tokens_before, tokens_after, replaced, .. } = e {
            seen.lock().unwrap().push((*tokens_before, *tokens_after, *replaced));
        }
    }
}

#[tokio::test]
async fn comp_1_the_trigger_fires_when_the_estimate_reaches_its_share_of_the_window_and_not_before() {
    // Each result ("ok") adds 2 bytes, under one token: the estimates are the counts reported, 400, 490, then 520.
    let provider = Arc::new(ScriptedProvider::new([
        calling("c1", 400),
        calling("c2", 490),
        calling("c3", 520),
        text("SUMMARY: probed three times", StopReason::EndTurn),
        text("all probed", StopReason::EndTurn),
    ]));
    let agent = agent(&provider, COMPACTION).await;
    let seen: Seen = Arc::default();
    let outcome = agent.run("probe it", RunOptions::new().with_events(compactions(&seen))).await;
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    let requests = provider.requests();
    let kinds: Vec<bool> = requests.iter().map(is_summary_request).collect();
    assert_eq!(kinds, [false, false, false, true, false], "490 of 500 does not trigger, 520 does");
    // The prompt and the first two calls and results (16 bytes, 4 tokens) gave way to the summary message.
    let summary = requests[4].messages[0].text().len() as u64;
    assert_eq!(*seen.lock().unwrap(), [(520, 520 - 4 + summary / 4, 5)]);
    assert_eq!(outcome.stats.compactions, 1);
    assert_eq!(outcome.stats.llm_calls, 4, "the summarising call is no iteration");
    assert_eq!(outcome.stats.usage.input_tokens, 400 + 490 + 520 + 50 + 50, "but its tokens count");
}

#[tokio::test]
async fn comp_3_the_kept_turn_keeps_its_results_and_the_summariser_sees_every_older_call() {
    let provider = Arc::new(ScriptedProvider::new([
        calling("c1", 400),
        calling("c2", 520),
        text("SUMMARY-TEXT", StopReason::EndTurn),
        text("done", StopReason::EndTurn),
    ]));
    let outcome = agent(&provider, COMPACTION).await.run("probe twice", RunOptions::new()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    let requests = provider.requests();
    let asked: serde_json::Value = serde_json::from_str(&requests[2].messages[0].text()).unwrap();
    assert_eq!(
        asked,
        serde_json::json!([
            {"from": "user", "kind": "text", "text": "probe twice"},
            {"from": "assistant", "kind": "tool_call", "tool": "probe", "text": "{}"},
            {"from": "tool", "kind": "tool_result", "text": "ok"},
        ]),
        "the older turn, and not the kept one"
    );
    assert!(requests[2].tools.is_empty(), "the summariser gets no tools");
    let after = &requests[3].messages;
    assert_eq!(after.len(), 3, "summary, the kept turn, its results");
    assert_eq!(after[0].role, Role::User);
    assert!(after[0].text().contains("SUMMARY-TEXT"));
    assert_pairs_intact(after);
    assert_eq!(after[1].tool_uses().next().map(|(id, _, _)| id), Some("c2"));
    assert_eq!(outcome.messages.len(), 4, "the outcome holds the compacted conversation and the answer");
}

#[tokio::test]
async fn comp_4_a_resume_folds_the_journaled_summary_and_calls_the_model_only_for_what_is_left() {
    let dir = common::fresh_dir("compaction-resume");
    let provider = Arc::new(ScriptedProvider::new([
        calling("c1", 400),
        calling("c2", 520),
        text("SUMMARY-TEXT", StopReason::EndTurn),
        calling("c3", 300),
    ]));
    let store = FileSessionStore::new(&dir);
    let agent = checkpointed(&provider, store.clone()).await;
    // Suspend once the compaction happened: the run stops at the next boundary, after c3's result.
    let suspend = CancellationToken::new();
    let trip = suspend.clone();
    let options = RunOptions::new()
        .with_checkpoint(SessionId::new("long-1").unwrap())
        .with_suspend(suspend)
        .with_events(move |e: &RunEvent<'_>| {
            if matches!(e, RunEvent::Compacted { .. }) {
                trip.cancel();
            }
        });
    let first = agent.run("probe", options).await;
    assert_eq!(first.reason, TerminalReason::Suspended, "{:?}", first.error);
    let journal = Journal::fold(store.read(&SessionId::new("long-1").unwrap()).await.unwrap()).unwrap();
    assert_eq!(journal.messages, first.messages, "the journal folds to the compacted conversation");
    assert_eq!(journal.compactions, 1);

    let next = Arc::new(ScriptedProvider::new([text("finished", StopReason::EndTurn)]));
    let resumed = checkpointed(&next, store).await;
    let outcome = resumed.resume(&SessionId::new("long-1").unwrap(), RunOptions::new()).await.unwrap();
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    let requests = next.requests();
    assert_eq!(requests.len(), 1, "no summary is asked for again");
    assert_eq!(requests[0].messages, first.messages, "the same conversation as before the suspend");
    assert!(requests[0].messages[0].text().contains("SUMMARY-TEXT"));
    assert_eq!(outcome.stats.compactions, 1);
}

#[tokio::test]
async fn comp_7_a_failing_summary_ends_the_turn_clearly_and_keeps_every_message() {
    for failure in [
        Err(ProviderError::new(ProviderErrorKind::Status, "529 overloaded")),
        Ok(text("", StopReason::EndTurn)),
        Ok(text("half a summ", StopReason::MaxTokens)),
        Ok(text("I can't help with that.", StopReason::Refusal)),
        Ok(text("The user asked", StopReason::ContextWindowExceeded)),
    ] {
        let provider =
            Arc::new(ScriptedProvider::with_results([Ok(calling("c1", 400)), Ok(calling("c2", 520)), failure]));
        let outcome = agent(&provider, COMPACTION).await.run("probe", RunOptions::new()).await;
        assert_eq!(outcome.reason, TerminalReason::Error);
        let error = outcome.error.unwrap().to_string();
        assert!(error.contains("compaction failed") && error.contains("kept whole"), "{error}");
        assert_eq!(outcome.messages.len(), 5, "prompt, two turns and their results: nothing dropped");
        assert_pairs_intact(&outcome.messages);
        assert_eq!(outcome.stats.compactions, 0);
    }
}

#[tokio::test]
async fn comp_2_compaction_needs_a_known_context_window_and_says_where_to_give_one() {
    let provider = Arc::new(ScriptedProvider::new([]));
    let yaml =
        "identity: long\nsystem_prompt: s\nllm:\n  model: test-model\nharness:\n  compaction:\n    trigger: 0.7\n";
    let err = Agent::builder()
        .config(Config::from_yaml_str(yaml).unwrap())
        .provider_arc(provider)
        .tool(probe())
        .build()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("harness.compaction.context_window"), "{err}");
    assert_eq!(err.location().map(|l| l.line), Some(7), "within the block: {err}");
}

#[test]
fn comp_2_bad_settings_are_refused_where_they_are_written() {
    for (setting, needle) in [
        ("trigger: 0", "share above 0"),
        ("trigger: 1.5", "share above 0"),
        ("keep_recent_turns: 0", "at least 1"),
        ("window: 5", "unknown field"),
    ] {
        let yaml = format!("harness:\n  compaction:\n    {setting}\n");
        let err = Config::from_yaml_str(&yaml).unwrap_err();
        assert!(err.to_string().contains(needle), "{setting}: {err}");
        assert_eq!(err.location().map(|l| l.line), Some(3), "{setting}: {err}");
    }
    assert!(Config::from_yaml_str("harness: {}\n").unwrap().harness.compaction.is_none(), "off by default");
}

/// COMP-6 over the real Anthropic provider: everything before the messages is the same bytes before and after.
#[cfg(feature = "anthropic")]
#[tokio::test]
async fn comp_6_the_request_prefix_is_byte_identical_before_and_after_a_compaction() {
    use fake_anthropic::{FakeAnthropic, streamed_usage};
    use fisk_ai::llm::anthropic::AnthropicProvider;
    use serde_json::json;
    let tool_use = |id: &str| json!({"type": "tool_use", "id": id, "name": "probe", "input": {}});
    let server = FakeAnthropic::with_replies([
        streamed_usage(&[tool_use("c1")], "tool_use", 60_000, 10),
        streamed_usage(&[tool_use("c2")], "tool_use", 170_000, 10),
        streamed_usage(&[json!({"type": "text", "text": "SUMMARY-TEXT"})], "end_turn", 900, 40),
        streamed_usage(&[json!({"type": "text", "text": "done"})], "end_turn", 2_000, 5),
    ])
    .await;
    let provider = AnthropicProvider::new("k").with_base_url(server.url()).unwrap();
    let yaml = "identity: long\nsystem_prompt: Be brief.\nllm:\n  model: claude-haiku-4-5\n  budget:\n    max_tokens: 1000000\n\
                harness:\n  compaction:\n    keep_recent_turns: 1\n";
    let agent = Agent::builder().config(Config::from_yaml_str(yaml).unwrap()).provider(provider).tool(probe()).build();
    let outcome = agent.await.unwrap().run("probe", RunOptions::new()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    let bodies: Vec<Vec<u8>> = server.requests().into_iter().map(|r| r.body.to_vec()).collect();
    assert_eq!(bodies.len(), 4);
    let prefix = |body: &[u8]| {
        let at = body.windows(12).position(|w| w == br#""messages":["#).expect("a messages array");
        body[..at].to_vec()
    };
    assert_eq!(prefix(&bodies[1]), prefix(&bodies[3]), "the prefix before and after the compaction");
    assert_ne!(prefix(&bodies[2]), prefix(&bodies[1]), "the summarising request is a separate one");
    let last: serde_json::Value = serde_json::from_slice(&bodies[3]).unwrap();
    assert!(last["messages"][0].to_string().contains("SUMMARY-TEXT"), "{}", last["messages"][0]);
}

#[test]
fn comp_4_a_compaction_record_that_does_not_fit_its_journal_is_refused_naming_it() {
    use fisk_ai::session::{CompactionRecord, JournalRecord, Payload};
    let meta = br#"{"seq":1,"protocol":"io.choria.fisk-ai.v1.session.meta","meta":{"version":4,"run_id":"held","created":"2026-11-30T00:00:00Z","fingerprint":{"provider":"anthropic","model":"m","system_hash":"","tools_hash":"","thinking_mode":"off","max_tokens":1,"max_iterations":1},"prompt":"go"}}"#;
    let meta = JournalRecord::from_json(meta).unwrap();
    for replaced in [0, 2, 7] {
        let record = CompactionRecord::new(replaced, Message::user("summary"), Usage::default(), (10, 5));
        let err = Journal::fold([meta.clone(), JournalRecord::new(2, Payload::Compaction(record))]).unwrap_err();
        assert!(err.to_string().contains(&format!("compaction record 2 replaces {replaced} of 1 messages")), "{err}");
    }
    // A summary that is not a plain user message would be refused by the provider: refused here first.
    let forged = CompactionRecord::new(1, Message::assistant(vec![Block::text("x")]), Usage::default(), (10, 5));
    let err = Journal::fold([meta.clone(), JournalRecord::new(2, Payload::Compaction(forged))]).unwrap_err();
    assert!(err.to_string().contains("not a plain user message"), "{err}");
    // The payload key is required by its protocol.
    let bare = br#"{"seq":2,"protocol":"io.choria.fisk-ai.v1.session.compaction"}"#;
    let err = JournalRecord::from_json(bare).unwrap_err();
    assert!(err.to_string().contains("has no compaction payload"), "{err}");
}

/// The long-chat demo configuration builds: its model is priced completely for its money budget, and the Anthropic
/// provider knows its window.
#[cfg(feature = "anthropic")]
#[tokio::test]
async fn comp_2_cost_4_the_long_chat_demo_configuration_builds() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cowsay/long.yaml");
    let mut config = Config::load(&path).unwrap();
    config.application_path = Some(common::root().join("examples/cowsay/cowsay"));
    let provider = fisk_ai::llm::anthropic::AnthropicProvider::new("k");
    let agent = Agent::builder().config(config).provider(provider).build().await.unwrap();
    assert_eq!(agent.config().harness.compaction.as_ref().map(|c| c.keep_recent_turns), Some(4));
}

#[tokio::test]
async fn comp_7_a_failed_summarys_tokens_are_journaled_so_a_resume_still_counts_them() {
    let dir = common::fresh_dir("compaction-spent");
    let store = FileSessionStore::new(&dir);
    let provider = Arc::new(ScriptedProvider::new([
        calling("c1", 400),
        calling("c2", 520),
        text("half a summ", StopReason::MaxTokens),
    ]));
    let agent = checkpointed(&provider, store.clone()).await;
    let id = SessionId::new("spent-1").unwrap();
    let outcome = agent.run("probe", RunOptions::new().with_checkpoint(id.clone())).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    let journal = Journal::fold(store.read(&id).await.unwrap()).unwrap();
    assert_eq!(journal.usage, outcome.stats.usage, "the summary's 50 + 7 tokens are in the journal too");
    assert_eq!(journal.usage.input_tokens, 400 + 520 + 50);
    assert_eq!(journal.messages, outcome.messages, "and nothing was replaced");
}

#[tokio::test]
async fn comp_1_budget_3_the_budget_is_checked_after_the_summarising_call() {
    // 400 + 520 tokens, then a summary of 57: the budget of 970 is reached before the next model call.
    let provider = Arc::new(ScriptedProvider::new([
        calling("c1", 400),
        calling("c2", 520),
        text("SUMMARY", StopReason::EndTurn),
        text("never asked", StopReason::EndTurn),
    ]));
    let extra = format!("  budget:\n    max_tokens: 970\n{COMPACTION}");
    let outcome = agent(&provider, &extra).await.run("probe", RunOptions::new()).await;
    assert_eq!(outcome.reason, TerminalReason::Budget, "{:?}", outcome.error);
    assert_eq!(provider.requests().len(), 3, "no model call after the budget was spent");
    assert_eq!(outcome.stats.compactions, 1);
}
