//! A run given a continuation (LOOP-15, LOOP-16; the public side is [`crate::agent::Continuation`]): turns, then
//! follow-ups and resets, until the continuation ends it or an outcome that ends every run.

use super::{Ended, Run, ended, max_iterations};
use crate::agent::conversation::{NextStep, TurnEnd};
use crate::agent::events::RunEvent;
use crate::agent::outcome::{RunStats, TerminalReason};
use crate::error::Error;
use crate::gate::Approvals;
use crate::llm::{Block, Message, Role, StopReason};
use crate::session::{JournalRecord, Meta, Payload, ResetRecord, SessionId, TerminalRecord, UserRecord};
use crate::warning::Warning;
use std::time::{Instant, SystemTime};

/// The counters when a turn started.
struct Mark {
    llm_calls: u32,
    tool_calls: u32,
    remote_tool_calls: u32,
    usage: crate::llm::Usage,
    cost: Option<crate::llm::Cost>,
    compactions: u32,
    started: SystemTime,
    clock: Instant,
}

impl Mark {
    fn now(stats: &RunStats) -> Self {
        Mark {
            llm_calls: stats.llm_calls,
            tool_calls: stats.tool_calls,
            remote_tool_calls: stats.remote_tool_calls,
            usage: stats.usage,
            cost: stats.cost,
            compactions: stats.compactions,
            started: SystemTime::now(),
            clock: Instant::now(),
        }
    }

    /// This turn's share of `total`.
    fn turn(&self, total: &RunStats) -> RunStats {
        let mut turn = RunStats::new(&total.model);
        turn.llm_calls = total.llm_calls.saturating_sub(self.llm_calls);
        turn.tool_calls = total.tool_calls.saturating_sub(self.tool_calls);
        turn.remote_tool_calls = total.remote_tool_calls.saturating_sub(self.remote_tool_calls);
        turn.usage = total.usage.saturating_sub(self.usage);
        turn.cost = total.cost.zip(self.cost).map(|(now, then)| now.saturating_sub(then));
        turn.compactions = total.compactions.saturating_sub(self.compactions);
        turn.started = self.started;
        turn.latency = self.clock.elapsed();
        turn
    }
}

