//! One delivery of a run request (WORK-3, WORK-7..10): parse it, run, resume or read back its session while the
//! ack deadline is kept extended, store the result, and only then acknowledge the request.

use super::Shared;
use super::events::WorkerEvent;
use super::wire::{self, Refused, Request, ResultStats, RunResult};
use crate::agent::{RunEvent, RunOptions, RunOutcome, RunStats, TerminalReason};
use crate::error::ErrorKind;
use crate::llm::Role;
use crate::session::Journal;
use async_nats::jetstream::{self, AckKind, message::Acker};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tracing::Instrument;

/// What a delivery comes to.
enum Step {
    /// A result to store, then acknowledge the request (`Term` for one that never ran).
    Done { result: RunResult, from_journal: bool },
    /// Give the request back for another delivery.
    Release(String),
}

/// Handle one delivered message to the end: acknowledged, terminated or released.
pub(super) async fn handle(shared: Arc<Shared>, message: jetstream::Message) {
    // Not a JetStream delivery (no ack subject): nothing can be acknowledged, so nothing is done.
    let Ok((stream_seq, delivered)) = message.info().map(|i| (i.stream_sequence, i.delivered)) else {
        return;
    };
    let (message, acker) = message.split();
    let acker = Arc::new(acker);
    let request = match wire::parse(&message.payload, &shared.budget, shared.max_cost) {
        Ok(r) => r,
        Err(Refused::NoId(why)) => {
            shared.rejected.fetch_add(1, Ordering::Relaxed);
            shared.events.emit(&WorkerEvent::Rejected { stream_seq, why: &why });
            let _ = acker.ack_with(AckKind::Term).await;
            return;
        }
        Err(Refused::Body { id, why }) => {
            let result = RunResult::refused(&id, format!("the request was refused: {why}"));
            return finish(&shared, &acker, result, false, AckKind::Term).await;
        }
    };
    let metadata = request.metadata.as_ref().map(|m| serde_json::Value::Object(m.clone()).to_string());
    let span = tracing::info_span!(
        "fisk_ai.worker.request",
        request.id = %request.id,
        request.delivery = delivered,
        request.metadata = metadata.as_deref().unwrap_or(""),
    );
    let beat = tokio::spawn(keep_alive(acker.clone(), shared.ack_wait));
    let step = execute(&shared, &request, delivered).instrument(span).await;
    beat.abort();
    match step {
        Step::Done { result, from_journal } => finish(&shared, &acker, result, from_journal, AckKind::Ack).await,
        Step::Release(why) => {
            shared.events.emit(&WorkerEvent::Released { id: &request.id, why: &why });
            let _ = acker.ack_with(AckKind::Nak(None)).await;
        }
    }
}

/// WORK-7: an in-progress ack at a third of `ack_wait`, so a live worker keeps its request however long the run,
/// and a dead one loses it one `ack_wait` after its last beat.
async fn keep_alive(acker: Arc<Acker>, ack_wait: Duration) {
    let every = (ack_wait / 3).max(Duration::from_millis(50));
    loop {
        tokio::time::sleep(every).await;
        let _ = acker.ack_with(AckKind::Progress).await;
    }
}

/// Run, resume or read back the request's session.
async fn execute(shared: &Shared, request: &Request, delivered: i64) -> Step {
    let last_try = delivered >= i64::from(shared.max_deliver);
    // A failure that another delivery may not meet is released; on the last delivery it is the answer.
    let fail = |why: String| {
        if last_try {
            Step::Done { result: RunResult::refused(&request.id, why), from_journal: false }
        } else {
            Step::Release(why)
        }
    };
    let session = &request.session;
    let exists = match shared.sessions.exists(session).await {
        Ok(exists) => exists,
        Err(e) => return fail(format!("cannot check session {session}: {e}")),
    };
    let events = relay(shared, request);
    let options =
        RunOptions::new().with_budget(request.budget).with_suspend(shared.suspend.clone()).with_events(events);
    let emit_started = |resumed| {
        shared.events.emit(&WorkerEvent::Started {
            id: &request.id,
            session: session.as_str(),
            delivery: delivered,
            resumed,
        });
    };
    let outcome = if exists {
        let journal = match shared.sessions.read(session).await.and_then(Journal::fold) {
            Ok(journal) => journal,
            Err(e) if e.kind() == ErrorKind::Nats => return fail(format!("cannot read session {session}: {e}")),
            Err(e) => return fail(format!("session {session} cannot be continued: {e}")),
        };
        // WORK-9: a session that ended is answered from its journal; running it again would repeat its turns.
        if journal.terminal.as_ref().is_some_and(|t| t.reason != TerminalReason::Suspended) {
            return Step::Done { result: from_journal(shared, &request.id, &journal), from_journal: true };
        }
        emit_started(true);
        match shared.agent.resume(session, options).await {
            Ok(outcome) => outcome,
            Err(e) => return fail(format!("session {session} cannot be resumed: {e}")),
        }
    } else {
        emit_started(false);
        let outcome = shared.agent.run(&request.prompt, options.with_checkpoint(session.clone())).await;
        // The session could not be made (another delivery of the request made it first): nothing ran.
        if outcome.session_id.is_none() && outcome.stats.llm_calls == 0 {
            let why =
                outcome.error.as_ref().map_or_else(|| "the session could not be made".to_owned(), ToString::to_string);
            return fail(why);
        }
        outcome
    };
    settle(request, &outcome, fail)
}

/// A suspended run is another worker's to finish (WORK-10). A run whose journal refused a write was most likely
/// fenced out by another worker holding the same request (this one lost its delivery in a partition): its error is
/// not the request's result, so it is released and the journal answers the next delivery. Everything else is the
/// request's result.
fn settle(request: &Request, outcome: &RunOutcome, fail: impl Fn(String) -> Step) -> Step {
    if outcome.reason == TerminalReason::Suspended {
        return Step::Release("the worker is stopping: its run was suspended for another worker".to_owned());
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

/// WORK-9: the result of a session that already ended, from its journal.
fn from_journal(shared: &Shared, id: &str, journal: &Journal) -> RunResult {
    let Some(terminal) = journal.terminal.as_ref() else {
        return RunResult::refused(id, "the session has not ended");
    };
    let mut stats = RunStats::new(shared.agent.model());
    stats.llm_calls = journal.llm_calls;
    stats.tool_calls = journal.tool_calls;
    stats.remote_tool_calls = journal.remote_tool_calls;
    stats.usage = journal.usage;
    stats.compactions = journal.compactions;
    let answer = (terminal.reason == TerminalReason::Completed)
        .then(|| journal.messages.iter().rev().find(|m| m.role == Role::Assistant).map(|m| m.text()))
        .flatten()
        .filter(|t| !t.trim().is_empty());
    let mut result = RunResult::refused(id, String::new());
    result.outcome = terminal.reason.as_str().to_owned();
    result.answer = answer;
    result.stats = Some(ResultStats { latency_ms: 0, ..ResultStats::of(&stats) });
    result.cost = shared.agent.cost_of(&journal.usage).map(crate::llm::Cost::usd);
    result.error = terminal.message.clone();
    result
}

/// Store the result, then settle the request with `ack` (WORK-3: acknowledged only once its result is stored; a
/// result that cannot be stored releases the request, and its journal answers the next delivery).
async fn finish(shared: &Shared, acker: &Acker, result: RunResult, from_journal: bool, ack: AckKind) {
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
            shared.events.emit(&WorkerEvent::Released { id: &result.id, why: &why });
            let _ = acker.ack_with(AckKind::Nak(Some(Duration::from_secs(1)))).await;
        }
    }
}
