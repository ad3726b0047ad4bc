//! The agent loop against the scripted provider and the real cowsay demo app (LOOP, BUDGET, GATE, SEARCH).

mod common;

use common::gate::RecordingGate;

use common::*;
use fisk_ai::agent::{Agent, RunEvent, RunOptions, TerminalReason};
use fisk_ai::gate::Decision;
use fisk_ai::llm::{
    Block, Caps, Message, ModelProvider, ProviderError, Request, Response, Role, ScriptedProvider, StopReason, Usage,
};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, Warning, async_trait};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn config(extra: &str) -> Config {
    let app = root().join("examples/cowsay/cowsay");
    Config::from_yaml_str(&format!(
        "identity: cowsay\napplication_path: {}\nsystem_prompt: Tell cow jokes.\nllm:\n  model: test-model\n{extra}",
        app.display()
    ))
    .unwrap()
}

fn text(t: &str, stop: StopReason) -> Response {
    Response::new(vec![Block::text(t)], stop, Usage::default())
}

fn tool_use(id: &str, name: &str, input: &str) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input: ToolInput::from_json(input).unwrap() }
}

fn calls(blocks: Vec<Block>) -> Response {
    Response::new(blocks, StopReason::ToolUse, Usage::default())
}

fn usage(total_in: u64, out: u64) -> Usage {
    Usage { input_tokens: total_in, output_tokens: out, ..Usage::default() }
}

/// An in-process tool that counts its calls.
#[derive(Clone)]
struct Counter {
    spec: Arc<ToolSpec>,
    calls: Arc<AtomicUsize>,
}

impl Counter {
    fn new(name: &str) -> Self {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        Counter { spec: Arc::new(ToolSpec::new(name, ToolKind::Custom, schema)), calls: Arc::new(AtomicUsize::new(0)) }
    }
    fn gated(name: &str) -> Self {
        let mut c = Self::new(name);
        c.spec = Arc::new((*c.spec).clone().with_confirm(true));
        c
    }
    fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for Counter {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        self.calls.fetch_add(1, Ordering::SeqCst);
        ToolOutput::success("counted")
    }
}

async fn agent_with(provider: Arc<ScriptedProvider>, config: Config) -> Agent {
    Agent::builder().config(config).provider_arc(provider).build().await.unwrap()
}

fn results(msg: &Message) -> Vec<(String, String, bool)> {
    assert_eq!(msg.role, Role::User);
    msg.content
        .iter()
        .map(|b| match b {
            Block::ToolResult { tool_use_id, content, is_error } => (tool_use_id.clone(), content.clone(), *is_error),
            other => panic!("not a tool result: {other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn loop_1_2_7_a_plain_answer_completes_with_the_system_prompt_and_default_prompt() {
    let provider = Arc::new(ScriptedProvider::new([text("Moo.", StopReason::EndTurn)]));
    let agent = agent_with(provider.clone(), config("")).await;
    let outcome = agent.run("", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    assert_eq!(outcome.answer.as_deref(), Some("Moo."));
    let req = &provider.requests()[0];
    assert_eq!(req.messages, [Message::user("assist the user")]);
    assert_eq!(req.system, ["Tell cow jokes."]);
    assert_eq!(
        req.tools.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["say", "cow_say", "cow_think", "feed", "list"]
    );
    assert_eq!(outcome.stats.llm_calls, 1);
}

#[tokio::test]
async fn loop_9_tools_run_in_order_against_the_real_app_and_results_pair_in_one_message() {
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![
            Block::text("Let me ask two cows."),
            tool_use("t1", "cow_say", r#"{"message":"moo","name":"daisy"}"#),
            tool_use("t2", "list", "{}"),
        ]),
        text("Done.", StopReason::EndTurn),
    ]));
    let agent = agent_with(provider.clone(), config("")).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let outcome = agent
        .run(
            "two cows",
            RunOptions::new().with_events(move |e: &RunEvent<'_>| match e {
                RunEvent::ToolCall { display, .. } => sink.lock().unwrap().push(format!("call {display}")),
                RunEvent::Assistant { text, terminal } => sink.lock().unwrap().push(format!("text {terminal} {text}")),
                _ => {}
            }),
        )
        .await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    assert_eq!(
        *seen.lock().unwrap(),
        ["text false Let me ask two cows.", "call cow say --name=daisy -- moo", "call list", "text true Done."]
    );
    let second = &provider.requests()[1];
    let r = results(&second.messages[2]);
    assert_eq!(r.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(), ["t1", "t2"]);
    let (output, code, _) = exec_output(&r[0].1);
    assert_eq!(code, 0);
    assert!(output.contains("daisy says:") && output.contains("< moo >"), "{output}");
    assert!(exec_output(&r[1].1).0.contains("bessie"));
    assert_eq!(outcome.stats.tool_calls, 2);
}