impl Run<'_> {
    /// The run: one turn, or with a continuation (LOOP-15) as many as it asks for.
    pub(super) async fn converse(&mut self, pending: Option<crate::session::Pending>) -> Ended {
        self.announce();
        let Some(continuation) = self.options.continuation.clone() else { return self.drive(pending).await };
        self.cancel = continuation.turn_cancel(&self.options.cancel);
        let mut mark = Mark::now(&self.stats);
        let mut end = match self.resumed_reply(pending.is_some()) {
            Some(reply) => reply,
            None => self.drive(pending).await,
        };
        let mut cleared = false;
        loop {
            if !cleared && !self.goes_on(&end) {
                return end;
            }
            let asked = self.turn_end(&end, &mark, cleared);
            if !cleared {
                self.emit(RunEvent::TurnEnded { reason: end.reason, turn: &asked.turn, total: &asked.total });
            }
            cleared = false;
            match continuation.next(&asked).await {
                NextStep::End => return end,
                NextStep::FollowUp(prompt) => {
                    if let Err(failed) = self.follow_up(prompt).await {
                        return failed;
                    }
                }
                NextStep::Reset(prompt) => {
                    self.reset();
                    let Some(prompt) = prompt else {
                        cleared = true;
                        continue;
                    };
                    if let Err(failed) = self.begin_after_reset(prompt).await {
                        return failed;
                    }
                }
            }
            self.cancel = continuation.turn_cancel(&self.options.cancel);
            mark = Mark::now(&self.stats);
            end = self.drive(None).await;
        }
    }

    /// LOOP-15: whether the continuation is asked after `end`. The run's cancellation, a budget or a suspend
    /// ends every run.
    fn goes_on(&self, end: &Ended) -> bool {
        match end.reason {
            TerminalReason::Completed | TerminalReason::MaxIterations => true,
            TerminalReason::Error => !self.options.cancel.is_cancelled(),
            _ => false,
        }
    }

    fn turn_end(&self, end: &Ended, mark: &Mark, cleared: bool) -> TurnEnd {
        let mut total = self.stats.clone();
        total.latency = SystemTime::now().duration_since(total.started).unwrap_or_default();
        let turn = if cleared { Mark::now(&total).turn(&total) } else { mark.turn(&total) };
        TurnEnd {
            reason: end.reason,
            answer: end.answer.clone(),
            error: end.error.as_ref().map(ToString::to_string),
            turn,
            total,
            cleared,
        }
    }

    /// CONV-4: a resumed chat whose conversation ends on the model's final reply has no turn to finish: the
    /// continuation is asked first, as it was when the session stopped.
    fn resumed_reply(&self, pending: bool) -> Option<Ended> {
        let last = self.messages.last().filter(|m| m.role == Role::Assistant)?;
        let finished = !pending && self.last_stop.as_ref().is_some_and(|s| *s != StopReason::PauseTurn);
        finished.then(|| Ended { reason: TerminalReason::Completed, answer: Some(last.text()), error: None })
    }

    /// CONV-1: the follow-up joins the conversation (after results for any call the last turn left unanswered),
    /// journaled as `session.user`, and the iteration cap grows by `max_iterations`. After a reset without a
    /// prompt, it is the new conversation's first prompt instead.
    async fn follow_up(&mut self, prompt: String) -> Result<(), Ended> {
        if self.messages.is_empty() {
            return self.begin_after_reset(prompt).await;
        }
        self.answer_unanswered().await?;
        self.emit(RunEvent::FollowUp { prompt: &prompt });
        let message = match self.record(Payload::User(UserRecord::new(Message::user(prompt)))).await? {
            Payload::User(u) => u.message,
            _ => return Err(ended(TerminalReason::Error, "internal error: the journal returned another record")),
        };
        self.messages.push(message);
        self.cap = self.cap.saturating_add(max_iterations(self.inner));
        Ok(())
    }

    /// The tool calls of the last turn that have no result (the turn was cancelled, or its reply was cut short,
    /// LOOP-6) get error results, journaled, so the conversation can go on: every call must be answered next.
    async fn answer_unanswered(&mut self) -> Result<(), Ended> {
        let Some(last) = self.messages.last().filter(|m| m.role == Role::Assistant) else { return Ok(()) };
        let calls: Vec<String> = last.tool_uses().map(|(id, _, _)| id.to_owned()).collect();
        if calls.is_empty() {
            return Ok(());
        }
        let mut done = std::mem::take(&mut self.unrun);
        let why = match self.last_stop.as_ref().filter(|s| !s.runs_tools()) {
            Some(stop) => format!("not run: the reply that asked for it ended with stop reason {}", stop.as_str()),
            None => "not run: the turn was cancelled".to_owned(),
        };
        let mut results = Vec::with_capacity(calls.len());
        for id in calls {
            let found =
                done.iter().position(|b| matches!(b, Block::ToolResult { tool_use_id, .. } if *tool_use_id == id));
            match found {
                Some(at) => results.push(done.swap_remove(at)),
                None => results.push(self.record_result(Block::tool_result(id, why.clone(), true), false).await?),
            }
        }
        self.messages.push(Message { role: Role::User, content: results });
        Ok(())
    }

    /// CONV-2: forget the conversation and every remembered answer; the cap counts from here.
    fn reset(&mut self) {
        self.messages.clear();
        self.unrun.clear();
        self.approvals = Approvals::new();
        self.answers.clear();
        self.sent = 0;
        self.context = None;
        self.last_stop = None;
        self.cap = self.stats.llm_calls.saturating_add(max_iterations(self.inner));
        self.emit(RunEvent::Reset);
    }

    /// The first prompt after a reset: a checkpointed conversation moves to a new session first (CONV-3).
    async fn begin_after_reset(&mut self, prompt: String) -> Result<(), Ended> {
        let prompt = super::first_prompt(&prompt).to_owned();
        if self.checkpointed() {
            self.rotate(&prompt).await?;
        }
        self.messages.push(Message::user(prompt));
        Ok(())
    }

    /// CONV-3: the new session is made durable (meta, then its link back) before the old one is ended
    /// `suspended` with its link forward; an old session that cannot be ended is a warning, since it stays
    /// resumable either way.
    async fn rotate(&mut self, prompt: &str) -> Result<(), Ended> {
        let store = self.inner.sessions.as_ref().map_err(|why| ended(TerminalReason::Error, why.clone()))?;
        let Some(old) = self.checkpoint.take() else { return Ok(()) };
        let next = SessionId::generate();
        let fingerprint = self.inner.fingerprint.clone();
        let created = start_session(store.as_ref(), &next, fingerprint, prompt, &old.id);
        let writer = match created.await {
            Ok(writer) => writer,
            Err(e) => {
                let why = format!("cannot start the session after the reset of {}: {e}", old.id);
                self.checkpoint = Some(old);
                return Err(Ended { reason: TerminalReason::Error, answer: None, error: Some(Error::session(why)) });
            }
        };
        let super::Checkpoint { id: previous, writer: mut old_writer, seq } = old;
        let link = JournalRecord::new(seq + 1, Payload::Reset(ResetRecord::continued_in(next.as_str())));
        let done = JournalRecord::new(seq + 2, Payload::Terminal(TerminalRecord::new(TerminalReason::Suspended, None)));
        let mut failure = old_writer.append(&link).await.err();
        if failure.is_none() {
            failure = old_writer.append(&done).await.err();
        }
        if let Err(e) = old_writer.close().await {
            failure.get_or_insert(e);
        }
        if let Some(e) = failure {
            let w = Warning::SessionEndUnrecorded { session: previous.to_string(), reason: e.to_string() };
            self.emit(RunEvent::Warning(&w));
        }
        self.emit(RunEvent::SessionRotated { previous: previous.as_str(), next: next.as_str() });
        self.checkpoint = Some(super::Checkpoint { id: next, writer, seq: 2 });
        Ok(())
    }

    /// A cancelled turn's or run's end: the run's cancellation ends a conversation, a turn's only that turn.
    pub(super) fn cancelled(&self) -> Ended {
        ended(TerminalReason::Error, self.cancel_text())
    }

    /// What a cancellation is called: the run's, or (in a conversation) the turn's.
    pub(super) fn cancel_text(&self) -> &'static str {
        if self.options.cancel.is_cancelled() || self.options.continuation.is_none() {
            "the run was cancelled"
        } else {
            "the turn was cancelled"
        }
    }
}

/// The session a reset moves to: its meta (a chat's, SESS-23) and its link back, durable before the run goes on.
/// A free function: the run's future must stay `Send` with a journal writer that is not `Sync`.
async fn start_session(
    store: &dyn crate::session::SessionStore,
    next: &SessionId,
    fingerprint: crate::session::Fingerprint,
    prompt: &str,
    previous: &SessionId,
) -> crate::error::Result<Box<dyn crate::session::JournalWriter>> {
    let mut writer = store.create(next).await?;
    let meta = Meta::new(next.as_str(), fingerprint, prompt).interactive();
    writer.append(&JournalRecord::new(1, Payload::Meta(meta))).await?;
    writer.append(&JournalRecord::new(2, Payload::Reset(ResetRecord::continues(previous.as_str())))).await?;
    Ok(writer)
}
