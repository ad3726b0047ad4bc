//! Server-sent event framing and bounded body reads, shared by every HTTP wire format.

use crate::llm::{ProviderError, ProviderErrorKind};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use sse_stream::{Sse, SseStream};
use std::io;
use std::pin::Pin;

/// The most bytes one reply may take, streamed or whole; a larger one is refused rather than buffered without
/// bound.
pub const MAX_REPLY_BYTES: usize = 64 << 20;

type Frames = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// One event of a `text/event-stream` reply: its `event:` name, if any, and its `data:` lines joined.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field.
    pub event: Option<String>,
    /// The `data:` field (empty when the event had none).
    pub data: String,
}

/// The events of one streamed reply, read in bounded memory: the whole stream may take at most
/// [`MAX_REPLY_BYTES`], comments and keep-alives are skipped, and every failure is a [`ProviderError`] naming the
/// provider (a broken connection is a retryable transport error, a malformed or oversized stream a decode error).
pub struct SseEvents {
    provider: String,
    frames: Frames,
}

impl std::fmt::Debug for SseEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseEvents").field("provider", &self.provider).finish_non_exhaustive()
    }
}

impl SseEvents {
    /// Frame `body` (a response's byte stream) for `provider`, whose name prefixes every error.
    pub fn new<S, E>(provider: impl Into<String>, body: S) -> Self
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let mut total = 0usize;
        let limited = body.map(move |chunk| match chunk {
            Ok(bytes) => {
                total = total.saturating_add(bytes.len());
                if total > MAX_REPLY_BYTES {
                    Err(io::Error::new(io::ErrorKind::InvalidData, "the reply exceeds 64 MiB"))
                } else {
                    Ok(bytes)
                }
            }
            Err(e) => Err(io::Error::other(e)),
        });
        SseEvents { provider: provider.into(), frames: Box::pin(SseStream::from_bytes_stream(limited)) }
    }

    /// The next event; `None` once the stream has ended.
    ///
    /// # Errors
    ///
    /// [`ProviderErrorKind::Transport`] when the connection broke off, [`ProviderErrorKind::Decode`] for a
    /// malformed stream or one over [`MAX_REPLY_BYTES`].
    pub async fn next(&mut self) -> Option<Result<SseEvent, ProviderError>> {
        loop {
            let sse = match self.frames.next().await? {
                Ok(sse) => sse,
                Err(e) => return Some(Err(self.error(e))),
            };
            // Comments and keep-alives parse as items with neither field.
            if sse.event.is_none() && sse.data.is_none() {
                continue;
            }
            return Some(Ok(SseEvent { event: sse.event, data: sse.data.unwrap_or_default() }));
        }
    }

    fn error(&self, e: sse_stream::Error) -> ProviderError {
        let provider = &self.provider;
        if let sse_stream::Error::Body(inner) = &e
            && let Some(io) = inner.downcast_ref::<io::Error>()
        {
            if io.kind() == io::ErrorKind::InvalidData {
                return decode_error(provider, &io.to_string());
            }
            return ProviderError::new(
                ProviderErrorKind::Transport,
                format!("{provider}: the stream broke off: {}", error_chain(io)),
            );
        }
        decode_error(provider, &format!("malformed event stream: {e}"))
    }
}

/// Read a whole body, refusing one over [`MAX_REPLY_BYTES`].
pub(crate) async fn read_body(provider: &str, mut resp: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
    let hint = resp.content_length().unwrap_or(0).min(1 << 20) as usize;
    let mut out = Vec::with_capacity(hint);
    while let Some(chunk) = resp.chunk().await.map_err(|e| transport(provider, &e))? {
        if out.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(decode_error(provider, "the reply exceeds 64 MiB"));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// A failed send or read: a timeout, or any other transport failure, with its causes.
pub(crate) fn transport(provider: &str, e: &reqwest::Error) -> ProviderError {
    let kind = if e.is_timeout() { ProviderErrorKind::Timeout } else { ProviderErrorKind::Transport };
    ProviderError::new(kind, format!("{provider}: request failed: {}", error_chain(e)))
}

fn decode_error(provider: &str, what: &str) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Decode, format!("{provider}: cannot decode the reply: {what}"))
}

/// An error with its causes, `: `-separated, each said once.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}
