//! The OpenAI Chat Completions provider, for OpenAI itself and for compatible servers (vLLM, llama.cpp, Ollama,
//! LM Studio, routers).
//!
//! [`OpenAiProvider`] renders a neutral [`Request`] into a `POST {base}/chat/completions` body, streams the reply
//! over SSE (or reads it whole), retries what is worth retrying, and maps the reply back to neutral blocks.
//!
//! How the wire maps to the neutral model, including what compatible servers get wrong:
//!
//! - **Tools** are sent as `function` tools with the tool's normalized schema (PROV-13). Nothing is deferred: there
//!   is no server-side tool search, so [`Caps::tool_search`] is false and the agent sends every tool directly.
//! - **Tool calls** (parallel ones too) become [`Block::ToolUse`](crate::llm::Block::ToolUse) blocks in call order;
//!   each tool result goes back as its own `role: tool` message with `tool_call_id`. Chat Completions has no error
//!   flag, so an error result's content starts with `[tool error] `.
//! - **`finish_reason`**: `stop` → `EndTurn`, `tool_calls` → `ToolUse`, `length` → `MaxTokens`, `content_filter`
//!   and `refusal` → `Refusal`; `stop` (or none) beside tool calls is `ToolUse`, because some local servers report
//!   `stop` after calling tools. A `message.refusal` is a text block, and the turn is a `Refusal`.
//! - **Reasoning** in `reasoning_content` (DeepSeek, vLLM) or `reasoning` (Ollama, OpenRouter) becomes a
//!   [`Block::Thinking`](crate::llm::Block::Thinking) with an empty signature, first in the turn. It is **dropped**
//!   from the history sent back: no request field takes it, and the servers that send it ask clients not to echo it.
//! - **Usage** is counted with cached prompt tokens apart. A server that reports none (no `include_usage` support)
//!   gets an estimate of 4 bytes a token of request and reply, so the run's token budget still bounds it.
//! - **`arguments` that are not JSON**, or JSON that is not an object, stay a `ToolUse`: the text as a JSON string,
//!   or the value as written. The tool's input validation (every tool the crate ships checks its input against its
//!   schema first) refuses it with an error result the model reads, and the run goes on. The history echoes the
//!   input as kept.
//! - **A missing, empty or repeated call id** is replaced by `call_fisk_<message count>_<call index>`, the same on a
//!   retry or a resumed run, so each result still pairs with its call.
//! - **A plain JSON answer to a streaming request** is read whole; **a stream that ends after its `finish_reason`
//!   without `[DONE]`** is whole; one cut before it is a (retried) stream error.
//! - **An `error` object in a 200 body or a stream chunk** is an error, retried like the status in its numeric
//!   `code` when it has one, never when it is an `invalid_request_error`, otherwise like a broken stream.
//! - **`llm.budget.max_output_tokens`** is sent as `max_completion_tokens` for reasoning models (o-series, GPT-5,
//!   which refuse `max_tokens`), else as `max_tokens` (the only one many local servers know); nothing when unset.
//!   **`llm.thinking.enabled`** adds `reasoning_effort: "medium"` for reasoning models, nothing otherwise.
//!
//! Prompt caching is automatic on OpenAI (prefixes over 1024 tokens); the cache settings send nothing. The request
//! prefix (model, cap, tools, the system message) is byte-identical from turn to turn, so it stays cacheable.

mod stream;
mod wire;

