//! The confirmation gate (SPEC section 10): a gated tool runs only on an explicit operator approval.
//!
//! The agent loop asks a [`ConfirmGate`] before each gated call, after checking the conversation's
//! [`Approvals`]. With no gate configured every gated call is declined ([`DenyAll`]); no terminal, end of input, an
//! interrupt, a timeout or any error never means yes (DESIGN §6, invariant 6).

mod quote;
mod sanitize;
#[cfg(feature = "terminal")]
#[cfg_attr(docsrs, doc(cfg(feature = "terminal")))]
mod terminal;
#[cfg(feature = "terminal")]
pub(crate) mod tty;

pub use quote::{display_argv, quote_arg};
pub use sanitize::{PROMPT_LIMIT, clean_text, escape_invisible, sanitize};
#[cfg(feature = "terminal")]
pub use terminal::TerminalGate;

use crate::tool::ToolOutput;
use async_trait::async_trait;
use std::collections::BTreeSet;

/// What the operator is asked to approve.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfirmRequest {
    /// The tool's final name (the key of a conversation-wide allowance).
    pub tool: String,
    /// The command path, space separated (the tool name for tools that are not commands).
    pub command: String,
    /// The resolved command line or one-line summary, already sanitized (GATE-7, GATE-8).
    pub command_line: String,
    /// The tag that gates the call (GATE-2).
    pub trigger: String,
    /// The call's validated input, parsed (`{}` for none), so a gate can decide on arguments rather than on the
    /// display line. `null` when the request was built without it ([`with_input`](Self::with_input)). Model
    /// text: never show it to an operator unsanitized.
    pub input: serde_json::Value,
}

impl ConfirmRequest {
    /// A request; `command_line` is sanitized here so no gate can forget to (GATE-8).
    pub fn new(
        tool: impl Into<String>,
        command: impl Into<String>,
        command_line: &str,
        trigger: impl Into<String>,
    ) -> Self {
        ConfirmRequest {
            tool: tool.into(),
            command: sanitize(&command.into(), PROMPT_LIMIT),
            command_line: sanitize(command_line, PROMPT_LIMIT),
            trigger: trigger.into(),
            input: serde_json::Value::Null,
        }
    }

    /// The call's validated, parsed input (the agent loop sets it for every gated call).
    ///
    /// ```
    /// use fisk_ai::gate::ConfirmRequest;
    /// use serde_json::json;
    ///
    /// let req = ConfirmRequest::new("stream_rm", "stream rm", "stream rm ORDERS", "ai:confirm")
    ///     .with_input(json!({"stream": "ORDERS"}));
    /// assert_eq!(req.input["stream"], "ORDERS");
    /// ```
    #[must_use]
    pub fn with_input(mut self, input: serde_json::Value) -> Self {
        self.input = input;
        self
    }
}

/// The operator's answer (GATE-9, GATE-12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Decision {
    /// Decline: the command does not run and the model is told the decision is final.
    Decline,
    /// Run this call once.
    Once,
    /// Run it, and stop asking for this tool for the rest of the conversation.
    ForConversation,
    /// The prompt was interrupted or hit end of input: nothing runs, no answer is recorded, and the run ends.
    Abort,
}

impl Decision {
    /// Whether the call may run.
    pub fn allows(self) -> bool {
        matches!(self, Decision::Once | Decision::ForConversation)
    }
}

/// Who approves gated calls.
///
/// A host-written gate, for example one that approves read-only listings from a chat-ops bot:
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision};
///
/// struct ChatOps;
///
/// #[async_trait]
/// impl ConfirmGate for ChatOps {
///     fn can_ask(&self) -> bool {
///         true
///     }
///
///     async fn confirm(&self, req: &ConfirmRequest) -> Decision {
///         // A real gate would post `req.command_line` to a channel and await a human's answer.
///         if req.command.ends_with(" ls") { Decision::Once } else { Decision::Decline }
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let ask = |cmd: &str| ConfirmRequest::new("x", cmd, cmd, "ai:confirm");
/// assert_eq!(ChatOps.confirm(&ask("stream ls")).await, Decision::Once);
/// assert_eq!(ChatOps.confirm(&ask("stream rm")).await, Decision::Decline);
/// # });
/// ```
#[async_trait]
pub trait ConfirmGate: Send + Sync {
    /// Whether an operator can be asked at all; `false` declines every gated call without asking (GATE-6).
    fn can_ask(&self) -> bool;

    /// Ask. Any failure must come back as [`Decision::Decline`] or [`Decision::Abort`], never as approval.
    async fn confirm(&self, req: &ConfirmRequest) -> Decision;
}

/// The gate used when none is given: nobody can be asked, so every gated call is declined.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

#[async_trait]
impl ConfirmGate for DenyAll {
    fn can_ask(&self) -> bool {
        false
    }

    async fn confirm(&self, _req: &ConfirmRequest) -> Decision {
        Decision::Decline
    }
}

/// Tools allowed for the rest of a conversation (GATE-11), keyed by final name regardless of arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals {
    tools: BTreeSet<String>,
}

impl Approvals {
    /// No allowances.
    pub fn new() -> Self {
        Self::default()
    }

    /// Allow `tool` from now on.
    pub fn allow(&mut self, tool: impl Into<String>) {
        self.tools.insert(tool.into());
    }

    /// Whether `tool` is allowed.
    pub fn is_allowed(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }

    /// Drop every allowance (a context reset or a forced resume across drift, GATE-15).
    pub fn clear(&mut self) {
        self.tools.clear();
    }

    /// The allowed tools, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(String::as_str)
    }
}

/// Why a gated call did not run; each becomes the GATE-10 result the model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeclineReason {
    /// The operator said no.
    Operator,
    /// No operator can be asked.
    NoOperator,
    /// The run was cancelled first.
    Cancelled,
}

/// The GATE-10 result of a declined call: a normal (non-error) result `{"allowed": false, "reason": ...}`.
///
/// ```
/// use fisk_ai::gate::{DeclineReason, declined};
///
/// let out = declined(DeclineReason::Operator);
/// assert!(!out.is_error());
/// assert!(out.content().starts_with(r#"{"allowed":false,"reason":"#));
/// assert!(out.content().contains("final"));
/// ```
pub fn declined(reason: DeclineReason) -> ToolOutput {
    let reason = match reason {
        DeclineReason::Operator => {
            "the operator declined to run this command; the decision is final: do not retry it or try to reach the \
             same result another way"
        }
        DeclineReason::NoOperator => {
            "no operator is available to approve this command, so it was not run; the decision is final: do not \
             retry it"
        }
        DeclineReason::Cancelled => "the run was cancelled before the command could be approved; it was not run",
    };
    ToolOutput::json(&serde_json::json!({"allowed": false, "reason": reason}))
}
