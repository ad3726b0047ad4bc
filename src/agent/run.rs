//! One run of the loop (LOOP-1..11, BUDGET-1..3), tool dispatch (LOOP-10) and the gate (GATE-6..12).

use super::events::{EventSink, NoEvents, RunEvent};
use super::outcome::{RunOutcome, RunStats, TerminalReason};
use super::{Inner, RunOptions};

mod call;
mod compact;
mod converse;
mod reply;
mod structured;
use crate::error::Error;
use crate::gate::Approvals;
use crate::llm::{Block, CacheMode, Message, ProviderError, ProviderErrorKind, Request, Response, Role, StopReason};
use crate::session::{
    AssistantRecord, ConfirmChoice, JournalRecord, JournalWriter, Payload, Pending, SessionId, TerminalRecord,
    ToolResultRecord,
};
use crate::telemetry;
use crate::tool::CancellationToken;
use crate::tool::{Tool, ToolInput};
use crate::warning::Warning;
use futures::FutureExt;
use reply::{Relay, duplicate_call_id, preview};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;
pub(super) use structured::check as check_output;
use tracing::{Instrument, Span};

/// SESS-21: appended to the system prompt of a resumed run; never persisted or fingerprinted.
pub(super) const RESUME_REMINDER: &str = "This session was suspended and has now been resumed. Time has passed \
    since the earlier tool results in this conversation were produced, so they may be stale: re-verify the current \
    state before taking any action that changes it.";

/// A checkpointed run's journal: its writer and the last sequence number written.
pub(super) struct Checkpoint {
    pub(super) id: SessionId,
    pub(super) writer: Box<dyn JournalWriter>,
    pub(super) seq: u64,
}

/// Where a run starts: a fresh prompt, or a folded session.
pub(super) struct Start {
    pub(super) messages: Vec<Message>,
    pub(super) stats: RunStats,
    pub(super) approvals: Approvals,
    pub(super) answers: HashMap<String, ConfirmChoice>,
    pub(super) pending: Option<Pending>,
    pub(super) last_stop: Option<StopReason>,
    pub(super) checkpoint: Option<Checkpoint>,
    pub(super) resumed: bool,
    /// The iteration cap the run starts with (LOOP-15, SESS-20).
    pub(super) cap: u32,
}

/// The first user message when no prompt is given (LOOP-1).
const DEFAULT_PROMPT: &str = "assist the user";

struct Ended {
    reason: TerminalReason,
    answer: Option<String>,
    error: Option<Error>,
}

/// A run ended short of an answer (budget, limit, cancellation, ...).
fn ended(reason: TerminalReason, error: impl Into<String>) -> Ended {
    Ended { reason, answer: None, error: Some(Error::run(error)) }
}

/// What a model turn leads to.
enum Next {
    /// Run this many tool calls (none for a paused turn, LOOP-8), then ask the model again.
    Calls(usize),
    /// The final answer is not valid against the output schema: send this repair prompt, then ask again (OUT-7).
    Repair(String),
    /// The run is over.
    End(Ended),
}

/// What dispatching one tool call came to.
enum Dispatch {
    Result(Block),
    /// The approval prompt was interrupted: nothing ran and the run ends (GATE-12).
    Abort,
    /// The run was cancelled while the call ran: its result is not recorded, so a resume runs it again.
    Cancelled,
    /// The journal could not be written (SESS-33).
    Failed(Ended),
}

