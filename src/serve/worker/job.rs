//! One delivery of a run request (WORK-3, WORK-7..10): parse it, run, resume or read back its session while the
//! ack deadline is kept extended, store the result, and only then acknowledge the request.

use super::Shared;
use super::events::WorkerEvent;
use super::journal::{self, Found};
use super::wire::{self, Refused, Request, RunResult};
use crate::agent::{RunEvent, RunOptions, RunOutcome, TerminalReason};
use crate::error::ErrorKind;
use async_nats::jetstream::{self, AckKind, message::Acker};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tracing::Instrument;

/// The longest request metadata a trace span carries, in bytes.
const SPAN_METADATA: usize = 4096;

/// What a delivery comes to.
enum Step {
    /// A result to store, then acknowledge the request.
    Done { result: RunResult, from_journal: bool },
    /// Give the request back at once, for another worker (a run suspended on shutdown).
    Handover(String),
    /// Give the request back after a pause that grows with each delivery (a failure another try may not meet).
    Retry(String),
}

/// Handle one delivered message to the end: acknowledged, terminated or given back.
pub(super) async fn handle(shared: Arc<Shared>, message: jetstream::Message) {
    // Not a JetStream delivery (no ack subject): nothing can be acknowledged, so nothing is done.
    let Ok((stream_seq, delivered)) = message.info().map(|i| (i.stream_sequence, i.delivered)) else {
        return;
    };
    let (message, acker) = message.split();
    let acker = Arc::new(acker);
    let request = match wire::parse(&message.payload, &shared.budget, shared.max_cost) {
        Ok(r) => r,
        Err(Refused::NoId(why)) => return reject(&shared, &acker, stream_seq, &why).await,
        Err(Refused::Body { id, why }) => return refuse(&shared, &acker, stream_seq, &id, &why).await,
    };
    if request.budget.max_cost().is_some() && !shared.agent.has_complete_price() {
        let why = "budget.max_cost cannot be enforced: the model's price is not known in full (llm.pricing)";
        return refuse(&shared, &acker, stream_seq, &request.id, why).await;
    }
    // One run per session in this process: a delivery of a session already running here (its first delivery's
    // in-progress acks were lost for a while) waits, and its journal answers it later.
    let Some(_running) = Running::claim(&shared, &request) else {
        let why = format!("session {} is already running on this worker", request.session);
        shared.events.emit(&WorkerEvent::Released { id: &request.id, why: &why });
        let _ = acker.ack_with(AckKind::Nak(Some(shared.ack_wait))).await;
        return;
    };
    let span = tracing::info_span!(
        "fisk_ai.worker.request",
        request.id = %request.id,
        request.delivery = delivered,
        request.metadata = span_metadata(&request).as_str(),
    );
    // Extended until the result is stored, and never after this delivery is done with (dropped or not).
    let _beat = Beat::start(acker.clone(), shared.ack_wait);
    match execute(&shared, &request, delivered).instrument(span).await {
        Step::Done { result, from_journal } => finish(&shared, &acker, result, from_journal, AckKind::Ack).await,
        Step::Handover(why) => give_back(&shared, &acker, &request.id, &why, None).await,
        Step::Retry(why) => {
            // Each try waits longer, so a short outage does not use up max_deliver at once.
            let pause = shared.ack_wait.saturating_mul(u32::try_from(delivered.max(1)).unwrap_or(u32::MAX));
            give_back(&shared, &acker, &request.id, &why, Some(pause.min(MAX_PAUSE))).await;
        }
    }
}

/// The longest pause before a failed request is tried again.
const MAX_PAUSE: Duration = Duration::from_secs(600);

/// No usable id: terminated, reported and counted, with no result (there is nowhere to send one).
async fn reject(shared: &Shared, acker: &Acker, stream_seq: u64, why: &str) {
    shared.rejected.fetch_add(1, Ordering::Relaxed);
    shared.events.emit(&WorkerEvent::Rejected { stream_seq, why });
    let _ = acker.ack_with(AckKind::Term).await;
    let _ = shared.js.client().flush().await;
}

/// A usable id and a bad body: an error result under the id, then terminated. Unless a session of that id exists:
/// then this is not that session's request, and its result must not displace the session's own (which the
/// results stream would keep as the first of the id), so it is rejected with no result.
async fn refuse(shared: &Shared, acker: &Acker, stream_seq: u64, id: &str, why: &str) {
    let owned = match crate::session::SessionId::new(id) {
        Ok(session) => shared.sessions.exists(&session).await.unwrap_or(true),
        Err(_) => false,
    };
    if owned {
        let why = format!("a request with a bad body names session {id}, which exists: {why}");
        return reject(shared, acker, stream_seq, &why).await;
    }
    let result = RunResult::refused(id, format!("the request was refused: {why}"));
    finish(shared, acker, result, false, AckKind::Term).await;
}

async fn give_back(shared: &Shared, acker: &Acker, id: &str, why: &str, pause: Option<Duration>) {
    shared.events.emit(&WorkerEvent::Released { id, why });
    let _ = acker.ack_with(AckKind::Nak(pause)).await;
    // Written out now: a worker that exits right after a handover must not take the nak with it, or the request
    // waits a whole ack_wait for another worker.
    let _ = shared.js.client().flush().await;
}

