//! The Anthropic Messages API provider (PROV-6..18, SEARCH-7).
//!
//! [`AnthropicProvider`] renders a neutral [`Request`] into a `POST /v1/messages` body, streams the reply over SSE
//! (or reads it whole), retries what is worth retrying, and maps the reply back to neutral blocks. Blocks the
//! neutral model does not name (server tool calls, tool-search results, redacted thinking) travel as
//! [`Block::Provider`](crate::llm::Block::Provider) and go back byte for byte; thinking signatures too.

mod final_answer;
mod stream;
mod wire;

// Kept here too: the observer types were first published under this module.
pub use crate::llm::observe::{WireError, WireObserver, WireRequest, WireResponse, WireRetry};

use crate::config::check_http_url;
use crate::error::Error;
use crate::llm::http::{Attempt, Decoded, HttpCore, RenderCache, RetryPolicy, SseEvents, WireFormat};
use crate::llm::{Caps, ModelProvider, ProviderError, ProviderErrorKind, Request, Response};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::HeaderValue;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The provider id stamped into session fingerprints (PROV-4).
pub const PROVIDER_ID: &str = "anthropic";
/// The API's address when no base URL is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";
/// The default per-attempt timeout (`llm.budget.call_timeout`, BUDGET-4).
pub const DEFAULT_CALL_TIMEOUT: Duration = crate::llm::http::DEFAULT_CALL_TIMEOUT;
/// How many times a failed call is retried by default.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// This provider's credential variables (PROV-16), declared here; the harness scrubs every registered provider's from
/// every child, and the floor every child gets ([`PROVIDER_CREDENTIALS`](crate::exec::PROVIDER_CREDENTIALS)) holds
/// them too (a unit test keeps the two together).
pub const CREDENTIALS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_WEBHOOK_SIGNING_KEY",
    "ANTHROPIC_CUSTOM_HEADERS",
];

fn credentials() -> impl Iterator<Item = &'static str> {
    CREDENTIALS.iter().copied()
}

#[cfg(test)]
mod tests {
    #[test]
    fn prov_16_every_compiled_in_providers_credentials_are_in_the_floor_every_child_gets() {
        let floor = crate::exec::PROVIDER_CREDENTIALS;
        let declared = super::CREDENTIALS.iter();
        #[cfg(feature = "openai")]
        let declared = declared.chain(crate::llm::openai::CREDENTIALS);
        for name in declared {
            assert!(floor.contains(name), "{name} is declared by a provider but missing from the floor");
        }
    }
}

/// The Anthropic Messages API as a [`ModelProvider`].
///
/// Built by value; every setting has a default:
///
/// | setting | default |
/// | --- | --- |
/// | base URL ([`with_base_url`](Self::with_base_url)) | `https://api.anthropic.com` |
/// | per-attempt timeout ([`with_call_timeout`](Self::with_call_timeout)) | 120 s |
/// | retries ([`with_max_retries`](Self::with_max_retries)) | 2 |
/// | backoff ([`with_backoff`](Self::with_backoff)) | 0.5 s doubling, at most 8 s, less up to 25 % jitter |
/// | streaming ([`with_streaming`](Self::with_streaming)) | on |
///
/// Every request is rendered the same way for the same input: the tools array once per [`ToolPlan`](crate::llm::ToolPlan), then spliced
/// into each turn, so the tools + system prefix the prompt cache keys on is byte-identical from turn to turn.
///
/// ```
/// use fisk_ai::llm::anthropic::AnthropicProvider;
/// use fisk_ai::llm::{Message, ModelProvider, Request, ToolPlan};
/// use fisk_ai::select::Selection;
/// use std::time::Duration;
///
/// let provider = AnthropicProvider::new("sk-ant-example")
///     .with_base_url("http://127.0.0.1:8080")?
///     .with_call_timeout(Duration::from_secs(30))
///     .with_max_retries(1);
/// assert!(provider.capabilities().tool_search);
///
/// // The exact bytes `call` would POST for a first turn.
/// let plan = ToolPlan::new(Selection::new().apply(Vec::new())?, true);
/// let system = ["You are terse.".to_owned()];
/// let messages = [Message::user("hello")];
/// let body = provider.request_body(&Request::new("claude-sonnet-4-6", &system, &messages, &plan));
/// let json: serde_json::Value = serde_json::from_slice(&body)?;
/// assert_eq!(json["max_tokens"], 8192);
/// assert_eq!(json["system"][0]["cache_control"]["type"], "ephemeral");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A real call, with the key from the environment:
///
/// ```no_run
/// use fisk_ai::llm::anthropic::AnthropicProvider;
/// use fisk_ai::llm::{Message, ModelProvider, Request, ToolPlan};
/// use fisk_ai::select::Selection;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let provider = AnthropicProvider::from_env()?.with_http_debug("http-debug.log")?;
/// let plan = ToolPlan::new(Selection::new().apply(Vec::new())?, true);
/// let messages = [Message::user("Name three prime numbers.")];
/// let reply = provider.call(&Request::new("claude-sonnet-4-6", &[], &messages, &plan)).await?;
/// println!("{}", fisk_ai::llm::Message::assistant(reply.content).text());
/// # Ok(())
/// # }
/// ```
pub struct AnthropicProvider {
    http: HttpCore,
    wire: Messages,
    streaming: bool,
    tools: RenderCache,
    caps: Caps,
}

