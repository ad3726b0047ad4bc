//! GATE-18: `ai:confirm` and `harness.confirm_tags` gate every tool that carries the tag, whatever its source: a
//! host's own `ToolSource`, a host tool added to the builder, not only the application's commands. Each host tool
//! counts its real calls, so "it never ran" is observed, not inferred from a result.

mod common;

use common::gate::RecordingGate;
use common::turns::{call, done, turn};
use fisk_ai::agent::{Agent, RunOptions};
use fisk_ai::async_trait;
use fisk_ai::gate::Decision;
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::source::{Loaded, ToolSource};
use fisk_ai::tool::{CallContext, Tags, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A host tool with tags of its own that counts the times it really ran.
struct Counted {
    spec: ToolSpec,
    runs: Arc<AtomicUsize>,
}

impl Counted {
    fn new(name: &str, tags: &[&str]) -> (Self, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        let spec = ToolSpec::new(name, ToolKind::Custom, serde_json::json!({"type": "object"}))
            .with_description("a host tool")
            .with_tags(Tags::new(tags.iter().copied()));
        (Counted { spec, runs: runs.clone() }, runs)
    }
}

#[async_trait]
impl Tool for Counted {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        self.runs.fetch_add(1, Ordering::SeqCst);
        ToolOutput::success("done")
    }
}

/// A host source handing out the tools it was given, as a plug-in that knows nothing of fisk would.
struct HostSource(std::sync::Mutex<Vec<Arc<dyn Tool>>>);

#[async_trait]
impl ToolSource for HostSource {
    fn name(&self) -> &str {
        "host"
    }
    async fn load(&self, _ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
        Ok(Loaded::new(self.0.lock().unwrap().clone()))
    }
}

fn config(confirm_tags: &str) -> fisk_ai::Config {
    fisk_ai::Config::from_yaml_str(&format!(
        "identity: hosted\nsystem_prompt: s\nllm:\n  model: m\nharness:\n  confirm_tags: [{confirm_tags}]\n"
    ))
    .unwrap()
}

/// One run of the scripted turn; what matters is what the gate was asked and what ran.
async fn run_once(agent: Agent) {
    let _ = agent.run("go", RunOptions::new()).await;
}

async fn agent_with_source(tool: Counted, confirm_tags: &str, gate: RecordingGate, script: &str) -> Agent {
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", script)]), done()]));
    Agent::builder()
        .config(config(confirm_tags))
        .provider_arc(provider)
        .gate(gate)
        .source(HostSource(std::sync::Mutex::new(vec![Arc::new(tool)])))
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn gate_18_a_host_sources_ai_confirm_tool_is_gated_and_a_decline_runs_nothing() {
    let (tool, runs) = Counted::new("purge", &["ai:confirm"]);
    let (gate, log) = RecordingGate::new(&[Decision::Decline]);
    let agent = agent_with_source(tool, "", gate, "purge").await;
    assert_eq!(agent.toolset().get("purge").and_then(|t| t.gate_trigger()), Some("ai:confirm"));
    run_once(agent).await;
    assert_eq!(log.asked(), ["purge"], "the gate was asked before the host tool ran");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a declined host tool ran");
}

#[tokio::test]
async fn gate_18_a_host_sources_tool_with_a_confirm_tags_tag_is_gated_and_runs_once_approved() {
    let (tool, runs) = Counted::new("scale", &["impact:rw"]);
    let (gate, log) = RecordingGate::new(&[Decision::Once]);
    let agent = agent_with_source(tool, "impact:rw", gate, "scale").await;
    assert_eq!(agent.toolset().get("scale").and_then(|t| t.gate_trigger()), Some("impact:rw"));
    assert!(
        !agent.warnings().iter().any(|w| w.kind() == "unmatched_confirm_tag"),
        "a confirm tag matching a host tool was reported as matching nothing: {:?}",
        agent.warnings()
    );
    run_once(agent).await;
    assert_eq!(log.asked(), ["scale"]);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the approved host tool ran exactly once");
}

#[tokio::test]
async fn gate_18_a_host_tool_added_to_the_builder_is_gated_by_its_tag_too() {
    let (tool, runs) = Counted::new("drain", &["ops:danger"]);
    let (gate, log) = RecordingGate::new(&[Decision::Decline]);
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", "drain")]), done()]));
    let agent = Agent::builder()
        .config(config("ops:danger"))
        .provider_arc(provider)
        .gate(gate)
        .tool(tool)
        .build()
        .await
        .unwrap();
    run_once(agent).await;
    assert_eq!(log.asked(), ["drain"]);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn gate_18_an_untagged_host_tool_runs_without_asking() {
    // The control: gating follows the tags, it does not ask for every host tool.
    let (tool, runs) = Counted::new("status", &["impact:ro"]);
    let (gate, log) = RecordingGate::new(&[]);
    let agent = agent_with_source(tool, "impact:rw", gate, "status").await;
    assert_eq!(agent.toolset().get("status").and_then(|t| t.gate_trigger()), None);
    run_once(agent).await;
    assert!(log.asked().is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A host tool whose schema has arguments, gated by `ai:confirm`.
fn scaler() -> (Counted, Arc<AtomicUsize>) {
    let (mut tool, runs) = Counted::new("scale", &["ai:confirm"]);
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"replicas": {"type": "integer"}, "service": {"type": "string"}},
        "required": ["service"],
        "additionalProperties": false
    });
    tool.spec = ToolSpec::new("scale", ToolKind::Custom, schema)
        .with_description("scale a service")
        .with_tags(Tags::new(["ai:confirm"]));
    (tool, runs)
}

#[tokio::test]
async fn gate_19_the_gate_receives_the_validated_input_parsed_to_decide_on_arguments() {
    let (tool, _runs) = scaler();
    let (gate, log) = RecordingGate::new(&[Decision::Decline]);
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![common::turns::call_with("1", "scale", r#"{"service": "web", "replicas": 40}"#)]),
        done(),
    ]));
    let agent = Agent::builder().config(config("")).provider_arc(provider).gate(gate).tool(tool).build().await.unwrap();
    run_once(agent).await;
    let asked = log.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].input, serde_json::json!({"service": "web", "replicas": 40}));
}

