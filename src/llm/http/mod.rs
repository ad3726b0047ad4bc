//! The HTTP core every HTTP model provider shares (features `anthropic` or `openai`): one client, the per-attempt
//! timeout, the retry policy, the wire observers (`--trace`, `--http-debug`) and server-sent event framing. A
//! provider is a [`WireFormat`] over an [`HttpCore`]: how to authorize a request, how to read an error status, a
//! stream and a whole reply. The Anthropic and OpenAI providers are exactly that, and a host provider for another
//! API reuses the same core.
//!
//! What the core does for every format, the same way:
//! - POSTs the body the provider rendered, with `Content-Type: application/json`, bounded by the call timeout (the
//!   run's `llm.budget.call_timeout` when set);
//! - retries 408, 409, 429, 5xx, timeouts and broken connections per [`RetryPolicy`], honouring `retry-after-ms`,
//!   `retry-after` (up to a minute) and `x-should-retry`, never 400, 401, 403, 404 or 413;
//! - reads a `text/event-stream` reply through the format's stream reader and anything else whole, both bounded by
//!   [`MAX_REPLY_BYTES`];
//! - tells every observer about each request, response, failed attempt and retry, and emits the retry and timeout
//!   telemetry events.
//!
//! A provider for another API, in outline:
//!
//! ```
//! use fisk_ai::async_trait;
//! use fisk_ai::llm::http::{Attempt, Decoded, HttpCore, RetryPolicy, SseEvents, WireFormat};
//! use fisk_ai::llm::{Caps, ModelProvider, ProviderError, ProviderErrorKind, Request, Response};
//!
//! /// The wire format of an imaginary API: bearer auth, whole JSON replies.
//! struct Acme {
//!     key: String,
//! }
//!
//! #[async_trait]
//! impl WireFormat for Acme {
//!     fn provider(&self) -> &str {
//!         "acme"
//!     }
//!     fn authorize(&self, request: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, ProviderError> {
//!         Ok(request.bearer_auth(&self.key))
//!     }
//!     fn status_message(&self, status: u16, _request_id: Option<&str>, body: &[u8]) -> String {
//!         format!("acme: HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(200)]))
//!     }
//!     async fn read_stream(&self, _: &mut SseEvents, _: &Attempt<'_>) -> Result<Decoded, ProviderError> {
//!         Err(ProviderError::new(ProviderErrorKind::Decode, "acme: streaming is not asked for"))
//!     }
//!     fn decode(&self, body: &[u8], _: &Attempt<'_>) -> Result<Response, ProviderError> {
//!         let _ = body; // parse the API's reply into neutral blocks here
//!         Err(ProviderError::new(ProviderErrorKind::Decode, "acme: left out of this example"))
//!     }
//! }
//!
//! struct AcmeProvider {
//!     http: HttpCore,
//!     wire: Acme,
//!     caps: Caps,
//! }
//!
//! #[async_trait]
//! impl ModelProvider for AcmeProvider {
//!     fn capabilities(&self) -> &Caps {
//!         &self.caps
//!     }
//!     async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
//!         let body = serde_json::to_vec(&serde_json::json!({"model": req.model})).unwrap_or_default();
//!         self.http.send(&self.wire, req, body.into()).await
//!     }
//! }
//!
//! let provider = AcmeProvider {
//!     http: HttpCore::new("https://api.acme.example/v1/chat").with_retry(RetryPolicy::new().with_max_retries(3)),
//!     wire: Acme { key: "k".into() },
//!     caps: Caps::new("acme").with_credentials(["ACME_API_KEY"]),
//! };
//! assert_eq!(provider.http.retry().max_retries(), 3);
//! ```

mod debug;
pub(crate) mod retry;
mod sse;

pub use sse::{MAX_REPLY_BYTES, SseEvent, SseEvents, error_chain};

