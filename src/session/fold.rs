//! Folding a journal back into a conversation (SESS-13).

use super::record::{
    AssistantRecord, CompactionRecord, ConfirmChoice, ConfirmRecord, JOURNAL_VERSION, JournalRecord, Meta, Payload,
    TerminalRecord, ToolResultRecord,
};
use crate::error::{Error, Result};
use crate::llm::{Block, Message, Role, StopReason, Usage};
use crate::tool::ToolInput;
use std::collections::HashMap;

/// A session rebuilt from its records: the conversation, the counters, the held confirmation answers, the pending
/// tool calls and how the last run ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Journal {
    /// The meta record.
    pub meta: Meta,
    /// The conversation: the prompt, then each assistant turn followed by one user message of its results. A
    /// pending turn's partial results are in [`Journal::pending`], not here.
    pub messages: Vec<Message>,
    /// Model calls recorded.
    pub llm_calls: u32,
    /// Tool results recorded.
    pub tool_calls: u32,
    /// Of those, imported tools' results.
    pub remote_tool_calls: u32,
    /// Tokens over every recorded call, summarising calls included.
    pub usage: Usage,
    /// Compactions recorded (COMP-4).
    pub compactions: u32,
    /// The next iteration index (1-based).
    pub next_iteration: u32,
    /// The last turn's stop reason.
    pub last_stop: Option<StopReason>,
    /// Tools allowed for the rest of the conversation, in the order they were allowed (GATE-11, GATE-14).
    pub allowed: Vec<String>,
    /// Calls allowed with exactly their arguments for the rest of the conversation: (tool, input digest), in the
    /// order they were allowed (EXACT-4).
    pub allowed_exact: Vec<(String, String)>,
    /// The per-call answers recorded for the last turn's calls, by tool-use id (GATE-14).
    pub answers: HashMap<String, RecordedAnswer>,
    /// The unanswered tool calls of the last turn, when there are any (SESS-13).
    pub pending: Option<Pending>,
    /// How the last run ended, when it recorded its end and nothing followed. A journal that stops right after a
    /// final reply (no tool use, not paused) has ended even if its terminal record was lost: it folds as ended, with
    /// the reason the reply implies.
    pub terminal: Option<TerminalRecord>,
    /// The last record's sequence number.
    pub last_seq: u64,
    /// The session this one continues after a reset (CONV-6).
    pub previous: Option<String>,
    /// The session the conversation went on in after this one was reset (CONV-6).
    pub next: Option<String>,
}

/// A recorded operator answer to one call (SESS-9).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedAnswer {
    /// What the operator chose.
    pub choice: ConfirmChoice,
    /// The tool the call was for, when recorded.
    pub tool: Option<String>,
}

/// One tool call of an assistant turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PendingCall {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The input as the model wrote it.
    pub input: ToolInput,
}

/// The last assistant turn's tool calls that have no recorded result yet.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Pending {
    /// Every call of the turn, in order.
    pub calls: Vec<PendingCall>,
    /// The results already recorded, by call id.
    pub results: HashMap<String, Block>,
}

impl Pending {
    /// The calls without a recorded result, in order.
    pub fn unanswered(&self) -> impl Iterator<Item = &PendingCall> {
        self.calls.iter().filter(|c| !self.results.contains_key(&c.id))
    }
}

