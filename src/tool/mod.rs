//! What a tool is, independent of where it came from.
//!
//! A [`Tool`] has a [`ToolSpec`] (name, descriptions, input schema, tags, origin) and can be called with a JSON
//! input. Calls never fail with an [`Error`](crate::Error): every outcome, including a bad argument, a non-zero
//! exit or a timeout, is a [`ToolOutput`] the model can read.

mod input;
mod output;
pub mod schema;
mod spec;
pub mod tags;

use async_trait::async_trait;
use std::time::Duration;

pub use input::ToolInput;
pub use output::{ExecReport, ToolOutput};
pub use spec::{Origin, ToolKind, ToolSpec};
pub use tags::Tags;
/// Cancels a running call (re-exported so hosts need not depend on `tokio-util`).
pub use tokio_util::sync::CancellationToken;

/// A tool a model or client can call.
///
/// Implement this for tools of your own (a host's custom tools and built-ins); command tools come from
/// [`FiskApp`](crate::source::fisk::FiskApp). The input arrives as a [`ToolInput`]: the JSON text exactly as the
/// model wrote it, so numbers keep their original form (`1.50` stays `1.50`).
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
/// use serde_json::json;
///
/// struct Uptime {
///     spec: ToolSpec,
/// }
///
/// impl Uptime {
///     fn new() -> Self {
///         let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
///         Uptime { spec: ToolSpec::new("uptime", ToolKind::Custom, schema).with_description("Seconds since boot") }
///     }
/// }
///
/// #[async_trait]
/// impl Tool for Uptime {
///     fn spec(&self) -> &ToolSpec {
///         &self.spec
///     }
///
///     async fn call(&self, _input: &ToolInput, _ctx: &CallContext) -> ToolOutput {
///         ToolOutput::json(&json!({"uptime": 42}))
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let tool = Uptime::new();
/// let out = tool.call(&ToolInput::empty(), &CallContext::new()).await;
/// assert!(!out.is_error());
/// assert_eq!(out.content(), r#"{"uptime":42}"#);
/// # });
/// ```
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's name, descriptions, schema, tags and origin.
    fn spec(&self) -> &ToolSpec;

    /// The one line shown to an operator before approval and in traces, for example
    /// `stream rm ORDERS --force`. The default is the tool name followed by the input's JSON text.
    fn display(&self, input: &ToolInput) -> String {
        format!("{} {}", self.spec().name(), input.as_str())
    }

    /// Run the tool. Never panics on any input; every failure is an error [`ToolOutput`].
    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput;
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("name", &self.spec().name()).field("kind", &self.spec().kind()).finish()
    }
}

/// Per-call settings: cancellation and an optional deadline.
///
/// In the agent loop a command has no deadline of its own (EXEC-15); serving paths set `tool_timeout`.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    cancel: CancellationToken,
    timeout: Option<Duration>,
}

impl CallContext {
    /// A context that is never cancelled and has no deadline.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel the call when `token` is cancelled; a running process group is killed.
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Bound the call; on expiry a running process group is killed and the result is an error.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The cancellation token.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The deadline, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}
