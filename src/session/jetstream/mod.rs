//! The JetStream backend (SESS-31, SESS-32, nats-wire §3): every session journal in one existing stream, one
//! message per record at `<prefix>.<id>._meta` (seq 1) and `<prefix>.<id>.<seq>`, each publish fenced on the
//! journal's last stream sequence so a concurrent writer is refused and nothing is overwritten.
//!
//! ```no_run
//! use fisk_ai::nats::{NatsConnection, NatsContext};
//! use fisk_ai::session::jetstream::JetStreamSessions;
//! use fisk_ai::session::SessionStore;
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let nats = NatsConnection::connect(&NatsContext::load(Some("prod"))?, "ops").await?;
//! let sessions = JetStreamSessions::bind(&nats, "RUNS").await?;
//! for entry in sessions.list().await? {
//!     println!("{}", entry.id);
//! }
//! # Ok(()) }
//! ```

mod bind;
mod writer;

pub use writer::JetStreamJournal;

use super::SessionId;
use super::record::JournalRecord;
use super::store::{JournalWriter, SessionEntry, SessionStore};
use crate::error::{Error, Result};
use crate::nats::NatsConnection;
use async_nats::jetstream::{self, stream::Stream};
use async_trait::async_trait;
use futures::StreamExt;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Binding a stream is bounded by this (SESS-31).
pub const BIND_TIMEOUT: Duration = Duration::from_secs(10);
/// Each store operation (create, open, read, list, remove, append) is bounded by this (SESS-31).
pub const OP_TIMEOUT: Duration = Duration::from_secs(15);
/// The per-session requests of a listing in flight at once.
const LIST_CONCURRENCY: usize = 16;
/// How long a read waits for the next message of a journal (nats-wire §3).
const FETCH_WAIT: Duration = Duration::from_secs(5);

/// What the store and its writers share.
pub(crate) struct Shared {
    js: jetstream::Context,
    stream: Stream,
    stream_name: String,
    prefix: String,
    context: String,
}

impl Shared {
    fn subject(&self, id: &SessionId, seq: u64) -> String {
        if seq == 1 { format!("{}.{id}._meta", self.prefix) } else { format!("{}.{id}.{seq}", self.prefix) }
    }

    fn filter(&self, id: &SessionId) -> String {
        format!("{}.{id}.>", self.prefix)
    }

    fn error(&self, id: &SessionId, what: impl fmt::Display) -> Error {
        Error::session(format!("session {id} (stream {}, context {}): {what}", self.stream_name, self.context))
    }

    /// `f` bounded by [`OP_TIMEOUT`].
    async fn bounded<T>(&self, what: &str, id: Option<&SessionId>, f: impl Future<Output = Result<T>>) -> Result<T> {
        tokio::time::timeout(OP_TIMEOUT, f).await.unwrap_or_else(|_| {
            let whose = id.map(|id| format!(" session {id}")).unwrap_or_default();
            Err(Error::nats(format!(
                "cannot {what}{whose} in stream {} (context {}): no answer within {OP_TIMEOUT:?}",
                self.stream_name, self.context
            )))
        })
    }
}

/// Session journals in an existing JetStream stream (SESS-31, SESS-32). Cheap to clone.
///
/// An append returns once the server acknowledges the record. The server syncs its store to disk on its own
/// schedule (every two minutes by default); run it with `jetstream { sync_interval: always }` for records that
/// survive a power loss as a file journal's do (SESS-14).
///
/// ```no_run
/// use fisk_ai::nats::{NatsConnection, NatsContext};
/// use fisk_ai::session::jetstream::JetStreamSessions;
/// use fisk_ai::session::{SessionId, SessionStore};
///
/// # async fn demo(nats: NatsConnection) -> fisk_ai::Result<()> {
/// let sessions = JetStreamSessions::bind(&nats, "RUNS").await?;
/// let records = sessions.read(&SessionId::new("nightly")?).await?;
/// println!("{} records", records.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct JetStreamSessions {
    shared: Arc<Shared>,
}

impl fmt::Debug for JetStreamSessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JetStreamSessions")
            .field("stream", &self.shared.stream_name)
            .field("prefix", &self.shared.prefix)
            .field("context", &self.shared.context)
            .finish()
    }
}

/// A parsed journal message: its record and stream sequence.
struct Stored {
    record: JournalRecord,
    stream_seq: u64,
}

impl JetStreamSessions {
    /// Bind the existing stream `stream` (never created here), within [`BIND_TIMEOUT`]: the server must be
    /// nats-server 2.11 or newer and the stream configured as SESS-31 says.
    ///
    /// # Errors
    ///
    /// A NATS error naming the version when the server is older than 2.11, the stream when it is missing or its
    /// information cannot be read, or the bind timed out; a configuration error on `harness.sessions.options.stream`
    /// listing every setting of the stream to change, each with the `nats stream edit` command that changes it.
    pub async fn bind(nats: &NatsConnection, stream: &str) -> Result<Self> {
        let bound = tokio::time::timeout(BIND_TIMEOUT, Self::bind_now(nats, stream)).await;
        bound.unwrap_or_else(|_| {
            Err(Error::nats(format!(
                "cannot bind session stream {stream} (context {}): no answer within {BIND_TIMEOUT:?}",
                nats.context()
            )))
        })
    }

