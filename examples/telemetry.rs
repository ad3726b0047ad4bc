//! The crate's `tracing` spans under a `tracing-subscriber` `fmt` subscriber: one scripted run of the cowsay demo
//! (no API key), printing each span as it closes with its OpenTelemetry GenAI fields.
//!
//! ```text
//! cargo run --example telemetry                 # spans and events, no content
//! cargo run --example telemetry -- --content    # plus prompts, replies, tool arguments and results
//! RUST_LOG=fisk_ai=debug cargo run --example telemetry
//! ```
//!
//! To export the same spans to an OpenTelemetry collector, build with the `otel` feature and call
//! `fisk_ai::telemetry::otel::install()` (or add `OtlpExport::layer()` next to the `fmt` layer); see the
//! `fisk_ai::telemetry::otel` module docs.

use fisk_ai::Config;
use fisk_ai::agent::{Agent, RunOptions};
use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::tool::ToolInput;
use serde_json::json;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

fn turn(blocks: Vec<Block>, stop: StopReason) -> Response {
    let usage = Usage { input_tokens: 120, output_tokens: 30, cache_read_tokens: 800, ..Usage::default() };
    Response::new(blocks, stop, usage).with_origin(Some("scripted-model-2026".into()), None)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let content = std::env::args().any(|a| a == "--content");
    // Spans print when they close, with every field recorded by then (usage, finish reason, outcome).
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("fisk_ai=info")))
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .init();

    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cowsay/cowsay");
    let config = Config::from_yaml_str(&format!(
        "identity: cowsay\napplication_path: {app}\nsystem_prompt: Tell cow jokes.\nllm:\n  model: scripted-model\n"
    ))?;
    let say = json!({"message": "moo", "name": "daisy"});
    let provider = ScriptedProvider::new([
        turn(
            vec![Block::ToolUse { id: "t1".into(), name: "cow_say".into(), input: ToolInput::from_value(&say) }],
            StopReason::ToolUse,
        ),
        turn(vec![Block::text("Daisy said moo.")], StopReason::EndTurn),
    ]);
    let agent = Agent::builder().config(config).provider(provider).trace_content(content).build().await?;
    let outcome = agent.run("make a cow say moo", RunOptions::new()).await;
    println!("{}", outcome.answer.as_deref().unwrap_or("(no answer)"));
    Ok(())
}
