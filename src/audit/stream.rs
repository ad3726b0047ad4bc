//! The JetStream sink (AUD-5): one trail for a fleet. Each record is published with
//! `Nats-Expected-Last-Sequence`, so two writers cannot both link to the same record: the loser re-reads the
//! stream's last record, links to it, and publishes again. `Nats-Msg-Id` is the record's hash, so a publish retried
//! after a lost acknowledgement is stored once.

use super::record::{Chain, Entry};
use super::verify::{Broken, Verified};
use crate::error::{Error, Result};
use crate::nats::NatsConnection;
use async_nats::jetstream::{self, context::PublishErrorKind, stream::Stream};
use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::Mutex;

/// How often one record is re-linked after other writers won the race before the append gives up.
const MAX_RACES: usize = 64;

/// Records in a JetStream stream the operator made (never created here): one subject without wildcards, deletes and
/// purges denied, no limit that drops messages. Only the agents should be allowed to publish to its subject.
///
/// ```text
/// nats stream add AUDIT --subjects fisk.audit --storage file --deny-delete --deny-purge --defaults
/// ```
pub struct StreamSink {
    name: String,
    subject: String,
    js: jetstream::Context,
    stream: Stream,
    /// The chain after the last record this writer knows of, and that record's stream sequence.
    state: Mutex<(Chain, u64)>,
}

impl std::fmt::Debug for StreamSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSink").field("stream", &self.name).field("subject", &self.subject).finish()
    }
}

