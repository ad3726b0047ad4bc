//! Starting a checkpointed session and resuming one (SESS-1..4, SESS-13..23).

use super::events::RunEvent;
use super::outcome::{RunOutcome, RunStats, TerminalReason};
use super::run::{self, Checkpoint, Start};
use super::{Inner, RunOptions};
use crate::error::{Error, Result};
use crate::gate::Approvals;
use crate::llm::StopReason;
use crate::session::{ConfirmChoice, ConfirmRecord, Journal, JournalRecord, Meta, Payload, SessionId, SessionStore};
use crate::warning::Warning;
use std::sync::Arc;

fn store(inner: &Inner) -> Result<&Arc<dyn SessionStore>> {
    inner.sessions.as_ref().map_err(|why| Error::session(format!("cannot checkpoint: {why}")))
}

/// A new run; with a checkpoint, the session is created and its meta record made durable first.
pub(super) async fn run(inner: &Inner, prompt: &str, options: RunOptions) -> RunOutcome {
    let Some(id) = options.checkpoint.clone() else {
        return run::run(inner, run::fresh(inner, prompt, None), options).await;
    };
    let prompt = run::first_prompt(prompt);
    let created = async {
        let mut writer = store(inner)?.create(&id).await?;
        let meta = Meta::new(id.as_str(), inner.fingerprint.clone(), prompt);
        // SESS-23: a conversation is a chat session.
        let meta = if options.continuation.is_some() { meta.interactive() } else { meta };
        writer.append(&JournalRecord::new(1, Payload::Meta(meta))).await?;
        Ok::<_, Error>(writer)
    };
    match created.await {
        Ok(writer) => {
            if let Some(sink) = &options.events {
                sink.emit(&RunEvent::Session { id: id.as_str(), resumed: false });
            }
            let checkpoint = Checkpoint { id, writer, seq: 1 };
            run::run(inner, run::fresh(inner, prompt, Some(checkpoint)), options).await
        }
        Err(e) => RunOutcome {
            reason: TerminalReason::Error,
            answer: None,
            error: Some(e),
            stats: RunStats::new(&inner.model),
            session_id: None,
            messages: Vec::new(),
            internal_error: false,
            output: None,
        },
    }
}

/// SESS-17, SESS-18, SESS-23: whether the folded session can be continued at all by this agent, as a chat
/// (`chat`: a continuation was given) or as a one-shot run.
fn resumable(id: &SessionId, journal: &Journal, now: &crate::session::Fingerprint, chat: bool) -> Result<()> {
    // CONV-4: a chat's `completed` is its last turn's; resuming it reopens the conversation.
    if journal.is_completed() && !journal.is_interactive() {
        return Err(Error::session(format!("session {id} has already completed; it cannot be resumed")));
    }
    // CONV-4: a chat resumes as a chat, a one-shot run as a one-shot run.
    match (journal.is_interactive(), chat) {
        (true, false) => {
            return Err(Error::session(format!(
                "session {id} is a chat session; resume it as a chat (`chat --resume {id}`), not as a one-shot run"
            )));
        }
        (false, true) => {
            return Err(Error::session(format!(
                "session {id} is a one-shot run; resume it with `run --resume {id}`, not as a chat"
            )));
        }
        (true, true) => return provider_unchanged(id, journal, now),
        (false, false) => {}
    }
    // A conversation that ends on the model's own reply has nothing to continue (a request ending on an assistant
    // turn would be read as a prefill); a paused server-side turn is the one exception (LOOP-8).
    let ends_on_reply = journal.messages.last().is_some_and(|m| m.role == crate::llm::Role::Assistant);
    if journal.pending.is_none() && ends_on_reply && journal.last_stop != Some(StopReason::PauseTurn) {
        let stop = journal.last_stop.as_ref().map_or("unknown", |s| s.as_str());
        return Err(Error::session(format!(
            "session {id} ended with the model's final reply (stop reason {stop}); there is nothing to resume"
        )));
    }
    provider_unchanged(id, journal, now)
}

/// SESS-18: a session never moves between providers; checked before the drift (SESS-19).
fn provider_unchanged(id: &SessionId, journal: &Journal, now: &crate::session::Fingerprint) -> Result<()> {
    let was = &journal.meta.fingerprint;
    // SESS-18 before SESS-19.
    if was.provider != now.provider {
        return Err(Error::session(format!(
            "session {id} was started with provider {} but this run uses provider {}; a session cannot move \
             between providers, and --force does not apply",
            was.provider, now.provider
        )));
    }
    Ok(())
}