#[tokio::test]
async fn ovr_4_the_event_sink_hears_declined_unknown_missing_and_invalid_calls() {
    let (tool, runs) = scaler();
    let (gate, _log) = RecordingGate::new(&[Decision::Decline]);
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![
            common::turns::call_with("1", "scale", r#"{"service": "web"}"#),
            common::turns::call_with("2", "nope", "{}"),
            common::turns::call_with("3", "scale", "{}"),
            common::turns::call_with("4", "scale", r#"{"service": "web", "replicas": "many"}"#),
        ]),
        done(),
    ]));
    let agent = Agent::builder().config(config("")).provider_arc(provider).gate(gate).tool(tool).build().await.unwrap();
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = {
        let heard = heard.clone();
        move |e: &fisk_ai::agent::RunEvent<'_>| match e {
            fisk_ai::agent::RunEvent::ToolDeclined { id, name, reason } => {
                heard.lock().unwrap().push(format!("declined {id} {name}: {reason}"));
            }
            fisk_ai::agent::RunEvent::ToolRefused { id, name, reason } => {
                heard.lock().unwrap().push(format!("refused {id} {name}: {reason}"));
            }
            _ => {}
        }
    };
    let _ = agent.run("go", RunOptions::new().with_events(sink)).await;
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 4, "{heard:#?}");
    assert!(heard[0].starts_with("declined 1 scale: "), "{}", heard[0]);
    assert!(heard[1].starts_with("refused 2 nope: ") && heard[1].contains("unknown tool"), "{}", heard[1]);
    assert!(heard[2].starts_with("refused 3 scale: ") && heard[2].contains("service"), "{}", heard[2]);
    assert!(heard[3].starts_with("refused 4 scale: ") && heard[3].contains("replicas"), "{}", heard[3]);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A host tool whose preparation refuses a replica count over 50, and records each preparation and whether its
/// call saw the prepared state.
struct Scaler {
    spec: ToolSpec,
    prepared: Arc<AtomicUsize>,
    ran_with_state: Arc<AtomicUsize>,
}

/// The state `Scaler::prepare` hands to its call.
struct Replicas(u64);

