//! The audit record (AUD-2): one decision point of one call, and the hash chain that links records (AUD-3).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `prev` of a trail's first record: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The record format's version, `v` in every record.
pub const RECORD_VERSION: u32 = 1;

/// The JSON Schema (draft 2020-12) of one record, as published in `docs/audit-record.schema.json`.
pub const RECORD_SCHEMA: &str = include_str!("../../docs/audit-record.schema.json");

/// Which decision point a record is (AUD-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A call arrived: the tool name as asked, the input's digest.
    Requested,
    /// Refused before anyone was asked: unknown tool, invalid input, or a trail that could not be written.
    Refused,
    /// The input passed the required check and the schema.
    Validated,
    /// A policy hook answered (`verdict`; a rewrite's new `input_digest`).
    Policy,
    /// The call needs approval (`trigger`, the `command` to approve).
    Gated,
    /// Approved, by `answer`.
    Approved,
    /// Declined, by `answer`, with the `reason` the caller reads.
    Declined,
    /// Ended at the gate by the surface (an interrupted prompt, an MCP approval round trip).
    Halted,
    /// About to run: the resolved `argv` and `command`. Durable before the process starts (AUD-6).
    Run,
    /// Cancelled: before it ran, or while running (then with what it produced).
    Cancelled,
    /// Stopped by its deadline.
    TimedOut,
    /// Ran to the end: `exit_code`, `bytes`, `truncated`, `is_error`.
    Finished,
    /// A policy hook replaced the result after the call.
    Redacted,
}

/// How a gated call was answered (AUD-1): what an `approved` or `declined` record names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Answer {
    /// An operator approved this one call.
    Once,
    /// An operator approved the tool for the rest of the conversation.
    Conversation,
    /// An operator approved these exact arguments for the rest of the conversation.
    Exact,
    /// An earlier "for the conversation" answer covered it.
    Allowance,
    /// An earlier "these exact arguments" answer covered it.
    AllowanceExact,
    /// A journaled answer, replayed on resume.
    Recorded,
    /// The client's user accepted (MCP elicitation or a task's input request).
    Accepted,
    /// The surface runs gated calls without asking, as its operator configured.
    Ungated,
    /// An operator, or the client's user, said no.
    Declined,
    /// Nobody could be asked.
    NoHuman,
    /// Nobody answered in time.
    TimedOut,
    /// Cancelled while waiting for the answer.
    Cancelled,
    /// The question could not be asked or its answer could not be read.
    Failed,
    /// A policy hook denied it.
    Policy,
}

/// One record before it is chained: what happened, to which call, for whom. Sinks chain it ([`Chain::seal`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Entry {
    /// When, RFC 3339 UTC with milliseconds.
    pub time: String,
    /// The decision point.
    pub event: Event,
    /// The identity of the agent or server that wrote it (`identity`).
    pub agent: String,
    /// `agent`, `mcp`, `a2a` or `other`.
    pub surface: String,
    /// One id for every record of one call.
    pub call: String,
    /// The tool, as the caller named it.
    pub tool: String,
    /// Who called: an OAuth subject, a peer's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The OAuth client the caller used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The session: an agent session's name, an MCP session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The request: the model's tool-use id, the JSON-RPC id, the a2a request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// SHA-256 (hex) of the input text exactly as received; on a `policy` rewrite, of the rewritten input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_digest: Option<String>,
    /// The input text itself, only with `include_input: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The program a command ran (`run`), as the application path names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The resolved argument vector of a command (`run`), without the binary (see `program`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The line an operator approves or saw run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The tag that gates the call, or `policy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// How a gated call was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    /// A policy hook's verdict: `allow`, `deny`, `ask` or `rewrite`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Why it was refused, declined or denied, as the caller reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A command's exit status (`-1`: ended by a signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The size of the result the caller reads, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Whether a command's output was cut to its head and tail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Whether the result is an error result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}

impl Entry {
    /// A record of `event` for `tool` on `surface`, now; the rest unset.
    pub fn new(event: Event, surface: &str, tool: &str) -> Self {
        Entry {
            time: crate::time::rfc3339(std::time::SystemTime::now()),
            event,
            agent: String::new(),
            surface: surface.to_owned(),
            call: String::new(),
            tool: tool.to_owned(),
            caller: None,
            client: None,
            session: None,
            request: None,
            input_digest: None,
            input: None,
            program: None,
            argv: None,
            command: None,
            trigger: None,
            answer: None,
            verdict: None,
            reason: None,
            exit_code: None,
            bytes: None,
            truncated: None,
            is_error: None,
        }
    }
}

