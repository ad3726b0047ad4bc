//! Streamed deltas (CONV-5): the text and reasoning of a reply as the provider streams it, for a host that shows
//! the answer while it arrives. The [`Response`](super::Response) a provider returns is unchanged; the deltas of
//! one reply concatenate to its text and thinking blocks, in order.

/// One piece of a streamed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delta<'a> {
    /// Answer or narration text, appended to the current text block.
    Text(&'a str),
    /// Reasoning text, appended to the current thinking block.
    Thinking(&'a str),
    /// The attempt that streamed the deltas so far failed and is retried: discard them; the retry streams the
    /// reply from its start.
    Restart,
}

/// Who hears a reply's deltas while it streams, given to a request with
/// [`Request::with_deltas`](super::Request::with_deltas). Called on the provider's task, for every chunk: keep it
/// quick. Implemented for closures.
///
/// ```
/// use fisk_ai::llm::{Delta, DeltaSink};
/// use std::sync::Mutex;
///
/// let shown = Mutex::new(String::new());
/// let sink = |d: Delta<'_>| match d {
///     Delta::Text(t) => shown.lock().unwrap().push_str(t),
///     Delta::Restart => shown.lock().unwrap().clear(),
///     _ => {}
/// };
/// sink.delta(Delta::Text("Hel"));
/// sink.delta(Delta::Text("lo"));
/// assert_eq!(*shown.lock().unwrap(), "Hello");
/// ```
pub trait DeltaSink: Send + Sync {
    /// Hear one delta.
    fn delta(&self, delta: Delta<'_>);
}

impl<F> DeltaSink for F
where
    F: Fn(Delta<'_>) + Send + Sync,
{
    fn delta(&self, delta: Delta<'_>) {
        self(delta)
    }
}

/// Tell `sink`, when there is one. Only the streaming providers speak deltas.
#[cfg(any(feature = "anthropic", feature = "openai"))]
pub(crate) fn tell(sink: Option<&dyn DeltaSink>, delta: Delta<'_>) {
    if let Some(sink) = sink {
        sink.delta(delta);
    }
}

/// A request's sink, printable so [`Request`](super::Request) stays `Debug`.
#[derive(Clone, Copy)]
pub(crate) struct Deltas<'a>(pub(crate) &'a dyn DeltaSink);

impl std::fmt::Debug for Deltas<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Deltas")
    }
}