#[tokio::test]
async fn loop_6_max_tokens_shows_the_text_and_never_runs_a_trailing_tool_call() {
    let counter = Counter::new("count");
    let provider = Arc::new(ScriptedProvider::new([Response::new(
        vec![Block::text("I will cou"), tool_use("t1", "count", r#"{"n": 1}"#)],
        StopReason::MaxTokens,
        Usage::default(),
    )]));
    let agent = Agent::builder().config(config("")).provider_arc(provider).tool(counter.clone()).build().await.unwrap();
    let outcome = agent.run("count", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    assert_eq!(outcome.answer.as_deref(), Some("I will cou"));
    let error = outcome.error.unwrap();
    assert_eq!(error.kind(), fisk_ai::ErrorKind::Run, "{error}");
    assert!(error.to_string().contains("truncated"));
    assert_eq!(counter.count(), 0);
}

#[tokio::test]
async fn loop_7_refusal_ends_with_an_error() {
    let provider = Arc::new(ScriptedProvider::new([Response::new(vec![], StopReason::Refusal, Usage::default())]));
    let outcome = agent_with(provider, config("")).await.run("x", RunOptions::default()).await;
    assert_eq!(
        (outcome.reason, outcome.error.as_ref().map(ToString::to_string).as_deref()),
        (TerminalReason::Error, Some("model refused to respond"))
    );
}

#[tokio::test]
async fn loop_8_pause_turn_continues_without_a_new_user_message() {
    let provider = Arc::new(ScriptedProvider::new([
        text("Searching…", StopReason::PauseTurn),
        text("Found it.", StopReason::EndTurn),
    ]));
    let outcome = agent_with(provider.clone(), config("")).await.run("find", RunOptions::default()).await;
    assert_eq!(outcome.answer.as_deref(), Some("Found it."));
    let second = &provider.requests()[1].messages;
    assert_eq!(second.len(), 2);
    assert_eq!(second[1].role, Role::Assistant);
}

#[tokio::test]
async fn loop_10_unknown_tools_and_missing_parameters_are_error_results_with_warnings_and_no_call_events() {
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![tool_use("a", "cow_moo", "{}"), tool_use("b", "cow_think", r#"{"name":"rosie"}"#)]),
        text("ok", StopReason::EndTurn),
    ]));
    // cow_think is gated: the missing-parameter check must come first, so this gate must never be asked.
    let (gate, asked) = RecordingGate::new(&[]);
    let agent = Agent::builder().config(config("")).provider_arc(provider.clone()).gate(gate).build().await.unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let outcome = agent
        .run(
            "x",
            RunOptions::new().with_events(move |e: &RunEvent<'_>| match e {
                RunEvent::Warning(w) => sink.lock().unwrap().push(w.kind().to_owned()),
                RunEvent::ToolCall { .. } | RunEvent::ToolResult { .. } => {
                    sink.lock().unwrap().push("tool event".into())
                }
                _ => {}
            }),
        )
        .await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    let r = results(&provider.requests()[1].messages[2]);
    assert_eq!(r[0], ("a".into(), "unknown tool \"cow_moo\"".into(), true));
    assert_eq!(
        r[1],
        (
            "b".into(),
            "tool \"cow_think\" was called without required parameter(s): message. required: message; optional: name"
                .into(),
            true
        )
    );
    assert!(asked.requests().is_empty());
    assert_eq!(*events.lock().unwrap(), ["unknown_tool", "missing_required"]);
    assert_eq!(outcome.stats.tool_calls, 2, "rejected calls count");
}

#[tokio::test]
async fn budget_1_iteration_cap_stops_cleanly_with_stats() {
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![tool_use("1", "list", "{}")]),
        calls(vec![tool_use("2", "list", "{}")]),
        calls(vec![tool_use("3", "list", "{}")]),
    ]));
    let outcome = agent_with(provider.clone(), config("  budget:\n    max_iterations: 2\n"))
        .await
        .run("x", RunOptions::default())
        .await;
    assert_eq!(outcome.reason, TerminalReason::MaxIterations);
    assert!(outcome.error.unwrap().to_string().contains("2 model calls"));
    assert_eq!((outcome.stats.llm_calls, outcome.stats.tool_calls), (2, 2));
    assert_eq!(provider.remaining(), 1);
}

