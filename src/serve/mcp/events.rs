use super::auth::Caller;
use crate::warning::Warning;

/// How the gated tools of one client behave, decided by `confirm_over_mcp` and whether that client can be asked
/// (MCP-8, MCP-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GatedBehavior {
    /// The server serves no gated tool.
    NoneGated,
    /// Each gated call is put to the client's user through elicitation; only an explicit approval runs it.
    Asked,
    /// The client cannot be asked, so every gated call is refused (`always`).
    Refused,
    /// Gated calls run without asking (`auto` for a client that cannot elicit, or `never`).
    RunUngated,
}

impl GatedBehavior {
    /// A short phrase for logs, such as `asked through elicitation`.
    pub fn describe(self) -> &'static str {
        match self {
            GatedBehavior::NoneGated => "no tool needs approval",
            GatedBehavior::Asked => "gated tools are asked through elicitation",
            GatedBehavior::Refused => "gated tools are refused (the client cannot be asked)",
            GatedBehavior::RunUngated => "gated tools run without approval",
        }
    }
}

/// Why a gated call did not run (MCP-11, MCP-12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Denial {
    /// The user refused: `decline`, or `accept` without `approve: true`.
    Refused,
    /// The prompt was closed without a decision (`cancel`).
    Dismissed,
    /// No answer within the confirmation timeout.
    TimedOut,
    /// The elicitation failed, or its answer could not be matched to the call.
    Failed,
    /// The client cannot be asked and `confirm_over_mcp` is `always`.
    CannotAsk,
}

impl Denial {
    /// A short phrase for logs, such as `declined by the user`.
    pub fn describe(self) -> &'static str {
        match self {
            Denial::Refused => "declined by the user",
            Denial::Dismissed => "approval prompt closed without a decision",
            Denial::TimedOut => "no approval answer in time",
            Denial::Failed => "approval request failed",
            Denial::CannotAsk => "client cannot be asked for approval",
        }
    }
}

/// Something the MCP server did, for the host to log (the SDK never prints). Borrowed, like
/// [`RunEvent`](crate::agent::RunEvent).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum McpEvent<'a> {
    /// A warning for the operator, such as a gated tool run without approval under `auto` (MCP-12).
    Warning(&'a Warning),
    /// A client opened its lifecycle: `initialize` (protocols up to 2025-11-25) or `server/discover`
    /// (2026-07-28). Says how that client's gated tools will behave (MCP-13).
    ClientConnected {
        /// The client's name and version, when it sent them.
        client: Option<&'a str>,
        /// The protocol version it asked for.
        protocol: &'a str,
        /// Whether it declared form elicitation.
        elicitation: bool,
        /// What happens to its gated calls.
        gated: GatedBehavior,
        /// Who connected, on a server with `expose.agent.mcp.auth` (AUTH-8).
        caller: Option<&'a Caller>,
    },
    /// A call passed every check and approval and is about to run (MCP-19).
    ToolCall {
        /// The tool.
        name: &'a str,
        /// The resolved command line (EXEC-6) or built-in summary, sanitized (GATE-8).
        display: &'a str,
        /// Who called, on a server with `expose.agent.mcp.auth` (AUTH-8).
        caller: Option<&'a Caller>,
    },
    /// The client cancelled a call (`notifications/cancelled`, CANCEL-1): its process group was killed if it had
    /// started, and its slot is free.
    Cancelled {
        /// The tool.
        name: &'a str,
        /// The resolved command line or summary, sanitized.
        display: &'a str,
        /// Who called, on a server with `expose.agent.mcp.auth` (AUTH-8).
        caller: Option<&'a Caller>,
    },
    /// A call made as a task was refused before it started: the server keeps `expose.agent.mcp.tasks.max` tasks,
    /// or the client's session its share of them (TASK-3). The client got a tool error saying so.
    TaskRefused {
        /// The tool.
        name: &'a str,
        /// Which bound was reached.
        why: &'a str,
        /// Who called, on a server with `expose.agent.mcp.auth` (AUTH-8).
        caller: Option<&'a Caller>,
    },
    /// A gated call was not run (MCP-11, MCP-12).
    Denied {
        /// The tool.
        name: &'a str,
        /// The resolved command line or summary, sanitized.
        display: &'a str,
        /// Why.
        why: Denial,
        /// Who called, on a server with `expose.agent.mcp.auth` (AUTH-8).
        caller: Option<&'a Caller>,
    },
}

/// Receives [`McpEvent`]s. Implemented for every `Fn(&McpEvent)` closure.
///
/// ```
/// use fisk_ai::serve::mcp::{McpEvent, McpEventSink};
///
/// let sink = |e: &McpEvent<'_>| {
///     if let McpEvent::ToolCall { display, .. } = e {
///         eprintln!("-> {display}");
///     }
/// };
/// sink.emit(&McpEvent::ToolCall { name: "say", display: "say -- hi", caller: None });
/// ```
pub trait McpEventSink: Send + Sync {
    /// Handle one event. Called on a request's task, possibly from many at once: keep it quick.
    fn emit(&self, event: &McpEvent<'_>);
}

impl<F> McpEventSink for F
where
    F: Fn(&McpEvent<'_>) + Send + Sync,
{
    fn emit(&self, event: &McpEvent<'_>) {
        self(event)
    }
}

/// Discards events.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMcpEvents;

impl McpEventSink for NoMcpEvents {
    fn emit(&self, _event: &McpEvent<'_>) {}
}