impl AnthropicProvider {
    /// A provider using `api_key` against the public API, with every other setting at its default.
    ///
    /// A key that cannot be sent as a header (control characters) fails the first call with a
    /// [`Config`](ProviderErrorKind::Config) error.
    pub fn new(api_key: impl Into<String>) -> Self {
        let api_key = HeaderValue::from_str(api_key.into().trim()).ok().map(|mut v| {
            // Keeps the key out of reqwest's own debug output.
            v.set_sensitive(true);
            v
        });
        AnthropicProvider {
            http: HttpCore::new(endpoint(DEFAULT_BASE_URL))
                .with_call_timeout(DEFAULT_CALL_TIMEOUT)
                .with_retry(RetryPolicy::new().with_max_retries(DEFAULT_MAX_RETRIES)),
            wire: Messages { api_key },
            streaming: true,
            tools: RenderCache::default(),
            caps: Caps::new(PROVIDER_ID).with_tool_search(true).with_credentials(credentials()),
        }
    }

    /// A provider configured from the environment (PROV-6): `ANTHROPIC_API_KEY` (required) and
    /// `ANTHROPIC_BASE_URL` (optional, checked like [`with_base_url`](Self::with_base_url)).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::error::ErrorKind::Config) when `ANTHROPIC_API_KEY` is unset or empty, or
    /// `ANTHROPIC_BASE_URL` fails
    /// [`with_base_url`](Self::with_base_url)'s check.
    pub fn from_env() -> crate::error::Result<Self> {
        let key = std::env::var("ANTHROPIC_API_KEY").ok().filter(|k| !k.trim().is_empty()).ok_or_else(|| {
            Error::config("ANTHROPIC_API_KEY is not set: the anthropic provider needs an API key (--api-key)")
        })?;
        let provider = Self::new(key);
        match std::env::var("ANTHROPIC_BASE_URL") {
            Ok(url) if !url.trim().is_empty() => provider.with_base_url(url),
            _ => Ok(provider),
        }
    }

    /// Send requests to `url` (`<url>/v1/messages`) instead of the public API. It must be `https`, or `http` to a
    /// loopback host, with no user information (PROV-7); the error names the setting.
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
            .map_err(|e| Error::config(format!("invalid base URL {url:?} (--base-url / ANTHROPIC_BASE_URL): {e}")))?;
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

    /// Retry a failed call at most `retries` times (so `retries + 1` attempts): 408, 409, 429, 5xx and 529,
    /// timeouts, dropped connections and stream `error` events; never 400, 401, 403, 404 or 413. An
    /// `x-should-retry` header overrides that choice.
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

    /// Stream replies over server-sent events (the default), so long thinking turns keep the connection busy
    /// instead of hitting idle limits; `false` reads each reply whole.
    #[must_use]
    pub fn with_streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// Dump every request (method, URL, pretty-printed JSON body) and response (status, pretty-printed body) to
    /// `path` (PROV-17). Whatever is at `path` is removed first (a symlink itself, never its target) and a new file
    /// is created exclusively with mode 0600. Headers are not written, so the API key never is. The file holds the
    /// whole conversation: tell the operator where it goes.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::error::ErrorKind::Io) when whatever is at `path` cannot be removed or the file cannot
    /// be created.
    pub fn with_http_debug(mut self, path: impl AsRef<Path>) -> crate::error::Result<Self> {
        self.http = self.http.with_http_debug(path)?;
        Ok(self)
    }

    /// Add an observer of the wire traffic (requests, responses, failed attempts, retries), for example the CLI's
    /// `--trace` writer (PROV-18). Observers are called in the order added.
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

    /// Decode a non-streaming Messages API reply (a `message` object) into a neutral [`Response`], as `call` does:
    /// text, thinking and tool use become neutral blocks, everything else a provider block holding its exact bytes.
    ///
    /// # Errors
    ///
    /// A [`ProviderErrorKind::Decode`] error when the body is not a Messages API `message` object or one of its blocks
    /// cannot be read.
    pub fn decode_response(body: &[u8]) -> Result<Response, ProviderError> {
        wire::decode_message(body)
    }