impl Journal {
    /// Fold `records` (SESS-13). Rejects, naming the record: a first record that is not meta, a version other than
    /// 4, a second meta, a sequence that does not increase by exactly 1, a tool result before any assistant turn or
    /// for a call the turn did not make.
    ///
    /// # Errors
    ///
    /// A session error naming the record: a first record that is not meta, a version other than 4, a second meta, a
    /// sequence that does not increase by exactly 1, a tool result before any assistant turn or for a call the turn did
    /// not make.
    pub fn fold(records: impl IntoIterator<Item = JournalRecord>) -> Result<Journal> {
        let mut records = records.into_iter();
        let first = records.next().ok_or_else(|| Error::session("the journal is empty"))?;
        let meta = match first.payload {
            Payload::Meta(meta) if first.seq == 1 => meta,
            Payload::Meta(_) => return Err(corrupt(format!("the meta record has seq {}, not 1", first.seq))),
            other => return Err(corrupt(format!("the first record is {}, not meta", other.key()))),
        };
        if meta.version != JOURNAL_VERSION {
            return Err(Error::session(format!(
                "unsupported journal version {} (this build reads version {JOURNAL_VERSION})",
                meta.version
            )));
        }
        let mut j = Journal::start(meta);
        // The latest assistant turn's calls and the results recorded for them so far.
        let mut open: Option<Pending> = None;
        // The stop reason of a final reply (no tool use, not paused) that nothing but answers has followed yet.
        let mut final_reply: Option<Option<StopReason>> = None;
        for r in records {
            if r.seq != j.last_seq.saturating_add(1) {
                return Err(corrupt(format!("record seq {} follows seq {}", r.seq, j.last_seq)));
            }
            j.last_seq = r.seq;
            if !matches!(r.payload, Payload::Terminal(_)) {
                j.terminal = None;
            }
            if matches!(
                r.payload,
                Payload::Assistant(_) | Payload::User(_) | Payload::ToolResult(_) | Payload::Compaction(_)
            ) {
                final_reply = None;
            }
            match r.payload {
                Payload::Meta(_) => return Err(corrupt(format!("a second meta record at seq {}", r.seq))),
                Payload::Assistant(a) => {
                    j.close(open.take());
                    // Per-call answers concern the turn they were given in; a new turn holds none (ids may repeat).
                    j.answers.clear();
                    let stop = a.stop_reason.clone();
                    open = j.assistant(r.seq, a)?;
                    if open.is_none() && stop != Some(StopReason::PauseTurn) {
                        final_reply = Some(stop);
                    }
                }
                Payload::ToolResult(t) => j.tool_result(r.seq, t, open.as_mut())?,
                Payload::Confirm(c) => j.confirm(c),
                Payload::User(u) => {
                    j.close(open.take());
                    j.messages.push(u.message);
                }
                Payload::Terminal(t) => j.terminal = Some(t),
                Payload::Compaction(c) => {
                    j.close(open.take());
                    j.compact(r.seq, c)?;
                }
                Payload::Reset(link) => {
                    j.previous = link.previous.or(j.previous.take());
                    j.next = link.next.or(j.next.take());
                }
            }
        }
        match open {
            Some(p) if p.results.len() < p.calls.len() => j.pending = Some(p),
            other => j.close(other),
        }
        if j.terminal.is_none()
            && let Some(stop) = final_reply
        {
            // LOOP-6/7: the reply ended the run; only its terminal record is missing.
            let reason = match stop {
                Some(stop) if !stop.runs_tools() => crate::session::TerminalReason::Error,
                _ => crate::session::TerminalReason::Completed,
            };
            j.terminal = Some(TerminalRecord::new(reason, None));
        }
        Ok(j)
    }

    /// The journal of a session that has only its meta record.
    fn start(meta: Meta) -> Self {
        Journal {
            messages: vec![Message::user(meta.prompt.clone())],
            meta,
            llm_calls: 0,
            tool_calls: 0,
            remote_tool_calls: 0,
            usage: Usage::default(),
            compactions: 0,
            next_iteration: 1,
            last_stop: None,
            allowed: Vec::new(),
            allowed_exact: Vec::new(),
            answers: HashMap::new(),
            pending: None,
            terminal: None,
            last_seq: 1,
            previous: None,
            next: None,
        }
    }

    /// GATE-13/14: an operator's recorded answer, or a reset of every allowance.
    fn confirm(&mut self, c: ConfirmRecord) {
        match c.choice {
            ConfirmChoice::Reset => {
                self.allowed.clear();
                self.allowed_exact.clear();
                self.answers.clear();
            }
            choice => {
                if choice == ConfirmChoice::AlwaysExact
                    && let (Some(tool), Some(digest)) = (&c.tool, &c.input_digest)
                {
                    let key = (tool.clone(), digest.clone());
                    if !self.allowed_exact.contains(&key) {
                        self.allowed_exact.push(key);
                    }
                }
                if choice == ConfirmChoice::Always
                    && let Some(tool) = &c.tool
                    && !self.allowed.contains(tool)
                {
                    self.allowed.push(tool.clone());
                }
                if let Some(id) = c.tool_use_id {
                    self.answers.insert(id, RecordedAnswer { choice, tool: c.tool });
                }
            }
        }
    }

    /// Whether the last run completed (SESS-17).
    pub fn is_completed(&self) -> bool {
        self.terminal.as_ref().is_some_and(|t| t.reason == crate::session::TerminalReason::Completed)
    }