/// The request's metadata for its trace span, bounded.
fn span_metadata(request: &Request) -> String {
    let Some(m) = &request.metadata else { return String::new() };
    let mut text = serde_json::Value::Object(m.clone()).to_string();
    if text.len() > SPAN_METADATA {
        let mut cut = SPAN_METADATA;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// The session ids running in this process; a claim is released when dropped.
struct Running<'a> {
    shared: &'a Shared,
    session: String,
}

impl<'a> Running<'a> {
    fn claim(shared: &'a Shared, request: &Request) -> Option<Running<'a>> {
        let session = request.session.as_str().to_owned();
        let mut running = shared.running.lock().unwrap_or_else(|e| e.into_inner());
        // Made only when the session was not running: a `Running` made and dropped here would take the lock again
        // (a deadlock while it is held) and end the claim of the run that holds it.
        running.insert(session.clone()).then(|| Running { shared, session })
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.shared.running.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.session);
    }
}

/// WORK-7: an in-progress ack at a third of `ack_wait`, so a live worker keeps its request however long the run,
/// and a dead one loses it one `ack_wait` after its last beat. Stops when dropped.
struct Beat(tokio::task::JoinHandle<()>);

impl Beat {
    fn start(acker: Arc<Acker>, ack_wait: Duration) -> Beat {
        let every = ack_wait / 3;
        Beat(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let _ = acker.ack_with(AckKind::Progress).await;
            }
        }))
    }
}

impl Drop for Beat {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Run, resume or read back the request's session.
async fn execute(shared: &Shared, request: &Request, delivered: i64) -> Step {
    let last_try = delivered >= i64::from(shared.max_deliver);
    // A failure another delivery may not meet is retried; on the last delivery it is the answer.
    let fail = |why: String| {
        if last_try {
            Step::Done { result: RunResult::refused(&request.id, why), from_journal: false }
        } else {
            Step::Retry(why)
        }
    };
    let session = &request.session;
    let found = match journal::find(shared, &request.id, session, &request.prompt).await {
        Ok(found) => found,
        Err(e) => return fail(format!("cannot read session {session}: {e}")),
    };
    let options = RunOptions::new()
        .with_budget(request.budget)
        .with_suspend(shared.suspend.clone())
        .with_events(relay(shared, request));
    let delivery = u64::try_from(delivered).unwrap_or_default();
    let started = |resumed| WorkerEvent::Started { id: &request.id, session: session.as_str(), delivery, resumed };
    let outcome = match found {
        // WORK-9: a session that ended is answered from its journal; running it again would repeat its turns.
        Found::Ended(result) => return Step::Done { result, from_journal: true },
        Found::Foreign => {
            let why = format!(
                "session {session} was started by another request (its prompt differs): give this request a new id"
            );
            return Step::Done { result: RunResult::refused(&request.id, why), from_journal: false };
        }
        Found::Open => {
            shared.events.emit(&started(true));
            match shared.agent.resume(session, options).await {
                Ok(outcome) => outcome,
                Err(e) => return fail(format!("session {session} cannot be resumed: {e}")),
            }
        }
        Found::New => {
            shared.events.emit(&started(false));
            let outcome = shared.agent.run(&request.prompt, options.with_checkpoint(session.clone())).await;
            // The session could not be made (another delivery of the request made it first): nothing ran.
            if outcome.session_id.is_none() && outcome.stats.llm_calls == 0 {
                let why = outcome.error.as_ref().map_or_else(|| "no session".to_owned(), ToString::to_string);
                return fail(why);
            }
            outcome
        }
    };
    settle(request, &outcome, fail)
}

/// A suspended run is another worker's to finish (WORK-10). A run whose journal refused a write was most likely
/// fenced out by another worker holding the same request (this one lost its delivery in a partition): its error is
/// not the request's result, so it is retried and the journal answers the next delivery. Everything else is the
/// request's result.
fn settle(request: &Request, outcome: &RunOutcome, fail: impl Fn(String) -> Step) -> Step {
    if outcome.reason == TerminalReason::Suspended {
        return Step::Handover("the worker is stopping: its run was suspended for another worker".to_owned());
    }
    if let Some(e) = outcome.error.as_ref().filter(|e| e.kind() == ErrorKind::Session) {
        return fail(format!("the run's journal failed: {e}"));
    }
    Step::Done { result: RunResult::of(&request.id, outcome), from_journal: false }
}

/// The run's events, each with the request's id and metadata.
fn relay(shared: &Shared, request: &Request) -> impl Fn(&RunEvent<'_>) + Send + Sync + 'static {
    let events = shared.events.clone();
    let id = request.id.clone();
    let metadata = request.metadata.clone();
    move |event: &RunEvent<'_>| events.emit(&WorkerEvent::Run { id: &id, metadata: metadata.as_ref(), event })
}

/// Store the result, then settle the request with `ack` (WORK-3: acknowledged only once its result is stored; a
/// result that cannot be stored gives the request back, and its journal answers the next delivery).
pub(super) async fn finish(shared: &Shared, acker: &Acker, result: RunResult, from_journal: bool, ack: AckKind) {
    match shared.publish(&result).await {
        Ok(()) => {
            // A lost ack means one more delivery, which the journal answers.
            let _ = match ack {
                AckKind::Ack => acker.double_ack().await,
                other => acker.ack_with(other).await,
            };
            shared.events.emit(&WorkerEvent::Finished { result: &result, from_journal });
        }
        Err(e) => {
            let why = format!("cannot store the result of request {}: {e}", result.id);
            give_back(shared, acker, &result.id, &why, Some(shared.ack_wait)).await;
        }
    }
}
