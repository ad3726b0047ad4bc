//! Journal records (SESS-5..12): `{"seq": n, "protocol": "<id>", "<payload key>": {...}}`, one per line.
//!
//! Field order is fixed by the structs below, so a record serializes to the same bytes every time (a JetStream
//! backend stores the very same bytes as the file backend, SESS-32).

use super::fingerprint::Fingerprint;
use crate::error::{Error, Result};
use crate::llm::{Message, StopReason, Usage};
use crate::session::TerminalReason;
use serde::{Deserialize, Serialize};

/// The journal payload version this build writes and reads (SESS-6).
pub const JOURNAL_VERSION: u32 = 4;

const PREFIX: &str = "io.choria.fisk-ai.v1.session.";

/// One journal record: its sequence number and payload.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JournalRecord {
    /// 1 for the meta record, then increasing by exactly 1 (SESS-5).
    pub seq: u64,
    /// What it records.
    pub payload: Payload,
}

/// What a record holds; the protocol id and payload key follow from the variant.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Payload {
    /// `session.meta`, always seq 1 (SESS-6).
    Meta(Meta),
    /// `session.assistant`: one model turn, written before its tools run (SESS-7).
    Assistant(AssistantRecord),
    /// `session.tool_result`: one tool result, written as the tool completes (SESS-8).
    ToolResult(ToolResultRecord),
    /// `session.confirm`: an operator's answer, or a reset of all answers (SESS-9).
    Confirm(ConfirmRecord),
    /// `session.user`: a follow-up user message of an interactive session (SESS-10).
    User(UserRecord),
    /// `session.terminal`: how the run ended (SESS-11).
    Terminal(TerminalRecord),
    /// `session.reset`: the conversation was reset here and continues in another session (CONV-6). The reference
    /// has no such record: it is this crate's own, and the reference's reader refuses a journal holding one.
    Reset(ResetRecord),
    /// `session.compaction`: older messages were replaced by a summary (COMP-4). Like `reset`, this crate's own.
    Compaction(CompactionRecord),
}

impl Payload {
    /// The payload key, also the last part of the protocol id.
    pub fn key(&self) -> &'static str {
        match self {
            Payload::Meta(_) => "meta",
            Payload::Assistant(_) => "assistant",
            Payload::ToolResult(_) => "tool_result",
            Payload::Confirm(_) => "confirm",
            Payload::User(_) => "user",
            Payload::Terminal(_) => "terminal",
            Payload::Reset(_) => "reset",
            Payload::Compaction(_) => "compaction",
        }
    }
}

/// The meta record (SESS-6). Holds no secrets and never the system prompt itself (only its hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Meta {
    /// Payload version: [`JOURNAL_VERSION`].
    pub version: u32,
    /// The session id.
    pub run_id: String,
    /// When the session was created, RFC 3339.
    pub created: String,
    /// The configuration the session was started with (SESS-16).
    pub fingerprint: Fingerprint,
    /// The initial prompt.
    #[serde(default)]
    pub prompt: String,
    /// True for a chat session; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive: Option<bool>,
}

impl Meta {
    /// The same record for a chat session (SESS-23).
    #[must_use]
    pub fn interactive(mut self) -> Self {
        self.interactive = Some(true);
        self
    }

    /// A version-4 meta record of a one-shot session created now.
    pub fn new(run_id: impl Into<String>, fingerprint: Fingerprint, prompt: impl Into<String>) -> Self {
        Meta {
            version: JOURNAL_VERSION,
            run_id: run_id.into(),
            created: crate::time::rfc3339(std::time::SystemTime::now()),
            fingerprint,
            prompt: prompt.into(),
            interactive: None,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One model turn (SESS-7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AssistantRecord {
    /// 1-based iteration of the run (cumulative across resumes).
    pub iteration: u32,
    /// The turn, provider blocks byte for byte (SESS-12).
    pub message: Message,
    /// Why the model stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Uncached input tokens.
    pub in_tokens: u64,
    /// Output tokens.
    pub out_tokens: u64,
    /// Cache-read input tokens; omitted when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Cache-creation input tokens; omitted when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_create_tokens: u64,
}

impl AssistantRecord {
    /// A record of `message`, produced at `iteration` with `usage`.
    pub fn new(iteration: u32, message: Message, stop_reason: StopReason, usage: Usage) -> Self {
        AssistantRecord {
            iteration,
            message,
            stop_reason: Some(stop_reason),
            in_tokens: usage.input_tokens,
            out_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_create_tokens: usage.cache_creation_tokens,
        }
    }

    /// The turn's token counts.
    pub fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.in_tokens,
            output_tokens: self.out_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_creation_tokens: self.cache_create_tokens,
        }
    }
}

/// A tool result block in the journal: `{tool_use_id, content, is_error}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResultBlock {
    /// The call it answers.
    pub tool_use_id: String,
    /// The result text.
    pub content: String,
    /// Whether it is an error result.
    #[serde(default)]
    pub is_error: bool,
}

/// One tool result (SESS-8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResultRecord {
    /// The call it answers.
    pub tool_use_id: String,
    /// The result.
    pub result: ResultBlock,
    /// True for an imported tool's call; absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remote: bool,
}