    async fn bind_now(nats: &NatsConnection, name: &str) -> Result<Self> {
        let context = nats.context().to_owned();
        bind::check_version(name, &context, &nats.client().server_info().version)?;
        let js = jetstream::new(nats.client().clone());
        let mut stream = js.get_stream(name).await.map_err(|e| {
            let text = e.to_string();
            if text.contains("10059") || text.contains("not found") {
                Error::config_key(
                    "harness.sessions.options.stream",
                    format!(
                        "session stream {name} does not exist (context {context}); the agent never creates it: \
                         create it with: {}",
                        bind::add_hint(name, "runs")
                    ),
                )
            } else {
                Error::nats(format!("cannot read session stream {name} (context {context}): {text}")).with_source(e)
            }
        })?;
        let config = stream
            .info()
            .await
            .map_err(|e| Error::nats(format!("cannot read session stream {name} (context {context}): {e}")))?
            .config
            .clone();
        let prefix = bind::check_config(&config, &context)?;
        let shared = Shared { js, stream, stream_name: name.to_owned(), prefix, context };
        Ok(JetStreamSessions { shared: Arc::new(shared) })
    }

    /// The stream's name.
    pub fn stream(&self) -> &str {
        &self.shared.stream_name
    }

    /// The subject prefix journals live under (`ops.runs` for a stream bound to `ops.runs.>`).
    pub fn prefix(&self) -> &str {
        &self.shared.prefix
    }

    /// [`SessionStore::create`] returning the concrete writer.
    ///
    /// # Errors
    ///
    /// A session error when the session exists already; a NATS error when the stream cannot be asked in time.
    pub async fn create_writer(&self, id: &SessionId) -> Result<JetStreamJournal> {
        let s = &self.shared;
        s.bounded("create", Some(id), async {
            let meta = s.subject(id, 1);
            match s.stream.get_last_raw_message_by_subject(&meta).await {
                Ok(_) => Err(s.error(id, format!("already exists ({meta} holds its first record)"))),
                Err(e) if is_no_message(&e.to_string()) => {
                    Ok(JetStreamJournal::new(self.shared.clone(), id.clone(), 0, 0))
                }
                Err(e) => Err(s.error(id, format!("cannot check {meta}: {e}"))),
            }
        })
        .await
    }

    /// The subjects (with their message counts) `filter` matches.
    async fn subjects(&self, filter: &str) -> Result<Vec<String>> {
        let s = &self.shared;
        let mut info = s
            .stream
            .info_builder()
            .subjects(filter)
            .fetch()
            .await
            .map_err(|e| Error::nats(format!("cannot list {filter} in stream {}: {e}", s.stream_name)))?;
        let mut out = Vec::new();
        while let Some(next) = info.next().await {
            let (subject, _) =
                next.map_err(|e| Error::nats(format!("cannot list {filter} in stream {}: {e}", s.stream_name)))?;
            out.push(subject);
        }
        Ok(out)
    }

    /// Every record of `id`, sorted by seq, with its stream sequence.
    async fn read_stored(&self, id: &SessionId) -> Result<Vec<Stored>> {
        let s = &self.shared;
        let filter = s.filter(id);
        let subjects = self.subjects(&filter).await?;
        if !subjects.contains(&s.subject(id, 1)) {
            return Err(s.error(id, "no such session"));
        }
        let consumer = s
            .stream
            .create_consumer(jetstream::consumer::pull::OrderedConfig {
                filter_subject: filter.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| s.error(id, format!("cannot read {filter}: {e}")))?;
        // Deleted after the read rather than left to expire, so listings that read many journals leave no trail.
        let name = consumer.cached_info().name.clone();
        let messages = consumer.messages().await.map_err(|e| s.error(id, format!("cannot read {filter}: {e}")))?;
        let read = self.collect(id, &filter, messages, subjects.len()).await;
        let _ = s.stream.delete_consumer(&name).await;
        let mut out = read?;
        out.sort_by_key(|r| r.record.seq);
        Ok(out)
    }

    /// `n` messages of `filter`, parsed.
    async fn collect(
        &self,
        id: &SessionId,
        filter: &str,
        mut messages: jetstream::consumer::pull::Ordered,
        n: usize,
    ) -> Result<Vec<Stored>> {
        let s = &self.shared;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let next = tokio::time::timeout(FETCH_WAIT, messages.next()).await;
            let message = match next {
                Ok(Some(Ok(m))) => m,
                Ok(Some(Err(e))) => return Err(s.error(id, format!("cannot read {filter}: {e}"))),
                Ok(None) => return Err(s.error(id, format!("the read of {filter} ended early"))),
                Err(_) => return Err(s.error(id, format!("no message of {filter} within {FETCH_WAIT:?}"))),
            };
            let stream_seq = message.info().map(|i| i.stream_sequence).unwrap_or_default();
            out.push(self.parse(id, &message.subject, stream_seq, &message.payload)?);
        }
        Ok(out)
    }

