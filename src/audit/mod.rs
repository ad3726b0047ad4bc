//! The audit trail (AUD-1..12): one hash-chained record per decision point of every call, on every surface.
//!
//! The one [dispatch path](crate::dispatch) writes the records, so the agent loop, MCP (HTTP and stdio), a2a and a
//! host's own surface all leave the same trail: a call requested, refused or validated, a policy's verdict, gated,
//! approved or declined (and by which [`Answer`]), run (with its resolved argv), cancelled, timed out, finished
//! (exit code, bytes, truncated), redacted. Each [`Record`] names the caller, the tool, the input's digest (the
//! input itself only with `include_input`), the session or request, and the time, and carries the previous
//! record's SHA-256, so an edited, removed or reordered record breaks the chain ([`verify_file`]).
//!
//! Records are durable before what they record goes on: the records up to `run` are written (and, for the file
//! sink, fsynced) before the process starts, and a trail that cannot be written refuses the call (AUD-6) unless
//! the operator chose `fail_open` (then a warning says what was lost). The records of what is already over (how a
//! call ended, a refusal, a decline) are written before the caller gets its result, and the file sink starts their
//! sync at most 5 ms later, sooner when the next call's records come first and share it (AUD-10): nothing waits on
//! them, so the result does not wait for the disk, and a sync that fails then refuses the next call.
//!
//! Sinks ([`AuditSink`]): [`FileSink`] (JSON lines, 0600, fsynced, rotated by size with the chain continued) and,
//! with the `nats` feature, [`StreamSink`] (a JetStream stream a fleet shares; the chain is kept by the stream's
//! own sequence). A host may add its own:
//!
//! ```
//! use fisk_ai::async_trait;
//! use fisk_ai::audit::{AuditSink, AuditTrail, Chain, Entry};
//! use std::sync::{Arc, Mutex};
//!
//! /// Keeps the chained lines in memory.
//! #[derive(Default)]
//! struct Memory(Mutex<(Option<Chain>, Vec<Vec<u8>>)>);
//!
//! #[async_trait]
//! impl AuditSink for Memory {
//!     async fn append(&self, entries: &[Entry]) -> fisk_ai::Result<()> {
//!         let mut state = self.0.lock().unwrap();
//!         let (chain, lines) = &mut *state;
//!         let chain = chain.get_or_insert_with(Chain::genesis);
//!         lines.extend(entries.iter().map(|e| chain.seal(e)));
//!         Ok(())
//!     }
//!
//!     fn describe(&self) -> String {
//!         "memory".to_owned()
//!     }
//! }
//!
//! let trail = AuditTrail::new(Arc::new(Memory::default())).agent("ops");
//! # let _ = trail;
//! ```

mod call;
mod file;
mod record;
#[cfg(feature = "nats")]
mod stream;
mod verify;

pub(crate) use call::{Recorder, refused};
pub use file::{DEFAULT_ROTATE_BYTES, FileSink};
pub use record::{Answer, Chain, Entry, Event, GENESIS, RECORD_SCHEMA, RECORD_VERSION, Record};
#[cfg(feature = "nats")]
pub use stream::{StreamSink, verify_stream};
pub use verify::{Broken, Verified, verify_file, verify_lines};

use crate::error::Result;
use crate::policy::SurfaceKind;
use async_trait::async_trait;
use std::sync::Arc;

/// Where records go (AUD-4, AUD-5). A sink chains what it stores ([`Chain`]). [`append`](AuditSink::append)
/// returns only once the records are durable, and an error refuses the call they record;
/// [`append_settled`](AuditSink::append_settled) may return once they are written.
#[async_trait]
pub trait AuditSink: Send + Sync {
    /// Store `entries`, in order, after the sink's last record.
    ///
    /// # Errors
    ///
    /// Why they could not be stored; the trail then refuses the call (or warns, under `fail_open`).
    async fn append(&self, entries: &[Entry]) -> Result<()>;

    /// Store `entries` that record what is already over (a call's ending, a refusal, a decline), in order, after the
    /// sink's last record (AUD-10). Nothing waits on these records to go on, so a sink may return once they are
    /// ordered and visible and make them durable a moment later (the file sink starts their sync at most 5 ms later,
    /// with whatever records arrive meanwhile); an error it meets then fails the next [`append`](AuditSink::append). By default, the
    /// same as [`append`](AuditSink::append).
    ///
    /// # Errors
    ///
    /// Why they could not be stored; the trail then logs a warning (the call is already over).
    async fn append_settled(&self, entries: &[Entry]) -> Result<()> {
        self.append(entries).await
    }

    /// Where records go, for messages: `file /var/log/fisk/audit.jsonl`.
    fn describe(&self) -> String;
}