    /// Refuse a request the API is certain to reject, before spending a call on it.
    fn check(&self, req: &Request<'_>) -> Result<(), ProviderError> {
        let max = wire::max_tokens(req);
        if req.thinking
            && wire::thinking_shape(req.model) == wire::ThinkingShape::Budget
            && max <= wire::MIN_THINKING_BUDGET
        {
            return Err(ProviderError::new(
                ProviderErrorKind::Config,
                format!(
                    "model {:?} needs a thinking budget of at least {} tokens below max_tokens, but \
                     llm.budget.max_output_tokens is {max}: raise it or set llm.thinking.enabled to false",
                    req.model,
                    wire::MIN_THINKING_BUDGET
                ),
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl ModelProvider for AnthropicProvider {
    fn capabilities(&self) -> &Caps {
        &self.caps
    }

    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
        self.wire.key()?;
        self.check(req)?;
        let body = Bytes::from(self.request_body(req));
        let response = self.http.send(&self.wire, req, body).await?;
        // OUT-4: one place for the streamed and the whole reply alike.
        Ok(match req.output() {
            Some(schema) => final_answer::answer(response, schema),
            None => response,
        })
    }

    /// Every Claude model's standard window: 200K tokens. The crate never asks for a longer one (a beta header),
    /// so a larger window a model may offer is not in reach here.
    fn context_window(&self, model: &str) -> Option<u64> {
        model.starts_with("claude-").then_some(200_000)
    }
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (base, max) = self.http.retry().backoff();
        f.debug_struct("AnthropicProvider")
            .field("endpoint", &self.http.url())
            .field("api_key", &if self.wire.api_key.is_some() { "[redacted]" } else { "[invalid]" })
            .field("call_timeout", &self.http.call_timeout())
            .field("max_retries", &self.http.retry().max_retries())
            .field("backoff", &(base, max))
            .field("streaming", &self.streaming)
            .field("observers", &self.http.observers())
            .finish_non_exhaustive()
    }
}

/// The Messages API's wire format over the shared HTTP core.
struct Messages {
    api_key: Option<HeaderValue>,
}

impl Messages {
    fn key(&self) -> Result<&HeaderValue, ProviderError> {
        self.api_key.as_ref().ok_or_else(|| {
            ProviderError::new(ProviderErrorKind::Config, "anthropic: the API key is empty or not a valid header value")
        })
    }
}

#[async_trait]
impl WireFormat for Messages {
    fn provider(&self) -> &str {
        PROVIDER_ID
    }

    fn authorize(&self, request: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, ProviderError> {
        Ok(request.header("x-api-key", self.key()?.clone()).header("anthropic-version", API_VERSION))
    }

    fn request_id_header(&self) -> &str {
        "request-id"
    }

    fn status_message(&self, status: u16, request_id: Option<&str>, body: &[u8]) -> String {
        wire::status_message(status, request_id, body)
    }

    async fn read_stream(&self, events: &mut SseEvents, attempt: &Attempt<'_>) -> Result<Decoded, ProviderError> {
        let mut acc = stream::read(events, attempt.request.deltas()).await?;
        let observed = attempt.observed.then(|| acc.message_json());
        Ok(Decoded::new(acc.finish()?, observed))
    }

    fn decode(&self, body: &[u8], _: &Attempt<'_>) -> Result<Response, ProviderError> {
        wire::decode_message(body)
    }

    /// PROV-10: a 400 with thinking on usually means the model does not support it, a remedy that is not obvious.
    fn remedy(&self, error: &ProviderError, req: &Request<'_>) -> Option<String> {
        (req.thinking && error.http_status() == Some(400))
            .then(|| format!("the model {:?} may not support thinking: set llm.thinking.enabled to false", req.model))
    }
}

fn endpoint(base: &str) -> String {
    format!("{}/v1/messages", base.trim_end_matches('/'))
}

/// Builds an [`AnthropicProvider`] for `llm.provider: anthropic` (PROV-3, PROV-6): the key from the settings or
/// `ANTHROPIC_API_KEY`, the base URL from the settings, `ANTHROPIC_BASE_URL` or `llm.base_url`, in that order
/// (checked first, PROV-7), the per-call timeout from `llm.budget.call_timeout`, then the debug file and observers.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnthropicFactory;

impl crate::llm::ProviderFactory for AnthropicFactory {
    fn name(&self) -> &str {
        PROVIDER_ID
    }

    fn credentials(&self) -> Vec<String> {
        credentials().map(str::to_owned).collect()
    }

    fn capabilities(&self) -> Caps {
        Caps::new(PROVIDER_ID).with_tool_search(true).with_credentials(credentials())
    }

    fn check(&self, settings: &crate::llm::ProviderSettings<'_>) -> crate::error::Result<()> {
        base_url(settings).map(drop)
    }

    fn build(&self, settings: &crate::llm::ProviderSettings<'_>) -> crate::error::Result<Arc<dyn ModelProvider>> {
        let base_url = base_url(settings)?;
        let key = settings
            .api_key
            .clone()
            .or_else(|| env("ANTHROPIC_API_KEY"))
            .ok_or_else(|| Error::config("an API key is required: pass --api-key or set ANTHROPIC_API_KEY"))?;
        let mut provider = AnthropicProvider::new(key).with_call_timeout(settings.config.llm.budget.call_timeout());
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

/// The base URL the settings name, checked (PROV-7): `--base-url`, then `ANTHROPIC_BASE_URL`, then `llm.base_url`.
fn base_url(settings: &crate::llm::ProviderSettings<'_>) -> crate::error::Result<Option<String>> {
    crate::llm::registry::checked_base_url(settings, "ANTHROPIC_BASE_URL")
}