impl ToolResultRecord {
    /// The result of call `tool_use_id`.
    pub fn new(tool_use_id: impl Into<String>, content: impl Into<String>, is_error: bool, remote: bool) -> Self {
        let tool_use_id = tool_use_id.into();
        ToolResultRecord {
            result: ResultBlock { tool_use_id: tool_use_id.clone(), content: content.into(), is_error },
            tool_use_id,
            remote,
        }
    }
}

/// An operator's answer to a confirmation (SESS-9, GATE-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConfirmChoice {
    /// Run this call once.
    Once,
    /// Run it, and allow the tool for the rest of the conversation.
    Always,
    /// Run it, and allow the tool with exactly these arguments ([`ConfirmRecord::input_digest`]) for the rest of
    /// the conversation (EXACT-1, EXACT-4).
    AlwaysExact,
    /// Do not run it.
    Decline,
    /// Forget every earlier answer (a forced resume across drift, GATE-15).
    Reset,
}

/// A confirmation record (SESS-9). A `reset` carries only the choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConfirmRecord {
    /// The answer.
    pub choice: ConfirmChoice,
    /// The call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The tool's final name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The command shown to the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The tag that triggered the confirmation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// For [`ConfirmChoice::AlwaysExact`]: the [`call_digest`](crate::gate::call_digest) of the allowed input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_digest: Option<String>,
}

impl ConfirmRecord {
    /// An answer to call `tool_use_id` of `tool`.
    pub fn answer(choice: ConfirmChoice, tool_use_id: &str, tool: &str, command: &str, tag: &str) -> Self {
        ConfirmRecord {
            choice,
            tool_use_id: Some(tool_use_id.to_owned()),
            tool: Some(tool.to_owned()),
            command: Some(command.to_owned()),
            tag: Some(tag.to_owned()),
            input_digest: None,
        }
    }

    /// The digest of the input an [`AlwaysExact`](ConfirmChoice::AlwaysExact) answer allows.
    #[must_use]
    pub fn with_input_digest(mut self, digest: impl Into<String>) -> Self {
        self.input_digest = Some(digest.into());
        self
    }

    /// A reset of all answers.
    pub fn reset() -> Self {
        ConfirmRecord {
            choice: ConfirmChoice::Reset,
            tool_use_id: None,
            tool: None,
            command: None,
            tag: None,
            input_digest: None,
        }
    }
}

/// A follow-up user message of an interactive session (SESS-10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UserRecord {
    /// The message.
    pub message: Message,
}

impl UserRecord {
    /// A follow-up user message.
    pub fn new(message: Message) -> Self {
        UserRecord { message }
    }
}

/// The link between the two sessions of a rotation (CONV-6): the session that was reset names the one that goes
/// on (`next`, written before its `suspended` terminal record); the new session names the one it came from
/// (`previous`, right after its meta record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResetRecord {
    /// The session this one continues after a reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The session the conversation continues in after this one's reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl ResetRecord {
    /// The record ending a session that was reset: the conversation goes on in `next`.
    pub fn continued_in(next: impl Into<String>) -> Self {
        ResetRecord { previous: None, next: Some(next.into()) }
    }

    /// The record starting a session after a reset of `previous`.
    pub fn continues(previous: impl Into<String>) -> Self {
        ResetRecord { previous: Some(previous.into()), next: None }
    }
}

/// A compaction (COMP-4): the first `replaced` messages of the conversation gave way to `message`, a user message
/// holding the summary (and the latest user prompt, when it was among them). Folding it reproduces the compacted
/// conversation without another model call. A summarising call that failed (COMP-7) is recorded too, with no message
/// and nothing replaced, so its tokens still count on resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompactionRecord {
    /// How many messages, from the start of the conversation, the summary replaced; 0 when it failed.
    pub replaced: u64,
    /// The message that replaced them; absent when the summary failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// The summarising call's tokens.
    pub usage: Usage,
    /// The estimated request size before, in tokens.
    #[serde(default)]
    pub tokens_before: u64,
    /// The estimated request size after, in tokens.
    #[serde(default)]
    pub tokens_after: u64,
}

impl CompactionRecord {
    /// A record of `replaced` messages giving way to `message`.
    pub fn new(replaced: u64, message: Message, usage: Usage, (tokens_before, tokens_after): (u64, u64)) -> Self {
        CompactionRecord { replaced, message: Some(message), usage, tokens_before, tokens_after }
    }

    /// A summarising call that failed: its tokens, nothing replaced.
    pub fn spent(usage: Usage) -> Self {
        CompactionRecord { replaced: 0, message: None, usage, tokens_before: 0, tokens_after: 0 }
    }
}

/// How a run ended (SESS-11).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TerminalRecord {
    /// The reason (BUDGET-5).
    #[serde(with = "reason")]
    pub reason: TerminalReason,
    /// The error text, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl TerminalRecord {
    /// A terminal record.
    pub fn new(reason: TerminalReason, message: Option<String>) -> Self {
        TerminalRecord { reason, message }
    }
}

