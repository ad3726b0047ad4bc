use super::wire::RunResult;
use crate::agent::RunEvent;
use serde_json::{Map, Value};

/// Something the worker did, for the host to log (the SDK never prints). Borrowed, like the agent's
/// [`RunEvent`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum WorkerEvent<'a> {
    /// A request starts running on this worker: fresh, or resumed from its journal after another delivery.
    Started {
        /// The request id.
        id: &'a str,
        /// The session it is journaled to.
        session: &'a str,
        /// Which delivery of the request this is (1 for the first).
        delivery: u64,
        /// Whether its session already existed, so the run continues it (WORK-8).
        resumed: bool,
    },
    /// One event of a request's run, with the request's metadata (WORK-3).
    Run {
        /// The request id.
        id: &'a str,
        /// The request's `metadata`.
        metadata: Option<&'a Map<String, Value>>,
        /// The run's event.
        event: &'a RunEvent<'a>,
    },
    /// A result was stored and its request acknowledged.
    Finished {
        /// The result.
        result: &'a RunResult,
        /// Whether it was read back from a session that had already ended, without running (WORK-9).
        from_journal: bool,
    },
    /// A request with no usable id was terminated with no result (there is nowhere to send one), and counted.
    Rejected {
        /// Its stream sequence.
        stream_seq: u64,
        /// Why.
        why: &'a str,
    },
    /// A request was given back to the queue for another delivery: the worker is stopping (its run suspended), or
    /// something it needs failed for now.
    Released {
        /// The request id.
        id: &'a str,
        /// Why.
        why: &'a str,
    },
    /// A request was delivered `max_deliver` times without a result: its final error result was stored and the
    /// request removed from the queue (WORK-5).
    Exhausted {
        /// The request id, when its body had a usable one.
        id: Option<&'a str>,
        /// Its stream sequence.
        stream_seq: u64,
    },
    /// Something failed outside any one request: a pull, the advisory subscription, a final result that could
    /// not be stored, a request's task that panicked.
    Trouble {
        /// What failed.
        what: &'a str,
    },
}

/// Receives [`WorkerEvent`]s. Implemented for every `Fn(&WorkerEvent)` closure.
///
/// ```
/// use fisk_ai::serve::worker::{WorkerEvent, WorkerEventSink};
///
/// let sink = |e: &WorkerEvent<'_>| {
///     if let WorkerEvent::Rejected { stream_seq, why } = e {
///         eprintln!("request {stream_seq} terminated: {why}");
///     }
/// };
/// sink.emit(&WorkerEvent::Rejected { stream_seq: 7, why: "not JSON" });
/// ```
pub trait WorkerEventSink: Send + Sync {
    /// Handle one event. Called on a request's task, possibly from many at once: keep it quick.
    fn emit(&self, event: &WorkerEvent<'_>);
}

impl<F> WorkerEventSink for F
where
    F: Fn(&WorkerEvent<'_>) + Send + Sync,
{
    fn emit(&self, event: &WorkerEvent<'_>) {
        self(event)
    }
}

/// Discards events.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoWorkerEvents;

impl WorkerEventSink for NoWorkerEvents {
    fn emit(&self, _event: &WorkerEvent<'_>) {}
}