/// A chained record as it is stored: the version, its place in the chain, the previous record's hash, then the
/// [`Entry`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Record {
    /// [`RECORD_VERSION`].
    pub v: u32,
    /// Its place in the chain, from 0.
    pub seq: u64,
    /// SHA-256 (hex) of the previous record's line, exactly as stored; [`GENESIS`] for the first.
    pub prev: String,
    /// What it records.
    #[serde(flatten)]
    pub entry: Entry,
}

#[derive(Serialize)]
struct Sealed<'a> {
    v: u32,
    seq: u64,
    prev: &'a str,
    #[serde(flatten)]
    entry: &'a Entry,
}

/// Where a trail's chain stands: the next record's place and the hash it links to (AUD-3). A sink keeps one and
/// seals each entry with it, so the chain is the sink's own: a file's continues across rotation and restarts, a
/// stream's across a fleet.
///
/// ```
/// use fisk_ai::audit::{Chain, Entry, Event, verify_lines};
///
/// let mut chain = Chain::genesis();
/// let a = chain.seal(&Entry::new(Event::Requested, "agent", "deploy"));
/// let b = chain.seal(&Entry::new(Event::Refused, "agent", "deploy"));
/// let text = format!("{}\n{}\n", String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
/// assert_eq!(verify_lines(text.as_bytes(), &mut Chain::genesis()).unwrap(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    seq: u64,
    prev: String,
}

/// The fields of a record the chain reads.
#[derive(Deserialize)]
pub(crate) struct Link {
    pub(crate) seq: u64,
}

impl Chain {
    /// The start of a new trail.
    pub fn genesis() -> Self {
        Chain { seq: 0, prev: GENESIS.to_owned() }
    }

    /// The chain after `line`, a stored record (without its newline).
    ///
    /// # Errors
    ///
    /// Why `line` is not a record.
    pub fn after(line: &[u8]) -> Result<Self, String> {
        let link: Link = serde_json::from_slice(line).map_err(|e| format!("not an audit record: {e}"))?;
        let seq = link.seq.checked_add(1).ok_or("not an audit record: its seq is the last there can be")?;
        Ok(Chain { seq, prev: hash(line) })
    }

    /// The next record's place in the chain.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// The hash the next record links to.
    pub fn prev(&self) -> &str {
        &self.prev
    }

    /// `entry` as the next record's line (no newline), and the chain moved past it.
    pub fn seal(&mut self, entry: &Entry) -> Vec<u8> {
        let sealed = Sealed { v: RECORD_VERSION, seq: self.seq, prev: &self.prev, entry };
        // Strings, numbers and enums only: serializing cannot fail.
        let line = serde_json::to_vec(&sealed).unwrap_or_default();
        self.prev = hash(&line);
        // Saturating: a hostile last record at the end of the range breaks verification, never a writer.
        self.seq = self.seq.saturating_add(1);
        line
    }

    /// Check that `line` is the next record, and move past it.
    ///
    /// # Errors
    ///
    /// What breaks the link: not a record, the wrong place, or a `prev` that is not the previous record's hash.
    pub fn check(&mut self, line: &[u8]) -> Result<(), String> {
        let record: Record = serde_json::from_slice(line).map_err(|e| format!("not an audit record: {e}"))?;
        if record.seq != self.seq {
            let (found, expected) = (record.seq, self.seq);
            return Err(format!("its seq is {found} where {expected} was expected (a record is missing or moved)"));
        }
        if record.prev != self.prev {
            return Err("its prev is not the hash of the record before it (that record was edited, removed or moved)"
                .to_owned());
        }
        // Written exactly as this crate writes it: no field added, repeated, reordered or respelled, the version
        // this reader knows, so what a verified trail says is what every reader of it reads.
        let sealed = Sealed { v: RECORD_VERSION, seq: record.seq, prev: &record.prev, entry: &record.entry };
        if record.v != RECORD_VERSION || serde_json::to_vec(&sealed).ok().as_deref() != Some(line) {
            return Err("it is not written in the record format (a field was added, repeated or changed)".to_owned());
        }
        self.prev = hash(line);
        self.seq = self.seq.checked_add(1).ok_or("its seq is the last there can be")?;
        Ok(())
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub(crate) fn hash(bytes: &[u8]) -> String {
    crate::canonical::hex(&Sha256::digest(bytes))
}
