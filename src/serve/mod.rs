//! Serving the selected tool set to other programs (SPEC sections 15 and 16).
//!
//! - `mcp` (feature `mcp`): the tools over the Model Context Protocol's streamable HTTP transport, with
//!   elicitation-gated confirmation.
//! - `worker` (feature `nats`): agent runs taken from a JetStream work queue, across a fleet of workers.
//! - `a2a` (feature `nats`): the command tools to other agents over NATS, through the NATS services framework.
//!
//! Every server is fed by the same [`Toolset`](crate::Toolset) the agent loop uses, so selection, naming, schemas
//! and gating never drift between them.

#[cfg(feature = "nats")]
#[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
pub mod a2a;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
mod signal;
#[cfg(feature = "nats")]
#[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
pub mod worker;

pub use signal::shutdown_signal;
