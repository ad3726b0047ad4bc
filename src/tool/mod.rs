//! What a tool is, independent of where it came from.
//!
//! A [`Tool`] has a [`ToolSpec`] (name, descriptions, input schema, tags, origin) and can be called with a JSON
//! input. Calls never fail with an [`Error`](crate::Error): every outcome, including a bad argument, a non-zero
//! exit or a timeout, is a [`ToolOutput`] the model can read.

mod compiled;
mod decorate;
mod input;
mod output;
pub mod schema;
mod spec;
pub mod tags;
mod tail;

use async_trait::async_trait;
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

pub use decorate::Decorated;
pub use input::ToolInput;
pub use output::{ExecReport, Interrupted, ToolOutput};
pub use schema::InputError;
pub(crate) use spec::MakeSchema;
pub use spec::{Exposure, Origin, ToolKind, ToolSpec};
pub use tags::Tags;
pub use tail::OutputTail;

/// The name of the agent's client-side search meta-tool (SEARCH-4). Declared here, at the bottom of the module
/// graph, because selection reserves it (an imported tool never takes it) and selection sits below the agent.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The name of the agent's routing meta-tool, reserved like [`SEARCH_TOOLS`].
pub const CALL_TOOL: &str = "call_tool";
/// Cancels a running call (re-exported so hosts need not depend on `tokio-util`).
pub use tokio_util::sync::CancellationToken;

/// A tool a model or client can call.
///
/// Implement this for tools of your own (a host's custom tools and built-ins); command tools come from
/// [`FiskApp`](crate::source::fisk::FiskApp). The input arrives as a [`ToolInput`]: the JSON text exactly as the
/// model wrote it, so numbers keep their original form (`1.50` stays `1.50`).
///
/// **Input arrives validated.** The agent, the MCP server and every other surface call tools through the one
/// [dispatch path](crate::dispatch): the input is parsed once, duplicate keys are refused, required parameters and
/// the whole of [`ToolSpec::input_schema`] are checked, and only then is the operator asked and the tool called. A
/// tool therefore never sees input its schema rejects and need not validate it again; it still must not panic when
/// called directly with anything else.
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

    /// Prepare a call whose input passed validation: the [`display`](Tool::display) line and, optionally, state
    /// the call reuses so it is computed once (a command's argv). `arguments` is the input already parsed by the
    /// dispatch path (`{}` for none), so a tool need not parse it again. The dispatch path calls this once per
    /// call, before any gate, and hands the state to [`call`](Tool::call) through [`CallContext::prepared`].
    ///
    /// A call that cannot run (the input cannot be mapped, say) fails here: the caller gets an invalid-input
    /// result and no operator is ever asked to approve it. The default is the display line alone.
    ///
    /// # Errors
    ///
    /// An [`InputError`] naming the property, when the input cannot be prepared.
    fn prepare(&self, input: &ToolInput, arguments: &serde_json::Value) -> Result<Prepared, InputError> {
        let _ = arguments;
        Ok(Prepared::new(self.display(input)))
    }

    /// Run the tool. Never panics on any input; every failure is an error [`ToolOutput`].
    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput;
}

/// What [`Tool::prepare`] computed for one call: the operator's line and the tool's own state.
///
/// ```
/// use fisk_ai::tool::{CallContext, Prepared};
///
/// let prepared = Prepared::new("deploy web --force").with_state(vec!["deploy".to_owned()]);
/// assert_eq!(prepared.display(), "deploy web --force");
/// let ctx = CallContext::new().with_prepared(&prepared);
/// assert_eq!(ctx.prepared::<Vec<String>>().unwrap(), &["deploy"]);
/// assert!(CallContext::new().prepared::<Vec<String>>().is_none());
/// ```
#[derive(Clone)]
pub struct Prepared {
    display: String,
    state: Option<Arc<dyn Any + Send + Sync>>,
    program: Option<Arc<std::path::Path>>,
}

impl Prepared {
    /// A prepared call shown to an operator as `display`, with no state.
    pub fn new(display: impl Into<String>) -> Self {
        Prepared { display: display.into(), state: None, program: None }
    }

    /// The program the call runs, for a tool that runs one: the [audit trail](crate::audit) records it with the
    /// [`Argv`] in the call's `run` record, so a trail names the executable as well as its arguments.
    #[must_use]
    pub fn with_program(mut self, program: Arc<std::path::Path>) -> Self {
        self.program = Some(program);
        self
    }

    /// The program, when [`with_program`](Self::with_program) named one.
    pub fn program(&self) -> Option<&std::path::Path> {
        self.program.as_deref()
    }

    /// Attach state for [`Tool::call`] to read back with [`CallContext::prepared`].
    #[must_use]
    pub fn with_state<T: Any + Send + Sync>(mut self, state: T) -> Self {
        self.state = Some(Arc::new(state));
        self
    }

    /// The same state shown as `display`.
    #[must_use]
    pub fn with_display(mut self, display: impl Into<String>) -> Self {
        self.display = display.into();
        self
    }

    /// The operator's line.
    pub fn display(&self) -> &str {
        &self.display
    }
}

/// The argument vector a command call runs (without the binary), kept as a [`Prepared`] call's state by a tool that
/// runs a command: the [audit trail](crate::audit) records it, and the tool reads it back to run exactly that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv(pub Vec<String>);

impl Prepared {
    /// The argument vector, when the state is an [`Argv`].
    pub fn argv(&self) -> Option<&[String]> {
        self.state.as_deref()?.downcast_ref::<Argv>().map(|a| a.0.as_slice())
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("display", &self.display)
            .field("state", &self.state.is_some())
            .field("program", &self.program)
            .finish()
    }
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("name", &self.spec().name()).field("kind", &self.spec().kind()).finish()
    }
}

/// Per-call settings: cancellation and an optional deadline.
///
/// In the agent loop a command has no deadline of its own (EXEC-15); serving paths set `tool_timeout`.
#[derive(Clone, Default)]
pub struct CallContext {
    cancel: CancellationToken,
    timeout: Option<Duration>,
    prepared: Option<Arc<dyn Any + Send + Sync>>,
    tail: Option<OutputTail>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("timeout", &self.timeout)
            .field("prepared", &self.prepared.is_some())
            .field("tail", &self.tail.is_some())
            .finish()
    }
}

impl CallContext {
    /// A context that is never cancelled and has no deadline.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel the call when `token` is cancelled; a running process group is killed, with every other descendant
    /// (EXEC-17).
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Bound the call; on expiry a running process group is killed, with every other descendant (EXEC-17), and the
    /// result is an error.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Carry the state of a [`Prepared`] call to [`Tool::call`].
    #[must_use]
    pub fn with_prepared(mut self, prepared: &Prepared) -> Self {
        self.prepared = prepared.state.clone();
        self
    }

    /// Feed the call's output, as it arrives, to `tail` (a command tool does; PROG-2).
    #[must_use]
    pub fn with_output_tail(mut self, tail: OutputTail) -> Self {
        self.tail = Some(tail);
        self
    }

    /// Where the call's output goes as it arrives, when someone reports on it.
    pub fn output_tail(&self) -> Option<&OutputTail> {
        self.tail.as_ref()
    }

    /// The state [`Tool::prepare`] attached, when the call came through the dispatch path and it is a `T`.
    pub fn prepared<T: Any>(&self) -> Option<&T> {
        self.prepared.as_deref().and_then(|s| (s as &dyn Any).downcast_ref::<T>())
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