/// Continue session `id`: fold, check, replay, then run from where it stopped.
pub(super) async fn resume(inner: &Inner, id: &SessionId, options: RunOptions) -> Result<RunOutcome> {
    let (records, mut writer) = store(inner)?.open(id).await?;
    let journal = Journal::fold(records).map_err(|e| Error::session(format!("session {id}: {e}")))?;
    let chat = options.continuation.is_some();
    resumable(id, &journal, &inner.fingerprint, chat)?;
    let (was, now) = (&journal.meta.fingerprint, &inner.fingerprint);
    let drift = was.drift(now);
    let mut seq = journal.last_seq;
    let mut approvals = Approvals::new();
    // GATE-14: a recorded answer applies only to the very call it was given for, among those still to run.
    let mut answers: std::collections::HashMap<String, ConfirmChoice> = journal
        .pending
        .iter()
        .flat_map(|p| p.unanswered())
        .filter_map(|call| {
            let a = journal.answers.get(&call.id)?;
            // A `call_tool` call was answered under the name of the tool it routes to.
            let routed = inner.client_search.then(|| super::search::routed_name(&call.name, &call.input)).flatten();
            let name = routed.as_deref().unwrap_or(&call.name);
            (a.tool.as_deref().is_none_or(|t| t == name)).then(|| (call.id.clone(), a.choice))
        })
        .collect();
    if !drift.is_empty() && !options.force {
        let lines: Vec<String> = drift.iter().map(|d| format!("  {d}")).collect();
        return Err(Error::session(format!(
            "session {id} was started with a different configuration:\n{}\nresume with the original configuration, \
             or pass --force to continue with this one (recorded confirmation answers are then dropped)",
            lines.join("\n")
        )));
    }
    if drift.is_empty() {
        // EXACT-2: under `remember: exact` a tool-wide answer journaled before the setting tightened grants nothing
        // wider on resume than the call it answered.
        if inner.config.harness.approvals.remember == crate::config::Remember::Tool {
            for tool in &journal.allowed {
                approvals.allow(tool.as_str());
            }
        }
        // EXACT-4: an allowance for exact arguments is honoured on resume, as one for the tool is.
        for (tool, digest) in &journal.allowed_exact {
            approvals.allow_exact(tool.as_str(), digest.as_str());
        }
    } else {
        // GATE-15: a forced resume across drift forgets every recorded answer, durably, before going on.
        answers.clear();
        seq += 1;
        writer.append(&JournalRecord::new(seq, Payload::Confirm(ConfirmRecord::reset()))).await?;
    }

    let stats_calls = journal.llm_calls;
    let mut stats = RunStats::new(&inner.model);
    stats.llm_calls = journal.llm_calls;
    stats.tool_calls = journal.tool_calls;
    stats.remote_tool_calls = journal.remote_tool_calls;
    stats.usage = journal.usage;
    stats.compactions = journal.compactions;
    let paused = journal.pending.is_none() && journal.last_stop == Some(StopReason::PauseTurn);
    let warning = paused.then(|| Warning::PausedTurnMayHaveExpired { session: id.to_string() });
    if let Some(w) = &warning {
        crate::telemetry::warning(w, inner.trace_content);
    }
    if let Some(sink) = &options.events {
        sink.emit(&RunEvent::Session { id: id.as_str(), resumed: true });
        sink.emit(&RunEvent::Replay { messages: &journal.messages });
        if let Some(w) = &warning {
            sink.emit(&RunEvent::Warning(w));
        }
    }
    let start = Start {
        messages: journal.messages,
        stats,
        approvals,
        answers,
        pending: journal.pending,
        last_stop: journal.last_stop,
        checkpoint: Some(Checkpoint { id: id.clone(), writer, seq }),
        resumed: true,
        // SESS-20: cumulative for a one-shot session; a chat's cap counts from where it is resumed (LOOP-15).
        cap: if chat { stats_calls.saturating_add(run::max_iterations(inner)) } else { run::max_iterations(inner) },
    };
    Ok(run::run(inner, start, options).await)
}
