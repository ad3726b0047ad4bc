//! Persistent agent memory (SPEC section 13): the [`MemoryStore`] trait, the shared key, size and record-format
//! rules, the file backend, the four `memory_*` tools and the system-prompt note and index.
//!
//! A store keeps short named notes (`key` → description + content) that outlive a run. The model reaches it only
//! through four built-in tools, built by [`memory_tools`] in the order `memory_list`, `memory_read`,
//! `memory_write`, `memory_delete` (MEM-1). Every rule the tools enforce (MEM-8..11) and the stored record format
//! (MEM-13) live here, so every backend stores the same bytes and a value written by one reads the same in another
//! (MEM-12).
//!
//! Pieces:
//!
//! - [`MemoryStore`]: a backend. [`FileMemoryStore`] keeps one `<key>.md` file per entry (MEM-19..21);
//!   [`InMemoryStore`] keeps entries in the process and reports revisions like a KV bucket; `JetStreamMemory`
//!   (feature `nats`) keeps them in a JetStream KV bucket with compare-and-swap overwrites (MEM-22..27).
//! - [`MemorySession`]: one run's view of a store. It applies the rules, the entry cap and the read-before-update
//!   guard (MEM-25) for stores that ask for it, and turns outcomes into the tools' results.
//! - [`memory_note`] and [`memory_index`]: the system segments of LOOP-2 (MEM-17, MEM-15).
//! - [`encode`] and [`decode`]: the record format, for backends and for tools that inspect stored values.
//!
//! ```
//! use fisk_ai::memory::{FileMemoryStore, MemoryStore, memory_tools};
//! use fisk_ai::tool::{CallContext, ToolInput};
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let dir = tempfile::tempdir().unwrap();
//! let store: Arc<dyn MemoryStore> = Arc::new(FileMemoryStore::new(dir.path().join("memory")));
//! let tools = memory_tools(store.clone()); // no I/O yet
//! let names: Vec<&str> = tools.iter().map(|t| t.spec().name()).collect();
//! assert_eq!(names, ["memory_list", "memory_read", "memory_write", "memory_delete"]);
//!
//! let write =
//!     ToolInput::from_json(r#"{"key": "region", "description": "Where we deploy", "content": "eu-west-1"}"#).unwrap();
//! let out = tools[2].call(&write, &CallContext::new()).await;
//! assert_eq!(out.content(), r#"{"written":true}"#);
//! assert_eq!(store.list().await.unwrap()[0].key, "region");
//! # }
//! ```

mod backend;
mod file;
mod format;
mod in_memory;
#[cfg(feature = "nats")]
mod jetstream;
mod prompt;
mod rules;
mod session;
mod tools;

#[cfg(feature = "nats")]
pub use backend::JetStreamMemoryBackend;
pub use backend::{FileMemoryBackend, MemoryBackend, MemoryBackends, MemorySettings};
pub use file::FileMemoryStore;
pub use format::{decode, encode};
pub use in_memory::InMemoryStore;
#[cfg(feature = "nats")]
pub use jetstream::{JetStreamMemory, MIN_MAX_VALUE_SIZE};
pub use prompt::{memory_index, memory_note};
pub use rules::{
    MAX_CONTENT_BYTES, MAX_DESCRIPTION_CHARS, MAX_ENTRIES, MAX_INDEX_DESCRIPTION_CHARS, MAX_KEY_CHARS,
    normalize_description, validate_key,
};
pub use session::{MemorySession, WriteOutcome};
#[cfg(feature = "mcp")]
pub(crate) use tools::memory_specs;
pub use tools::memory_tools;

use async_trait::async_trait;
use std::fmt;

/// A stored entry as listings show it: its key and description (MEM-2).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Entry {
    /// The key (valid per MEM-8).
    pub key: String,
    /// The description as stored (empty when the stored value has no readable header).
    pub description: String,
}

impl Entry {
    /// An entry.
    pub fn new(key: impl Into<String>, description: impl Into<String>) -> Self {
        Entry { key: key.into(), description: description.into() }
    }
}

/// A stored value as a read returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stored {
    /// The description (empty when the value has no readable header, MEM-13).
    pub description: String,
    /// The body, verbatim.
    pub content: String,
    /// The backend's revision of this value, for compare-and-swap overwrites (MEM-25); `None` for backends
    /// without revisions, such as the file backend.
    pub revision: Option<u64>,
}

impl Stored {
    /// A stored value.
    pub fn new(description: impl Into<String>, content: impl Into<String>, revision: Option<u64>) -> Self {
        Stored { description: description.into(), content: content.into(), revision }
    }