/// The trail every surface of a harness writes: its sinks and what goes into records. Built by the harness from
/// `harness.audit`, or by a host ([`HarnessBuilder::audit`](crate::harness::HarnessBuilder::audit)).
#[derive(Clone)]
pub struct AuditTrail {
    sinks: Vec<Arc<dyn AuditSink>>,
    agent: String,
    include_input: bool,
    fail_open: bool,
}

impl std::fmt::Debug for AuditTrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sinks: Vec<String> = self.sinks.iter().map(|s| s.describe()).collect();
        f.debug_struct("AuditTrail")
            .field("sinks", &sinks)
            .field("agent", &self.agent)
            .field("include_input", &self.include_input)
            .field("fail_open", &self.fail_open)
            .finish()
    }
}

impl AuditTrail {
    /// A trail writing to `sink`; without the input, failing closed.
    pub fn new(sink: Arc<dyn AuditSink>) -> Self {
        AuditTrail { sinks: vec![sink], agent: String::new(), include_input: false, fail_open: false }
    }

    /// Also write to `sink` (every record goes to each, in order; either failing fails the write).
    #[must_use]
    pub fn sink(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// The identity records name as their writer (`agent`).
    #[must_use]
    pub fn agent(mut self, identity: impl Into<String>) -> Self {
        self.agent = identity.into();
        self
    }

    /// Put the input text itself in `requested` records (`include_input: true`); only its digest otherwise.
    #[must_use]
    pub fn include_input(mut self, include: bool) -> Self {
        self.include_input = include;
        self
    }

    /// Run calls whose records could not be written, with a warning, instead of refusing them (`fail_open: true`).
    #[must_use]
    pub fn fail_open(mut self, fail_open: bool) -> Self {
        self.fail_open = fail_open;
        self
    }

    /// Whether unwritten records let calls go on.
    pub fn is_fail_open(&self) -> bool {
        self.fail_open
    }

    /// The sinks, described.
    pub fn describe(&self) -> Vec<String> {
        self.sinks.iter().map(|s| s.describe()).collect()
    }

    /// Store `entries` in every sink, each tried whatever the others did.
    ///
    /// # Errors
    ///
    /// The first failure, naming its sink.
    pub async fn append(&self, entries: &[Entry]) -> Result<()> {
        self.append_to_each(entries, false).await
    }

    /// Store `entries` that record what is already over in every sink ([`AuditSink::append_settled`]).
    ///
    /// # Errors
    ///
    /// The first failure, naming its sink.
    pub async fn append_settled(&self, entries: &[Entry]) -> Result<()> {
        self.append_to_each(entries, true).await
    }

    async fn append_to_each(&self, entries: &[Entry], settled: bool) -> Result<()> {
        // Every sink gets the records even when one fails, so a healthy sink never misses what a broken one did.
        let mut failed = None;
        for sink in &self.sinks {
            let written = if settled { sink.append_settled(entries).await } else { sink.append(entries).await };
            if let Err(e) = written {
                failed.get_or_insert(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }
}

/// Who is calling, where, for the records of one call: what a [`Surface`](crate::dispatch::Surface) returns from
/// [`audit`](crate::dispatch::Surface::audit).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditScope {
    /// The trail.
    pub trail: Arc<AuditTrail>,
    /// The surface.
    pub surface: SurfaceKind,
    /// The caller: an OAuth subject, a peer's identity, the local operator.
    pub caller: Option<String>,
    /// The OAuth client.
    pub client: Option<String>,
    /// The session.
    pub session: Option<String>,
    /// The request.
    pub request: Option<String>,
}

impl AuditScope {
    /// Records on `surface` into `trail`, with no caller, session or request yet.
    pub fn new(trail: Arc<AuditTrail>, surface: SurfaceKind) -> Self {
        AuditScope { trail, surface, caller: None, client: None, session: None, request: None }
    }

    /// The caller.
    #[must_use]
    pub fn caller(mut self, caller: Option<String>) -> Self {
        self.caller = caller;
        self
    }

    /// The OAuth client.
    #[must_use]
    pub fn client(mut self, client: Option<String>) -> Self {
        self.client = client;
        self
    }

    /// The session.
    #[must_use]
    pub fn session(mut self, session: Option<String>) -> Self {
        self.session = session;
        self
    }

    /// The request.
    #[must_use]
    pub fn request(mut self, request: Option<String>) -> Self {
        self.request = request;
        self
    }
}

/// The name of the user this process runs as, for records of calls the local operator makes (the agent loop).
pub fn local_user() -> String {
    static USER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    USER.get_or_init(|| {
        let uid = nix::unistd::geteuid();
        match nix::unistd::User::from_uid(uid) {
            Ok(Some(user)) => user.name,
            _ => format!("uid:{uid}"),
        }
    })
    .clone()
}