#[async_trait]
impl Tool for Scaler {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn prepare(
        &self,
        _: &ToolInput,
        arguments: &serde_json::Value,
    ) -> Result<fisk_ai::tool::Prepared, fisk_ai::tool::InputError> {
        self.prepared.fetch_add(1, Ordering::SeqCst);
        let replicas = arguments["replicas"].as_u64().unwrap_or(1);
        if replicas > 50 {
            return Err(fisk_ai::tool::InputError::invalid(Some("replicas"), "replicas must be at most 50"));
        }
        Ok(fisk_ai::tool::Prepared::new(format!("scale to {replicas}")).with_state(Replicas(replicas)))
    }
    async fn call(&self, _: &ToolInput, ctx: &CallContext) -> ToolOutput {
        if let Some(Replicas(n)) = ctx.prepared::<Replicas>() {
            self.ran_with_state.fetch_add(1, Ordering::SeqCst);
            return ToolOutput::success(format!("scaled to {n}"));
        }
        ToolOutput::error("called without its prepared state")
    }
}

fn scaler_spec(tags: &[&str]) -> ToolSpec {
    let schema = serde_json::json!({"type": "object", "properties": {"replicas": {"type": "integer"}}});
    ToolSpec::new("scale_web", ToolKind::Custom, schema).with_description("scale").with_tags(Tags::new(tags.to_vec()))
}

#[tokio::test]
async fn harness_5_a_gated_call_whose_preparation_fails_is_refused_as_invalid_and_nobody_is_asked() {
    let (prepared, ran) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let tool = Scaler { spec: scaler_spec(&["ai:confirm"]), prepared: prepared.clone(), ran_with_state: ran.clone() };
    // The gate spy has no answer to give: being asked at all fails the test.
    let (gate, log) = RecordingGate::new(&[]);
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![common::turns::call_with("1", "scale_web", r#"{"replicas": 500}"#)]),
        done(),
    ]));
    let agent = Agent::builder().config(config("")).provider_arc(provider).gate(gate).tool(tool).build().await.unwrap();
    let outcome = agent.run("go", RunOptions::new()).await;
    assert!(log.asked().is_empty(), "the operator was asked about a call that could not run");
    assert_eq!(prepared.load(Ordering::SeqCst), 1);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    let (text, is_error) = common::turns::result_of(&outcome.messages, "1");
    assert!(is_error, "{text}");
    assert!(text.contains("replicas must be at most 50") && text.contains("did not run"), "{text}");
}

/// A host built-in making the scaler, enabled with `confirm: true` so the crate wraps it in its decorator.
struct ScalerFactory(Arc<AtomicUsize>, Arc<AtomicUsize>);

impl fisk_ai::builtin::BuiltinFactory for ScalerFactory {
    fn name(&self) -> &str {
        "scale_web"
    }
    fn build(
        &self,
        _: &serde_json::Map<String, serde_json::Value>,
        _: &fisk_ai::builtin::BuiltinEnv,
    ) -> fisk_ai::Result<Arc<dyn Tool>> {
        let spec = scaler_spec(&[]);
        let spec = ToolSpec::new("scale_web", ToolKind::Builtin, spec.input_schema().clone()).with_description("scale");
        Ok(Arc::new(Scaler { spec, prepared: self.0.clone(), ran_with_state: self.1.clone() }))
    }
}

#[tokio::test]
async fn harness_5_a_decorated_host_tool_keeps_its_prepare_and_its_state() {
    let (prepared, ran) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (gate, log) = RecordingGate::new(&[Decision::Once]);
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![common::turns::call_with("1", "scale_web", r#"{"replicas": 3}"#)]),
        done(),
    ]));
    let yaml = "identity: hosted\nsystem_prompt: s\nllm:\n  model: m\nharness:\n  tools:\n    - name: scale_web\n      confirm: true\n";
    let agent = Agent::builder()
        .config(fisk_ai::Config::from_yaml_str(yaml).unwrap())
        .provider_arc(provider)
        .gate(gate)
        .builtin(ScalerFactory(prepared.clone(), ran.clone()))
        .build()
        .await
        .unwrap();
    let outcome = agent.run("go", RunOptions::new()).await;
    assert_eq!(log.requests().len(), 1);
    assert_eq!(log.requests()[0].command_line, "scale to 3", "the operator saw the wrapped tool's own line");
    assert_eq!(prepared.load(Ordering::SeqCst), 1, "the decorator forwarded prepare");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "the call saw the state its prepare made");
    assert_eq!(common::turns::result_of(&outcome.messages, "1"), ("scaled to 3".to_owned(), false));
}
