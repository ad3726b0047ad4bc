//! The built-in registry, `harness.tools`, host-registered built-ins and `base64_encode` (BUILTIN-1..4, BUILTIN-14).

mod common;

use common::*;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::builtin::{BuiltinEnv, BuiltinFactory, BuiltinRegistry, reject_unknown_options};
use fisk_ai::llm::{Block, Caps, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::operator::NoOperator;
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, ErrorKind, async_trait};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn config(harness: &str) -> Config {
    Config::from_yaml_str(&format!(
        "identity: t\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\nharness:\n{harness}",
        root().join("examples/cowsay/cowsay").display()
    ))
    .unwrap()
}

fn env(config: &Config) -> BuiltinEnv {
    BuiltinEnv::new(config, Arc::new(NoOperator)).unwrap()
}

/// A host built-in counting its calls, with one option.
struct Ping {
    calls: Arc<AtomicUsize>,
}

struct PingTool {
    spec: ToolSpec,
    calls: Arc<AtomicUsize>,
    greeting: String,
}

impl BuiltinFactory for Ping {
    fn name(&self) -> &str {
        "ping"
    }
    fn build(&self, options: &Map<String, Value>, _env: &BuiltinEnv) -> fisk_ai::Result<Arc<dyn Tool>> {
        reject_unknown_options(self.name(), options, &["greeting"])?;
        let greeting = options.get("greeting").and_then(Value::as_str).unwrap_or("pong").to_owned();
        let spec = ToolSpec::new("ping", ToolKind::Builtin, json!({"type": "object", "properties": {}}));
        Ok(Arc::new(PingTool { spec, calls: self.calls.clone(), greeting }))
    }
}

#[async_trait]
impl Tool for PingTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        self.calls.fetch_add(1, Ordering::SeqCst);
        ToolOutput::success(self.greeting.clone())
    }
}