impl StreamSink {
    /// Bind the stream `name` over `nats`: it must exist and have exactly one subject, without wildcards.
    ///
    /// # Errors
    ///
    /// A configuration error on `harness.audit.stream` when the stream is missing (with the command that makes it)
    /// or its subjects do not fit; a NATS error when it cannot be read.
    pub async fn bind(nats: &NatsConnection, name: &str) -> Result<Self> {
        let key = "harness.audit.stream";
        let js = jetstream::new(nats.client().clone());
        let mut stream = js.get_stream(name).await.map_err(|e| {
            let text = e.to_string();
            if text.contains("10059") || text.contains("not found") {
                Error::config_key(
                    key,
                    format!(
                        "audit stream {name} does not exist (context {}); create it with: nats stream add {name} \
                         --subjects fisk.audit.{name} --storage file --deny-delete --deny-purge --defaults",
                        nats.context()
                    ),
                )
            } else {
                Error::nats(format!("cannot read audit stream {name}: {text}"))
            }
        })?;
        let info = stream.info().await.map_err(|e| Error::nats(format!("cannot read audit stream {name}: {e}")))?;
        // A stream that lets anyone delete or purge records, or that drops them by age or count, cannot keep a trail.
        let c = &info.config;
        if !c.deny_delete
            || !c.deny_purge
            || c.max_age != std::time::Duration::ZERO
            || c.max_messages > 0
            || c.max_bytes > 0
        {
            return Err(Error::config_key(
                key,
                format!(
                    "audit stream {name} must refuse deletes and purges and keep every message (deny_delete, \
                     deny_purge, no max_age, max_msgs or max_bytes); make it with: nats stream add {name} --subjects \
                     fisk.audit.{name} --storage file --deny-delete --deny-purge --defaults"
                ),
            ));
        }
        let subject = match info.config.subjects.as_slice() {
            [one] if !one.contains(['*', '>']) => one.clone(),
            other => {
                return Err(Error::config_key(
                    key,
                    format!(
                        "audit stream {name} must have exactly one subject without wildcards, so its records form \
                         one chain; it has {other:?}"
                    ),
                ));
            }
        };
        let state = last(&stream, name).await?;
        Ok(StreamSink { name: name.to_owned(), subject, js, stream, state: Mutex::new(state) })
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Publish one message, sent again (the same bytes and message id, so the stream stores it once) when its
    /// acknowledgement did not come in time.
    async fn send(
        &self,
        headers: async_nats::HeaderMap,
        payload: Bytes,
    ) -> std::result::Result<jetstream::publish::PublishAck, jetstream::context::PublishError> {
        let mut attempt = 0;
        loop {
            let sent = self.js.publish_with_headers(self.subject.clone(), headers.clone(), payload.clone()).await;
            let acked = match sent {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            match acked {
                Err(e) if matches!(e.kind(), PublishErrorKind::TimedOut) && attempt < 3 => attempt += 1,
                other => return other,
            }
        }
    }

    /// Publish one record linked to `state`, re-linking after another writer's record until it is stored.
    async fn publish(&self, state: &mut (Chain, u64), entry: &Entry) -> Result<()> {
        let fail = |why: String| Error::audit(format!("audit stream {}: {why}", self.name));
        for _ in 0..MAX_RACES {
            let mut chain = state.0.clone();
            let line = chain.seal(entry);
            let ours = chain.prev().to_owned();
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Nats-Expected-Last-Sequence", state.1.to_string().as_str());
            headers.insert("Nats-Msg-Id", ours.as_str());
            let acked = self.send(headers, Bytes::from(line)).await;
            match acked {
                Ok(ack) => {
                    *state = (chain, ack.sequence);
                    return Ok(());
                }
                Err(e)
                    if matches!(e.kind(), PublishErrorKind::WrongLastSequence) || e.to_string().contains("10071") =>
                {
                    *state = last(&self.stream, &self.name).await?;
                    // Stored already: the acknowledgement of an earlier attempt was lost.
                    if state.0.prev() == ours {
                        return Ok(());
                    }
                }
                Err(e) => return Err(fail(format!("cannot publish a record: {e}"))),
            }
        }
        Err(fail(format!("other writers kept appending; gave up after {MAX_RACES} attempts")))
    }
}

/// The chain after the stream's last record, and that record's sequence (0 for an empty stream).
async fn last(stream: &Stream, name: &str) -> Result<(Chain, u64)> {
    let mut stream = stream.clone();
    let info = stream.info().await.map_err(|e| Error::nats(format!("cannot read audit stream {name}: {e}")))?;
    let seq = info.state.last_sequence;
    if info.state.messages == 0 && seq > 0 {
        return Err(Error::audit(format!("audit stream {name}: its {seq} record(s) are gone (purged)")));
    }
    if info.state.messages == 0 {
        return Ok((Chain::genesis(), seq));
    }
    let message = stream
        .get_raw_message(seq)
        .await
        .map_err(|e| Error::audit(format!("audit stream {name}: message {seq}: {e}")))?;
    let chain = Chain::after(&message.payload)
        .map_err(|why| Error::audit(format!("audit stream {name}: message {seq} is {why}")))?;
    Ok((chain, seq))
}

#[async_trait]
impl super::AuditSink for StreamSink {
    async fn append(&self, entries: &[Entry]) -> Result<()> {
        let mut state = self.state.lock().await;
        for entry in entries {
            self.publish(&mut state, entry).await?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("stream {}", self.name)
    }
}

/// Check the trail in the stream `name` from its first message (AUD-7).
///
/// # Errors
///
/// A NATS error when the stream cannot be read. Inside, the first broken record (`at` is `stream NAME message N`),
/// a missing message, or a stream whose first message is gone.
pub async fn verify_stream(nats: &NatsConnection, name: &str) -> Result<std::result::Result<Verified, Broken>> {
    let js = jetstream::new(nats.client().clone());
    let mut stream =
        js.get_stream(name).await.map_err(|e| Error::nats(format!("cannot read audit stream {name}: {e}")))?;
    let state =
        stream.info().await.map_err(|e| Error::nats(format!("cannot read audit stream {name}: {e}")))?.state.clone();
    let mut chain = Chain::genesis();
    let broken = |seq: u64, chain: &Chain, why: String| Broken {
        at: format!("stream {name} message {seq}"),
        expected_seq: chain.next_seq(),
        why,
    };
    if state.messages == 0 && state.last_sequence == 0 {
        return Ok(Ok(Verified { records: 0, files: Vec::new(), head: chain.prev().to_owned() }));
    }
    // Records removed from the start (or all of them, by a purge) leave the stream's first sequence past 1.
    if state.first_sequence != 1 || state.messages == 0 {
        let why = format!("messages 1 to {} are gone (deleted or purged)", state.first_sequence.saturating_sub(1));
        return Ok(Err(broken(1, &chain, why)));
    }
    for seq in state.first_sequence..=state.last_sequence {
        let message = match stream.get_raw_message(seq).await {
            Ok(message) => message,
            Err(e) if e.to_string().contains("no message") || e.to_string().contains("10037") => {
                return Ok(Err(broken(seq, &chain, "the message is missing (deleted)".to_owned())));
            }
            Err(e) => return Err(Error::nats(format!("cannot read audit stream {name} message {seq}: {e}"))),
        };
        if let Err(why) = chain.check(&message.payload) {
            return Ok(Err(broken(seq, &chain, why)));
        }
    }
    Ok(Ok(Verified { records: chain.next_seq(), files: Vec::new(), head: chain.prev().to_owned() }))
}
