//! A process-local store with KV-style revisions.

use super::rules::validate_key;
use super::{CreateOutcome, Entry, MemoryError, MemoryRecord, MemoryStore, OverwriteOutcome, Stored, decode};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// A store kept in the process: gone when it is dropped. Handy for tests, examples and agents whose memory should
/// not outlive the process.
///
/// It behaves like a KV bucket: every write gets the next revision of a store-wide sequence, reads report it, and
/// an overwrite with an expected revision is a compare-and-swap. With
/// [`with_read_before_update`](Self::with_read_before_update) it asks runs to read a key before replacing it
/// (MEM-25), as the JetStream backend does by default. Values are kept in the shared record format (MEM-13).
///
/// ```
/// use fisk_ai::memory::{InMemoryStore, MemoryStore, OverwriteOutcome, MemoryRecord};
///
/// # futures::executor::block_on(async {
/// let store = InMemoryStore::new();
/// let record = MemoryRecord::new("Region", "eu-west-1").unwrap();
/// store.create("region", &record).await.unwrap();
/// let rev = store.read("region").await.unwrap().unwrap().revision.unwrap();
/// let stale = rev - 1;
/// let cas = |expected| store.overwrite("region", &record, Some(expected));
/// assert!(matches!(cas(stale).await.unwrap(), OverwriteOutcome::Conflict { .. }));
/// assert!(matches!(cas(rev).await.unwrap(), OverwriteOutcome::Written { .. }));
/// # });
/// ```
#[derive(Debug, Default)]
pub struct InMemoryStore {
    state: Mutex<State>,
    read_before_update: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Key → (stored value, revision).
    entries: BTreeMap<String, (String, u64)>,
    last_revision: u64,
}

impl State {
    fn put(&mut self, key: &str, value: String) -> u64 {
        self.last_revision += 1;
        self.entries.insert(key.to_owned(), (value, self.last_revision));
        self.last_revision
    }
}

impl InMemoryStore {
    /// An empty store without the read-before-update guard.
    pub fn new() -> Self {
        Self::default()
    }

    /// Require runs to read (or write) a key, at its current revision, before overwriting it (MEM-25).
    #[must_use]
    pub fn with_read_before_update(mut self, on: bool) -> Self {
        self.read_before_update = on;
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent after every statement, so a panic elsewhere leaves nothing half-done.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl MemoryStore for InMemoryStore {
    async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
        Ok(self.lock().entries.iter().map(|(k, (v, _))| Entry::new(k.clone(), decode(v).0)).collect())
    }

    async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
        validate_key(key)?;
        Ok(self.lock().entries.get(key).map(|(v, rev)| Stored::decode(v, Some(*rev))))
    }

    async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
        validate_key(key)?;
        let mut state = self.lock();
        if let Some((v, _)) = state.entries.get(key) {
            let existing_description = Some(decode(v).0).filter(|d| !d.is_empty());
            return Ok(CreateOutcome::Exists { existing_description });
        }
        let revision = state.put(key, record.encode());
        Ok(CreateOutcome::Created { revision: Some(revision) })
    }

    async fn overwrite(
        &self,
        key: &str,
        record: &MemoryRecord,
        expected: Option<u64>,
    ) -> Result<OverwriteOutcome, MemoryError> {
        validate_key(key)?;
        let mut state = self.lock();
        if let Some(expected) = expected {
            match state.entries.get(key) {
                Some((_, rev)) if *rev == expected => {}
                Some((_, rev)) => {
                    return Ok(OverwriteOutcome::Conflict {
                        reason: format!("the stored revision is {rev}, expected {expected}"),
                    });
                }
                None => {
                    return Ok(OverwriteOutcome::Conflict {
                        reason: format!("the key was deleted since revision {expected}"),
                    });
                }
            }
        }
        let revision = state.put(key, record.encode());
        Ok(OverwriteOutcome::Written { revision: Some(revision) })
    }

    async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
        validate_key(key)?;
        Ok(self.lock().entries.remove(key).is_some())
    }

    async fn count(&self) -> Result<usize, MemoryError> {
        Ok(self.lock().entries.len())
    }

    fn requires_read_before_update(&self) -> bool {
        self.read_before_update
    }

    fn backend(&self) -> &str {
        "memory"
    }
}