#[tokio::test]
async fn budget_2_3_token_cap_stops_before_the_turns_tools_and_a_terminal_turn_is_always_delivered() {
    let counter = Counter::new("count");
    let provider = Arc::new(ScriptedProvider::new([
        Response::new(vec![tool_use("1", "count", r#"{"n":1}"#)], StopReason::ToolUse, usage(600, 100)),
        Response::new(vec![tool_use("2", "count", r#"{"n":2}"#)], StopReason::ToolUse, usage(300, 50)),
    ]));
    let agent = Agent::builder()
        .config(config("  budget:\n    max_tokens: 1000\n"))
        .provider_arc(provider)
        .tool(counter.clone())
        .build()
        .await
        .unwrap();
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Budget);
    assert!(outcome.error.as_ref().map(ToString::to_string).as_deref().unwrap().contains("1000"));
    assert_eq!(counter.count(), 1, "the second turn's tool never ran");
    assert_eq!(outcome.stats.usage.total(), 1050);

    let provider = Arc::new(ScriptedProvider::new([Response::new(
        vec![Block::text("fine")],
        StopReason::EndTurn,
        usage(5000, 10),
    )]));
    let outcome =
        agent_with(provider, config("  budget:\n    max_tokens: 1000\n")).await.run("x", RunOptions::default()).await;
    assert_eq!((outcome.reason, outcome.answer.as_deref()), (TerminalReason::Completed, Some("fine")));
}

#[tokio::test]
async fn invariant_6_gated_calls_with_no_gate_are_declined_and_never_run() {
    let counter = Counter::gated("count");
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![tool_use("1", "count", r#"{"n":1}"#), tool_use("2", "cow_think", r#"{"message":"hmm"}"#)]),
        text("ok", StopReason::EndTurn),
    ]));
    let agent =
        Agent::builder().config(config("")).provider_arc(provider.clone()).tool(counter.clone()).build().await.unwrap();
    assert!(agent.warnings().contains(&Warning::GatedWithoutOperator { count: 2 }));
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    assert_eq!(counter.count(), 0);
    for (_, content, is_error) in results(&provider.requests()[1].messages[2]) {
        assert!(!is_error, "GATE-10: a declined call is a normal result");
        let v: serde_json::Value = serde_json::from_str(&content).unwrap();
        assert_eq!(v["allowed"], false);
        assert!(v["reason"].as_str().unwrap().contains("no operator"));
    }
}

#[tokio::test]
async fn gate_6_to_11_once_decline_and_allow_for_the_conversation() {
    let counter = Counter::gated("count");
    let c = |id: &str| tool_use(id, "count", r#"{"n":1}"#);
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![c("1"), c("2"), c("3"), c("4"), c("5")]),
        text("ok", StopReason::EndTurn),
    ]));
    // Decline, once, for the conversation; calls 4 and 5 must then run without asking.
    let (gate, asked) = RecordingGate::new(&[Decision::Decline, Decision::Once, Decision::ForConversation]);
    let agent = Agent::builder()
        .config(config(""))
        .provider_arc(provider.clone())
        .tool(counter.clone())
        .gate(gate)
        .build()
        .await
        .unwrap();
    let allowed = Arc::new(Mutex::new(Vec::new()));
    let sink = allowed.clone();
    let outcome = agent
        .run(
            "x",
            RunOptions::new().with_events(move |e: &RunEvent<'_>| {
                if let RunEvent::Allowed { name, .. } = e {
                    sink.lock().unwrap().push(name.to_string());
                }
            }),
        )
        .await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    assert_eq!(asked.requests().len(), 3);
    assert_eq!(asked.requests()[0].trigger, "ai:confirm");
    assert_eq!(counter.count(), 4);
    assert_eq!(*allowed.lock().unwrap(), ["count"]);
    let r = results(&provider.requests()[1].messages[2]);
    let declined: serde_json::Value = serde_json::from_str(&r[0].1).unwrap();
    assert_eq!(declined["allowed"], false);
    assert!(declined["reason"].as_str().unwrap().contains("final"));
    assert!(r[1..].iter().all(|x| x.1 == "counted"));
}

