//! The JetStream backend (MEM-22..27, feature `nats`): memories in an existing KV bucket, with compare-and-swap
//! overwrites so agents sharing a bucket never lose each other's updates.

mod bind;
mod list;

pub use bind::MIN_MAX_VALUE_SIZE;

use super::{CreateOutcome, Entry, MemoryError, MemoryRecord, MemoryStore, OverwriteOutcome, Stored};
use crate::error::Result;
use crate::nats::NatsConnection;
use async_nats::jetstream::kv::{Operation, Store};
use async_trait::async_trait;
use bytes::Bytes;
use std::fmt;
use std::time::Duration;

/// Each read, create, overwrite or delete is bounded by this.
const OP_TIMEOUT: Duration = Duration::from_secs(15);

/// Memories in a JetStream KV bucket, one key per entry at `<prefix>.<key>` (MEM-24).
///
/// - It binds an existing bucket (never creating it) within 10 s, and refuses one with a TTL or a max value size
///   below [`MIN_MAX_VALUE_SIZE`] (MEM-23).
/// - Every write carries the bucket's revision: a create expects none, a guarded overwrite expects the revision the
///   run read or wrote, so two agents racing on one key cannot both win (MEM-25). Conflict codes 10071 and 10164
///   (replicated streams) both count as a conflict.
/// - By default runs must read a key before replacing it
///   ([`requires_read_before_update`](MemoryStore::requires_read_before_update));
///   [`with_read_before_update(false)`](Self::with_read_before_update) allows blind overwrites (MEM-26).
/// - Listing watches the prefix's latest values and fails rather than returning a partial list (MEM-27).
///
/// ```no_run
/// use fisk_ai::memory::{JetStreamMemory, MemoryStore, memory_tools};
/// use fisk_ai::nats::{NatsConnection, NatsContext};
/// use std::sync::Arc;
///
/// # async fn demo() -> fisk_ai::Result<()> {
/// let nats = NatsConnection::connect(&NatsContext::load(None)?, "ops").await?;
/// // Made once with `nats kv add AGENTS --history=1 --max-value-size=69600`.
/// let store = JetStreamMemory::bind(&nats, "AGENTS", "ops").await?;
/// let tools = memory_tools(Arc::new(store));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct JetStreamMemory {
    kv: Store,
    /// For the listing consumer's inbox.
    client: async_nats::Client,
    bucket: String,
    /// `""` for a flat keyspace.
    prefix: String,
    context: String,
    read_before_update: bool,
}

impl fmt::Debug for JetStreamMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JetStreamMemory")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("context", &self.context)
            .field("read_before_update", &self.read_before_update)
            .finish()
    }
}

impl JetStreamMemory {
    /// Bind the existing bucket `bucket` over `nats`, keeping keys under `prefix` (`""`: a flat keyspace shared
    /// with every agent using the bucket).
    ///
    /// # Errors
    ///
    /// A NATS error naming the bucket and context when it does not exist (with the command that creates it), has a
    /// TTL or too small a max value size, or cannot be reached within 10 s; a configuration error when `prefix` is
    /// not a valid key.
    pub async fn bind(nats: &NatsConnection, bucket: &str, prefix: &str) -> Result<Self> {
        let prefix = bind::resolve_prefix(Some(prefix), "", bucket)?;
        bind::bind(nats, bucket, prefix).await
    }

    /// Bind as `harness.memory` configures it: `options.prefix` unset means `identity` (MEM-24).
    pub(crate) async fn bind_configured(
        nats: &NatsConnection,
        bucket: &str,
        prefix: Option<&str>,
        identity: &str,
    ) -> Result<Self> {
        let prefix = bind::resolve_prefix(prefix, identity, bucket)?;
        bind::bind(nats, bucket, prefix).await
    }

    fn from_parts(kv: Store, client: async_nats::Client, bucket: String, prefix: String, context: String) -> Self {
        JetStreamMemory { kv, client, bucket, prefix, context, read_before_update: true }
    }

    /// Whether runs must read a key before overwriting it (MEM-25; on by default). Off allows blind overwrites
    /// (MEM-26: `no_require_read_before_update`).
    #[must_use]
    pub fn with_read_before_update(mut self, on: bool) -> Self {
        self.read_before_update = on;
        self
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix, `""` when the keyspace is flat.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The bucket key of a memory key.
    fn stored_key(&self, key: &str) -> Result<String, MemoryError> {
        crate::memory::rules::validate_key(key)?;
        Ok(if self.prefix.is_empty() { key.to_owned() } else { format!("{}.{key}", self.prefix) })
    }

    fn failure(&self, what: &str, key: &str, e: impl fmt::Display) -> MemoryError {
        MemoryError::backend(format!(
            "memory bucket {:?}: cannot {what} key {}: {e}",
            self.bucket,
            crate::memory::rules::shown_key(key)
        ))
    }

    /// `work` within [`OP_TIMEOUT`]: the client's own request timeout does not cover a send queued behind a long
    /// disconnect.
    async fn bounded<T>(
        &self,
        what: &str,
        key: &str,
        work: impl std::future::Future<Output = Result<T, MemoryError>>,
    ) -> Result<T, MemoryError> {
        tokio::time::timeout(OP_TIMEOUT, work).await.unwrap_or_else(|_| {
            Err(self.failure(what, key, format_args!("no answer within {}s", OP_TIMEOUT.as_secs())))
        })
    }

    /// The live value of a bucket key with its revision; `None` when absent or deleted.
    async fn entry(&self, key: &str, stored: &str) -> Result<Option<(Stored, u64)>, MemoryError> {
        let Some(entry) = self.kv.entry(stored).await.map_err(|e| self.failure("read", key, e))? else {
            return Ok(None);
        };
        if entry.operation != Operation::Put {
            return Ok(None);
        }
        let value = std::str::from_utf8(&entry.value)
            .map_err(|_| self.failure("read", key, "the stored value is not UTF-8 text, so no agent wrote it"))?;
        Ok(Some((Stored::decode(value, Some(entry.revision)), entry.revision)))
    }

    /// Publish `value` to `stored` expecting the key's last revision to be `expected` (0: no value yet).
    async fn put_expecting(&self, stored: &str, value: &Bytes, expected: u64) -> Put {
        match self.kv.update(stored, value.clone(), expected).await {
            Ok(revision) => Put::Written(revision),
            Err(e) if is_conflict(&e) => Put::Conflict,
            Err(e) => Put::Failed(e.to_string()),
        }
    }
}

/// What an expected-revision publish did.
enum Put {
    Written(u64),
    Conflict,
    Failed(String),
}

/// JetStream's "wrong last sequence": 10071, or 10164 on replicated streams, which async-nats does not map.
fn is_conflict(e: &async_nats::jetstream::kv::UpdateError) -> bool {
    use async_nats::jetstream::kv::UpdateErrorKind;
    if e.kind() == UpdateErrorKind::WrongLastRevision {
        return true;
    }
    let text = format!("{e} {:?}", std::error::Error::source(e));
    text.contains("10071") || text.contains("10164")
}

#[async_trait]
impl MemoryStore for JetStreamMemory {
    async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
        self.watch_list().await
    }

