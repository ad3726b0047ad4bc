//! A failed model call.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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
///
/// `Display` is the message; the underlying cause (a transport or decode error), when the provider attached one,
/// is [`source`](std::error::Error::source), never repeated in the message.
#[derive(Debug, Clone)]
pub struct ProviderError {
    kind: ProviderErrorKind,
    status: Option<u16>,
    message: String,
    retry_after: Option<Duration>,
    // Shared so the error stays `Clone` (retries and observers keep copies).
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl ProviderError {
    /// An error of `kind`.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ProviderError { kind, status: None, message: message.into(), retry_after: None, source: None }
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

    /// Attach the underlying cause. A message ending with the cause's own text (`"connect failed: {e}"`) has that
    /// suffix dropped, so an error-chain reporter prints the cause once.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        let cause = format!(": {source}");
        if let Some(kept) = self.message.strip_suffix(&cause).filter(|kept| !kept.is_empty()) {
            self.message.truncate(kept.len());
        }
        self.source = Some(Arc::new(source));
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

impl std::error::Error for ProviderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}
