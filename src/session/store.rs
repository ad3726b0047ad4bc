//! The session storage plug-in point.

use super::SessionId;
use super::record::JournalRecord;
use crate::error::Result;
use async_trait::async_trait;
use std::time::SystemTime;

/// Where session journals live (SESS-25): the file backend ([`FileSessionStore`](super::FileSessionStore)) or a
/// host's own (a JetStream stream, a database). A store hands out one [`JournalWriter`] per running session and
/// must refuse a second writer of the same session (SESS-29).
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::session::{JournalWriter, JournalRecord, SessionEntry, SessionId, SessionStore};
/// use std::collections::HashMap;
/// use std::sync::{Arc, Mutex};
///
/// /// Journals kept in memory (a test double; a real backend makes each append durable).
/// #[derive(Default)]
/// struct Memory(Arc<Mutex<HashMap<String, Vec<Vec<u8>>>>>);
///
/// struct Writer(Arc<Mutex<HashMap<String, Vec<Vec<u8>>>>>, String);
///
/// #[async_trait]
/// impl JournalWriter for Writer {
///     async fn append(&mut self, record: &JournalRecord) -> fisk_ai::Result<()> {
///         let mut all = self.0.lock().unwrap();
///         let lines = all.entry(self.1.clone()).or_default();
///         if record.seq as usize > lines.len() {
///             lines.push(record.to_json());
///         }
///         Ok(())
///     }
/// }
///
/// #[async_trait]
/// impl SessionStore for Memory {
///     fn backend(&self) -> &str {
///         "memory"
///     }
///     async fn create(&self, id: &SessionId) -> fisk_ai::Result<Box<dyn JournalWriter>> {
///         let mut all = self.0.lock().unwrap();
///         if all.contains_key(id.as_str()) {
///             return Err(fisk_ai::Error::session(format!("session {id} already exists")));
///         }
///         all.insert(id.to_string(), Vec::new());
///         Ok(Box::new(Writer(self.0.clone(), id.to_string())))
///     }
///     async fn open(&self, id: &SessionId) -> fisk_ai::Result<(Vec<JournalRecord>, Box<dyn JournalWriter>)> {
///         let records = self.read(id).await?;
///         Ok((records, Box::new(Writer(self.0.clone(), id.to_string()))))
///     }
///     async fn read(&self, id: &SessionId) -> fisk_ai::Result<Vec<JournalRecord>> {
///         let all = self.0.lock().unwrap();
///         let lines = all.get(id.as_str()).ok_or_else(|| fisk_ai::Error::session(format!("no session {id}")))?;
///         lines.iter().map(|l| JournalRecord::from_json(l)).collect()
///     }
///     async fn list(&self) -> fisk_ai::Result<Vec<SessionEntry>> {
///         let all = self.0.lock().unwrap();
///         Ok(all.keys().filter_map(|k| SessionId::new(k.as_str()).ok()).map(|id| SessionEntry::new(id, None)).collect())
///     }
///     async fn remove(&self, id: &SessionId) -> fisk_ai::Result<()> {
///         self.0.lock().unwrap().remove(id.as_str());
///         Ok(())
///     }
/// }
/// ```
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The backend's name, e.g. `file` (shown in errors and listings).
    fn backend(&self) -> &str;

    /// Create session `id` and return its writer, holding the session's lock. Fails when the id already exists
    /// (SESS-3) or is locked.
    async fn create(&self, id: &SessionId) -> Result<Box<dyn JournalWriter>>;

    /// Open session `id` to continue it: take its lock, read its records (dropping a torn final record, SESS-30)
    /// and return them with a writer that appends after them. Fails when it does not exist or is locked.
    async fn open(&self, id: &SessionId) -> Result<(Vec<JournalRecord>, Box<dyn JournalWriter>)>;

    /// Read session `id`'s records without taking its lock (for listings).
    async fn read(&self, id: &SessionId) -> Result<Vec<JournalRecord>>;

    /// The sessions in the store, in no particular order.
    async fn list(&self) -> Result<Vec<SessionEntry>>;

    /// Remove session `id`; removing a missing session is not an error (CLI-24).
    async fn remove(&self, id: &SessionId) -> Result<()>;

    /// Whether session `id` exists, without reading it (a worker asks before each run, WORK-8). The default
    /// lists the store; a backend that can answer for one id should.
    async fn exists(&self, id: &SessionId) -> Result<bool> {
        Ok(self.list().await?.iter().any(|e| e.id == *id))
    }
}

