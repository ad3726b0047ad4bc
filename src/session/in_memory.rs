//! A process-local session store for hosts' tests and the conformance kit.

use super::SessionId;
use super::append::AppendGuard;
use super::record::JournalRecord;
use super::store::{JournalWriter, SessionEntry, SessionStore};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// Journals kept in this process's memory, with the file backend's contract: a live writer holds its session's
/// lock until it is dropped, a repeated seq is a no-op, a gap an error, and a writer refuses every append after a
/// failed one. Records are kept as the bytes of [`JournalRecord::to_json`]. Cheap to clone: clones share the
/// journals.
///
/// [`fail_next_append`](Self::fail_next_append) makes the next append of any writer fail, to exercise SESS-33.
///
/// ```
/// use fisk_ai::session::{InMemorySessionStore, JournalRecord, Payload, SessionId, SessionStore};
/// use fisk_ai::session::{TerminalReason, TerminalRecord};
///
/// # futures::executor::block_on(async {
/// let store = InMemorySessionStore::new();
/// let id = SessionId::new("demo").unwrap();
/// let mut writer = store.create(&id).await.unwrap();
/// assert!(store.open(&id).await.is_err(), "locked while the writer lives");
/// let done = JournalRecord::new(1, Payload::Terminal(TerminalRecord::new(TerminalReason::Completed, None)));
/// writer.append(&done).await.unwrap();
/// store.fail_next_append();
/// let next = JournalRecord::new(2, Payload::Terminal(TerminalRecord::new(TerminalReason::Completed, None)));
/// assert!(writer.append(&next).await.is_err());
/// drop(writer);
/// assert_eq!(store.read(&id).await.unwrap().len(), 1);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct InMemorySessionStore {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    journals: HashMap<SessionId, Journal>,
    fail_next: bool,
}

struct Journal {
    lines: Vec<Vec<u8>>,
    locked: bool,
    updated: SystemTime,
}

impl fmt::Debug for InMemorySessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("InMemorySessionStore")
            .field("sessions", &inner.journals.len())
            .field("fail_next", &inner.fail_next)
            .finish()
    }
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Make the next append (of any writer of this store) fail, as a lost connection or full disk would.
    pub fn fail_next_append(&self) {
        self.lock().fail_next = true;
    }

    /// The stored bytes of `id`'s records (each exactly [`JournalRecord::to_json`]), for comparing backends.
    pub fn bodies(&self, id: &SessionId) -> Option<Vec<Vec<u8>>> {
        self.lock().journals.get(id).map(|j| j.lines.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves whole lines behind: the data stays usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn parse(id: &SessionId, lines: &[Vec<u8>]) -> Result<Vec<JournalRecord>> {
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                JournalRecord::from_json(l)
                    .map_err(|e| Error::session(format!("session {id} (in memory) record {} is corrupt: {e}", i + 1)))
            })
            .collect()
    }

    fn writer(&self, id: &SessionId, last_seq: u64) -> Box<dyn JournalWriter> {
        Box::new(MemoryJournal { store: self.clone(), id: id.clone(), guard: AppendGuard::new(last_seq) })
    }
}

#[async_trait]
impl SessionStore for InMemorySessionStore {
    fn backend(&self) -> &str {
        "in-memory"
    }

    async fn create(&self, id: &SessionId) -> Result<Box<dyn JournalWriter>> {
        let mut inner = self.lock();
        match inner.journals.get(id) {
            Some(j) if j.locked => {
                return Err(Error::session(format!("session {id} is already locked by another run")));
            }
            Some(j) if !j.lines.is_empty() => return Err(Error::session(format!("session {id} already exists"))),
            _ => {}
        }
        inner.journals.insert(id.clone(), Journal { lines: Vec::new(), locked: true, updated: SystemTime::now() });
        drop(inner);
        Ok(self.writer(id, 0))
    }

    async fn open(&self, id: &SessionId) -> Result<(Vec<JournalRecord>, Box<dyn JournalWriter>)> {
        let mut inner = self.lock();
        let journal = inner.journals.get_mut(id).ok_or_else(|| Error::session(format!("no session {id}")))?;
        if journal.locked {
            return Err(Error::session(format!("session {id} is already locked by another run")));
        }
        let records = Self::parse(id, &journal.lines)?;
        if records.is_empty() {
            return Err(Error::session(format!("session {id} holds no records: its run stopped before it began")));
        }
        journal.locked = true;
        drop(inner);
        let last = records.last().map_or(0, |r| r.seq);
        Ok((records, self.writer(id, last)))
    }

    async fn read(&self, id: &SessionId) -> Result<Vec<JournalRecord>> {
        let inner = self.lock();
        let journal = inner.journals.get(id).ok_or_else(|| Error::session(format!("no session {id}")))?;
        Self::parse(id, &journal.lines)
    }

    async fn list(&self) -> Result<Vec<SessionEntry>> {
        let inner = self.lock();
        Ok(inner.journals.iter().map(|(id, j)| SessionEntry::new(id.clone(), Some(j.updated))).collect())
    }

    async fn remove(&self, id: &SessionId) -> Result<()> {
        let mut inner = self.lock();
        if inner.journals.get(id).is_some_and(|j| j.locked) {
            return Err(Error::session(format!("cannot remove session {id}: a run holds it; stop that run first")));
        }
        inner.journals.remove(id);
        Ok(())
    }
}

/// One session's writer; dropping it releases the session.
struct MemoryJournal {
    store: InMemorySessionStore,
    id: SessionId,
    guard: AppendGuard,
}

#[async_trait]
impl JournalWriter for MemoryJournal {
    async fn append(&mut self, record: &JournalRecord) -> Result<()> {
        if !self.guard.admit(record.seq, || format!("session {} (in memory)", self.id))? {
            return Ok(());
        }
        let mut inner = self.store.lock();
        if std::mem::take(&mut inner.fail_next) {
            let failure = Error::session(format!("session {} (in memory): simulated append failure", self.id));
            return self.guard.settle(record.seq, Err(failure));
        }
        let journal = inner.journals.entry(self.id.clone()).or_insert_with(|| Journal {
            lines: Vec::new(),
            locked: true,
            updated: SystemTime::now(),
        });
        journal.lines.push(record.to_json());
        journal.updated = SystemTime::now();
        self.guard.settle(record.seq, Ok(()))
    }
}

impl Drop for MemoryJournal {
    fn drop(&mut self) {
        let mut inner = self.store.lock();
        // A created session whose first record never came is forgotten, as the file backend reclaims it.
        let empty = inner.journals.get(&self.id).is_some_and(|j| j.lines.is_empty());
        if empty {
            inner.journals.remove(&self.id);
        } else if let Some(j) = inner.journals.get_mut(&self.id) {
            j.locked = false;
        }
    }
}
