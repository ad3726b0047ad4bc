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

pub use crate::config::Remember;
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
    /// What a "for the conversation" answer may cover (`harness.approvals.remember`): under
    /// [`Remember::Exact`] a gate offers only [`Decision::ForConversationExact`], and a
    /// [`Decision::ForConversation`] is taken as exact (EXACT-2).
    pub remember: Remember,
    /// The run's session, when it is checkpointed: with [`call_id`](Self::call_id), what a gate that outlives a
    /// process keys its question by, so a resumed run finds the same one (APPR-6).
    pub session: Option<String>,
    /// The model's id for the call (model text: never show it unsanitized).
    pub call_id: Option<String>,
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
            remember: Remember::Tool,
            session: None,
            call_id: None,
        }
    }

    /// The run's session (when checkpointed) and the call's id (the agent loop sets them for every gated call).
    #[must_use]
    pub fn with_call(mut self, session: Option<&str>, call_id: &str) -> Self {
        self.session = session.map(str::to_owned);
        self.call_id = Some(call_id.to_owned());
        self
    }

    /// What a remembered answer may cover (the agent sets `harness.approvals.remember`).
    #[must_use]
    pub fn with_remember(mut self, remember: Remember) -> Self {
        self.remember = remember;
        self
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
    /// Run it, and stop asking for this tool for the rest of the conversation, whatever its arguments.
    ForConversation,
    /// Run it, and stop asking for this tool with exactly these arguments for the rest of the conversation
    /// (EXACT-1): a call with any other arguments is asked again.
    ForConversationExact,
    /// The prompt was interrupted or hit end of input: nothing runs, no answer is recorded, and the run ends.
    Abort,
}

impl Decision {
    /// Whether the call may run.
    pub fn allows(self) -> bool {
        matches!(self, Decision::Once | Decision::ForConversation | Decision::ForConversationExact)
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

/// Tools allowed for the rest of a conversation (GATE-11), keyed by final name regardless of arguments, and calls
/// allowed with exactly their arguments (EXACT-1), keyed by final name and [`call_digest`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Approvals {
    tools: BTreeSet<String>,
    exact: BTreeSet<(String, String)>,
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

    /// Allow `tool` from now on when called with the input whose [`call_digest`] is `digest`.
    pub fn allow_exact(&mut self, tool: impl Into<String>, digest: impl Into<String>) {
        self.exact.insert((tool.into(), digest.into()));
    }

    /// Whether `tool` is allowed whatever its arguments.
    pub fn is_allowed(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }

    /// Whether `tool` has any exact allowance (so a caller digests the input only then).
    pub fn has_exact(&self, tool: &str) -> bool {
        self.exact.range((tool.to_owned(), String::new())..).next().is_some_and(|(t, _)| t == tool)
    }

    /// Whether `tool` called with the input of `digest` has an exact allowance (a tool-wide one is
    /// [`is_allowed`](Self::is_allowed)).
    pub fn is_allowed_exact(&self, tool: &str, digest: &str) -> bool {
        self.exact.contains(&(tool.to_owned(), digest.to_owned()))
    }

    /// Drop every allowance (a context reset or a forced resume across drift, GATE-15).
    pub fn clear(&mut self) {
        self.tools.clear();
        self.exact.clear();
    }

    /// The tools allowed whatever their arguments, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(String::as_str)
    }

    /// The exact allowances: (tool, input digest), sorted.
    pub fn iter_exact(&self) -> impl Iterator<Item = (&str, &str)> {
        self.exact.iter().map(|(t, d)| (t.as_str(), d.as_str()))
    }
}

/// The key of an exact allowance (EXACT-1): SHA-256 (hex) of the validated input's canonical JSON (keys sorted, no
/// spaces) and of the call's resolved line (`display`: a command's argv as it will run).
///
/// Both, because parsing maps numbers to floats (`1e2`, `100.0` and `100` parse alike, and so do integers past
/// 2^53) while a command is built from the number as written: the line tells those apart, the canonical input
/// covers what a shortened line leaves out. The same arguments in another key order give the same key; any other
/// value, or the same value written another way that runs differently, gives another. The key is this crate's own
/// (serde_json's number formatting, not RFC 8785): another implementation cannot reproduce it.
///
/// ```
/// use fisk_ai::gate::call_digest;
/// use serde_json::json;
///
/// let line = "cow feed --cow=daisy";
/// assert_eq!(call_digest(&json!({"a": 1, "b": "x"}), line), call_digest(&json!({"b": "x", "a": 1}), line));
/// assert_ne!(call_digest(&json!({"a": 1}), line), call_digest(&json!({"a": 2}), line));
/// assert_ne!(call_digest(&json!({"n": 100.0}), "feed 1e2"), call_digest(&json!({"n": 100.0}), "feed 100.0"));
/// ```
pub fn call_digest(arguments: &serde_json::Value, display: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut canonical = Vec::new();
    crate::canonical::write_canonical(&mut canonical, arguments);
    // A separator no canonical JSON contains keeps the two parts apart.
    canonical.push(0);
    canonical.extend_from_slice(display.as_bytes());
    crate::canonical::hex(&Sha256::digest(&canonical))
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