struct Run<'a> {
    inner: &'a Inner,
    run_tools: &'a [Arc<dyn Tool>],
    system: &'a [String],
    index_warning: Option<Warning>,
    events: &'a dyn EventSink,
    options: &'a RunOptions,
    stats: RunStats,
    messages: Vec<Message>,
    approvals: Approvals,
    /// Answers recorded for calls that were pending when the session was suspended (GATE-14).
    answers: HashMap<String, ConfirmChoice>,
    last_stop: Option<StopReason>,
    checkpoint: Option<Checkpoint>,
    /// How many messages the conversation held after the last model turn of this run (the content trace shows
    /// a call only the messages added since).
    sent: usize,
    /// What cancels the current turn: the run's token, or the continuation's token for one turn (CONV-1).
    cancel: CancellationToken,
    /// The iteration cap: `max_iterations`, extended by each follow-up and re-based by a reset (LOOP-15/16).
    cap: u32,
    /// The results a cancelled turn of a conversation got before it stopped (CONV-1).
    unrun: Vec<Block>,
    /// What the provider last counted of the conversation, for compaction's estimate (COMP-1).
    context: Option<compact::Context>,
    /// Whether this turn's one repair of an answer invalid against the output schema was used (OUT-7).
    repaired: bool,
    /// The accepted answer as JSON, with an output schema (OUT-6).
    output: Option<serde_json::Value>,
    /// The configured budget, narrowed by the run's own (WORK-6).
    limits: super::budget::Limits,
}

/// The first user message of a new run (LOOP-1).
pub(super) fn first_prompt(prompt: &str) -> &str {
    if prompt.trim().is_empty() { DEFAULT_PROMPT } else { prompt }
}

/// The configured iteration cap (`llm.budget.max_iterations`).
pub(super) fn max_iterations(inner: &Inner) -> u32 {
    u32::try_from(inner.config.llm.budget.max_iterations()).unwrap_or(u32::MAX)
}

/// A new run's starting point.
pub(super) fn fresh(inner: &Inner, prompt: &str, checkpoint: Option<Checkpoint>) -> Start {
    Start {
        cap: max_iterations(inner),
        messages: vec![Message::user(first_prompt(prompt))],
        stats: RunStats::new(&inner.model),
        approvals: Approvals::new(),
        answers: HashMap::new(),
        pending: None,
        last_stop: None,
        checkpoint,
        resumed: false,
    }
}

pub(super) async fn run(inner: &Inner, start: Start, options: RunOptions) -> RunOutcome {
    let started = Instant::now();
    let no_events = NoEvents;
    let events: &dyn EventSink = options.events.as_deref().unwrap_or(&no_events);
    let mut system = std::borrow::Cow::Borrowed(inner.system.as_slice());
    // SESS-21, LOOP-2: the resume reminder follows the fingerprinted segments and precedes the memory index.
    if start.resumed {
        system.to_mut().push(RESUME_REMINDER.to_owned());
    }
    // MEM-15/16: the memory index is a start-of-run snapshot appended to the system prompt; failing to read it
    // is a warning, not a failed run.
    let mut index_warning = None;
    if let Some(store) = inner.memory.as_ref().filter(|_| inner.memory_index) {
        match crate::memory::memory_index(store.as_ref()).await {
            Ok(index) => system.to_mut().push(index),
            Err(e) => index_warning = Some(Warning::MemoryIndexUnavailable { reason: e.to_string() }),
        }
    }
    // This run's own memory tools (same names and specs as the selected ones; fresh per-run state).
    let run_tools: Vec<Arc<dyn Tool>> =
        inner.memory.as_ref().map(|store| crate::memory::memory_tools(store.clone())).unwrap_or_default();
    let mut run = Run {
        inner,
        run_tools: &run_tools,
        system: &system,
        index_warning,
        events,
        options: &options,
        stats: start.stats,
        messages: start.messages,
        approvals: start.approvals,
        answers: start.answers,
        last_stop: start.last_stop,
        checkpoint: start.checkpoint,
        sent: 0,
        cancel: options.cancel.clone(),
        cap: start.cap,
        unrun: Vec::new(),
        context: None,
        repaired: false,
        output: None,
        limits: super::budget::Limits::of(inner, &options.budget),
    };
    // COST-1: priced from the usage so far, so a resumed run's cost covers its earlier calls too.
    run.count(crate::llm::Usage::default());
    let session = run.checkpoint.as_ref().map(|c| c.id.as_str());
    let provider = &inner.provider.capabilities().provider;
    let span = super::spans::run_span(&inner.name, provider, &inner.model, session, start.resumed);
    // OVR-5: a panic anywhere in the run becomes an internal-error outcome, not a crash of the host.
    let mut crashed = false;
    let end = match AssertUnwindSafe(run.converse(start.pending)).catch_unwind().instrument(span.clone()).await {
        Ok(end) => end,
        Err(_) => {
            crashed = true;
            ended(TerminalReason::Error, "internal error: the run crashed")
        }
    };
    let session_id = run.finish(&end).instrument(span.clone()).await;
    run.stats.latency = started.elapsed();
    super::spans::run_ended(&span, &run.stats, end.reason, end.error.as_ref());
    RunOutcome {
        reason: end.reason,
        answer: end.answer,
        error: end.error,
        stats: run.stats,
        session_id,
        messages: run.messages,
        internal_error: crashed,
        output: run.output.filter(|_| end.reason == TerminalReason::Completed),
    }
}