use crate::config::format_duration;
use crate::error::{Error, ErrorKind};
use crate::llm::observe::{WireError, WireObserver, WireRequest, WireResponse, WireRetry};
use crate::llm::{ProviderError, ProviderErrorKind, Request, Response};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::CONTENT_TYPE;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The per-attempt timeout when none is set (`llm.budget.call_timeout`'s default, BUDGET-4).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// How failed calls are retried: how many times, and the backoff when the server names no wait of its own.
///
/// A value, built by value: `RetryPolicy::new()` is 2 retries, 0.5 s doubling to at most 8 s, less up to 25 %
/// jitter so clients that failed together do not retry together.
///
/// ```
/// use fisk_ai::llm::http::RetryPolicy;
/// use std::time::Duration;
///
/// let policy = RetryPolicy::new().with_max_retries(5).with_backoff(Duration::from_secs(1), Duration::from_secs(30));
/// assert_eq!(policy.max_retries(), 5);
/// assert_eq!(RetryPolicy::none().max_retries(), 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    max_retries: u32,
    base: Duration,
    max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 2, base: Duration::from_millis(500), max: Duration::from_secs(8) }
    }
}

impl RetryPolicy {
    /// 2 retries, 0.5 s doubling to at most 8 s.
    pub fn new() -> Self {
        Self::default()
    }

    /// No retries: one attempt per call.
    pub fn none() -> Self {
        Self::default().with_max_retries(0)
    }

    /// Retry at most `retries` times (so `retries + 1` attempts).
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Wait `min(base · 2^n, max)` before retry `n`, less up to 25 % jitter.
    #[must_use]
    pub fn with_backoff(mut self, base: Duration, max: Duration) -> Self {
        self.base = base;
        self.max = max.max(base);
        self
    }

    /// The most retries of one call.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The backoff's base and cap.
    pub fn backoff(&self) -> (Duration, Duration) {
        (self.base, self.max)
    }

    /// The wait before retry `n` (0-based) when the server named none, or named one over a minute.
    fn wait(&self, n: u32, server: Option<Duration>) -> Duration {
        server.filter(|w| *w <= retry::MAX_SERVER_WAIT).unwrap_or_else(|| retry::backoff(n, self.base, self.max))
    }
}

/// One attempt as a [`WireFormat`] sees it while decoding.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Attempt<'a> {
    /// The neutral request being answered.
    pub request: &'a Request<'a>,
    /// The length of the body sent (to estimate usage a server did not report).
    pub body_len: usize,
    /// Whether any observer wants the reply's JSON ([`Decoded::observed`]); rebuilding it from a stream costs, so
    /// only then.
    pub observed: bool,
}

/// A streamed reply, decoded.
#[derive(Debug)]
#[non_exhaustive]
pub struct Decoded {
    /// The neutral response.
    pub response: Response,
    /// The reply as one JSON document, for the observers, when [`Attempt::observed`] asked for it.
    pub observed: Option<Vec<u8>>,
}

impl Decoded {
    /// A decoded reply with `observed` JSON for the observers (`None` when they did not ask for it).
    pub fn new(response: Response, observed: Option<Vec<u8>>) -> Self {
        Decoded { response, observed }
    }
}

/// One model API's wire format over the shared [`HttpCore`]: its headers, error statuses and replies. See the
/// [module docs](self) for a whole provider built on it.
#[async_trait]
pub trait WireFormat: Send + Sync {
    /// The provider's name, prefixing its errors (`anthropic`).
    fn provider(&self) -> &str;

