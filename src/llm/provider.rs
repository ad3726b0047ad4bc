//! The [`ModelProvider`] seam: one request, one response, and what a provider can do.

use super::error::ProviderError;
use super::message::{Block, Message, StopReason, Usage};
use super::output::OutputSchema;
use super::plan::ToolPlan;
use async_trait::async_trait;
use std::time::Duration;

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
    /// Who hears the reply's deltas while it streams (CONV-5).
    deltas: Option<super::delta::Deltas<'a>>,
    /// The schema the final answer must satisfy, asked for through the provider's own mechanism (OUT-1).
    output: Option<&'a OutputSchema>,
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
            deltas: None,
            output: None,
        }
    }

    /// Stream the reply's text and thinking to `sink` as they arrive (CONV-5). A provider that does not stream
    /// calls it once per block when the reply is whole.
    #[must_use]
    pub fn with_deltas(mut self, sink: &'a dyn super::DeltaSink) -> Self {
        self.deltas = Some(super::delta::Deltas(sink));
        self
    }

    /// The sink [`with_deltas`](Self::with_deltas) set, for a provider to feed.
    pub fn deltas(&self) -> Option<&'a dyn super::DeltaSink> {
        self.deltas.map(|d| d.0)
    }

    /// Ask for a final answer valid against `schema` (OUT-1): a provider renders it its own way (a forced final
    /// tool, a `response_format`) and returns the answer as a text block.
    #[must_use]
    pub fn with_output(mut self, schema: Option<&'a OutputSchema>) -> Self {
        self.output = schema;
        self
    }

    /// The schema [`with_output`](Self::with_output) set.
    pub fn output(&self) -> Option<&'a OutputSchema> {
        self.output
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
    /// The model that answered, when the provider reports it (it may name a dated snapshot of the one asked for).
    pub model: Option<String>,
    /// The provider's id of this reply, when it reports one.
    pub id: Option<String>,
}

impl Response {
    /// A response, with no model or id.
    pub fn new(content: Vec<Block>, stop_reason: StopReason, usage: Usage) -> Self {
        Response { content, stop_reason, usage, model: None, id: None }
    }

    /// Name the model that answered and the reply's id (empty strings count as absent).
    #[must_use]
    pub fn with_origin(mut self, model: Option<String>, id: Option<String>) -> Self {
        self.model = model.filter(|m| !m.is_empty());
        self.id = id.filter(|i| !i.is_empty());
        self
    }
}

/// What a provider can do (PROV-4, PROV-16). Owned, so a provider configured at run time fills it in; a provider
/// builds it once and hands out a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caps {
    /// Stable provider id, stamped into session fingerprints.
    pub provider: String,
    /// Whether the provider has server-side tool search (SEARCH-2).
    pub tool_search: bool,
    /// Environment variables holding this provider's credentials, scrubbed from every child (EXEC-8).
    pub credentials: Vec<String>,
}

impl Caps {
    /// Capabilities of provider `id`: no tool search, no credentials.
    pub fn new(provider: impl Into<String>) -> Self {
        Caps { provider: provider.into(), tool_search: false, credentials: Vec::new() }
    }

    /// Declare server-side tool search.
    #[must_use]
    pub fn with_tool_search(mut self, on: bool) -> Self {
        self.tool_search = on;
        self
    }

    /// Declare credential variables (added to any declared before).
    #[must_use]
    pub fn with_credentials<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.credentials.extend(names.into_iter().map(Into::into));
        self
    }
}

/// A model behind an API.
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::llm::{Block, Caps, ModelProvider, ProviderError, Request, Response, StopReason, Usage};
///
/// /// A provider that always answers the same thing, e.g. for a dry run.
/// struct Echo {
///     caps: Caps,
/// }
///
/// #[async_trait]
/// impl ModelProvider for Echo {
///     fn capabilities(&self) -> &Caps {
///         &self.caps
///     }
///
///     async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
///         let last = req.messages.last().map(|m| m.text()).unwrap_or_default();
///         Ok(Response::new(vec![Block::text(format!("you said: {last}"))], StopReason::EndTurn, Usage::default()))
///     }
/// }
/// # let _ = Echo { caps: Caps::new("echo") };
/// ```
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// What this provider can do; built once, the same on every call.
    fn capabilities(&self) -> &Caps;

    /// Make one call, bounded by the provider's own per-call timeout (PROV-5), retrying as the provider sees fit.
    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError>;

    /// The context window of `model` in tokens, when this provider knows it (COMP-2): compaction triggers at a
    /// share of it. `None` by default; `harness.compaction.context_window` then has to say.
    fn context_window(&self, model: &str) -> Option<u64> {
        let _ = model;
        None
    }
}