use crate::config::check_http_url;
use crate::error::Error;
use crate::llm::WireObserver;
use crate::llm::http::{Attempt, Decoded, HttpCore, RenderCache, RetryPolicy, SseEvents, WireFormat};
use crate::llm::{Caps, ModelProvider, ProviderError, ProviderErrorKind, Request, Response, Usage};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The provider id stamped into session fingerprints (PROV-4).
pub const PROVIDER_ID: &str = "openai";
/// The API's address when no base URL is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The credential variables this provider reads, scrubbed from every child (PROV-16).
pub const CREDENTIALS: &[&str] = &["OPENAI_API_KEY"];
/// The default per-attempt timeout (`llm.budget.call_timeout`, BUDGET-4).
pub const DEFAULT_CALL_TIMEOUT: Duration = crate::llm::http::DEFAULT_CALL_TIMEOUT;
/// How many times a failed call is retried by default.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// OpenAI Chat Completions (and compatible servers) as a [`ModelProvider`].
///
/// Built by value; every setting has a default:
///
/// | setting | default |
/// | --- | --- |
/// | base URL ([`with_base_url`](Self::with_base_url)) | `https://api.openai.com/v1` |
/// | per-attempt timeout ([`with_call_timeout`](Self::with_call_timeout)) | 120 s |
/// | retries ([`with_max_retries`](Self::with_max_retries)) | 2 |
/// | backoff ([`with_backoff`](Self::with_backoff)) | 0.5 s doubling, at most 8 s, less up to 25 % jitter |
/// | streaming ([`with_streaming`](Self::with_streaming)) | on |
///
/// The API key may be empty for a loopback server (a local model needs none); no `Authorization` header is sent
/// then, and a call to any other host fails with a configuration error.
///
/// ```
/// use fisk_ai::llm::openai::OpenAiProvider;
/// use fisk_ai::llm::{Message, ModelProvider, Request, ToolPlan};
/// use fisk_ai::select::Selection;
///
/// // A local server needs no key.
/// let provider = OpenAiProvider::new("").with_base_url("http://127.0.0.1:11434/v1")?.with_streaming(false);
/// assert_eq!(provider.endpoint(), "http://127.0.0.1:11434/v1/chat/completions");
/// assert!(!provider.capabilities().tool_search);
///
/// // The exact bytes `call` would POST for a first turn.
/// let plan = ToolPlan::new(Selection::new().apply(Vec::new())?, false);
/// let system = ["You are terse.".to_owned()];
/// let messages = [Message::user("hello")];
/// let body = provider.request_body(&Request::new("qwen3:8b", &system, &messages, &plan));
/// let json: serde_json::Value = serde_json::from_slice(&body)?;
/// assert_eq!(json["messages"][0]["role"], "system");
/// assert_eq!(json["messages"][1]["content"], "hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OpenAiProvider {
    http: HttpCore,
    wire: Completions,
    streaming: bool,
    tools: RenderCache,
    caps: Caps,
}

impl OpenAiProvider {
    /// A provider using `api_key` (empty for none) against the public API, every other setting at its default.
    ///
    /// A key that cannot be sent as a header (control characters) fails the first call with a
    /// [`Config`](ProviderErrorKind::Config) error.
    pub fn new(api_key: impl Into<String>) -> Self {
        let key = api_key.into();
        let key = key.trim();
        let api_key = if key.is_empty() {
            Ok(None)
        } else {
            HeaderValue::from_str(&format!("Bearer {key}")).map_err(drop).map(|mut v| {
                // Keeps the key out of reqwest's own debug output.
                v.set_sensitive(true);
                Some(v)
            })
        };
        OpenAiProvider {
            http: HttpCore::new(endpoint(DEFAULT_BASE_URL))
                .with_call_timeout(DEFAULT_CALL_TIMEOUT)
                .with_retry(RetryPolicy::new().with_max_retries(DEFAULT_MAX_RETRIES)),
            wire: Completions { api_key, loopback: false },
            streaming: true,
            tools: RenderCache::default(),
            caps: Caps::new(PROVIDER_ID).with_credentials(CREDENTIALS.iter().copied()),
        }
    }

    /// Send requests to `url` (`<url>/chat/completions`, so include the version path: `https://host/v1`) instead
    /// of the public API. It must be `https`, or `http` to a loopback host, with no user information (PROV-7); the
    /// error names the setting.
    ///
    /// Set this before [`with_http_debug`](Self::with_http_debug), so a bad URL is reported before the debug file
    /// is created.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::error::ErrorKind::Config), naming the URL and the setting, for a URL that fails the
    /// PROV-7 check.
    pub fn with_base_url(mut self, url: impl AsRef<str>) -> crate::error::Result<Self> {
        let url = url.as_ref().trim();
        check_http_url(url)
            .map_err(|e| Error::config(format!("invalid base URL {url:?} (--base-url / OPENAI_BASE_URL): {e}")))?;
        self.wire.loopback = is_loopback(url);
        self.http = self.http.with_url(endpoint(url));
        Ok(self)
    }

