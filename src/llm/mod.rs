//! The provider-neutral conversation model (PROV-1, PROV-2) and the [`ModelProvider`] seam.
//!
//! A conversation is a list of [`Message`]s; each holds [`Block`]s. Anything a provider returns that the neutral
//! model does not name (a server tool call, a tool-search result, redacted thinking) travels as
//! [`Block::Provider`] with its raw JSON, and goes back to the provider byte for byte on the next turn.

#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub mod anthropic;
mod plan;
mod scripted;

pub use plan::{TOOL_SEARCH_THRESHOLD, ToolPlan};

/// The providers `llm.provider` can name in this build (PROV-3).
pub const PROVIDERS: &[&str] = &[
    #[cfg(feature = "anthropic")]
    "anthropic",
];
pub use scripted::{RecordedRequest, ScriptedProvider};

use crate::tool::ToolInput;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::fmt;
use std::time::Duration;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The operator's prompt and tool results.
    User,
    /// The model.
    Assistant,
}

/// One content block. Serialized as an object with exactly one key naming the kind (SESS-12).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Model reasoning with its opaque signature, echoed back unchanged (PROV-15).
    Thinking {
        /// The (possibly summarized, possibly empty) reasoning text.
        text: String,
        /// The provider's opaque signature, verbatim.
        signature: String,
    },
    /// A call of one of our tools.
    ToolUse {
        /// The provider's call id.
        id: String,
        /// The tool's final name.
        name: String,
        /// The input exactly as the model wrote it.
        input: ToolInput,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the call this answers.
        tool_use_id: String,
        /// The result text.
        content: String,
        /// Whether it is an error result.
        is_error: bool,
    },
    /// A block the neutral model does not name, kept as the provider's raw JSON.
    Provider {
        /// The provider's block type, e.g. `server_tool_use`.
        kind: String,
        /// The block's JSON, byte for byte.
        raw: Box<RawValue>,
    },
}

impl PartialEq for Block {
    fn eq(&self, other: &Self) -> bool {
        use Block::*;
        match (self, other) {
            (Text { text: a }, Text { text: b }) => a == b,
            (Thinking { text: a, signature: s }, Thinking { text: b, signature: t }) => a == b && s == t,
            (ToolUse { id: a, name: n, input: i }, ToolUse { id: b, name: m, input: j }) => a == b && n == m && i == j,
            (
                ToolResult { tool_use_id: a, content: c, is_error: e },
                ToolResult { tool_use_id: b, content: d, is_error: f },
            ) => a == b && c == d && e == f,
            (Provider { kind: a, raw: r }, Provider { kind: b, raw: s }) => a == b && r.get() == s.get(),
            _ => false,
        }
    }
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text { text: text.into() }
    }

    /// A tool result block.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Block::ToolResult { tool_use_id: tool_use_id.into(), content: content.into(), is_error }
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its blocks, in order.
    pub content: Vec<Block>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Message { role: Role::User, content: vec![Block::text(text)] }
    }

    /// An assistant message.
    pub fn assistant(content: Vec<Block>) -> Self {
        Message { role: Role::Assistant, content }
    }

    /// The text blocks joined by blank lines.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        parts.join("\n\n")
    }

    /// The tool calls, in order: `(id, name, input)`.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &ToolInput)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// Why the model stopped (PROV-2); unknown reasons are kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// A natural end.
    EndTurn,
    /// The output cap was hit; the turn is truncated.
    MaxTokens,
    /// The model called tools.
    ToolUse,
    /// The server paused a long server-side turn; send it back to continue.
    PauseTurn,
    /// The model declined to answer.
    Refusal,
    /// A stop sequence matched.
    StopSequence,
    /// The context window filled up.
    ContextWindowExceeded,
    /// A reason this crate does not know.
    Other(String),
}

impl StopReason {
    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::ToolUse => "tool_use",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ContextWindowExceeded => "model_context_window_exceeded",
            StopReason::Other(s) => s,
        }
    }

    /// From the wire name.
    pub fn parse(s: &str) -> Self {
        match s {
            "end_turn" => StopReason::EndTurn,
            "max_tokens" => StopReason::MaxTokens,
            "tool_use" => StopReason::ToolUse,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            "stop_sequence" => StopReason::StopSequence,
            "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(StopReason::parse(&String::deserialize(d)?))
    }
}

/// Token counts of one call (PROV-2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_tokens: u64,
}

impl Usage {
    /// Every token counted against the budget (BUDGET-2).
    pub fn total(&self) -> u64 {
        // Saturating: counts may come from a journal or a provider, and must never overflow into a panic.
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_creation_tokens)
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(o.cache_read_tokens);
        self.cache_creation_tokens = self.cache_creation_tokens.saturating_add(o.cache_creation_tokens);
    }
}

/// Prompt-cache behavior of a request (PROV-9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CacheMode {
    /// No cache markers.
    Off,
    /// Cache with the provider's default lifetime.
    #[default]
    Default,
    /// Cache for an hour (interactive sessions whose turns are minutes apart).
    OneHour,
}