mod reason {
    use crate::session::TerminalReason;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(r: &TerminalReason, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(r.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<TerminalReason, D::Error> {
        let s = String::deserialize(d)?;
        TerminalReason::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown terminal reason {s:?}")))
    }
}

/// The wire form read back: the envelope plus any payload keys.
#[derive(Deserialize)]
struct WireIn {
    seq: u64,
    protocol: String,
    #[serde(default)]
    meta: Option<Meta>,
    #[serde(default)]
    assistant: Option<AssistantRecord>,
    #[serde(default)]
    tool_result: Option<ToolResultRecord>,
    #[serde(default)]
    confirm: Option<ConfirmRecord>,
    #[serde(default)]
    user: Option<UserRecord>,
    #[serde(default)]
    terminal: Option<TerminalRecord>,
    #[serde(default)]
    reset: Option<ResetRecord>,
    #[serde(default)]
    compaction: Option<CompactionRecord>,
}

/// The wire form written: the envelope then the one payload key, borrowed (no copy of the payload).
#[derive(Serialize)]
struct WireOut<'a, T: Serialize> {
    seq: u64,
    protocol: &'a str,
    #[serde(flatten)]
    payload: Keyed<'a, T>,
}

struct Keyed<'a, T>(&'static str, &'a T);

impl<T: Serialize> Serialize for Keyed<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.0, self.1)?;
        map.end()
    }
}

impl JournalRecord {
    /// A record.
    pub fn new(seq: u64, payload: Payload) -> Self {
        JournalRecord { seq, payload }
    }

    /// The protocol id, e.g. `io.choria.fisk-ai.v1.session.meta`.
    pub fn protocol(&self) -> &'static str {
        match self.payload {
            Payload::Meta(_) => "io.choria.fisk-ai.v1.session.meta",
            Payload::Assistant(_) => "io.choria.fisk-ai.v1.session.assistant",
            Payload::ToolResult(_) => "io.choria.fisk-ai.v1.session.tool_result",
            Payload::Confirm(_) => "io.choria.fisk-ai.v1.session.confirm",
            Payload::User(_) => "io.choria.fisk-ai.v1.session.user",
            Payload::Terminal(_) => "io.choria.fisk-ai.v1.session.terminal",
            Payload::Reset(_) => "io.choria.fisk-ai.v1.session.reset",
            Payload::Compaction(_) => "io.choria.fisk-ai.v1.session.compaction",
        }
    }

    /// The record as one JSON line, without the newline.
    pub fn to_json(&self) -> Vec<u8> {
        fn out<T: Serialize>(seq: u64, protocol: &str, key: &'static str, payload: &T) -> Vec<u8> {
            // Serializing plain data to a Vec cannot fail.
            serde_json::to_vec(&WireOut { seq, protocol, payload: Keyed(key, payload) }).unwrap_or_default()
        }
        let protocol = self.protocol();
        let key = self.payload.key();
        match &self.payload {
            Payload::Meta(m) => out(self.seq, protocol, key, m),
            Payload::Assistant(a) => out(self.seq, protocol, key, a),
            Payload::ToolResult(t) => out(self.seq, protocol, key, t),
            Payload::Confirm(c) => out(self.seq, protocol, key, c),
            Payload::User(u) => out(self.seq, protocol, key, u),
            Payload::Terminal(t) => out(self.seq, protocol, key, t),
            Payload::Reset(r) => out(self.seq, protocol, key, r),
            Payload::Compaction(c) => out(self.seq, protocol, key, c),
        }
    }

    /// Parse one JSON line. The error says what is wrong: bad JSON, an unknown protocol (SESS-13: unsupported), or
    /// a payload missing for its protocol.
    ///
    /// # Errors
    ///
    /// A session error for bad JSON, an unknown or unsupported protocol (SESS-13), or a payload missing for its
    /// protocol.
    pub fn from_json(line: &[u8]) -> Result<Self> {
        let w: WireIn =
            serde_json::from_slice(line).map_err(|e| Error::session(format!("not a journal record: {e}")))?;
        let Some(kind) = w.protocol.strip_prefix(PREFIX) else {
            return Err(Error::session(format!("unsupported record protocol {:?}", w.protocol)));
        };
        let missing = || Error::session(format!("record {} ({}) has no {kind} payload", w.seq, w.protocol));
        let payload = match kind {
            "meta" => Payload::Meta(w.meta.ok_or_else(missing)?),
            "assistant" => Payload::Assistant(w.assistant.ok_or_else(missing)?),
            "tool_result" => Payload::ToolResult(w.tool_result.ok_or_else(missing)?),
            "confirm" => Payload::Confirm(w.confirm.ok_or_else(missing)?),
            "user" => Payload::User(w.user.ok_or_else(missing)?),
            "terminal" => Payload::Terminal(w.terminal.ok_or_else(missing)?),
            "reset" => Payload::Reset(w.reset.ok_or_else(missing)?),
            "compaction" => Payload::Compaction(w.compaction.ok_or_else(missing)?),
            _ => return Err(Error::session(format!("unsupported record protocol {:?}", w.protocol))),
        };
        Ok(JournalRecord { seq: w.seq, payload })
    }
}