#[tokio::test]
async fn gate_7_the_operator_sees_the_resolved_command_line_and_trigger() {
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![tool_use("1", "feed", r#"{"cow":"rosie","food":"corn"}"#)]),
        text("fed", StopReason::EndTurn),
    ]));
    let (gate, asked) = RecordingGate::new(&[Decision::Once]);
    let agent = Agent::builder()
        .config(config("harness:\n  confirm_tags: [impact:rw]\n"))
        .provider_arc(provider.clone())
        .gate(gate)
        .build()
        .await
        .unwrap();
    let outcome = agent.run("feed rosie", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    let req = asked.requests()[0].clone();
    assert_eq!((req.tool.as_str(), req.command.as_str(), req.trigger.as_str()), ("feed", "feed", "impact:rw"));
    assert_eq!(req.command_line, "feed --food=corn -- rosie");
    let (output, _, _) = exec_output(&results(&provider.requests()[1].messages[2])[0].1);
    assert!(output.contains("Fed rosie"), "{output}");
}

#[tokio::test]
async fn gate_12_an_interrupted_prompt_ends_the_run_and_runs_nothing() {
    let counter = Counter::gated("count");
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![tool_use("1", "count", r#"{"n":1}"#)]),
        text("never", StopReason::EndTurn),
    ]));
    let (gate, _) = RecordingGate::new(&[Decision::Abort]);
    let agent = Agent::builder()
        .config(config(""))
        .provider_arc(provider.clone())
        .tool(counter.clone())
        .gate(gate)
        .build()
        .await
        .unwrap();
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    assert!(outcome.error.unwrap().to_string().contains("interrupted"));
    assert_eq!(counter.count(), 0);
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn search_1_to_6_deferral_follows_the_count_the_provider_and_no_tool_search() {
    let dir = tempfile::tempdir().unwrap();
    let nats = fake_app(dir.path(), "natscli");
    let cfg = |extra: &str| {
        Config::from_yaml_str(&format!(
            "identity: n\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\n{extra}",
            nats.display()
        ))
        .unwrap()
    };
    let searching = Caps::new("searchy").with_tool_search(true);
    let provider = Arc::new(ScriptedProvider::new([text("ok", StopReason::EndTurn)]).with_caps(searching.clone()));
    let agent = agent_with(provider.clone(), cfg("")).await;
    agent.run("x", RunOptions::default()).await;
    let req = &provider.requests()[0];
    assert!(req.search);
    assert_eq!(req.tools.len(), 221);
    assert!(req.tools.iter().all(|(_, deferred)| *deferred), "natscli has no ai:no_defer commands");

    let agent =
        agent_with(Arc::new(ScriptedProvider::new([]).with_caps(searching.clone())), cfg("  no_tool_search: true\n"))
            .await;
    assert!(agent.warnings().contains(&Warning::ToolSearchDisabled { count: 221 }));
    assert!(!agent.tool_plan().search());
    // A provider without server-side search gets the agent's own (issue 15): no warning, and the request carries
    // the direct tools (natscli has none) plus search_tools and call_tool.
    let agent = agent_with(Arc::new(ScriptedProvider::new([])), cfg("")).await;
    assert!(agent.client_tool_search());
    assert!(!agent.warnings().iter().any(|w| matches!(w, Warning::ToolSearchUnavailable { .. })));
    let sent: Vec<&str> = agent.tool_plan().iter().map(|(t, _)| t.spec().name()).collect();
    assert_eq!(sent, [fisk_ai::agent::SEARCH_TOOLS, fisk_ai::agent::CALL_TOOL]);
    assert_eq!(agent.toolset().len(), 221);

    // Under the threshold nothing is deferred, even with search available (SEARCH-5).
    let agent = agent_with(Arc::new(ScriptedProvider::new([]).with_caps(searching.clone())), config("")).await;
    assert!(!agent.tool_plan().search() && agent.tool_plan().iter().all(|(_, d)| !d));
}