/// One model call. Borrowed, so a turn re-sends the conversation without copying it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Request<'a> {
    /// Model id.
    pub model: &'a str,
    /// System prompt segments, in order (PROV-8).
    pub system: &'a [String],
    /// The whole conversation.
    pub messages: &'a [Message],
    /// The tools and their deferral plan, the same value on every turn of a run.
    pub tools: &'a ToolPlan,
    /// Whether to ask for reasoning (PROV-10).
    pub thinking: bool,
    /// The per-response output cap; `None` for the provider's default (PROV-11).
    pub max_output_tokens: Option<u32>,
    /// Prompt caching (PROV-9).
    pub cache: CacheMode,
    /// The per-call timeout the run asks for (`llm.budget.call_timeout`, PROV-5); `None` for the provider's own.
    pub timeout: Option<Duration>,
}

impl<'a> Request<'a> {
    /// A request with thinking off, the default output cap and default caching.
    pub fn new(model: &'a str, system: &'a [String], messages: &'a [Message], tools: &'a ToolPlan) -> Self {
        Request {
            model,
            system,
            messages,
            tools,
            thinking: false,
            max_output_tokens: None,
            cache: CacheMode::Default,
            timeout: None,
        }
    }

    /// Ask for reasoning.
    #[must_use]
    pub fn with_thinking(mut self, on: bool) -> Self {
        self.thinking = on;
        self
    }

    /// Cap the output.
    #[must_use]
    pub fn with_max_output_tokens(mut self, cap: Option<u32>) -> Self {
        self.max_output_tokens = cap;
        self
    }

    /// Set caching.
    #[must_use]
    pub fn with_cache(mut self, cache: CacheMode) -> Self {
        self.cache = cache;
        self
    }

    /// Bound the call (PROV-5).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A model's reply.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Response {
    /// The assistant blocks, in order, to be appended to the conversation as received.
    pub content: Vec<Block>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Token counts.
    pub usage: Usage,
}

impl Response {
    /// A response.
    pub fn new(content: Vec<Block>, stop_reason: StopReason, usage: Usage) -> Self {
        Response { content, stop_reason, usage }
    }
}

/// What a provider can do, declared statically (PROV-4, PROV-16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caps {
    /// Stable provider id, stamped into session fingerprints.
    pub provider: &'static str,
    /// Whether the provider has server-side tool search (SEARCH-2).
    pub tool_search: bool,
    /// Environment variables holding this provider's credentials, scrubbed from every child (EXEC-8).
    pub credentials: &'static [&'static str],
}

impl Caps {
    /// Capabilities of provider `id`: no tool search, no credentials.
    pub const fn new(provider: &'static str) -> Self {
        Caps { provider, tool_search: false, credentials: &[] }
    }

    /// Declare server-side tool search.
    #[must_use]
    pub const fn with_tool_search(mut self, on: bool) -> Self {
        self.tool_search = on;
        self
    }

    /// Declare credential variables.
    #[must_use]
    pub const fn with_credentials(mut self, names: &'static [&'static str]) -> Self {
        self.credentials = names;
        self
    }
}

/// What went wrong talking to a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// The API answered with an error status.
    Status,
    /// The call exceeded its timeout.
    Timeout,
    /// The connection failed or dropped.
    Transport,
    /// The reply could not be decoded.
    Decode,
    /// A stream reported an error after it started.
    Stream,
    /// The call was cancelled.
    Cancelled,
    /// The provider is misconfigured (no key, bad base URL).
    Config,
}

/// A failed model call, after any retries the provider made.
#[derive(Debug, Clone)]
pub struct ProviderError {
    kind: ProviderErrorKind,
    status: Option<u16>,
    message: String,
    retry_after: Option<Duration>,
}

impl ProviderError {
    /// An error of `kind`.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ProviderError { kind, status: None, message: message.into(), retry_after: None }
    }

    /// An error status from the API.
    pub fn status(status: u16, message: impl Into<String>) -> Self {
        ProviderError { status: Some(status), ..Self::new(ProviderErrorKind::Status, message) }
    }

    /// Attach the server's requested wait before a retry.
    #[must_use]
    pub fn with_retry_after(mut self, wait: Option<Duration>) -> Self {
        self.retry_after = wait;
        self
    }

    /// The kind.
    pub fn kind(&self) -> ProviderErrorKind {
        self.kind
    }

    /// The HTTP status, when the API answered.
    pub fn http_status(&self) -> Option<u16> {
        self.status
    }

    /// The wait the server asked for.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether trying again may help: 408, 409, 429, 5xx (529 included), timeouts, dropped connections and
    /// stream errors; never 400/401/403/404/413.
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            ProviderErrorKind::Status => {
                matches!(self.status, Some(408 | 409 | 429)) || self.status.is_some_and(|s| s >= 500)
            }
            ProviderErrorKind::Timeout | ProviderErrorKind::Transport | ProviderErrorKind::Stream => true,
            _ => false,
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProviderError {}

/// A model behind an API.
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::llm::{Block, Caps, ModelProvider, ProviderError, Request, Response, StopReason, Usage};
///
/// /// A provider that always answers the same thing, e.g. for a dry run.
/// struct Echo;
///
/// #[async_trait]
/// impl ModelProvider for Echo {
///     fn capabilities(&self) -> Caps {
///         Caps::new("echo")
///     }
///
///     async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
///         let last = req.messages.last().map(|m| m.text()).unwrap_or_default();
///         Ok(Response::new(vec![Block::text(format!("you said: {last}"))], StopReason::EndTurn, Usage::default()))
///     }
/// }
/// # let _ = Echo;
/// ```
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// Static capabilities.
    fn capabilities(&self) -> Caps;

    /// Make one call, bounded by the provider's own per-call timeout (PROV-5), retrying as the provider sees fit.
    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError>;
}
