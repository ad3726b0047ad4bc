//! Checkpointed sessions (SPEC section 14): the journal records, folding a journal back into a conversation, the
//! resume fingerprint, the [`SessionStore`] plug-in point, its file backend, an in-memory store for tests and
//! the JetStream backend ([`jetstream`], feature `nats`).
//!
//! A checkpointed run appends one [`JournalRecord`] per event (each model turn, each tool result, each confirmation
//! answer) and makes it durable before going on, so a later process can continue the run with
//! [`Agent::resume`](crate::agent::Agent::resume) and never repeat a recorded model turn or tool result.
//!
//! ```no_run
//! use fisk_ai::agent::{Agent, RunOptions};
//! use fisk_ai::session::{FileSessionStore, SessionId};
//!
//! # async fn demo(agent: Agent) -> fisk_ai::Result<()> {
//! let id = SessionId::generate();
//! let outcome = agent.run("rotate the ORDERS stream", RunOptions::new().with_checkpoint(id.clone())).await;
//! if !outcome.reason.is_success() {
//!     // ... later, possibly in another process:
//!     let outcome = agent.resume(&id, RunOptions::new()).await?;
//! }
//! # Ok(()) }
//! ```

mod append;
mod backend;
mod file;
mod fingerprint;
mod fold;
mod in_memory;
#[cfg(feature = "nats")]
#[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
pub mod jetstream;
mod record;
mod store;
mod terminal;

pub use crate::time::rfc3339;
#[cfg(feature = "nats")]
pub use backend::JetStreamSessionBackend;
pub use backend::{FileSessionBackend, SessionBackend, SessionBackends, SessionSettings};
pub use file::FileSessionStore;
pub(crate) use file::state_home;
pub use fingerprint::{Drift, Fingerprint, FingerprintInput};
pub use fold::{Journal, Pending, PendingCall, RecordedAnswer};
pub use in_memory::InMemorySessionStore;
#[cfg(feature = "nats")]
pub use jetstream::JetStreamSessions;
pub use record::{
    AssistantRecord, CompactionRecord, ConfirmChoice, ConfirmRecord, JOURNAL_VERSION, JournalRecord, Meta, Payload,
    ResetRecord, ResultBlock, TerminalRecord, ToolResultRecord, UserRecord,
};
pub use store::{JournalWriter, SessionEntry, SessionStore};
pub use terminal::TerminalReason;

use crate::error::{Error, Result};
use std::fmt;

/// The longest session id (SESS-3).
pub const MAX_ID_LEN: usize = 128;

/// A validated session id (SESS-2, SESS-3): `^[a-zA-Z0-9][a-zA-Z0-9_-]*$`, at most 128 characters. Generated ids
/// are KSUIDs (27 base62 characters), which sort by creation time.
///
/// ```
/// use fisk_ai::session::SessionId;
///
/// assert_eq!(SessionId::generate().as_str().len(), 27);
/// assert!(SessionId::new("nightly-rotation_2").is_ok());
/// assert!(SessionId::new("../etc/passwd").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

impl SessionId {
    /// Check `id` (SESS-3); the error names the id and the rule it breaks.
    ///
    /// # Errors
    ///
    /// A session error naming `id` when it is empty, does not start with a letter or digit, or holds anything but
    /// letters, digits, `_` and `-`.
    pub fn new(id: impl Into<String>) -> Result<Self> {
        let id = id.into();
        let mut chars = id.chars();
        let valid = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(Error::session(format!(
                "invalid session id {id:?}: it must start with a letter or digit and hold only letters, digits, '_' \
                 and '-'"
            )));
        }
        if id.len() > MAX_ID_LEN {
            return Err(Error::session(format!(
                "invalid session id {:?}...: it is {} characters long; the limit is {MAX_ID_LEN}",
                &id[..16],
                id.len()
            )));
        }
        Ok(SessionId(id))
    }

    /// A new KSUID (SESS-2).
    pub fn generate() -> Self {
        use svix_ksuid::KsuidLike;
        SessionId(svix_ksuid::Ksuid::now(None).to_string())
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for SessionId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        SessionId::new(s)
    }
}