    /// A stored value decoded from the record format (MEM-13), leniently.
    pub fn decode(value: &str, revision: Option<u64>) -> Self {
        let (description, content) = decode(value);
        Stored { description, content, revision }
    }
}

/// A value ready to store: a normalized, non-empty description (MEM-9) and content within the size limit (MEM-10).
///
/// The only way to build one is [`MemoryRecord::new`], so a backend can trust both fields.
///
/// ```
/// use fisk_ai::memory::MemoryRecord;
///
/// let record = MemoryRecord::new("  Where\twe deploy\n", "eu-west-1").unwrap();
/// assert_eq!(record.description(), "Where we deploy");
/// assert_eq!(record.encode(), "---\ndescription: Where we deploy\n---\n\neu-west-1");
/// assert!(MemoryRecord::new(" \n ", "x").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRecord {
    description: String,
    content: String,
}

impl MemoryRecord {
    /// Normalize `description` (MEM-9) and check both fields: an empty normalized description and content over
    /// [`MAX_CONTENT_BYTES`] are errors naming the rule.
    ///
    /// # Errors
    ///
    /// [`MemoryError`] naming the rule: a description that is empty once normalized (MEM-9), or content over
    /// [`MAX_CONTENT_BYTES`].
    pub fn new(description: &str, content: impl Into<String>) -> Result<Self, MemoryError> {
        let description = normalize_description(description)?;
        let content = content.into();
        rules::check_content(&content)?;
        Ok(MemoryRecord { description, content })
    }

    /// The normalized description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The body.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The stored bytes (MEM-13), identical for every backend.
    pub fn encode(&self) -> String {
        encode(&self.description, &self.content)
    }
}

/// What [`MemoryStore::create`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CreateOutcome {
    /// The key was new and now holds the record.
    Created {
        /// The new value's revision, when the backend has revisions.
        revision: Option<u64>,
    },
    /// The key already existed; nothing was written.
    Exists {
        /// The existing entry's description, when it could be read.
        existing_description: Option<String>,
    },
}

/// What [`MemoryStore::overwrite`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OverwriteOutcome {
    /// The value was replaced (or created, when the key was missing and no revision was expected).
    Written {
        /// The new value's revision, when the backend has revisions.
        revision: Option<u64>,
    },
    /// A compare-and-swap failed: the stored revision is not the expected one (or the key is gone). Nothing was
    /// written.
    Conflict {
        /// What the backend saw, for the model (for example `the stored revision is 7, expected 5`).
        reason: String,
    },
}

/// A memory failure: a rule broken by the model's input, or a backend failure (MEM-14). Tools turn every one into an
/// error result whose text is this error's message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// The key breaks MEM-8; the message names the rule.
    #[error("{0}")]
    InvalidKey(String),
    /// The description is empty after normalization (MEM-9).
    #[error("{0}")]
    InvalidDescription(String),
    /// The content is larger than [`MAX_CONTENT_BYTES`] (MEM-10).
    #[error("content is {size} bytes, over the {limit}-byte (64 KB) limit for one memory entry; store less")]
    TooLarge {
        /// The content's size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The store already holds [`MAX_ENTRIES`] entries and the write would create a new one (MEM-11).
    #[error(
        "memory is full: it holds the maximum of {limit} entries; an entry must be deleted with memory_delete \
         before a new key can be created (overwriting an existing key still works)"
    )]
    Full {
        /// The entry limit.
        limit: usize,
    },
    /// The backend failed (I/O, network, a corrupt bucket, ...).
    #[error("{message}")]
    Backend {
        /// What failed, naming the entry or path when known.
        message: String,
        /// The underlying cause.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
}

impl MemoryError {
    /// A backend failure described by `message`.
    pub fn backend(message: impl Into<String>) -> Self {
        MemoryError::Backend { message: message.into(), source: None }
    }

    /// A backend failure described by `message`, caused by `source` (its text is appended to the message).
    pub fn backend_with(message: impl fmt::Display, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        MemoryError::Backend { message: format!("{message}: {source}"), source: Some(Box::new(source)) }
    }

    /// Whether the model's input broke a rule (key, description, size, entry cap), as opposed to a backend failure.
    pub fn is_rule(&self) -> bool {
        !matches!(self, MemoryError::Backend { .. })
    }
}

