//! One run's view of a store: rules, the entry cap and the read-before-update guard (MEM-11, MEM-25).

use super::rules::{MAX_ENTRIES, shown_key, validate_key};
use super::{CreateOutcome, Entry, MemoryError, MemoryRecord, MemoryStore, OverwriteOutcome, Stored};
use crate::tool::Tool;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// What [`MemorySession::write`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteOutcome {
    /// The value was stored: `{"written": true}`.
    Written,
    /// Nothing was stored, for a reason the model can act on: `{"written": false, "reason": ...}` (MEM-5, MEM-25).
    Refused {
        /// What happened and what to do next.
        reason: String,
    },
}

/// One run's use of a [`MemoryStore`]: what the four memory tools call.
///
/// It applies the entry cap on the create path (MEM-11) and, for stores that
/// [require it](MemoryStore::requires_read_before_update), the read-before-update guard (MEM-25): an overwrite
/// goes through only if this session read the key, created it or overwrote it, and is a compare-and-swap on the
/// revision it saw then; after a mismatch that revision is forgotten, so the model must read again. Listing never
/// grants overwrite authority. Stores without revisions (the file backend) are never blocked.
///
/// For stores that [count once per run](MemoryStore::count_once_per_run) the entry count is taken on the first
/// create and then tracked through this session's own creates and deletes (MEM-27).
///
/// The bookkeeping is per run: make one session (or one [`memory_tools`](super::memory_tools) set) per run.
///
/// ```
/// use fisk_ai::memory::{InMemoryStore, MemorySession, MemoryStore, MemoryRecord, WriteOutcome};
/// use std::sync::Arc;
///
/// # futures::executor::block_on(async {
/// let store = Arc::new(InMemoryStore::new().with_read_before_update(true));
/// store.create("region", &MemoryRecord::new("Region", "eu-west-1").unwrap()).await.unwrap();
///
/// let session = MemorySession::new(store);
/// let update = MemoryRecord::new("Region", "us-east-2").unwrap();
/// // Not read in this run yet: refused.
/// assert!(matches!(session.write("region", &update, true).await.unwrap(), WriteOutcome::Refused { .. }));
/// session.read("region").await.unwrap();
/// assert_eq!(session.write("region", &update, true).await.unwrap(), WriteOutcome::Written);
/// # });
/// ```
pub struct MemorySession {
    store: Arc<dyn MemoryStore>,
    /// Keys this run read or wrote, with the revision it saw (MEM-25).
    seen: Mutex<HashMap<String, Option<u64>>>,
    /// The entry count taken once and tracked since, for stores that
    /// [count once per run](MemoryStore::count_once_per_run).
    count: Mutex<Option<usize>>,
}

impl fmt::Debug for MemorySession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemorySession").field("backend", &self.store.backend()).finish_non_exhaustive()
    }
}

impl MemorySession {
    /// A session over `store` that has seen nothing yet.
    pub fn new(store: Arc<dyn MemoryStore>) -> Self {
        MemorySession { store, seen: Mutex::new(HashMap::new()), count: Mutex::new(None) }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    /// The four memory tools over this session, in order `memory_list`, `memory_read`, `memory_write`,
    /// `memory_delete` (MEM-1).
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        super::tools::tools_for(self)
    }

