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

use crate::llm::{http_debug as debug, retry};

use crate::config::{check_http_url, format_duration};
use crate::error::{Error, ErrorKind};
use crate::llm::{Caps, ModelProvider, ProviderError, ProviderErrorKind, Request, Response, ToolPlan, Usage};
use crate::llm::{WireError, WireObserver, WireRequest, WireResponse, WireRetry};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The provider id stamped into session fingerprints (PROV-4).
pub const PROVIDER_ID: &str = "openai";
/// The API's address when no base URL is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The credential variables this provider reads, scrubbed from every child (PROV-16).
pub const CREDENTIALS: &[&str] = &["OPENAI_API_KEY"];
/// The default per-attempt timeout (`llm.budget.call_timeout`, BUDGET-4).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How many times a failed call is retried by default.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// Plans whose rendered tools are kept; an agent has one, a process serving a few agents a handful.
const TOOLS_CACHE_SIZE: usize = 8;

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
    api_key: Result<Option<HeaderValue>, ()>,
    url: String,
    loopback: bool,
    client: Result<reqwest::Client, String>,
    call_timeout: Duration,
    max_retries: u32,
    backoff_base: Duration,
    backoff_max: Duration,
    streaming: bool,
    observers: Vec<Arc<dyn WireObserver>>,
    tools: Mutex<Vec<(u64, Arc<[u8]>)>>,
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
        let client = reqwest::Client::builder()
            .user_agent(concat!("fisk-ai/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| stream::chain(&e));
        OpenAiProvider {
            api_key,
            url: endpoint(DEFAULT_BASE_URL),
            loopback: false,
            client,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(8),
            streaming: true,
            observers: Vec::new(),
            tools: Mutex::new(Vec::new()),
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
    /// [`ErrorKind::Config`], naming the URL and the setting, for a URL that fails the PROV-7 check.
    pub fn with_base_url(mut self, url: impl AsRef<str>) -> crate::error::Result<Self> {
        let url = url.as_ref().trim();
        check_http_url(url)
            .map_err(|e| Error::config(format!("invalid base URL {url:?} (--base-url / OPENAI_BASE_URL): {e}")))?;
        self.loopback = is_loopback(url);
        self.url = endpoint(url);
        Ok(self)
    }

    /// Bound every attempt (connect, send, the whole reply) by `timeout` (PROV-5, `llm.budget.call_timeout`). A
    /// timed-out attempt is retried like a 5xx.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Retry a failed call at most `retries` times (so `retries + 1` attempts): 408, 409, 429 and 5xx, timeouts,
    /// dropped connections and stream errors; never 400, 401, 403, 404 or 413. An `x-should-retry` header
    /// overrides that choice.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Wait `min(base · 2^n, max)` before retry `n` (less up to 25 % jitter) when the server names no wait of its
    /// own (`retry-after-ms`, `retry-after`; a wait over a minute is not honored).
    #[must_use]
    pub fn with_backoff(mut self, base: Duration, max: Duration) -> Self {
        self.backoff_base = base;
        self.backoff_max = max.max(base);
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
    /// [`ErrorKind::Io`] when whatever is at `path` cannot be removed or the file cannot be created.
    pub fn with_http_debug(mut self, path: impl AsRef<Path>) -> crate::error::Result<Self> {
        let path = path.as_ref();
        let log = debug::HttpDebugLog::create(path).map_err(|e| {
            Error::new(ErrorKind::Io, format!("cannot create the HTTP debug log {}: {e}", path.display()))
                .with_source(e)
        })?;
        self.observers.push(Arc::new(log));
        Ok(self)
    }

    /// Add an observer of the wire traffic (PROV-18). Observers are called in the order added.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn WireObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// The exact bytes [`call`](ModelProvider::call) would POST for `req`: deterministic for the same request,
    /// with the plan's tools rendered once and reused on every later turn.
    pub fn request_body(&self, req: &Request<'_>) -> Vec<u8> {
        let tools = self.tools_for(req.tools);
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

    fn tools_for(&self, plan: &ToolPlan) -> Arc<[u8]> {
        let mut cache = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, tools)) = cache.iter().find(|(id, _)| *id == plan.id()) {
            return tools.clone();
        }
        let tools: Arc<[u8]> = wire::render_tools(plan).into();
        if cache.len() >= TOOLS_CACHE_SIZE {
            cache.remove(0);
        }
        cache.push((plan.id(), tools.clone()));
        tools
    }

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

    async fn attempt(
        &self,
        client: &reqwest::Client,
        key: Option<&HeaderValue>,
        body: Bytes,
        n: u32,
        turn: usize,
    ) -> Result<Response, Failure> {
        let started = Instant::now();
        let request_len = body.len();
        let mut request = client.post(&self.url).header(CONTENT_TYPE, "application/json").body(body);
        if let Some(key) = key {
            request = request.header(AUTHORIZATION, key.clone());
        }
        let resp = request.send().await.map_err(|e| Failure::from(transport(&e)))?;
        let status = resp.status().as_u16();
        let headers = resp.headers();
        let request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let retry_after = retry::retry_after(headers);
        let should_retry = retry::should_retry(headers);
        let sse = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        let id = request_id.as_deref();

        if !(200..300).contains(&status) {
            // An unreadable error body still leaves the status to report.
            let body = read_body(resp).await.unwrap_or_default();
            self.emit_response(n, status, id, false, &body, started);
            let error =
                ProviderError::status(status, wire::status_message(status, id, &body)).with_retry_after(retry_after);
            return Err(Failure { error, retry_after, should_retry });
        }
        let tag = |e: ProviderError| Failure::from(with_request_id(e, id));
        let reply = if sse {
            let acc = stream::read(resp.bytes_stream()).await.map_err(tag)?;
            if !self.observers.is_empty() {
                self.emit_response(n, status, id, true, &acc.completion_json(), started);
            }
            acc.finish().map_err(tag)?
        } else {
            // Not a stream although one may have been asked for (some servers ignore `stream`): read it whole.
            let body = read_body(resp).await.map_err(tag)?;
            self.emit_response(n, status, id, false, &body, started);
            wire::decode_completion(&body).map_err(tag)?
        };
        Ok(reply.into_response(turn, |r| estimate_usage(request_len, r)))
    }

    fn emit_response(
        &self,
        attempt: u32,
        status: u16,
        request_id: Option<&str>,
        streamed: bool,
        body: &[u8],
        t: Instant,
    ) {
        let r = WireResponse { attempt, status, request_id, streamed, body, elapsed: t.elapsed() };
        self.observers.iter().for_each(|o| o.on_response(&r));
    }

    /// The error returned after the last attempt: how many attempts were made.
    fn final_error(failure: Failure, attempts: u32) -> ProviderError {
        let err = failure.error;
        let mut msg = err.to_string();
        if attempts > 1 {
            msg.push_str(&format!(" (gave up after {attempts} attempts)"));
        }
        let out = match err.http_status() {
            Some(status) => ProviderError::status(status, msg),
            None => ProviderError::new(err.kind(), msg),
        };
        out.with_retry_after(failure.retry_after.or(err.retry_after()))
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn capabilities(&self) -> &Caps {
        &self.caps
    }

    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
        let client = self.client.as_ref().map_err(|e| {
            ProviderError::new(ProviderErrorKind::Config, format!("openai: cannot build the HTTP client: {e}"))
        })?;
        let key = self.key()?;
        let body = Bytes::from(self.request_body(req));
        let turn = req.messages.len();
        // The run's llm.budget.call_timeout wins over the provider's own default (PROV-5).
        let call_timeout = req.timeout.unwrap_or(self.call_timeout);
        let mut attempt = 0u32;
        loop {
            let request = WireRequest { attempt, method: "POST", url: &self.url, body: &body };
            self.observers.iter().for_each(|o| o.on_request(&request));
            let once = self.attempt(client, key, body.clone(), attempt, turn);
            let failure = match tokio::time::timeout(call_timeout, once).await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(failure)) => failure,
                Err(_) => Failure::from(ProviderError::new(
                    ProviderErrorKind::Timeout,
                    format!(
                        "openai: no complete reply within the call timeout of {} (llm.budget.call_timeout)",
                        format_duration(call_timeout)
                    ),
                )),
            };
            if failure.error.kind() == ProviderErrorKind::Timeout {
                crate::telemetry::model_timeout(call_timeout);
            }
            let retry =
                attempt < self.max_retries && failure.should_retry.unwrap_or_else(|| failure.error.is_retryable());
            let report = WireError { attempt, error: &failure.error, will_retry: retry };
            self.observers.iter().for_each(|o| o.on_error(&report));
            if !retry {
                return Err(Self::final_error(failure, attempt + 1));
            }
            let wait = failure
                .retry_after
                .filter(|w| *w <= retry::MAX_SERVER_WAIT)
                .unwrap_or_else(|| retry::backoff(attempt, self.backoff_base, self.backoff_max));
            attempt += 1;
            crate::telemetry::model_retry(attempt, wait, &failure.error);
            let report = WireRetry { attempt, wait, error: &failure.error };
            self.observers.iter().for_each(|o| o.on_retry(&report));
            tokio::time::sleep(wait).await;
        }
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = match &self.api_key {
            Ok(Some(_)) => "[redacted]",
            Ok(None) => "[none]",
            Err(()) => "[invalid]",
        };
        f.debug_struct("OpenAiProvider")
            .field("endpoint", &self.url)
            .field("api_key", &key)
            .field("call_timeout", &self.call_timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &(self.backoff_base, self.backoff_max))
            .field("streaming", &self.streaming)
            .field("observers", &self.observers.len())
            .finish_non_exhaustive()
    }
}