impl Run<'_> {
    fn emit(&self, event: RunEvent<'_>) {
        if let RunEvent::Warning(w) = &event {
            telemetry::warning(w, self.inner.trace_content);
        }
        self.events.emit(&event);
    }

    /// Append `payload` to the journal of a checkpointed run (SESS-14); a failure ends the run (SESS-33). Returns
    /// the payload so the caller keeps its data without a copy.
    async fn record(&mut self, payload: Payload) -> Result<Payload, Ended> {
        let Some(cp) = self.checkpoint.as_mut() else { return Ok(payload) };
        let record = JournalRecord::new(cp.seq + 1, payload);
        match cp.writer.append(&record).await {
            Ok(()) => {
                cp.seq = record.seq;
                Ok(record.payload)
            }
            Err(e) => {
                let error = Error::session(format!("cannot write session {}: {e}", cp.id));
                Err(Ended { reason: TerminalReason::Error, answer: None, error: Some(error) })
            }
        }
    }

    /// Record how the run ended and release the journal; failing that is only a warning (SESS-33).
    async fn finish(&mut self, end: &Ended) -> Option<SessionId> {
        let cp = self.checkpoint.take()?;
        let Checkpoint { id, mut writer, seq } = cp;
        let error = end.error.as_ref().map(ToString::to_string);
        let record = JournalRecord::new(seq + 1, Payload::Terminal(TerminalRecord::new(end.reason, error)));
        let mut failure = writer.append(&record).await.err();
        if let Err(e) = writer.close().await {
            failure.get_or_insert(e);
        }
        if let Some(e) = failure {
            let w = Warning::SessionEndUnrecorded { session: id.to_string(), reason: e.to_string() };
            self.emit(RunEvent::Warning(&w));
        }
        Some(id)
    }

    fn checkpointed(&self) -> bool {
        self.checkpoint.is_some()
    }

    /// SESS-20: a resumed session first completes its pending turn; only the calls without a recorded result run.
    /// The calls of a turn whose tools the live run would not have run (LOOP-6, LOOP-7) never run: they get an
    /// error result instead.
    async fn complete_pending(&mut self, mut pending: Pending) -> Option<Ended> {
        let unrunnable = self.last_stop.as_ref().filter(|s| !s.runs_tools()).map(|s| s.as_str().to_owned());
        let calls = std::mem::take(&mut pending.calls);
        let mut results = Vec::with_capacity(calls.len());
        for call in &calls {
            let (id, name, input) = (&call.id, &call.name, &call.input);
            if let Some(done) = pending.results.remove(id) {
                results.push(done);
                continue;
            }
            if let Some(stop) = &unrunnable {
                let text = format!("not run: the reply that asked for it ended with stop reason {stop}");
                match self.record_result(Block::tool_result(id, text, true), false).await {
                    Ok(b) => results.push(b),
                    Err(e) => return Some(e),
                }
                continue;
            }
            match self.dispatch(id, name, input).await {
                Dispatch::Result(block) => results.push(block),
                Dispatch::Abort => return Some(self.aborted(name)),
                Dispatch::Cancelled => return Some(self.cancelled()),
                Dispatch::Failed(e) => return Some(e),
            }
        }
        self.messages.push(Message { role: Role::User, content: results });
        // Recorded answers were for that turn's calls only; later turns may reuse ids.
        self.answers.clear();
        None
    }

    /// GATE-12: an interrupted approval prompt ends the run; a checkpointed one stays resumable and asks again.
    fn aborted(&self, name: &str) -> Ended {
        if self.checkpointed() {
            Ended { reason: TerminalReason::Suspended, answer: None, error: None }
        } else {
            ended(TerminalReason::Error, format!("the approval prompt for {name} was interrupted; nothing was run"))
        }
    }

    /// Journal a tool result and hand back its block.
    async fn record_result(&mut self, block: Block, remote: bool) -> Result<Block, Ended> {
        let Block::ToolResult { tool_use_id, content, is_error } = block else { return Ok(block) };
        if !self.checkpointed() {
            return Ok(Block::ToolResult { tool_use_id, content, is_error });
        }
        let payload = Payload::ToolResult(ToolResultRecord::new(tool_use_id, content, is_error, remote));
        match self.record(payload).await? {
            Payload::ToolResult(t) => Ok(Block::tool_result(t.tool_use_id, t.result.content, t.result.is_error)),
            _ => Err(ended(TerminalReason::Error, "internal error: the journal returned another record")),
        }
    }

    async fn drive(&mut self, pending: Option<Pending>) -> Ended {
        // OUT-7: each turn of a conversation gets its own repair; an earlier turn's answer is not this one's.
        self.repaired = false;
        self.output = None;
        // BUDGET-2 is cumulative across resumes: a session resumed with its budget spent runs nothing more.
        if self.stats.llm_calls > 0
            && let Some(end) = self.over_budget()
        {
            return end;
        }
        if let Some(pending) = pending
            && let Some(end) = self.complete_pending(pending).await
        {
            return end;
        }
        loop {
            if let Some(end) = self.before_turn() {
                return end;
            }
            let size = match self.compact_if_needed().await {
                Ok(size) => size,
                Err(end) => return end,
            };
            let stop = match self.model_turn(size).await {
                Ok(stop) => stop,
                Err(end) => return end,
            };
            let calls = match self.after_turn(stop) {
                Next::Calls(calls) => calls,
                Next::Repair(prompt) => match self.repair(prompt).await {
                    Ok(()) => continue,
                    Err(end) => return end,
                },
                Next::End(end) => return end,
            };
            // LOOP-8: a paused server-side turn continues with no new user message.
            if calls > 0
                && let Some(end) = self.run_calls().await
            {
                return end;
            }
        }
    }

    /// The build's warnings, then the run's start (LOOP-12 header).
    fn announce(&self) {
        let inner = self.inner;
        for w in inner.warnings.iter().chain(&self.index_warning) {
            self.emit(RunEvent::Warning(w));
        }
        self.emit(RunEvent::Started {
            model: &inner.model,
            tools: inner.tools.len(),
            gated: inner.tools.gated_count(),
            triggers: &inner.triggers,
            thinking: inner.config.llm.thinking.enabled,
            deferred: inner.plan.search() || inner.client_search,
        });
    }

    /// Add a call's tokens to the run's and price the total (COST-1): the cost stays unknown when the price is.
    fn count(&mut self, usage: crate::llm::Usage) {
        self.stats.usage += usage;
        self.stats.cost = self.inner.long.pricing.and_then(|p| p.cost(&self.stats.usage));
    }

    /// BUDGET-2/3, COST-4: the token budget or the money budget, once reached, ends the run.
    fn over_budget(&self) -> Option<Ended> {
        let limits = &self.limits;
        let max_tokens = limits.max_tokens;
        let calls = self.stats.llm_calls;
        if self.stats.usage.total() >= max_tokens {
            let key = if limits.narrowed_tokens { "the run's budget" } else { "llm.budget.max_tokens" };
            let why = format!("token budget of {max_tokens} ({key}) reached after {calls} model calls");
            return Some(ended(TerminalReason::Budget, why));
        }
        let max_cost = limits.max_cost?;
        let key = if limits.narrowed_cost { "the run's budget" } else { "llm.budget.max_cost" };
        // Resolved only with a complete price, so the cost is known; were it not, the budget fails closed.
        match self.stats.cost {
            Some(cost) if cost < max_cost => None,
            Some(cost) => Some(ended(
                TerminalReason::Budget,
                format!("cost budget of {max_cost} ({key}) reached after {calls} model calls: {cost} spent"),
            )),
            None => Some(ended(TerminalReason::Budget, format!("the run's cost can no longer be counted ({key})"))),
        }
    }

    /// Cancellation, a requested suspend (LOOP-3, SESS-24: at the boundary, never mid-step), and BUDGET-1.
    fn before_turn(&self) -> Option<Ended> {
        if self.cancel.is_cancelled() {
            return Some(self.cancelled());
        }
        if self.checkpointed() && self.options.suspend.is_cancelled() {
            return Some(Ended { reason: TerminalReason::Suspended, answer: None, error: None });
        }
        // WORK-6: the run's own call limit caps the whole run, follow-ups included.
        if let Some(limit) = self.limits.max_iterations.filter(|n| self.stats.llm_calls >= *n) {
            return Some(ended(
                TerminalReason::MaxIterations,
                format!("stopped after {limit} model calls (the run's budget) without a final answer"),
            ));
        }
        let max_iterations = max_iterations(self.inner);
        (self.stats.llm_calls >= self.cap).then(|| {
            ended(
                TerminalReason::MaxIterations,
                format!(
                    "stopped after {max_iterations} model calls (llm.budget.max_iterations) without a final answer"
                ),
            )
        })
    }

    /// One model call; its turn joins the conversation and the journal before any tool runs (LOOP-5).
    /// `size` is the conversation's content size when compaction has just measured it.
    async fn model_turn(&mut self, size: Option<usize>) -> Result<StopReason, Ended> {
        let inner = self.inner;
        let llm = &inner.config.llm;
        self.stats.llm_calls += 1;
        let iteration = self.stats.llm_calls;
        let (preview, size) = preview(&self.messages, size);
        self.emit(RunEvent::LlmRequest { iteration, messages: self.messages.len(), size, preview: &preview });
        let max_output = llm.budget.max_output_tokens().map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let mut request = Request::new(&inner.model, self.system, &self.messages, &inner.plan)
            .with_thinking(llm.thinking.enabled)
            .with_max_output_tokens(max_output)
            .with_cache(if llm.no_prompt_cache { CacheMode::Off } else { CacheMode::Default })
            .with_timeout(Some(llm.budget.call_timeout()))
            .with_output(self.options.output.as_ref());
        // CONV-5: deltas reach the host only when it listens.
        let relay = self.options.events.as_deref().map(|events| Relay { events, iteration });
        if let Some(relay) = &relay {
            request = request.with_deltas(relay);
        }
        let provider = &inner.provider.capabilities().provider;
        let span = crate::llm::spans::chat_span(provider, &inner.model, iteration, max_output);
        if inner.trace_content {
            let system = (self.sent == 0).then_some(self.system);
            let added = self.messages.get(self.sent..).unwrap_or_default();
            span.in_scope(|| crate::llm::spans::content_input(system, added));
        }
        let response = match call_model(inner, &self.cancel, &request, &span).await {
            Ok(response) => response,
            Err(_) if self.cancel.is_cancelled() => return Err(self.cancelled()),
            Err(end) => return Err(end),
        };
        self.count(response.usage);
        self.emit(RunEvent::LlmResponse { iteration, stop_reason: &response.stop_reason, usage: response.usage });
        for block in &response.content {
            if let Block::Thinking { text, .. } = block
                && !text.is_empty()
            {
                self.emit(RunEvent::Thinking { text });
            }
        }
        let stop = response.stop_reason.clone();
        self.last_stop = Some(stop.clone());
        // A provider contract violation: refused before the turn joins the conversation or the journal.
        if let Some(id) = duplicate_call_id(&response.content) {
            let why = format!("the model returned two tool calls with the same id {id:?}; none was run");
            return Err(ended(TerminalReason::Error, why));
        }
        let message = Message::assistant(response.content);
        let message = if self.checkpointed() {
            let turn = AssistantRecord::new(iteration, message, stop.clone(), response.usage);
            match self.record(Payload::Assistant(turn)).await? {
                Payload::Assistant(turn) => turn.message,
                _ => return Err(ended(TerminalReason::Error, "internal error: the journal returned another record")),
            }
        } else {
            message
        };
        self.messages.push(message);
        self.sent = self.messages.len();
        if self.inner.long.compaction.is_some() {
            self.context = Some(compact::Context::after_turn(&response.usage, size, self.messages.last()));
        }
        Ok(stop)
    }

    /// What the turn's stop reason means (LOOP-6..8, BUDGET-3): the run's end, or how many calls to run.
    fn after_turn(&mut self, stop: StopReason) -> Next {
        let (text, calls) = self.messages.last().map(|m| (m.text(), m.tool_uses().count())).unwrap_or_default();
        let error = match stop {
            // LOOP-6: a truncated turn is shown, and none of its tool calls run.
            StopReason::MaxTokens => Some("the reply was truncated at the output limit (llm.budget.max_output_tokens)"),
            // LOOP-7: whatever the model said is still delivered; the reason is an error.
            StopReason::Refusal => Some("model refused to respond"),
            StopReason::ContextWindowExceeded => {
                return Next::End(ended(
                    TerminalReason::Error,
                    "the conversation no longer fits the model's context window",
                ));
            }
            _ => None,
        };
        if let Some(error) = error {
            if !text.is_empty() {
                self.emit(RunEvent::Assistant { text: &text, terminal: true });
            }
            let answer = (!text.is_empty()).then_some(text);
            return Next::End(Ended { reason: TerminalReason::Error, answer, error: Some(Error::run(error)) });
        }
        if calls == 0
            && stop != StopReason::PauseTurn
            && let Some(schema) = &self.options.output
        {
            return self.structured(schema);
        }
        if calls == 0 && stop != StopReason::PauseTurn {
            // LOOP-7: the final answer.
            self.emit(RunEvent::Assistant { text: &text, terminal: true });
            return Next::End(Ended { reason: TerminalReason::Completed, answer: Some(text), error: None });
        }
        if !text.is_empty() {
            self.emit(RunEvent::Assistant { text: &text, terminal: false });
        }
        // BUDGET-3: checked after every non-terminal turn (a paused one too), before its tools run.
        self.over_budget().map_or(Next::Calls(calls), Next::End)
    }

    /// LOOP-9: the last turn's calls one at a time, in order; one user message with every result.
    async fn run_calls(&mut self) -> Option<Ended> {
        let calls: Vec<(String, String, ToolInput)> = self
            .messages
            .last()
            .map(|m| m.tool_uses().map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone())).collect())
            .unwrap_or_default();
        let mut results = Vec::with_capacity(calls.len());
        for (id, name, input) in &calls {
            match self.dispatch(id, name, input).await {
                Dispatch::Result(block) => results.push(block),
                Dispatch::Abort => return Some(self.aborted(name)),
                Dispatch::Cancelled => {
                    // A conversation goes on after a cancelled turn: the results it got are kept (CONV-1).
                    self.unrun = results;
                    return Some(self.cancelled());
                }
                Dispatch::Failed(end) => return Some(end),
            }
        }
        self.messages.push(Message { role: Role::User, content: results });
        None
    }
}

/// The provider call of one turn in its `chat` span `span` (with the reply's content event when the host opted in).
/// Borrows no `Run`: the run's future stays `Send` with a journal writer that is not `Sync`.
async fn call_model(
    inner: &Inner,
    cancel: &CancellationToken,
    request: &Request<'_>,
    span: &Span,
) -> Result<Response, Ended> {
    let reply = tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            let why = "the run was cancelled";
            crate::llm::spans::chat_failed(span, &ProviderError::new(ProviderErrorKind::Cancelled, why));
            return Err(ended(TerminalReason::Error, why));
        }
        reply = inner.provider.call(request).instrument(span.clone()) => reply,
    };
    match reply {
        Ok(response) => {
            crate::llm::spans::chat_answered(span, &response);
            if inner.trace_content {
                span.in_scope(|| crate::llm::spans::content_output(&response.content));
            }
            Ok(response)
        }
        Err(e) => {
            crate::llm::spans::chat_failed(span, &e);
            let error = Error::provider(format!("model call failed: {e}"));
            Err(Ended { reason: TerminalReason::Error, answer: None, error: Some(error) })
        }
    }
}
