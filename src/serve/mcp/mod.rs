//! The tool set over the Model Context Protocol (SPEC section 15, MCP-1..24): rmcp's streamable HTTP server at the
//! listener root, or one client over stdin and stdout ([`McpServer::serve_stdio`], any stream pair with
//! [`McpServer::serve_io`]; STDIO-1..6), fed by the same loading and selection pipeline as the agent. Everything
//! below holds on both transports except what names HTTP (the bind address, `Host` checks, sessions).
//!
//! - Serving is opt-in: the configuration needs an `expose.agent.mcp` block (MCP-1).
//! - Served: command tools and MCP-servable `harness.tools` built-ins that survive selection, narrowed by
//!   `expose.agent.tools` (MCP-7). `ask_human_*`, `memory_*`, imported and custom tools are never served.
//! - Every input is checked against the tool's schema before anything is asked or run; every failure is an
//!   `isError: true` result, never a protocol error (MCP-18).
//! - Gated tools ask the client's user through elicitation, in both protocol eras: `elicitation/create` for
//!   clients on 2025-11-25 and earlier, an `InputRequiredResult` round for 2026-07-28. Only an explicit approval
//!   runs the command; a client that cannot be asked is refused under the default `confirm_over_mcp: always`
//!   (MCP-8..13).
//! - At most `max_concurrent_tools` calls run at once across all clients, each bounded by `tool_timeout`; approval
//!   waits hold no slot and are outside the timeout (MCP-13, MCP-16, MCP-17).
//! - It binds 127.0.0.1 unless told otherwise and accepts only `Host` headers that fit the bind address
//!   (DNS-rebinding protection); oversize bodies are refused (MCP-3).
//! - A client that declares the tasks extension gets each command call as a task it polls, cancels (killing the
//!   process group) and approves in the task's own round; `expose.agent.mcp.tasks` bounds their count and lifetime,
//!   and a task is visible only to the session that made it (TASK-1..6).
//! - With `expose.agent.mcp.auth`, every HTTP request needs an OAuth bearer JWT from the configured issuer, for
//!   this server's audience, with the required scopes (`401`/`403` with the MCP challenge otherwise); the
//!   protected-resource metadata is published, tools tagged `auth:scope=<scope>` are served only to callers granted
//!   it, and the [`Caller`] is carried in events and telemetry. A server that is not loopback needs `auth` or the
//!   explicit `insecure_no_auth` (AUTH-1..9).
//! - Replicas (REPL-1..5): with `harness.approvals.backend: nats`, pending 2026-07-28 approval rounds are kept in
//!   the approvals bucket, so N servers behind a plain load balancer accept an answer on any replica and refuse a
//!   replay on all of them. Legacy sessions and tasks stay on the replica that made them.
//! - At most `max_sessions` sessions are open; at the cap a new one replaces the least recently used session with
//!   no request in progress, and is refused (`503`) only when every session is busy (MCP-24).
//!
//! ```no_run
//! use fisk_ai::Config;
//! use fisk_ai::serve::mcp::{McpEvent, McpServer};
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let config = Config::load("agent.yaml")?;
//! let server = McpServer::builder()
//!     .config(config)
//!     .events(|e: &McpEvent<'_>| {
//!         if let McpEvent::ToolCall { display, .. } = e {
//!             eprintln!("-> {display}");
//!         }
//!     })
//!     .build()
//!     .await?; // introspects the application and selects the served tools once
//! let listener = server.bind().await?; // 127.0.0.1:8080 unless configured otherwise
//! server.serve_until_signal(listener).await // SIGINT or SIGTERM stops it gracefully
//! # }
//! ```

mod arguments;
mod auth;
mod builder;
mod call_line;
#[cfg(feature = "otel")]
mod caller_trace;
mod clients;
mod confirm;
mod events;
mod guard;
mod handler;
mod http;
mod listing;
mod pending;
mod progress;
mod server;
mod sessions;
mod shared;
mod stdio;
mod tasks;

pub use super::signal::shutdown_signal;
pub use auth::Caller;
/// The axum (0.8) [`McpServer::router`] is built with, so a host mounting the endpoint needs no axum of its own.
pub use axum;
pub use builder::{DEFAULT_MAX_REQUEST_BODY, McpServerBuilder};
pub use clients::{ClientEntry, ClientFile, ClientScope, Installed, ListedServer, McpClient};
pub use confirm::DEFAULT_CONFIRM_TIMEOUT;
pub use events::{Denial, GatedBehavior, McpEvent, McpEventSink, NoMcpEvents};
pub use http::SHUTDOWN_GRACE;
pub use server::McpServer;
