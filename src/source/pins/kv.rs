//! Pins in a JetStream KV bucket, shared by every agent of a fleet (PIN-6).

use super::Pins;
use super::store::{PinStore, validate_server_key};
use crate::error::{Error, Result};
use crate::nats::NatsConnection;
use async_nats::jetstream::kv::{CreateErrorKind, Store};
use async_trait::async_trait;
use bytes::Bytes;
use futures::TryStreamExt;
use std::time::Duration;

/// Binding, and each read or write, is bounded by this.
const OP_TIMEOUT: Duration = Duration::from_secs(10);
/// A stored record larger than this is refused rather than parsed.
const MAX_VALUE: usize = 32 << 20;

/// Pins in an existing JetStream KV bucket, one key per server: `<identity>.<server key>`, so agents of one identity
/// share their pins wherever they run and agents of another identity never see them.
///
/// The bucket is bound, never created (an operator sets its replicas and limits): make it once with
/// `nats kv add FISK_AI_PINS --history=5`. A first pin is a KV create, so when two agents pin a server at once the
/// first wins and the other compares against it. A server's pins are one value, so the bucket's max value size
/// (the server's max payload, 1 MiB by default) bounds how many tools one server can have pinned: about 5,000.
///
/// ```no_run
/// use fisk_ai::nats::{NatsConnection, NatsContext};
/// use fisk_ai::source::pins::KvPinStore;
///
/// # async fn demo() -> fisk_ai::Result<()> {
/// let nats = NatsConnection::connect(&NatsContext::load(None)?, "ops").await?;
/// let store = KvPinStore::bind(&nats, "FISK_AI_PINS", "ops").await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct KvPinStore {
    kv: Store,
    bucket: String,
    identity: String,
}

impl std::fmt::Debug for KvPinStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvPinStore").field("bucket", &self.bucket).field("identity", &self.identity).finish()
    }
}

impl KvPinStore {
    /// Bind the existing bucket `bucket` over `nats`, for the agent `identity`.
    ///
    /// # Errors
    ///
    /// A NATS error naming the bucket when it does not exist (with the command that makes it) or cannot be reached
    /// within 10 s; a configuration error when `identity` cannot be part of a key.
    pub async fn bind(nats: &NatsConnection, bucket: &str, identity: &str) -> Result<Self> {
        // No dots: identity `a` must not list the keys of identity `a.b`.
        if identity.contains('.') {
            return Err(Error::config(format!("the identity {identity:?} cannot prefix pin keys: it holds a '.'")));
        }
        validate_server_key(identity)?;
        let js = async_nats::jetstream::new(nats.client().clone());
        let context = nats.context().to_owned();
        let kv = tokio::time::timeout(OP_TIMEOUT, js.get_key_value(bucket))
            .await
            .map_err(|_| {
                Error::nats(format!(
                    "binding pin bucket {bucket:?} (NATS context {context}) took over {}s; is JetStream enabled?",
                    OP_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| {
                let text = e.to_string();
                if text.contains("10059") || text.to_ascii_lowercase().contains("not found") {
                    Error::nats(format!(
                        "pin bucket {bucket:?} does not exist (NATS context {context}); the agent never creates it: \
                         create it with `nats kv add {bucket} --history=5`"
                    ))
                } else {
                    Error::nats(format!("cannot bind pin bucket {bucket:?} (NATS context {context}): {text}"))
                }
            })?;
        Ok(KvPinStore { kv, bucket: bucket.to_owned(), identity: identity.to_owned() })
    }

    fn key(&self, server: &str) -> Result<String> {
        validate_server_key(server)?;
        Ok(format!("{}.{server}", self.identity))
    }

    fn failure(&self, what: &str, server: &str, e: impl std::fmt::Display) -> Error {
        Error::source_failed(format!("cannot {what} the pins of {server} in bucket {:?}: {e}", self.bucket))
    }

    async fn bounded<T>(&self, what: &str, server: &str, work: impl Future<Output = Result<T>>) -> Result<T> {
        tokio::time::timeout(OP_TIMEOUT, work).await.map_err(|_| self.failure(what, server, "timed out after 10s"))?
    }

    fn encode(&self, server: &str, pins: &Pins) -> Result<Bytes> {
        // Never write what a read would refuse.
        super::store::check_stored(pins, &format!("the pins of {server}"))?;
        serde_json::to_vec(pins).map(Bytes::from).map_err(|e| self.failure("encode", server, e))
    }
}

#[async_trait]
impl PinStore for KvPinStore {
    fn describe(&self) -> String {
        format!("pin bucket {:?}", self.bucket)
    }

    async fn load(&self, server: &str) -> Result<Option<Pins>> {
        let key = self.key(server)?;
        self.bounded("read", server, async {
            let Some(value) = self.kv.get(key.as_str()).await.map_err(|e| self.failure("read", server, e))? else {
                return Ok(None);
            };
            if value.len() > MAX_VALUE {
                return Err(self.failure("read", server, format!("the record is {} bytes", value.len())));
            }
            let pins = serde_json::from_slice(&value).map_err(|e| self.failure("read", server, e))?;
            let place = format!("pin bucket {:?} (key {key})", self.bucket);
            super::store::check_stored(&pins, &place)?;
            Ok(Some(pins))
        })
        .await
    }

    async fn save(&self, server: &str, pins: &Pins) -> Result<()> {
        let (key, value) = (self.key(server)?, self.encode(server, pins)?);
        self.bounded("write", server, async {
            self.kv.put(key.as_str(), value).await.map(drop).map_err(|e| self.failure("write", server, e))
        })
        .await
    }

    async fn create(&self, server: &str, pins: &Pins) -> Result<bool> {
        let (key, value) = (self.key(server)?, self.encode(server, pins)?);
        self.bounded("create", server, async {
            match self.kv.create(key.as_str(), value).await {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == CreateErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(self.failure("create", server, e)),
            }
        })
        .await
    }

    async fn forget(&self, server: &str) -> Result<bool> {
        let key = self.key(server)?;
        self.bounded("forget", server, async {
            let existed = self.kv.get(key.as_str()).await.map_err(|e| self.failure("forget", server, e))?.is_some();
            if existed {
                self.kv.delete(key.as_str()).await.map_err(|e| self.failure("forget", server, e))?;
            }
            Ok(existed)
        })
        .await
    }

    async fn servers(&self) -> Result<Vec<String>> {
        let prefix = format!("{}.", self.identity);
        self.bounded("list", "every server", async {
            let keys = self.kv.keys().await.map_err(|e| self.failure("list", "every server", e))?;
            let all: Vec<String> = keys.try_collect().await.map_err(|e| self.failure("list", "every server", e))?;
            // A key a peer wrote that no pin check would is not a server of ours.
            let mine = all.iter().filter_map(|k| k.strip_prefix(&prefix)).filter(|k| validate_server_key(k).is_ok());
            let mut mine: Vec<String> = mine.map(str::to_owned).collect();
            mine.sort();
            Ok(mine)
        })
        .await
    }
}