    /// Bound every attempt (connect, send, the whole reply) by `timeout` (PROV-5, `llm.budget.call_timeout`). A
    /// timed-out attempt is retried like a 5xx.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.http = self.http.with_call_timeout(timeout);
        self
    }

    /// Retry a failed call at most `retries` times (so `retries + 1` attempts): 408, 409, 429 and 5xx, timeouts,
    /// dropped connections and stream errors; never 400, 401, 403, 404 or 413. An `x-should-retry` header
    /// overrides that choice.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        let policy = self.http.retry().with_max_retries(retries);
        self.http = self.http.with_retry(policy);
        self
    }

    /// Wait `min(base · 2^n, max)` before retry `n` (less up to 25 % jitter) when the server names no wait of its
    /// own (`retry-after-ms`, `retry-after`; a wait over a minute is not honored).
    #[must_use]
    pub fn with_backoff(mut self, base: Duration, max: Duration) -> Self {
        let policy = self.http.retry().with_backoff(base, max);
        self.http = self.http.with_retry(policy);
        self
    }

    /// Retry per `policy` (replacing [`with_max_retries`](Self::with_max_retries) and
    /// [`with_backoff`](Self::with_backoff)).
    #[must_use]
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.http = self.http.with_retry(policy);
        self
    }

    /// Stream replies over server-sent events (the default, with `stream_options.include_usage`), so long turns
    /// keep the connection busy instead of hitting idle limits; `false` reads each reply whole.
    #[must_use]
    pub fn with_streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// Dump every request and response to `path` (PROV-17), as the Anthropic provider does: whatever is at `path`
    /// is removed first and a new file is created exclusively with mode 0600. Headers are not written, so the API
    /// key never is.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::error::ErrorKind::Io) when whatever is at `path` cannot be removed or the file cannot
    /// be created.
    pub fn with_http_debug(mut self, path: impl AsRef<Path>) -> crate::error::Result<Self> {
        self.http = self.http.with_http_debug(path)?;
        Ok(self)
    }

    /// Add an observer of the wire traffic (PROV-18). Observers are called in the order added.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn WireObserver>) -> Self {
        self.http = self.http.with_observer(observer);
        self
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> &str {
        self.http.url()
    }

    /// The exact bytes [`call`](ModelProvider::call) would POST for `req`: deterministic for the same request,
    /// with the plan's tools rendered once and reused on every later turn.
    pub fn request_body(&self, req: &Request<'_>) -> Vec<u8> {
        let tools = self.tools.get(req.tools, wire::render_tools);
        wire::render_request(req, &tools, self.streaming)
    }

    /// Decode a non-streaming reply (a `chat.completion` object) as `call` does, for a request of `turn` messages
    /// (which seeds the ids of calls that came without one). Usage the server did not report counts as zero here;
    /// `call` estimates it instead.
    ///
    /// # Errors
    ///
    /// A [`ProviderErrorKind::Decode`] error when the body is not a `chat.completion` object with a choice; the error
    /// an `error` object in the body reports.
    pub fn decode_response(body: &[u8], turn: usize) -> Result<Response, ProviderError> {
        Ok(wire::decode_completion(body)?.into_response(turn, |_| Usage::default()))
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn capabilities(&self) -> &Caps {
        &self.caps
    }

    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
        self.wire.key()?;
        let body = Bytes::from(self.request_body(req));
        self.http.send(&self.wire, req, body).await
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = match &self.wire.api_key {
            Ok(Some(_)) => "[redacted]",
            Ok(None) => "[none]",
            Err(()) => "[invalid]",
        };
        f.debug_struct("OpenAiProvider")
            .field("endpoint", &self.http.url())
            .field("api_key", &key)
            .field("call_timeout", &self.http.call_timeout())
            .field("max_retries", &self.http.retry().max_retries())
            .field("backoff", &self.http.retry().backoff())
            .field("streaming", &self.streaming)
            .field("observers", &self.http.observers())
            .finish_non_exhaustive()
    }
}

/// The Chat Completions wire format over the shared HTTP core.
struct Completions {
    api_key: Result<Option<HeaderValue>, ()>,
    /// Whether the base URL is loopback: a local server may need no key.
    loopback: bool,
}

impl Completions {
    fn key(&self) -> Result<Option<&HeaderValue>, ProviderError> {
        match &self.api_key {
            Err(()) => {
                Err(ProviderError::new(ProviderErrorKind::Config, "openai: the API key is not a valid header value"))
            }
            Ok(None) if !self.loopback => Err(ProviderError::new(
                ProviderErrorKind::Config,
                "openai: an API key is required for a base URL that is not loopback (--api-key or OPENAI_API_KEY)",
            )),
            Ok(key) => Ok(key.as_ref()),
        }
    }
}

