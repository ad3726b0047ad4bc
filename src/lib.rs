//! Turn a command-line application built with [fisk](https://github.com/choria-io/fisk) into a safe, tightly
//! scoped set of LLM tools, drive a model over them in a budgeted agent loop, or serve them over MCP.
//!
//! `fisk-ai` runs `app --fisk-introspect` once, turns every runnable leaf command into a [`Tool`] with a JSON
//! Schema, strips every command tagged `ai:deny`, applies the include/exclude rules of an `agent.yaml`
//! ([`Config`]), and hands the result (a [`Toolset`]) to whatever drives the model. The model acts only through
//! those tools: no shell, arguments bound to each command's schema and validated before any process starts,
//! credentials scrubbed from every child, output bounded, and gated commands held for a human's approval.
//!
//! # Use it as a library
//!
//! [`Agent::builder`] ties the parts together: a [`Config`], a [`ModelProvider`], a [`ConfirmGate`] for gated
//! calls, and any tools of the host's own; [`Agent::run`] runs the loop to an outcome. Here the "model" is the
//! scripted provider and the only tool is the host's, so the example needs no application and no API key:
//!
//! ```
//! use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
//! use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
//! use fisk_ai::tool::ToolKind;
//! use fisk_ai::{CallContext, Config, Tool, ToolInput, ToolOutput, ToolSpec, async_trait};
//! use serde_json::json;
//!
//! /// A tool of the host's own; the fisk application's commands come from `application_path`.
//! struct Greet(ToolSpec);
//!
//! #[async_trait]
//! impl Tool for Greet {
//!     fn spec(&self) -> &ToolSpec {
//!         &self.0
//!     }
//!     async fn call(&self, input: &ToolInput, _ctx: &CallContext) -> ToolOutput {
//!         ToolOutput::success(format!("greeted {}", input.as_str()))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::from_yaml_str("identity: demo\nsystem_prompt: Be brief.\nllm:\n  model: scripted\n")?;
//! let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
//! // The model's side, scripted: call `greet`, then answer.
//! let greet = ToolInput::from_json(r#"{"name": "daisy"}"#)?;
//! let model = ScriptedProvider::new([
//!     Response::new(
//!         vec![Block::ToolUse { id: "c1".into(), name: "greet".into(), input: greet }],
//!         StopReason::ToolUse,
//!         Usage::default(),
//!     ),
//!     Response::new(vec![Block::text("Daisy was greeted.")], StopReason::EndTurn, Usage::default()),
//! ]);
//! let agent = Agent::builder()
//!     .config(config) // usually Config::load("agent.yaml")
//!     .provider(model) // without one, llm.provider (anthropic, openai) is built from the config
//!     .tool(Greet(ToolSpec::new("greet", ToolKind::Custom, schema)))
//!     .build() // introspects the application once, selects, plans tool search
//!     .await?;
//! let outcome = agent.run("greet daisy", RunOptions::new()).await;
//! assert_eq!(outcome.reason, TerminalReason::Completed);
//! assert_eq!(outcome.answer.as_deref(), Some("Daisy was greeted."));
//! # Ok(())
//! # }
//! ```
//!
//! Without an agent, [`FiskApp::load`] introspects the application and [`Selection`] narrows its tools; every
//! surface calls a tool through [`dispatch::dispatch`] (lookup, validation, approval, the call).
//! `McpServer::builder()` serves the same tools over MCP's streamable HTTP (feature `mcp`, module `serve::mcp`),
//! and `A2aServer::builder()` to other agents over NATS (feature `nats`, module `serve::a2a`); an agent imports an
//! MCP server's tools (`source::mcp`) and another agent's (`source::remote`) as more sources.
//! Runs can be checkpointed to a session and resumed ([`RunOptions::with_checkpoint`], [`Agent::resume`]), and
//! every run, model call, tool call and MCP request is a [`tracing`] span with OpenTelemetry GenAI fields
//! ([`telemetry`]).
//!
//! # Plug-in points
//!
//! | trait | what it decides | shipped |
//! | --- | --- | --- |
//! | [`ToolSource`] | where tools come from | [`FiskApp`], `McpImport`, `RemoteAgent` |
//! | [`Tool`] | a tool of the host's own | commands, built-ins |
//! | [`ModelProvider`] | which model answers | `AnthropicProvider`, `OpenAiProvider`, `ScriptedProvider` |
//! | [`ConfirmGate`] | who approves gated calls | [`DenyAll`](gate::DenyAll), `TerminalGate` |
//! | [`BuiltinFactory`] | an in-process tool enabled by `harness.tools` | `read_file`, `base64_encode` |
//! | [`Prompter`] | who answers the `ask_human_*` tools | `TerminalPrompter` |
//! | [`SessionStore`], [`SessionBackend`] | where checkpointed runs are journaled | `FileSessionStore` |
//! | [`MemoryStore`], [`MemoryBackend`] | where the `memory_*` tools keep notes | the `file` backend |
//! | [`EventSink`] | what the host shows of a run | [`NoEvents`](agent::NoEvents) |
//!
//! # Features
//!
//! | feature | default | what it enables |
//! | --- | --- | --- |
//! | `anthropic` | yes | `llm::anthropic::AnthropicProvider`: the Anthropic Messages API |
//! | `openai` | yes | `llm::openai::OpenAiProvider`: OpenAI Chat Completions and compatible local servers |
//! | `mcp` | yes | `serve::mcp::McpServer`: the tools over MCP's streamable HTTP transport |
//! | `nats` | yes | `nats::NatsConnection` from NATS CLI contexts, `serve::a2a::A2aServer`, `serve::worker::Worker`, `source::remote::RemoteAgent` |
//! | `terminal` | yes | `gate::TerminalGate` and `operator::TerminalPrompter`: approval and `ask_human_*` prompts |
//! | `clap` | no | `clap::introspection` and `clap::ClapSource`: a Rust CLI built with clap as a tool source |
//! | `otel` | no | `telemetry::otel`: the spans exported over OTLP/HTTP (protobuf), W3C trace context continued from MCP callers and passed on to imported MCP servers |
//!
//! The tool model, selection, execution, the agent loop, sessions, `ScriptedProvider` and the traits above work
//! with `default-features = false`. `fisk-ai` builds on Unix-like systems only: tools run in their own process
//! groups and are stopped with POSIX signals.
//!
//! # The example CLI
//!
//! The repository's `examples/cli` is a complete front end over the library, with line output on stderr and only
//! the answer on stdout:
//!
//! ```text
//! cargo run --example cli -- info --config examples/cowsay/agent.yaml     # the tools, what is gated and why
//! cargo run --example cli -- run --config examples/cowsay/agent.yaml "tell me a joke about a cow"
//! cargo run --example cli -- mcp --config examples/cowsay/agent.yaml      # serve them over MCP
//! cargo run --example cli -- a2a --config examples/cowsay/a2a.yaml        # serve them to agents over NATS
//! cargo run --example cli -- session ls                                   # checkpointed runs
//! ```
//!
//! The README describes its flags, the checkpoint and resume workflow, and the MCP and NATS setups.
// No unsafe code, with one reviewed exception: the post-fork hook that confines a child (sandbox/child.rs, SBX-5).
#![deny(unsafe_code)]
// Input from models, configs, CLIs and peers must never panic the library; tests may unwrap.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
// Every public function returning `Result` says when it fails, and none may panic undocumented (CI denies
// warnings, so both are enforced).
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Tools run in their own process group and are killed with it (EXEC-5), the journal is fsynced and locked with
// POSIX calls, and the confirmation prompt reads a Unix terminal: there is no Windows implementation to fall back
// to, so say so at build time rather than fail at run time.
#[cfg(not(unix))]
compile_error!(
    "fisk-ai supports Unix-like systems only (Linux, macOS, the BSDs): it relies on process groups, POSIX signals and Unix terminals"
);