    /// A journal message's record: its subject names its seq and its body must be that record. Anything else is
    /// corruption (there is no torn tail in a stream).
    fn parse(&self, id: &SessionId, subject: &str, stream_seq: u64, body: &[u8]) -> Result<Stored> {
        let s = &self.shared;
        let corrupt = |what: String| {
            Error::session(format!(
                "session {id} is corrupt: stream {}, subject {subject}, stream sequence {stream_seq}: {what}",
                s.stream_name
            ))
        };
        let token = subject.strip_prefix(&format!("{}.{id}.", s.prefix)).unwrap_or_default();
        let seq = match token {
            "_meta" => 1,
            t => t.parse::<u64>().ok().filter(|n| *n >= 2).ok_or_else(|| corrupt("not a journal subject".into()))?,
        };
        let record = JournalRecord::from_json(body)
            .map_err(|e| corrupt(format!("the body ({} bytes) is not a journal record: {e}", body.len())))?;
        if record.seq != seq {
            return Err(corrupt(format!("the body is record {}, not record {seq}", record.seq)));
        }
        Ok(Stored { record, stream_seq })
    }
}

/// Whether a get-last error means the subject holds no message.
fn is_no_message(text: &str) -> bool {
    text.contains("10037") || text.to_ascii_lowercase().contains("no message found")
}

#[async_trait]
impl SessionStore for JetStreamSessions {
    fn backend(&self) -> &str {
        "jetstream"
    }

    async fn create(&self, id: &SessionId) -> Result<Box<dyn JournalWriter>> {
        Ok(Box::new(self.create_writer(id).await?))
    }

    async fn open(&self, id: &SessionId) -> Result<(Vec<JournalRecord>, Box<dyn JournalWriter>)> {
        // No lock on open: a second writer is caught by the fence at its first append.
        let stored = self.shared.bounded("open", Some(id), self.read_stored(id)).await?;
        let fence = stored.iter().map(|r| r.stream_seq).max().unwrap_or_default();
        let last_seq = stored.last().map_or(0, |r| r.record.seq);
        let writer = JetStreamJournal::new(self.shared.clone(), id.clone(), last_seq, fence);
        Ok((stored.into_iter().map(|r| r.record).collect(), Box::new(writer)))
    }

    async fn read(&self, id: &SessionId) -> Result<Vec<JournalRecord>> {
        let stored = self.shared.bounded("read", Some(id), self.read_stored(id)).await?;
        Ok(stored.into_iter().map(|r| r.record).collect())
    }

    async fn exists(&self, id: &SessionId) -> Result<bool> {
        let s = &self.shared;
        s.bounded("check", Some(id), async {
            let meta = s.subject(id, 1);
            match s.stream.get_last_raw_message_by_subject(&meta).await {
                Ok(_) => Ok(true),
                Err(e) if is_no_message(&e.to_string()) => Ok(false),
                Err(e) => Err(s.error(id, format!("cannot check {meta}: {e}"))),
            }
        })
        .await
    }

    async fn list(&self) -> Result<Vec<SessionEntry>> {
        let s = &self.shared;
        s.bounded("list sessions", None, async {
            let metas = self.subjects(&format!("{}.*._meta", s.prefix)).await?;
            let head = format!("{}.", s.prefix);
            let mut ids = Vec::with_capacity(metas.len());
            for subject in &metas {
                let middle = subject.strip_prefix(head.as_str()).and_then(|r| r.strip_suffix("._meta"));
                ids.extend(middle.and_then(|m| SessionId::new(m).ok()));
            }
            // "updated" is the time of the run's last message: one request per session, several at once so a long
            // listing over a slow link stays within the bound; a session whose time cannot be read still lists.
            let updated = ids.into_iter().map(|id| async move {
                let last = s.stream.get_last_raw_message_by_subject(&s.filter(&id)).await;
                SessionEntry::new(id, last.ok().map(|m| SystemTime::from(m.time)))
            });
            Ok(futures::stream::iter(updated).buffer_unordered(LIST_CONCURRENCY).collect().await)
        })
        .await
    }

    async fn remove(&self, id: &SessionId) -> Result<()> {
        let s = &self.shared;
        s.bounded("remove", Some(id), async {
            let filter = s.filter(id);
            s.stream
                .purge()
                .filter(filter.as_str())
                .await
                .map_err(|e| s.error(id, format!("cannot purge {filter}: {e}")))?;
            Ok(())
        })
        .await
    }
}
