#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
// Input from models, configs, CLIs and peers must never panic the library; tests may unwrap.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Tools run in their own process group and are killed with it (EXEC-5), the journal is fsynced and locked with
// POSIX calls, and the confirmation prompt reads a Unix terminal: there is no Windows implementation to fall back
// to, so say so at build time rather than fail at run time.
#[cfg(not(unix))]
compile_error!(
    "fisk-ai supports Unix-like systems only (Linux, macOS, the BSDs): it relies on process groups, POSIX signals and Unix terminals"
);

pub mod agent;
mod assemble;
pub mod builtin;
pub mod config;
pub mod dispatch;
pub mod error;
pub mod exec;
pub mod gate;
pub mod llm;
pub mod memory;
pub mod operator;
pub mod select;
pub mod serve;
pub mod session;
pub mod source;
pub mod telemetry;
pub mod tool;
pub mod warning;

pub use agent::{Agent, RunOptions, RunOutcome};
pub use async_trait::async_trait;
pub use config::Config;
pub use error::{Error, ErrorKind, Result};
pub use select::{Selection, Toolset};
#[cfg(feature = "mcp")]
pub use serve::mcp::McpServer;
pub use source::ToolSource;
pub use source::fisk::FiskApp;
pub use tool::{CallContext, Tool, ToolInput, ToolOutput, ToolSpec};
pub use warning::Warning;