pub mod agent;
pub mod audit;
pub mod builtin;
mod canonical;
#[cfg(feature = "clap")]
#[cfg_attr(docsrs, doc(cfg(feature = "clap")))]
pub mod clap;
pub mod config;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod conformance;
pub mod dispatch;
pub mod error;
pub mod exec;
pub mod gate;
pub mod harness;
mod json;
#[cfg(feature = "knowledge")]
#[cfg_attr(docsrs, doc(cfg(feature = "knowledge")))]
pub mod knowledge;
pub mod llm;
pub mod memory;
#[cfg(feature = "nats")]
#[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
pub mod nats;
pub mod operator;
pub mod policy;
pub mod registry;
pub mod sandbox;
pub mod select;
pub mod serve;
pub mod session;
pub mod source;
pub mod telemetry;
mod time;
pub mod tool;
pub mod warning;

pub use agent::{Agent, AgentBuilder, EventSink, RunOptions, RunOutcome};
pub use async_trait::async_trait;
pub use builtin::{BuiltinFactory, BuiltinTool};
pub use config::Config;
pub use error::{Error, ErrorKind, Result};
pub use gate::ConfirmGate;
pub use harness::{Harness, HarnessBuilder};
pub use llm::ModelProvider;
pub use memory::{MemoryBackend, MemoryStore};
pub use operator::Prompter;
pub use select::{Selection, Toolset};
#[cfg(feature = "nats")]
pub use serve::a2a::A2aServer;
#[cfg(feature = "mcp")]
pub use serve::mcp::McpServer;
pub use session::{SessionBackend, SessionStore};
pub use source::ToolSource;
pub use source::fisk::FiskApp;
pub use tool::{CallContext, Tool, ToolInput, ToolOutput, ToolSpec};
pub use warning::Warning;

// The README's examples are compiled and run as doctests; the crate page above is its own.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