    /// Every entry, sorted by key (MEM-2). Grants no overwrite authority.
    ///
    /// # Errors
    ///
    /// What the store reports when its entries cannot be listed.
    pub async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
        let mut entries = self.store.list().await?;
        // The trait asks for sorted output; do not rely on every backend getting it right.
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(entries)
    }

    /// The value under `key` (MEM-3); a hit remembers its revision for a later overwrite (MEM-25).
    ///
    /// # Errors
    ///
    /// [`MemoryError`] for an invalid key, or what the store reports.
    pub async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
        validate_key(key)?;
        let stored = self.store.read(key).await?;
        match &stored {
            Some(s) => self.remember(key, s.revision),
            None => self.forget(key),
        }
        Ok(stored)
    }

    /// Store `record` under `key` (MEM-4..6, MEM-11, MEM-25).
    ///
    /// Without `overwrite` the key must be new: an existing key is [`WriteOutcome::Refused`] with a reason naming
    /// it and its description. With `overwrite` the value is replaced (a missing key is created); on a store that
    /// requires read-before-update the key must have been read or written by this session at its current revision,
    /// and an overwrite of a key this session never saw is refused, never a create (nats-wire §5). Creating a
    /// key in a full store is [`MemoryError::Full`].
    ///
    /// # Errors
    ///
    /// [`MemoryError`] for an invalid key, [`MemoryError::Full`] when a new key does not fit, or what the store
    /// reports; a refused overwrite is an `Ok` [`WriteOutcome::Refused`], not an error.
    pub async fn write(&self, key: &str, record: &MemoryRecord, overwrite: bool) -> Result<WriteOutcome, MemoryError> {
        validate_key(key)?;
        let guarded = self.store.requires_read_before_update();
        if overwrite {
            let seen = self.seen_revision(key);
            if !guarded || seen.is_some() {
                let expected = if guarded { Some(self.guard_revision(key, seen.flatten())?) } else { None };
                // A blind overwrite of a missing key creates it: the cap applies and the count grows (MEM-11, MEM-27).
                // A read error means something holds the name (a non-file entry, say): not a create.
                let creates = !guarded && matches!(self.store.read(key).await, Ok(None));
                if creates && self.entry_count().await? >= MAX_ENTRIES {
                    return Err(MemoryError::Full { limit: MAX_ENTRIES });
                }
                return Ok(match self.store.overwrite(key, record, expected).await? {
                    OverwriteOutcome::Written { revision } => {
                        self.remember(key, revision);
                        if creates {
                            self.adjust_count(1);
                        }
                        WriteOutcome::Written
                    }
                    OverwriteOutcome::Conflict { reason } => {
                        self.forget(key);
                        WriteOutcome::Refused { reason: changed_reason(key, &reason) }
                    }
                });
            }
            // Guarded and never seen: refused whether or not the key exists, and never a create (nats-wire §5):
            // the run cannot know what it would replace.
            return Ok(WriteOutcome::Refused { reason: unread_reason(key) });
        }
        if self.entry_count().await? >= MAX_ENTRIES {
            return match self.store.read(key).await? {
                Some(existing) => Ok(WriteOutcome::Refused {
                    reason: exists_reason(key, Some(existing.description).filter(|d| !d.is_empty()).as_deref()),
                }),
                None => Err(MemoryError::Full { limit: MAX_ENTRIES }),
            };
        }
        Ok(match self.store.create(key, record).await? {
            CreateOutcome::Created { revision } => {
                self.remember(key, revision);
                self.adjust_count(1);
                WriteOutcome::Written
            }
            CreateOutcome::Exists { existing_description } => {
                WriteOutcome::Refused { reason: exists_reason(key, existing_description.as_deref()) }
            }
        })
    }

    /// Remove `key` (MEM-7): `true` if something was removed.
    ///
    /// # Errors
    ///
    /// [`MemoryError`] for an invalid key, or what the store reports.
    pub async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
        validate_key(key)?;
        let deleted = self.store.delete(key).await?;
        self.forget(key);
        if deleted {
            self.adjust_count(-1);
        }
        Ok(deleted)
    }

    /// The revision a guarded overwrite compares against. A store that asks for the guard but gave no revision
    /// cannot compare-and-swap; writing blindly would switch MEM-25 off without anyone noticing.
    fn guard_revision(&self, key: &str, seen: Option<u64>) -> Result<u64, MemoryError> {
        seen.ok_or_else(|| {
            MemoryError::backend(format!(
                "the {} memory backend requires a read before an update but reported no revision for key {}, so the \
                 update cannot be checked; nothing was written",
                self.store.backend(),
                shown_key(key)
            ))
        })
    }

    /// The number of entries, for the cap (MEM-11, MEM-27).
    async fn entry_count(&self) -> Result<usize, MemoryError> {
        if !self.store.count_once_per_run() {
            return self.store.count().await;
        }
        if let Some(n) = *lock(&self.count) {
            return Ok(n);
        }
        let n = self.store.count().await?;
        // Tool calls of a run are sequential; should two ever race here, the first count taken stands.
        Ok(*lock(&self.count).get_or_insert(n))
    }

    fn adjust_count(&self, delta: isize) {
        if let Some(n) = lock(&self.count).as_mut() {
            *n = n.saturating_add_signed(delta);
        }
    }

    fn seen(&self) -> MutexGuard<'_, HashMap<String, Option<u64>>> {
        lock(&self.seen)
    }

    /// `Some(revision)` when this session read or wrote `key` and has not discarded it since.
    fn seen_revision(&self, key: &str) -> Option<Option<u64>> {
        self.seen().get(key).copied()
    }

    fn remember(&self, key: &str, revision: Option<u64>) {
        self.seen().insert(key.to_owned(), revision);
    }

    fn forget(&self, key: &str) {
        self.seen().remove(key);
    }
}

/// Every update is a single statement, so a poisoned lock still guards consistent data.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn exists_reason(key: &str, description: Option<&str>) -> String {
    let described = match description {
        Some(d) => format!(" (description: {d:?})"),
        None => String::new(),
    };
    format!(
        "memory key {}{described} already exists, so nothing was written; to replace it, call memory_write again \
         with overwrite: true (use memory_read first to see what it holds), or pick another key",
        shown_key(key)
    )
}

fn unread_reason(key: &str) -> String {
    format!(
        "this run has not read memory key {}, so nothing was written; call memory_read on it first, then retry \
         memory_write with overwrite: true (if memory_read finds nothing, create the key with overwrite: false)",
        shown_key(key)
    )
}

fn changed_reason(key: &str, detail: &str) -> String {
    format!(
        "memory key {} changed since this run last read or wrote it ({detail}), so nothing was written; call \
         memory_read to see the current value, then retry memory_write with overwrite: true",
        shown_key(key)
    )
}