    async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
        let stored = self.stored_key(key)?;
        self.bounded("read", key, async { Ok(self.entry(key, &stored).await?.map(|(value, _)| value)) }).await
    }

    async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
        self.bounded("create", key, self.create_unbounded(key, record)).await
    }

    async fn overwrite(
        &self,
        key: &str,
        record: &MemoryRecord,
        expected: Option<u64>,
    ) -> Result<OverwriteOutcome, MemoryError> {
        self.bounded("write", key, self.overwrite_unbounded(key, record, expected)).await
    }

    /// nats-wire §5: a read, then a KV delete (a `DEL` marker, not a purge), expecting the revision read, so a
    /// value another agent wrote in between is never deleted unseen.
    async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
        let stored = self.stored_key(key)?;
        self.bounded("delete", key, async {
            let Some((_, revision)) = self.entry(key, &stored).await? else {
                return Ok(false);
            };
            match self.kv.delete_expect_revision(stored.as_str(), Some(revision)).await {
                Ok(()) => Ok(true),
                Err(e) if is_conflict(&e) => Err(self.failure(
                    "delete",
                    key,
                    "another writer changed it meanwhile, so it was kept; read it, then delete it again if it should \
                     still go",
                )),
                Err(e) => Err(self.failure("delete", key, e)),
            }
        })
        .await
    }

    fn count_once_per_run(&self) -> bool {
        true
    }

    fn requires_read_before_update(&self) -> bool {
        self.read_before_update
    }

    fn backend(&self) -> &str {
        "jetstream"
    }
}

/// The writes' bodies, each bounded by its trait method.
impl JetStreamMemory {
    /// nats-wire §5: expect no value; over a delete marker, expect the marker's revision. A conflict means the
    /// key exists (or was just created by another agent).
    async fn create_unbounded(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
        let stored = self.stored_key(key)?;
        let value = Bytes::from(record.encode());
        let mut expected = 0;
        // A create can lose to a concurrent delete and then a concurrent create; two rounds settle every honest race.
        for _ in 0..3 {
            match self.put_expecting(&stored, &value, expected).await {
                Put::Written(revision) => return Ok(CreateOutcome::Created { revision: Some(revision) }),
                Put::Failed(e) => return Err(self.failure("create", key, e)),
                Put::Conflict => {}
            }
            match self.kv.entry(stored.as_str()).await.map_err(|e| self.failure("create", key, e))? {
                Some(entry) if entry.operation == Operation::Put => {
                    let existing = std::str::from_utf8(&entry.value).ok().map(|v| super::decode(v).0);
                    let existing_description = existing.filter(|d| !d.is_empty());
                    return Ok(CreateOutcome::Exists { existing_description });
                }
                Some(marker) => expected = marker.revision,
                None => expected = 0,
            }
        }
        Err(self.failure("create", key, "the key kept changing under concurrent writers; try again"))
    }

    async fn overwrite_unbounded(
        &self,
        key: &str,
        record: &MemoryRecord,
        expected: Option<u64>,
    ) -> Result<OverwriteOutcome, MemoryError> {
        let stored = self.stored_key(key)?;
        let value = Bytes::from(record.encode());
        let Some(expected) = expected else {
            let revision = self.kv.put(stored.as_str(), value).await.map_err(|e| self.failure("write", key, e))?;
            return Ok(OverwriteOutcome::Written { revision: Some(revision) });
        };
        match self.put_expecting(&stored, &value, expected).await {
            Put::Written(revision) => Ok(OverwriteOutcome::Written { revision: Some(revision) }),
            Put::Failed(e) => Err(self.failure("write", key, e)),
            Put::Conflict => {
                let now = match self.entry(key, &stored).await {
                    Ok(Some((_, revision))) => format!("the stored revision is now {revision}"),
                    Ok(None) => "the key was deleted".to_owned(),
                    Err(_) => "the stored revision changed".to_owned(),
                };
                Ok(OverwriteOutcome::Conflict { reason: format!("{now}; this run last saw revision {expected}") })
            }
        }
    }
}
