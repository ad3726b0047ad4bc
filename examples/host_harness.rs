//! One harness, two surfaces: a host program assembles the tool set once ([`Harness`]) and builds an agent and an
//! MCP server from it, side by side. The YAML names a memory backend and a model provider the host registers
//! itself, so the example needs no API key and no network beyond loopback.
//!
//! ```text
//! cargo run --example host_harness
//! ```
//! Run it from the repository root: the configuration wraps `examples/cowsay/cowsay`.

use fisk_ai::agent::{RunEvent, RunOptions};
use fisk_ai::harness::Harness;
use fisk_ai::llm::{Block, ProviderFactory, ProviderSettings, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::memory::{InMemoryStore, MemorySettings};
use fisk_ai::tool::ToolInput;
use fisk_ai::{Agent, Config, McpServer, MemoryBackend, MemoryStore, ModelProvider, async_trait};
use serde_json::{Value, json};
use std::sync::Arc;

/// The host's memory backend, named `notebook` in `harness.memory.backend`; its options reach it as written.
struct Notebook;

#[async_trait]
impl MemoryBackend for Notebook {
    fn name(&self) -> &str {
        "notebook"
    }

    async fn open(&self, settings: &MemorySettings<'_>) -> fisk_ai::Result<Arc<dyn MemoryStore>> {
        // An option this backend does not know is refused with its file, line and column.
        settings.reject_unknown_options(&["shelf"])?;
        let shelf = settings.options().get("shelf").and_then(Value::as_str).unwrap_or("default");
        println!("notebook: opened shelf {shelf}");
        Ok(Arc::new(InMemoryStore::new()))
    }
}

/// The host's model provider, named `replay` in `llm.provider`: it replays a fixed exchange. A real one would call
/// an API and declare its key in `credentials()`, so no child process ever sees it.
struct Replay;

impl ProviderFactory for Replay {
    fn name(&self) -> &str {
        "replay"
    }

    fn credentials(&self) -> Vec<String> {
        vec!["REPLAY_API_KEY".to_owned()]
    }

    fn build(&self, _settings: &ProviderSettings<'_>) -> fisk_ai::Result<Arc<dyn ModelProvider>> {
        let usage = Usage { input_tokens: 100, output_tokens: 20, ..Usage::default() };
        let call = |id: &str, name: &str, input: Value| Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input: ToolInput::from_value(&input),
        };
        let remember = json!({"key": "greeting", "description": "who was greeted", "content": "daisy"});
        Ok(Arc::new(ScriptedProvider::new([
            Response::new(
                vec![
                    call("t1", "cow_say", json!({"message": "hello", "name": "daisy"})),
                    call("t2", "memory_write", remember),
                ],
                StopReason::ToolUse,
                usage,
            ),
            Response::new(vec![Block::text("Daisy said hello; noted.")], StopReason::EndTurn, usage),
        ])))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::from_yaml_str(
        "identity: harness-demo
application_path: examples/cowsay/cowsay
system_prompt: Entertain the operator with cows.
harness:
  memory:
    enabled: true
    backend: notebook
    options:
      shelf: barn
llm:
  provider: replay
  model: replay-model
expose:
  agent:
    mcp: {}
",
    )?;

    // Assembled once: validated, the scrub set fixed, the app introspected, built-ins added, selected, stores open.
    let harness =
        Arc::new(Harness::builder().config(config).memory_backend(Notebook).provider_factory(Replay).build().await?);
    for warning in harness.warnings() {
        eprintln!("warning: {warning}");
    }
    let scrubbed: Vec<&str> = harness.child_env().scrubbed().collect();
    println!("children never see: {}", scrubbed.join(", "));

    // Surface 1: the agent gets the whole set, memory tools included.
    let agent = Agent::builder().harness(harness.clone()).build().await?;
    let events = |e: &RunEvent<'_>| {
        if let RunEvent::ToolCall { display, .. } = e {
            println!("-> {display}");
        }
    };
    let outcome = agent.run("greet daisy", RunOptions::new().with_events(events)).await;
    println!("answer: {}", outcome.answer.as_deref().unwrap_or("(none)"));

    // Surface 2: the MCP server serves what says Servable: the app's commands, never memory_* (agent-only).
    let server = McpServer::builder().harness(harness).build().await?;
    let mut served: Vec<&str> = server.tools().iter().map(|t| t.spec().name()).collect();
    served.sort_unstable();
    println!("served over MCP: {}", served.join(", "));
    // Any free loopback port for the demo; `server.bind()` listens where the configuration says (8080 by default).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    // A real host would keep serving (serve_until_signal); the example stops at once.
    server.serve(listener, async {}).await?;
    if !outcome.reason.is_success() {
        return Err(outcome.error.map_or_else(|| outcome.reason.as_str().to_owned(), |e| e.to_string()).into());
    }
    Ok(())
}
