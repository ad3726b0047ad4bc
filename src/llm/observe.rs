//! Watching the wire: every request body, response, failed attempt and retry of an HTTP provider, whichever API it
//! speaks.

use crate::llm::ProviderError;
use std::fmt;
use std::time::Duration;

/// Receives what an HTTP provider (such as `AnthropicProvider`) puts on and gets off the wire, for debug dumps
/// (PROV-17) and JSON-lines traces (PROV-18). Every method has a no-op default, so an observer implements only
/// what it needs.
///
/// Methods run inline on the calling task: keep them quick and never block on the network. Nothing an observer
/// sees contains the API key (headers are not passed at all).
///
/// ```
/// use fisk_ai::llm::anthropic::AnthropicProvider;
/// use fisk_ai::llm::{WireObserver, WireRequest, WireRetry};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// /// Counts requests and retries, e.g. for a status line.
/// #[derive(Default)]
/// struct Counter {
///     requests: AtomicUsize,
///     retries: AtomicUsize,
/// }
///
/// impl WireObserver for Counter {
///     fn on_request(&self, _req: &WireRequest<'_>) {
///         self.requests.fetch_add(1, Ordering::Relaxed);
///     }
///
///     fn on_retry(&self, _retry: &WireRetry<'_>) {
///         self.retries.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let counter = Arc::new(Counter::default());
/// let provider = AnthropicProvider::new("sk-ant-example").with_observer(counter.clone());
/// # let _ = provider;
/// assert_eq!(counter.requests.load(Ordering::Relaxed), 0);
/// ```
pub trait WireObserver: Send + Sync {
    /// A request is about to be sent (once per attempt).
    fn on_request(&self, _request: &WireRequest<'_>) {}

    /// An HTTP response arrived, successful or not.
    fn on_response(&self, _response: &WireResponse<'_>) {}

    /// An attempt failed: an error status, a timeout, a dropped connection, a stream error or an undecodable reply.
    fn on_error(&self, _error: &WireError<'_>) {}

    /// The provider is about to wait and try again.
    fn on_retry(&self, _retry: &WireRetry<'_>) {}
}

impl fmt::Debug for dyn WireObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WireObserver")
    }
}

/// A request about to be sent.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct WireRequest<'a> {
    /// 0 for the first try, then 1, 2, … for retries.
    pub attempt: u32,
    /// The HTTP method, `POST`.
    pub method: &'a str,
    /// The endpoint URL.
    pub url: &'a str,
    /// The exact JSON body.
    pub body: &'a [u8],
}

/// A response received.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct WireResponse<'a> {
    /// The attempt this answers.
    pub attempt: u32,
    /// The HTTP status.
    pub status: u16,
    /// The `request-id` header, when sent.
    pub request_id: Option<&'a str>,
    /// Whether the reply was streamed; `body` is then the accumulated message as JSON.
    pub streamed: bool,
    /// The body: the JSON message or error as received, or for a stream the message it accumulated to.
    pub body: &'a [u8],
    /// Time from sending the request to the complete reply.
    pub elapsed: Duration,
}

/// A failed attempt.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct WireError<'a> {
    /// The attempt that failed.
    pub attempt: u32,
    /// What went wrong.
    pub error: &'a ProviderError,
    /// Whether the provider will try again.
    pub will_retry: bool,
}

/// A retry about to happen.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct WireRetry<'a> {
    /// The attempt about to be made (1 for the first retry).
    pub attempt: u32,
    /// How long the provider waits first.
    pub wait: Duration,
    /// The failure being retried.
    pub error: &'a ProviderError,
}
