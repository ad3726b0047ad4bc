use crate::nats::ConnectionEvent;

/// Something the a2a server did, for the host to log (the SDK never prints). Borrowed, like the agent's
/// [`RunEvent`](crate::agent::RunEvent).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum A2aEvent<'a> {
    /// A call passed every check and is about to run.
    ToolCall {
        /// The tool.
        name: &'a str,
        /// The resolved command line (EXEC-6), sanitized (GATE-8).
        display: &'a str,
        /// The caller's identity, as its request names it (not authenticated: NATS permissions are the boundary).
        caller: &'a str,
    },
    /// A request was refused with a transport error: `400` for a malformed one (A2A-10), `503` when every slot and
    /// queue place is taken (A2A-14).
    Rejected {
        /// `discovery` or `tool`.
        endpoint: &'static str,
        /// The error code (`400`, `503`).
        code: u16,
        /// The `Nats-Service-Error` description.
        description: &'a str,
    },
    /// A request whose reply subject is not under the connection's inbox prefix was refused, unseen and unanswered
    /// (A2A-15; `expose.agent.a2a.any_reply_subject` allows it).
    ReplyRefused {
        /// `discovery` or `tool`.
        endpoint: &'static str,
        /// The reply subject, sanitized.
        reply_subject: &'a str,
    },
    /// The NATS connection changed state (a disconnect, a reconnect).
    Connection(&'a ConnectionEvent),
}

/// Receives [`A2aEvent`]s. Implemented for every `Fn(&A2aEvent)` closure.
///
/// ```
/// use fisk_ai::serve::a2a::{A2aEvent, A2aEventSink};
///
/// let sink = |e: &A2aEvent<'_>| {
///     if let A2aEvent::ToolCall { display, caller, .. } = e {
///         eprintln!("-> {display} (for {caller})");
///     }
/// };
/// sink.emit(&A2aEvent::ToolCall { name: "say", display: "say -- hi", caller: "ops" });
/// ```
pub trait A2aEventSink: Send + Sync {
    /// Handle one event. Called on a request's task, possibly from many at once: keep it quick.
    fn emit(&self, event: &A2aEvent<'_>);
}

impl<F> A2aEventSink for F
where
    F: Fn(&A2aEvent<'_>) + Send + Sync,
{
    fn emit(&self, event: &A2aEvent<'_>) {
        self(event)
    }
}

/// Discards events.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoA2aEvents;

impl A2aEventSink for NoA2aEvents {
    fn emit(&self, _event: &A2aEvent<'_>) {}
}