    /// Whether the session was interactive (SESS-23).
    pub fn is_interactive(&self) -> bool {
        self.meta.interactive == Some(true)
    }

    /// The status `session ls` shows: the terminal reason, or `open` (CLI-20).
    pub fn status(&self) -> &str {
        self.terminal.as_ref().map_or("open", |t| t.reason.as_str())
    }

    fn assistant(&mut self, seq: u64, a: AssistantRecord) -> Result<Option<Pending>> {
        self.llm_calls = self.llm_calls.saturating_add(1);
        self.usage += a.usage();
        self.next_iteration = a.iteration.max(self.llm_calls).saturating_add(1);
        self.last_stop = a.stop_reason;
        let mut calls: Vec<PendingCall> = Vec::new();
        for (id, name, input) in a.message.tool_uses() {
            // Results are matched to calls by id: two calls sharing one could never both be answered.
            if calls.iter().any(|c| c.id == id) {
                return Err(corrupt(format!("the turn at seq {seq} has two tool calls with id {id:?}")));
            }
            calls.push(PendingCall { id: id.to_owned(), name: name.to_owned(), input: input.clone() });
        }
        self.messages.push(a.message);
        Ok((!calls.is_empty()).then(|| Pending { calls, results: HashMap::new() }))
    }

    fn tool_result(&mut self, seq: u64, t: ToolResultRecord, open: Option<&mut Pending>) -> Result<()> {
        let Some(open) = open else {
            return Err(corrupt(format!("tool result {:?} at seq {seq} answers no assistant turn", t.tool_use_id)));
        };
        if !open.calls.iter().any(|c| c.id == t.tool_use_id) {
            return Err(corrupt(format!("tool result at seq {seq} answers an unknown call {:?}", t.tool_use_id)));
        }
        if t.result.tool_use_id != t.tool_use_id {
            return Err(corrupt(format!(
                "tool result at seq {seq} is for {:?} but its result block says {:?}",
                t.tool_use_id, t.result.tool_use_id
            )));
        }
        if open.results.contains_key(&t.tool_use_id) {
            return Err(corrupt(format!("a second result for call {:?} at seq {seq}", t.tool_use_id)));
        }
        self.tool_calls = self.tool_calls.saturating_add(1);
        if t.remote {
            self.remote_tool_calls = self.remote_tool_calls.saturating_add(1);
        }
        let r = t.result;
        open.results.insert(t.tool_use_id, Block::tool_result(r.tool_use_id, r.content, r.is_error));
        Ok(())
    }

    /// COMP-4: the summary takes the place of the messages it replaced, as the live run did; a failed summary only
    /// counts its tokens. A record that could not have come from a live run (a cut that parts results from their
    /// call, a summary that is not a plain user message) is refused: the provider would refuse the conversation.
    fn compact(&mut self, seq: u64, c: CompactionRecord) -> Result<()> {
        let replaced = usize::try_from(c.replaced).unwrap_or(usize::MAX);
        let bad = |why: String| corrupt(format!("compaction record {seq} {why}"));
        match c.message {
            None if replaced == 0 => {}
            None => return Err(bad(format!("replaces {replaced} messages with nothing"))),
            Some(message) => {
                if replaced == 0 || replaced > self.messages.len() {
                    return Err(bad(format!("replaces {replaced} of {} messages", self.messages.len())));
                }
                if self.messages.get(replaced).is_some_and(|m| m.role != Role::Assistant) {
                    return Err(bad("cuts the conversation before a message that is not a model turn".to_owned()));
                }
                let plain = message.role == Role::User
                    && !message.content.iter().any(|b| matches!(b, Block::ToolUse { .. } | Block::ToolResult { .. }));
                if !plain {
                    return Err(bad("holds a summary that is not a plain user message".to_owned()));
                }
                self.messages.splice(..replaced, [message]);
                self.compactions = self.compactions.saturating_add(1);
            }
        }
        self.usage += c.usage;
        Ok(())
    }

    /// The results of a finished turn become one user message, in call order (LOOP-9).
    fn close(&mut self, open: Option<Pending>) {
        if let Some(mut p) = open {
            let content: Vec<Block> = p.calls.iter().filter_map(|c| p.results.remove(&c.id)).collect();
            if !content.is_empty() {
                self.messages.push(Message { role: Role::User, content });
            }
        }
    }
}

fn corrupt(what: String) -> Error {
    Error::session(format!("the journal is corrupt: {what}"))
}