/// A place memories live: one store per identity, shared by runs (and possibly by processes).
///
/// Keys reaching a store are valid per MEM-8 and records are built by [`MemoryRecord::new`]; a store still validates
/// keys it builds paths or subjects from ([`validate_key`]). Apart from [`create`](MemoryStore::create)'s
/// atomicity, a store holds no policy: the entry cap, the read-before-update guard and the tool results live in
/// [`MemorySession`], so the tools work unchanged over any backend.
///
/// Revisions: a backend with compare-and-swap (a JetStream KV bucket) returns revisions from reads and writes, and
/// honours `expected` in [`overwrite`](MemoryStore::overwrite). One without (the file backend) returns `None` and
/// ignores it.
///
/// A minimal in-process store, without revisions:
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::memory::{
///     CreateOutcome, Entry, MemoryError, MemoryStore, OverwriteOutcome, MemoryRecord, Stored, memory_tools,
/// };
/// use std::collections::BTreeMap;
/// use std::sync::{Arc, Mutex};
///
/// #[derive(Default)]
/// struct MapStore(Mutex<BTreeMap<String, String>>);
///
/// #[async_trait]
/// impl MemoryStore for MapStore {
///     async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
///         let map = self.0.lock().unwrap();
///         Ok(map.iter().map(|(k, v)| Entry::new(k.clone(), fisk_ai::memory::decode(v).0)).collect())
///     }
///
///     async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
///         Ok(self.0.lock().unwrap().get(key).map(|v| Stored::decode(v, None)))
///     }
///
///     async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
///         let mut map = self.0.lock().unwrap();
///         if let Some(old) = map.get(key) {
///             let existing_description = Some(fisk_ai::memory::decode(old).0);
///             return Ok(CreateOutcome::Exists { existing_description });
///         }
///         map.insert(key.to_owned(), record.encode());
///         Ok(CreateOutcome::Created { revision: None })
///     }
///
///     async fn overwrite(
///         &self,
///         key: &str,
///         record: &MemoryRecord,
///         _expected: Option<u64>,
///     ) -> Result<OverwriteOutcome, MemoryError> {
///         self.0.lock().unwrap().insert(key.to_owned(), record.encode());
///         Ok(OverwriteOutcome::Written { revision: None })
///     }
///
///     async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
///         Ok(self.0.lock().unwrap().remove(key).is_some())
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let store: Arc<dyn MemoryStore> = Arc::new(MapStore::default());
/// let record = MemoryRecord::new("Build flags", "--release").unwrap();
/// assert_eq!(store.create("build", &record).await.unwrap(), CreateOutcome::Created { revision: None });
/// assert!(matches!(store.create("build", &record).await.unwrap(), CreateOutcome::Exists { .. }));
/// assert_eq!(store.count().await.unwrap(), 1);
/// assert_eq!(memory_tools(store).len(), 4);
/// # });
/// ```
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// Every entry, sorted by key (MEM-2). A backend that cannot list completely fails rather than returning a
    /// partial list.
    async fn list(&self) -> Result<Vec<Entry>, MemoryError>;

    /// The value under `key`, or `None` when there is none (a deleted key is none).
    async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError>;

    /// Store `record` under `key` only if the key is new. Atomic: of two callers racing on one new key exactly one
    /// gets [`CreateOutcome::Created`] (MEM-5).
    async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError>;

    /// Replace the value under `key` atomically (readers never see a partial value, MEM-6); a missing key is
    /// created. With `expected` set, a backend with revisions writes only if the stored revision is `expected`
    /// (compare-and-swap) and otherwise returns [`OverwriteOutcome::Conflict`]; backends without revisions ignore
    /// it (last writer wins, MEM-21).
    async fn overwrite(
        &self,
        key: &str,
        record: &MemoryRecord,
        expected: Option<u64>,
    ) -> Result<OverwriteOutcome, MemoryError>;

    /// Remove `key`; `true` if something was removed, `false` if there was nothing to remove (MEM-7).
    async fn delete(&self, key: &str) -> Result<bool, MemoryError>;

    /// How many entries the store holds, for the entry cap (MEM-11). The default counts [`list`](Self::list).
    async fn count(&self) -> Result<usize, MemoryError> {
        Ok(self.list().await?.len())
    }

    /// Whether a run should count once and then track its own creates and deletes (MEM-27), because counting is
    /// expensive (a KV watch). The default, `false`, counts before every create, which also sees other writers.
    fn count_once_per_run(&self) -> bool {
        false
    }

    /// Whether an overwrite must be preceded, in the same run, by a read or write of the key whose revision is
    /// still current (MEM-25). Only meaningful for backends with revisions; the default is `false`.
    fn requires_read_before_update(&self) -> bool {
        false
    }

    /// The backend name shown by `info` and events: `file`, `jetstream`, ... The default is `custom`.
    fn backend(&self) -> &str {
        "custom"
    }
}