    /// Add what every request of this API needs besides the JSON body: credentials, version headers.
    ///
    /// # Errors
    ///
    /// A [`ProviderErrorKind::Config`] error when the request cannot be authorized (no usable key).
    fn authorize(&self, request: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, ProviderError>;

    /// The response header carrying the server's request id; `x-request-id` unless overridden.
    fn request_id_header(&self) -> &str {
        "x-request-id"
    }

    /// The error message for a reply with a non-2xx `status` and its (bounded) `body`.
    fn status_message(&self, status: u16, request_id: Option<&str>, body: &[u8]) -> String;

    /// Read a `text/event-stream` reply to its end. An early end is an error, never a partial response.
    ///
    /// # Errors
    ///
    /// Whatever the stream or its events fail with.
    async fn read_stream(&self, events: &mut SseEvents, attempt: &Attempt<'_>) -> Result<Decoded, ProviderError>;

    /// Decode a whole (non-streamed) 2xx reply.
    ///
    /// # Errors
    ///
    /// A [`ProviderErrorKind::Decode`] error, or the error an error object in the body reports.
    fn decode(&self, body: &[u8], attempt: &Attempt<'_>) -> Result<Response, ProviderError>;

    /// A remedy to add to the error after the last attempt, if the format knows a likely one.
    fn remedy(&self, error: &ProviderError, request: &Request<'_>) -> Option<String> {
        let _ = (error, request);
        None
    }
}

/// The shared HTTP plumbing of a provider: client, endpoint, call timeout, [`RetryPolicy`] and observers. Built by
/// value; see the [module docs](self).
pub struct HttpCore {
    client: Result<reqwest::Client, String>,
    url: String,
    call_timeout: Duration,
    retry: RetryPolicy,
    observers: Vec<Arc<dyn WireObserver>>,
}

impl std::fmt::Debug for HttpCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCore")
            .field("endpoint", &self.url)
            .field("call_timeout", &self.call_timeout)
            .field("retry", &self.retry)
            .field("observers", &self.observers.len())
            .finish_non_exhaustive()
    }
}

impl HttpCore {
    /// A core POSTing to `url`, with a `fisk-ai/<version>` user agent, no redirects followed beyond reqwest's
    /// default, the default timeout and [`RetryPolicy::new`]. The URL is the host's to check (see
    /// [`check_http_url`](crate::config::check_http_url)).
    pub fn new(url: impl Into<String>) -> Self {
        let client = reqwest::Client::builder()
            .user_agent(concat!("fisk-ai/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| error_chain(&e));
        HttpCore {
            client,
            url: url.into(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            retry: RetryPolicy::new(),
            observers: Vec::new(),
        }
    }

    /// POST to `url` instead.
    #[must_use]
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// Bound every attempt (connect, send, the whole reply) by `timeout`; a request's own
    /// [`timeout`](Request::timeout) wins.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Retry per `policy`.
    #[must_use]
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Add an observer of the wire traffic; observers are called in the order added.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn WireObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Dump every request and response to `path` (PROV-17): whatever is at `path` is removed first (a symlink
    /// itself, never its target) and a new file is created exclusively with mode 0600. Headers are not written.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when whatever is at `path` cannot be removed or the file cannot be created.
    pub fn with_http_debug(self, path: impl AsRef<Path>) -> crate::error::Result<Self> {
        let path = path.as_ref();
        let log = debug::HttpDebugLog::create(path).map_err(|e| {
            Error::new(ErrorKind::Io, format!("cannot create the HTTP debug log {}: {e}", path.display()))
                .with_source(e)
        })?;
        Ok(self.with_observer(Arc::new(log)))
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The per-attempt timeout.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The retry policy.
    pub fn retry(&self) -> RetryPolicy {
        self.retry
    }

    /// How many observers are attached.
    pub fn observers(&self) -> usize {
        self.observers.len()
    }

    /// POST `body` for `req` in `wire`'s format, retrying per the policy, and decode the reply.
    ///
    /// # Errors
    ///
    /// The last attempt's error, saying how many attempts were made (and the format's remedy, if any).
    pub async fn send<W: WireFormat + ?Sized>(
        &self,
        wire: &W,
        req: &Request<'_>,
        body: Bytes,
    ) -> Result<Response, ProviderError> {
        let client = self.client.as_ref().map_err(|e| {
            let name = wire.provider();
            ProviderError::new(ProviderErrorKind::Config, format!("{name}: cannot build the HTTP client: {e}"))
        })?;
        let call_timeout = req.timeout.unwrap_or(self.call_timeout);
        let at = Attempt { request: req, body_len: body.len(), observed: !self.observers.is_empty() };
        let mut n = 0u32;
        loop {
            let request = WireRequest { attempt: n, method: "POST", url: &self.url, body: &body };
            self.observers.iter().for_each(|o| o.on_request(&request));
            let once = self.attempt(wire, client, body.clone(), n, &at);
            let failure = match tokio::time::timeout(call_timeout, once).await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(failure)) => failure,
                Err(_) => Failure::from(ProviderError::new(
                    ProviderErrorKind::Timeout,
                    format!(
                        "{}: no complete reply within the call timeout of {} (llm.budget.call_timeout)",
                        wire.provider(),
                        format_duration(call_timeout)
                    ),
                )),
            };
            if failure.error.kind() == ProviderErrorKind::Timeout {
                crate::telemetry::model_timeout(call_timeout);
            }
            let retry = n < self.retry.max_retries && failure.should_retry.unwrap_or(failure.error.is_retryable());
            let report = WireError { attempt: n, error: &failure.error, will_retry: retry };
            self.observers.iter().for_each(|o| o.on_error(&report));
            if !retry {
                return Err(final_error(wire, failure, n + 1, req));
            }
            let wait = self.retry.wait(n, failure.retry_after);
            n += 1;
            crate::llm::spans::model_retry(n, wait, &failure.error);
            let report = WireRetry { attempt: n, wait, error: &failure.error };
            self.observers.iter().for_each(|o| o.on_retry(&report));
            tokio::time::sleep(wait).await;
            // CONV-5: what the failed attempt streamed is not the reply; the retry streams it again.
            if let Some(sink) = req.deltas() {
                sink.delta(crate::llm::Delta::Restart);
            }
        }
    }

    async fn attempt<W: WireFormat + ?Sized>(
        &self,
        wire: &W,
        client: &reqwest::Client,
        body: Bytes,
        n: u32,
        at: &Attempt<'_>,
    ) -> Result<Response, Failure> {
        let started = Instant::now();
        let name = wire.provider();
        let request = wire.authorize(client.post(&self.url).header(CONTENT_TYPE, "application/json").body(body))?;
        let resp = request.send().await.map_err(|e| Failure::from(sse::transport(name, &e)))?;
        let status = resp.status().as_u16();
        let headers = resp.headers();
        let request_id = headers.get(wire.request_id_header()).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let id = request_id.as_deref();
        let retry_after = retry::retry_after(headers);
        let should_retry = retry::should_retry(headers);
        let sse = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        let emit = |streamed: bool, body: &[u8]| {
            let r = WireResponse { attempt: n, status, request_id: id, streamed, body, elapsed: started.elapsed() };
            self.observers.iter().for_each(|o| o.on_response(&r));
        };

        if !(200..300).contains(&status) {
            // An unreadable error body still leaves the status to report.
            let body = sse::read_body(name, resp).await.unwrap_or_default();
            emit(false, &body);
            let error =
                ProviderError::status(status, wire.status_message(status, id, &body)).with_retry_after(retry_after);
            return Err(Failure { error, retry_after, should_retry });
        }
        let tag = |e: ProviderError| Failure::from(with_request_id(e, id));
        if sse {
            let mut events = SseEvents::new(name, resp.bytes_stream());
            let decoded = wire.read_stream(&mut events, at).await.map_err(tag)?;
            if let Some(json) = &decoded.observed {
                emit(true, json);
            }
            Ok(decoded.response)
        } else {
            // Not a stream although one may have been asked for (a proxy or mock may ignore it): read it whole.
            let body = sse::read_body(name, resp).await.map_err(tag)?;
            emit(false, &body);
            wire.decode(&body, at).map_err(tag)
        }
    }
}

/// Rendered tool arrays by plan (the plan's id), so every turn of a conversation splices the same bytes and the
/// prompt cache's prefix stays byte-identical. An agent has one plan, a process serving a few agents a handful.
#[derive(Debug, Default)]
pub(crate) struct RenderCache {
    plans: std::sync::Mutex<Vec<(u64, Arc<[u8]>)>>,
}

impl RenderCache {
    const SIZE: usize = 8;

    /// The tools of `plan`, rendered by `render` the first time.
    pub(crate) fn get(
        &self,
        plan: &crate::llm::ToolPlan,
        render: impl FnOnce(&crate::llm::ToolPlan) -> Vec<u8>,
    ) -> Arc<[u8]> {
        let mut cache = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, tools)) = cache.iter().find(|(id, _)| *id == plan.id()) {
            return tools.clone();
        }
        let tools: Arc<[u8]> = render(plan).into();
        if cache.len() >= Self::SIZE {
            cache.remove(0);
        }
        cache.push((plan.id(), tools.clone()));
        tools
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

/// The error returned after the last attempt: how many attempts were made, and the format's remedy.
fn final_error<W: WireFormat + ?Sized>(wire: &W, failure: Failure, attempts: u32, req: &Request<'_>) -> ProviderError {
    let err = failure.error;
    let mut msg = err.to_string();
    if attempts > 1 {
        msg.push_str(&format!(" (gave up after {attempts} attempts)"));
    }
    if let Some(remedy) = wire.remedy(&err, req) {
        msg.push_str("; ");
        msg.push_str(&remedy);
    }
    let out = match err.http_status() {
        Some(status) => ProviderError::status(status, msg),
        None => ProviderError::new(err.kind(), msg),
    };
    out.with_retry_after(failure.retry_after.or(err.retry_after()))
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