#[tokio::test]
async fn search_3_no_defer_commands_and_built_ins_stay_direct() {
    let searching = Caps::new("searchy").with_tool_search(true);
    let mut builder =
        Agent::builder().config(config("")).provider(ScriptedProvider::new([]).with_caps(searching.clone()));
    for i in 0..6 {
        builder = builder.tool(Counter::new(&format!("c{i}")));
    }
    let agent = builder.build().await.unwrap();
    let plan: Vec<(String, bool)> = agent.tool_plan().iter().map(|(t, d)| (t.spec().name().to_owned(), d)).collect();
    assert_eq!(plan.len(), 11);
    assert!(plan.iter().any(|(n, d)| n == "cow_say" && !d), "ai:no_defer");
    assert!(plan.iter().any(|(n, d)| n == "say" && *d));
    assert!(agent.tool_plan().search());
}

/// A provider that answers each prompt with its own text, to show concurrent runs stay apart.
struct Echo;

#[async_trait]
impl ModelProvider for Echo {
    fn capabilities(&self) -> &Caps {
        static CAPS: std::sync::LazyLock<Caps> = std::sync::LazyLock::new(|| Caps::new("echo"));
        &CAPS
    }
    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
        tokio::task::yield_now().await;
        Ok(text(&format!("echo: {}", req.messages[0].text()), StopReason::EndTurn))
    }
}

#[tokio::test]
async fn agent_is_clone_and_serves_concurrent_runs() {
    let agent = Agent::builder().config(config("")).provider(Echo).build().await.unwrap();
    let runs: Vec<_> = (0..16)
        .map(|i| {
            let agent = agent.clone();
            tokio::spawn(async move { agent.run(&format!("prompt {i}"), RunOptions::default()).await })
        })
        .collect();
    for (i, r) in runs.into_iter().enumerate() {
        assert_eq!(r.await.unwrap().answer.unwrap(), format!("echo: prompt {i}"));
    }
}

/// A provider that panics.
struct Boom;

#[async_trait]
impl ModelProvider for Boom {
    fn capabilities(&self) -> &Caps {
        static CAPS: std::sync::LazyLock<Caps> = std::sync::LazyLock::new(|| Caps::new("boom"));
        &CAPS
    }
    async fn call(&self, _: &Request<'_>) -> Result<Response, ProviderError> {
        panic!("provider bug")
    }
}

#[tokio::test]
async fn ovr_5_a_panic_in_the_run_is_an_internal_error_outcome() {
    let agent = Agent::builder().config(config("")).provider(Boom).build().await.unwrap();
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    assert!(outcome.error.unwrap().to_string().starts_with("internal error"));
    assert_eq!(outcome.stats.llm_calls, 1);
}

#[tokio::test]
async fn loop_4_a_provider_error_ends_the_run_with_its_message() {
    let provider = Arc::new(ScriptedProvider::with_results([Err(ProviderError::status(401, "invalid x-api-key"))]));
    let outcome = agent_with(provider, config("")).await.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    let error = outcome.error.unwrap();
    assert_eq!(error.kind(), fisk_ai::ErrorKind::Provider, "{error}");
    assert!(error.to_string().contains("invalid x-api-key"));
}

#[tokio::test]
async fn cancellation_ends_the_run() {
    let token = fisk_ai::tool::CancellationToken::new();
    token.cancel();
    let provider = Arc::new(ScriptedProvider::new([text("never", StopReason::EndTurn)]));
    let outcome = agent_with(provider.clone(), config("")).await.run("x", RunOptions::new().with_cancel(token)).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn sel_13_and_ovr_8_build_fails_on_an_empty_set_or_a_colliding_custom_tool() {
    let err =
        Agent::builder().config(config("include:\n  tools: [nothing]\n")).provider(Echo).build().await.unwrap_err();
    assert!(err.to_string().contains("no tools remain"));
    let err = Agent::builder().config(config("")).provider(Echo).tool(Counter::new("feed")).build().await.unwrap_err();
    assert!(err.to_string().contains("\"feed\""));
    // No provider given and none registered: `llm.provider` cannot be resolved (PROV-3).
    let err = Agent::builder()
        .config(config(""))
        .providers(fisk_ai::llm::ProviderRegistry::empty())
        .build()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown provider \"anthropic\"; available: none"), "{err}");
}