/// Appends one session's records; dropping it releases the session's lock.
///
/// A writer of JSON lines that keeps the contract of [`append`](JournalWriter::append): each record synced before
/// it returns, a repeated `seq` a no-op, a gap an error, and nothing more after a failure.
///
/// ```
/// use fisk_ai::session::{JournalRecord, JournalWriter, Payload, TerminalReason, TerminalRecord};
/// use fisk_ai::{Error, async_trait};
/// use std::fs::File;
/// use std::io::Write;
///
/// struct Lines {
///     file: File,
///     last: u64,
///     failed: bool,
/// }
///
/// #[async_trait]
/// impl JournalWriter for Lines {
///     async fn append(&mut self, record: &JournalRecord) -> fisk_ai::Result<()> {
///         if self.failed {
///             return Err(Error::session("an earlier append failed: the journal's tail is unknown"));
///         }
///         if record.seq <= self.last {
///             return Ok(()); // an idempotent retry (SESS-5)
///         }
///         if record.seq != self.last + 1 {
///             return Err(Error::session(format!("record {} does not follow record {}", record.seq, self.last)));
///         }
///         let mut line = record.to_json();
///         line.push(b'\n');
///         // Durable before returning (SESS-14); a blocking write keeps the example short.
///         if let Err(e) = self.file.write_all(&line).and_then(|()| self.file.sync_data()) {
///             self.failed = true;
///             return Err(Error::session(format!("cannot append to the journal: {e}")));
///         }
///         self.last = record.seq;
///         Ok(())
///     }
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("session.jsonl");
/// let mut writer: Box<dyn JournalWriter> = Box::new(Lines { file: File::create(&path)?, last: 0, failed: false });
/// let done = JournalRecord::new(1, Payload::Terminal(TerminalRecord::new(TerminalReason::Completed, None)));
/// futures::executor::block_on(async {
///     writer.append(&done).await?;
///     writer.append(&done).await?; // the same record again: no-op
///     let gap = JournalRecord::new(3, Payload::Terminal(TerminalRecord::new(TerminalReason::Error, None)));
///     assert!(writer.append(&gap).await.is_err());
///     writer.close().await
/// })?;
/// assert_eq!(std::fs::read_to_string(&path)?.lines().count(), 1);
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait JournalWriter: Send {
    /// Append `record` durably: it is stored (flushed and synced) when this returns (SESS-14). A record whose
    /// `seq` is at or below the last one is a no-op (an idempotent retry); skipping ahead is an error (SESS-5).
    /// After a failed append the writer must refuse every later one: the journal's tail is unknown, and the run
    /// ends there so the session stays resumable (SESS-33).
    async fn append(&mut self, record: &JournalRecord) -> Result<()>;

    /// Release the journal. The default does nothing beyond dropping the writer.
    async fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// One session in a [`SessionStore::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionEntry {
    /// The id.
    pub id: SessionId,
    /// When it was last written, when the store knows.
    pub updated: Option<SystemTime>,
}

impl SessionEntry {
    /// An entry.
    pub fn new(id: SessionId, updated: Option<SystemTime>) -> Self {
        SessionEntry { id, updated }
    }
}

impl std::fmt::Debug for dyn JournalWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JournalWriter")
    }
}

impl std::fmt::Debug for dyn SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore").field("backend", &self.backend()).finish()
    }
}