/// A failed attempt with what the server said about retrying it.
struct Failure {
    error: ProviderError,
    retry_after: Option<Duration>,
    should_retry: Option<bool>,
}

impl From<ProviderError> for Failure {
    fn from(error: ProviderError) -> Self {
        Failure { error, retry_after: None, should_retry: None }
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

fn transport(e: &reqwest::Error) -> ProviderError {
    let kind = if e.is_timeout() { ProviderErrorKind::Timeout } else { ProviderErrorKind::Transport };
    ProviderError::new(kind, format!("openai: request failed: {}", stream::chain(e)))
}

fn with_request_id(e: ProviderError, request_id: Option<&str>) -> ProviderError {
    let Some(id) = request_id else { return e };
    let msg = format!("{e} (request id {id})");
    let out = match e.http_status() {
        Some(status) => ProviderError::status(status, msg),
        None => ProviderError::new(e.kind(), msg),
    };
    out.with_retry_after(e.retry_after())
}

/// Read a whole body, refusing one over the reply limit.
async fn read_body(mut resp: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
    let hint = resp.content_length().unwrap_or(0).min(1 << 20) as usize;
    let mut out = Vec::with_capacity(hint);
    while let Some(chunk) = resp.chunk().await.map_err(|e| transport(&e))? {
        if out.len() + chunk.len() > stream::MAX_REPLY_BYTES {
            return Err(wire::decode_error("the reply exceeds 64 MiB".to_owned()));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
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