#[test]
fn loop_13_summary_line_format() {
    let mut stats = fisk_ai::agent::RunStats::clone(&{
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let provider = Arc::new(ScriptedProvider::new([Response::new(
                vec![Block::text("a")],
                StopReason::EndTurn,
                Usage { input_tokens: 3536, output_tokens: 113, cache_read_tokens: 7, cache_creation_tokens: 9 },
            )]));
            agent_with(provider, config("")).await.run("x", RunOptions::default()).await.stats
        })
    });
    stats.latency = std::time::Duration::from_micros(3_613_400);
    let mut rounded = stats.clone();
    rounded.latency = std::time::Duration::from_micros(3_613_600);
    assert!(rounded.summary(false, None, false).ends_with(" latency=3.614s"), "rounded, not truncated");
    assert_eq!(
        stats.summary(false, None, false),
        "Run summary: model=test-model llm_calls=1 tool_calls=0 tokens=3536/113 cached=7 cost=unknown latency=3.613s"
    );
    assert_eq!(
        stats.summary(true, Some("abc"), true),
        "Run suspended: session=abc model=test-model llm_calls=1 tool_calls=0 tokens=3536/113 cached=7 cache_write=9 cost=unknown latency=3.613s"
    );
}

#[tokio::test]
async fn budget_3_a_paused_turn_is_checked_too_and_its_narration_is_shown() {
    let provider = Arc::new(ScriptedProvider::new([
        Response::new(vec![Block::text("Still searching.")], StopReason::PauseTurn, usage(5000, 10)),
        text("never", StopReason::EndTurn),
    ]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let outcome = agent_with(provider.clone(), config("  budget:\n    max_tokens: 1000\n"))
        .await
        .run(
            "x",
            RunOptions::new().with_events(move |e: &RunEvent<'_>| {
                if let RunEvent::Assistant { text, terminal } = e {
                    sink.lock().unwrap().push((text.to_string(), *terminal));
                }
            }),
        )
        .await;
    assert_eq!(outcome.reason, TerminalReason::Budget);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(*seen.lock().unwrap(), [("Still searching.".to_string(), false)]);
}

#[tokio::test]
async fn loop_7_a_refusal_still_delivers_its_text() {
    let provider = Arc::new(ScriptedProvider::new([Response::new(
        vec![Block::text("I can't help with that.")],
        StopReason::Refusal,
        Usage::default(),
    )]));
    let outcome = agent_with(provider, config("")).await.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    assert_eq!(outcome.answer.as_deref(), Some("I can't help with that."));
}

#[tokio::test]
async fn prov_5_the_runs_call_timeout_reaches_the_provider() {
    let provider = Arc::new(ScriptedProvider::new([text("ok", StopReason::EndTurn)]));
    agent_with(provider.clone(), config("  budget:\n    call_timeout: 7s\n"))
        .await
        .run("x", RunOptions::default())
        .await;
    assert_eq!(provider.requests()[0].timeout, Some(std::time::Duration::from_secs(7)));
    let provider = Arc::new(ScriptedProvider::new([text("ok", StopReason::EndTurn)]));
    agent_with(provider.clone(), config("")).await.run("x", RunOptions::default()).await;
    assert_eq!(provider.requests()[0].timeout, Some(std::time::Duration::from_secs(120)));
}

#[tokio::test]
async fn ovr_5_a_crash_is_flagged_as_internal() {
    let agent = Agent::builder().config(config("")).provider(Boom).build().await.unwrap();
    assert!(agent.run("x", RunOptions::default()).await.internal_error);
    let provider = Arc::new(ScriptedProvider::with_results([Err(ProviderError::status(500, "boom"))]));
    assert!(!agent_with(provider, config("")).await.run("x", RunOptions::default()).await.internal_error);
}