#[async_trait]
impl WireFormat for Completions {
    fn provider(&self) -> &str {
        PROVIDER_ID
    }

    fn authorize(&self, request: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, ProviderError> {
        Ok(match self.key()? {
            Some(key) => request.header(AUTHORIZATION, key.clone()),
            None => request,
        })
    }

    fn status_message(&self, status: u16, request_id: Option<&str>, body: &[u8]) -> String {
        wire::status_message(status, request_id, body)
    }

    async fn read_stream(&self, events: &mut SseEvents, attempt: &Attempt<'_>) -> Result<Decoded, ProviderError> {
        let acc = stream::read(events, attempt.request.deltas()).await?;
        let observed = attempt.observed.then(|| acc.completion_json());
        let reply = acc.finish()?;
        let turn = attempt.request.messages.len();
        Ok(Decoded::new(reply.into_response(turn, |r| estimate_usage(attempt.body_len, r)), observed))
    }

    fn decode(&self, body: &[u8], attempt: &Attempt<'_>) -> Result<Response, ProviderError> {
        let turn = attempt.request.messages.len();
        Ok(wire::decode_completion(body)?.into_response(turn, |r| estimate_usage(attempt.body_len, r)))
    }
}

fn endpoint(base: &str) -> String {
    format!("{}/chat/completions", base.trim_end_matches('/'))
}

/// Whether an accepted base URL is loopback: PROV-7 accepts it with `http` only then.
fn is_loopback(url: &str) -> bool {
    url.split_once("://").is_some_and(|(_, rest)| check_http_url(&format!("http://{rest}")).is_ok())
}

/// Usage for a server that reported none: 4 bytes a token of the request body and of the reply's text, so the
/// token budget (BUDGET-2) still counts something rather than nothing.
fn estimate_usage(request_len: usize, reply: &wire::Reply) -> Usage {
    let out = reply.text.len()
        + reply.reasoning.len()
        + reply.refusal.len()
        + reply.calls.iter().map(|c| c.name.len() + c.arguments.len()).sum::<usize>();
    Usage { input_tokens: request_len.div_ceil(4) as u64, output_tokens: out.div_ceil(4) as u64, ..Usage::default() }
}

/// Builds an [`OpenAiProvider`] for `llm.provider: openai`: the key from the settings or `OPENAI_API_KEY`
/// (optional for a loopback base URL), the base URL from the settings, `OPENAI_BASE_URL` or `llm.base_url`, in that
/// order (checked first, PROV-7), the per-call timeout from `llm.budget.call_timeout`, then the debug file and
/// observers.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiFactory;

impl crate::llm::ProviderFactory for OpenAiFactory {
    fn name(&self) -> &str {
        PROVIDER_ID
    }

    fn credentials(&self) -> Vec<String> {
        CREDENTIALS.iter().map(|s| (*s).to_owned()).collect()
    }

    fn check(&self, settings: &crate::llm::ProviderSettings<'_>) -> crate::error::Result<()> {
        base_url(settings).map(drop)
    }

    fn build(&self, settings: &crate::llm::ProviderSettings<'_>) -> crate::error::Result<Arc<dyn ModelProvider>> {
        let base_url = base_url(settings)?;
        let loopback = base_url.as_deref().is_some_and(is_loopback);
        let key = settings.api_key.clone().or_else(|| env("OPENAI_API_KEY"));
        if key.is_none() && !loopback {
            return Err(Error::config(
                "an API key is required: pass --api-key or set OPENAI_API_KEY (a loopback base URL needs none)",
            ));
        }
        let mut provider =
            OpenAiProvider::new(key.unwrap_or_default()).with_call_timeout(settings.config.llm.budget.call_timeout());
        if let Some(url) = base_url {
            provider = provider.with_base_url(url)?;
        }
        if let Some(path) = &settings.http_debug {
            provider = provider.with_http_debug(path)?;
        }
        for observer in &settings.observers {
            provider = provider.with_observer(observer.clone());
        }
        Ok(Arc::new(provider))
    }
}

fn env(name: &str) -> Option<String> {
    crate::llm::registry::non_empty_env(name)
}

/// The base URL the settings name, checked (PROV-7): `--base-url`, then `OPENAI_BASE_URL`, then `llm.base_url`.
fn base_url(settings: &crate::llm::ProviderSettings<'_>) -> crate::error::Result<Option<String>> {
    crate::llm::registry::checked_base_url(settings, "OPENAI_BASE_URL")
}