#[tokio::test]
async fn builtin_14_base64_encode_encodes_utf8_with_padding() {
    let cfg = config("  tools: [{name: base64_encode}]\n");
    let tools = BuiltinRegistry::with_defaults().build_enabled(&cfg, &env(&cfg)).unwrap();
    let b64 = &tools[0];
    assert_eq!(b64.spec().kind(), ToolKind::Builtin);
    for (text, want) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("grüße", "Z3LDvMOfZQ==")] {
        let out = b64.call(&raw(&json!({"text": text}).to_string()), &CallContext::new()).await;
        assert!(!out.is_error());
        assert_eq!(out.content(), json!({"encoded": want}).to_string());
    }
    // Schema checks belong to the dispatch path every surface uses.
    let out = common::dispatch::dispatched(b64.clone(), r#"{"text": "x", "txt": "x"}"#).await;
    assert!(out.is_error() && out.content().contains("unknown property \"txt\""), "{}", out.content());
    assert_eq!(b64.display(&raw(r#"{"text": "secret"}"#)), "base64_encode");
}

#[test]
fn builtin_1_2_unknown_names_and_unknown_options_are_configuration_errors_naming_them() {
    let cfg = config("  tools: [{name: base64_encode, options: {width: 2}}]\n");
    let err = BuiltinRegistry::with_defaults().build_enabled(&cfg, &env(&cfg)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("base64_encode") && err.to_string().contains("\"width\""), "{err}");

    let cfg = config("  tools: [{name: teleport}]\n");
    let err = BuiltinRegistry::with_defaults().build_enabled(&cfg, &env(&cfg)).unwrap_err();
    assert!(err.to_string().contains("\"teleport\"") && err.to_string().contains("base64_encode"), "{err}");

    let err = Config::from_yaml_str("harness:\n  tools: [{name: base64_encode}, {name: base64_encode}]\n").unwrap_err();
    assert!(err.to_string().contains("base64_encode"), "{err}");
}

#[tokio::test]
async fn builtin_1_3_host_built_ins_are_enabled_by_harness_tools_and_confirm_gates_them() {
    let calls = Arc::new(AtomicUsize::new(0));
    let provider = Arc::new(ScriptedProvider::new([
        Response::new(
            vec![Block::ToolUse { id: "1".into(), name: "ping".into(), input: ToolInput::empty() }],
            StopReason::ToolUse,
            Usage::default(),
        ),
        Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default()),
    ]));
    // Listed without confirm: runs, with its option.
    let agent = Agent::builder()
        .config(config("  tools: [{name: ping, options: {greeting: hello}}]\n"))
        .provider_arc(provider.clone())
        .builtin(Ping { calls: calls.clone() })
        .build()
        .await
        .unwrap();
    let names: Vec<&str> = agent.toolset().iter().map(|t| t.spec().name()).collect();
    assert_eq!(names.last(), Some(&"ping"), "built-ins come after commands (SEL-12)");
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let Block::ToolResult { content, .. } = &provider.requests()[1].messages[2].content[0] else { panic!() };
    assert_eq!(content, "hello");

    // confirm: true gates it like ai:confirm; with no gate it is declined and never runs.
    let provider = Arc::new(ScriptedProvider::new([
        Response::new(
            vec![Block::ToolUse { id: "1".into(), name: "ping".into(), input: ToolInput::empty() }],
            StopReason::ToolUse,
            Usage::default(),
        ),
        Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default()),
    ]));
    let agent = Agent::builder()
        .config(config("  tools: [{name: ping, confirm: true}]\n"))
        .provider_arc(provider.clone())
        .builtin(Ping { calls: calls.clone() })
        .build()
        .await
        .unwrap();
    assert_eq!(agent.toolset().get("ping").unwrap().gate_trigger(), Some("ai:confirm"));
    agent.run("x", RunOptions::default()).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the gated call did not run");
    // Not listed: not enabled, even though registered.
    let agent = Agent::builder()
        .config(config("  confirm_tags: []\n"))
        .provider(ScriptedProvider::new([]))
        .builtin(Ping { calls })
        .build()
        .await
        .unwrap();
    assert!(agent.toolset().get("ping").is_none());
}

#[tokio::test]
async fn sel_8_search_1_built_ins_are_filtered_by_name_counted_for_search_and_never_deferred() {
    let searching = Caps::new("s").with_tool_search(true);
    let mut harness = String::from("  tools: [{name: base64_encode}");
    for i in 0..5 {
        harness.push_str(&format!(", {{name: p{i}}}"));
    }
    harness.push_str("]\n");
    let mut builder =
        Agent::builder().config(config(&harness)).provider(ScriptedProvider::new([]).with_caps(searching));
    struct Named(String);
    impl BuiltinFactory for Named {
        fn name(&self) -> &str {
            &self.0
        }
        fn build(&self, _: &Map<String, Value>, _: &BuiltinEnv) -> fisk_ai::Result<Arc<dyn Tool>> {
            let calls = Arc::new(AtomicUsize::new(0));
            let spec = ToolSpec::new(self.0.clone(), ToolKind::Builtin, json!({"type": "object"}));
            Ok(Arc::new(PingTool { spec, calls, greeting: String::new() }))
        }
    }
    for i in 0..5 {
        builder = builder.builtin(Named(format!("p{i}")));
    }
    let agent = builder.build().await.unwrap();
    assert_eq!(agent.tool_plan().len(), 11, "5 commands + 6 built-ins reach the threshold");
    assert!(agent.tool_plan().search());
    assert!(agent.tool_plan().iter().filter(|(t, _)| t.spec().kind() == ToolKind::Builtin).all(|(_, d)| !d));

    let cfg = config(&harness);
    let mut cfg2 = cfg.clone();
    cfg2.exclude = Some(fisk_ai::config::Filter::new(["^base64_encode$"], [] as [&str; 0]));
    let mut builder = Agent::builder().config(cfg2).provider(ScriptedProvider::new([]));
    for i in 0..5 {
        builder = builder.builtin(Named(format!("p{i}")));
    }
    let agent = builder.build().await.unwrap();
    assert!(agent.toolset().get("base64_encode").is_none());
    assert!(agent.toolset().get("p0").is_some());
}
