//! A host program embedding fisk-ai: it registers a built-in tool of its own and a confirmation gate of its own,
//! and runs the agent against the scripted provider, so it needs no API key.
//!
//! ```text
//! cargo run --example host
//! ```
//! Run it from the repository root: the configuration wraps `examples/cowsay/cowsay`.

use fisk_ai::agent::{Agent, RunEvent, RunOptions};
use fisk_ai::builtin::{BuiltinEnv, BuiltinFactory, reject_unknown_options};
use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision};
use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, async_trait};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Instant;

/// The host's own built-in: how long the host has been up. Enabled by `harness.tools: [{name: host_uptime}]`.
struct UptimeFactory {
    started: Instant,
}

impl BuiltinFactory for UptimeFactory {
    fn name(&self) -> &str {
        "host_uptime"
    }

    fn build(&self, options: &Map<String, Value>, _env: &BuiltinEnv) -> fisk_ai::Result<Arc<dyn Tool>> {
        reject_unknown_options(self.name(), options, &[])?;
        let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let spec = ToolSpec::new("host_uptime", ToolKind::Builtin, schema)
            .with_description("How many milliseconds the host program has been running. Returns {\"uptime_ms\": n}.");
        Ok(Arc::new(Uptime { spec, started: self.started }))
    }
}

struct Uptime {
    spec: ToolSpec,
    started: Instant,
}

#[async_trait]
impl Tool for Uptime {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _input: &ToolInput, _ctx: &CallContext) -> ToolOutput {
        ToolOutput::json(&json!({"uptime_ms": self.started.elapsed().as_millis() as u64}))
    }
}

/// The host's own approval policy: its own tool may run once per ask; anything tagged `impact:rw` is declined.
struct Policy;

#[async_trait]
impl ConfirmGate for Policy {
    fn can_ask(&self) -> bool {
        true
    }

    async fn confirm(&self, req: &ConfirmRequest) -> Decision {
        let decision = if req.trigger == "impact:rw" { Decision::Decline } else { Decision::Once };
        println!("policy: {} ({}) -> {decision:?}", req.command_line, req.trigger);
        decision
    }
}

fn turn(blocks: Vec<Block>, stop: StopReason) -> Response {
    Response::new(blocks, stop, Usage { input_tokens: 120, output_tokens: 30, ..Usage::default() })
}

fn call(id: &str, name: &str, input: Value) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input: ToolInput::from_value(&input) }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_yaml_str(
        "identity: host-demo
application_path: examples/cowsay/cowsay
system_prompt: Entertain the operator with cows.
harness:
  confirm_tags: [impact:rw]
  tools:
    - name: host_uptime
      confirm: true
llm:
  model: scripted-model
",
    )?;

    // What the "model" will do: call three tools in one turn, then answer.
    let provider = ScriptedProvider::new([
        turn(
            vec![
                Block::text("Let me warm up the herd."),
                call("t1", "cow_say", json!({"message": "hello from the host", "name": "daisy"})),
                call("t2", "host_uptime", json!({})),
                call("t3", "feed", json!({"cow": "rosie", "food": "corn"})),
            ],
            StopReason::ToolUse,
        ),
        turn(vec![Block::text("Daisy said hello; feeding was not approved.")], StopReason::EndTurn),
    ]);

    let agent = Agent::builder()
        .config(config)
        .provider(provider)
        .builtin(UptimeFactory { started: Instant::now() })
        .gate(Policy)
        .build()
        .await?;

    let events = |e: &RunEvent<'_>| match e {
        RunEvent::ToolCall { display, .. } => println!("-> {display}"),
        RunEvent::ToolResult { name, output, .. } => {
            println!("<- {name}: {}", output.content().lines().next().unwrap_or(""))
        }
        RunEvent::Warning(w) => eprintln!("warning: {w}"),
        _ => {}
    };
    let outcome = agent.run("say hello", RunOptions::new().with_events(events)).await;
    println!("answer: {}", outcome.answer.as_deref().unwrap_or("(none)"));
    println!("{}", outcome.stats.summary(false, None, false));
    if !outcome.reason.is_success() {
        return Err(outcome
            .error
            .map_or_else(|| format!("the run ended: {}", outcome.reason.as_str()), |e| e.to_string())
            .into());
    }
    Ok(())
}
