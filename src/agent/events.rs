use crate::llm::{Message, StopReason, Usage};
use crate::tool::{Origin, ToolKind, ToolOutput};
use crate::warning::Warning;

/// Something that happened during a run (OVR-4). Borrowed: a sink that keeps an event clones what it needs, so the
/// loop copies nothing for sinks that only render.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum RunEvent<'a> {
    /// A warning for the operator.
    Warning(&'a Warning),
    /// The run started.
    Started {
        /// The model.
        model: &'a str,
        /// How many tools the model can use.
        tools: usize,
        /// How many of them need approval.
        gated: usize,
        /// The distinct tags that gate them, in tool order.
        triggers: &'a [String],
        /// Whether reasoning was requested.
        thinking: bool,
        /// Whether tools are deferred behind tool search.
        deferred: bool,
    },
    /// A model call is about to be made.
    LlmRequest {
        /// 1-based iteration.
        iteration: u32,
        /// Messages in the conversation.
        messages: usize,
        /// Approximate size of the conversation content in bytes.
        size: usize,
        /// The latest user text, or a count of tool results (CLI-9 preview).
        preview: &'a str,
    },
    /// A model call answered.
    LlmResponse {
        /// 1-based iteration.
        iteration: u32,
        /// Why the model stopped.
        stop_reason: &'a StopReason,
        /// Tokens of this call.
        usage: Usage,
    },
    /// Reasoning text.
    Thinking {
        /// The text.
        text: &'a str,
    },
    /// Assistant text: the answer when `terminal`, narration otherwise (LOOP-11).
    Assistant {
        /// The text.
        text: &'a str,
        /// Whether this is the final answer.
        terminal: bool,
    },
    /// A tool is about to run (after every check and approval).
    ToolCall {
        /// The call id.
        id: &'a str,
        /// The tool.
        name: &'a str,
        /// What kind of tool it is (a renderer may trace built-ins differently, CLI-7).
        kind: ToolKind,
        /// Where it comes from: an imported tool is traced with its source, `-> <name> (mcp <server>)`
        /// (MCPI-9, IMPORT-10; [`Origin::imported_from`]).
        origin: &'a Origin,
        /// The resolved command line or summary (EXEC-6).
        display: &'a str,
    },
    /// A call was refused before the gate and nothing ran: an unknown tool, missing required parameters or input
    /// that fails the schema (TOOL-21, EXEC-3). The model reads `reason`.
    ToolRefused {
        /// The call id.
        id: &'a str,
        /// The tool name the model used.
        name: &'a str,
        /// Why, as the model reads it.
        reason: &'a str,
    },
    /// A gated call was declined (by the operator, for want of one, or because the run was cancelled); nothing
    /// ran (GATE-10). The model reads `reason`.
    ToolDeclined {
        /// The call id.
        id: &'a str,
        /// The tool.
        name: &'a str,
        /// The decline as the model reads it.
        reason: &'a str,
    },
    /// A tool finished.
    ToolResult {
        /// The call id.
        id: &'a str,
        /// The tool.
        name: &'a str,
        /// What kind of tool it is.
        kind: ToolKind,
        /// What it produced.
        output: &'a ToolOutput,
    },
    /// The run is checkpointed to a session (SESS-1): a new one, or one being resumed.
    Session {
        /// The session id.
        id: &'a str,
        /// Whether it is being resumed.
        resumed: bool,
    },
    /// A resumed session's conversation so far, for the host to replay (SESS-22): the prompt, then each assistant
    /// turn and the results of its tool calls. Sent once, before the run continues.
    Replay {
        /// The restored messages, in order.
        messages: &'a [Message],
    },
    /// The operator allowed a tool for the rest of the conversation (GATE-11).
    Allowed {
        /// The tool.
        name: &'a str,
        /// Its command path.
        command: &'a str,
    },
    /// The operator allowed a tool with exactly the arguments of this call for the rest of the conversation
    /// (EXACT-1); a call with other arguments is asked again.
    AllowedExact {
        /// The tool.
        name: &'a str,
        /// Its command path.
        command: &'a str,
    },
    /// A piece of the reply the model is streaming (CONV-5): its text and reasoning as they arrive, before
    /// [`LlmResponse`](RunEvent::LlmResponse). They concatenate to the turn's text and thinking; on
    /// [`Delta::Restart`](crate::llm::Delta::Restart) the attempt is retried and what it streamed is void.
    Delta {
        /// 1-based iteration of the model call.
        iteration: u32,
        /// The piece.
        delta: crate::llm::Delta<'a>,
    },
    /// A turn of a conversation ended (LOOP-15): its counters and the conversation's so far.
    TurnEnded {
        /// Why the turn ended.
        reason: super::TerminalReason,
        /// This turn's counters.
        turn: &'a super::RunStats,
        /// The conversation's counters so far.
        total: &'a super::RunStats,
    },
    /// Older turns were summarised to keep the request within the context window (COMP-5). The tokens are the
    /// harness's estimates of the request size, from the provider's last reported usage plus what was added since.
    Compacted {
        /// The estimated request size before, in tokens.
        tokens_before: u64,
        /// The estimated request size after, in tokens.
        tokens_after: u64,
        /// How many messages the summary replaced.
        replaced: usize,
        /// The summarising call's tokens (counted in the run's usage and cost).
        usage: Usage,
    },
    /// A follow-up prompt joined the conversation (CONV-1).
    FollowUp {
        /// The prompt.
        prompt: &'a str,
    },
    /// The conversation was reset (CONV-2): its messages and remembered answers are gone.
    Reset,
    /// A checkpointed conversation's reset rotated its session (CONV-3): `previous` ended `suspended` and stays
    /// resumable, `next` holds the conversation from the reset on.
    SessionRotated {
        /// The session that was reset.
        previous: &'a str,
        /// The session the conversation goes on in.
        next: &'a str,
    },
}

/// Receives [`RunEvent`]s. Implemented for every `Fn(&RunEvent)` closure; a sink that forwards events to a channel
/// converts them to an owned form of its choosing.
///
/// ```
/// use fisk_ai::agent::{EventSink, RunEvent};
/// use fisk_ai::tool::{Origin, ToolKind};
///
/// let sink = |e: &RunEvent<'_>| {
///     if let RunEvent::ToolCall { display, .. } = e {
///         eprintln!("-> {display}");
///     }
/// };
/// let origin = Origin::Local;
/// sink.emit(&RunEvent::ToolCall { id: "1", name: "say", kind: ToolKind::Command, origin: &origin, display: "say -- hi" });
/// ```
pub trait EventSink: Send + Sync {
    /// Handle one event. Called on the run's task: keep it quick.
    fn emit(&self, event: &RunEvent<'_>);
}

impl<F> EventSink for F
where
    F: Fn(&RunEvent<'_>) + Send + Sync,
{
    fn emit(&self, event: &RunEvent<'_>) {
        self(event)
    }
}

/// Discards events.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: &RunEvent<'_>) {}
}
