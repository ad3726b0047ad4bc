//! The fenced journal writer (SESS-32, nats-wire §3).

use super::{OP_TIMEOUT, Shared};
use crate::error::{Error, Result};
use crate::session::SessionId;
use crate::session::append::AppendGuard;
use crate::session::record::JournalRecord;
use crate::session::store::JournalWriter;
use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage;
use async_trait::async_trait;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The header that fences on a subject filter rather than the target subject (nats-server 2.11+).
const FENCE_SUBJECT: &str = "Nats-Expected-Last-Subject-Sequence-Subject";

/// A pause between publish attempts while the server is unreachable.
const RETRY_PAUSE: Duration = Duration::from_millis(250);

/// Appends one session's records to its stream, each publish fenced on the journal's last stream sequence.
///
/// Returned (boxed) by [`JetStreamSessions`](super::JetStreamSessions)'s `create` and `open`, or concretely by
/// [`JetStreamSessions::create_writer`](super::JetStreamSessions::create_writer) when a caller wants its
/// [`nonce`](Self::nonce).
///
/// ```no_run
/// use fisk_ai::nats::{NatsConnection, NatsContext};
/// use fisk_ai::session::jetstream::JetStreamSessions;
/// use fisk_ai::session::{JournalWriter, SessionId};
///
/// # async fn demo(nats: NatsConnection) -> fisk_ai::Result<()> {
/// let sessions = JetStreamSessions::bind(&nats, "RUNS").await?;
/// let writer = sessions.create_writer(&SessionId::new("nightly")?).await?;
/// assert_eq!(writer.nonce().len(), 32);
/// # Ok(()) }
/// ```
pub struct JetStreamJournal {
    shared: Arc<Shared>,
    id: SessionId,
    nonce: String,
    /// A publish that failed leaves the journal's tail unknown, so nothing more is appended (SESS-33).
    guard: AppendGuard,
    /// The stream sequence of the journal's last message: the fence of the next publish (0 on create).
    fence: u64,
}

impl fmt::Debug for JetStreamJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JetStreamJournal")
            .field("stream", &self.shared.stream_name)
            .field("session", &self.id.as_str())
            .field("guard", &self.guard)
            .field("fence", &self.fence)
            .finish()
    }
}

/// What a fence rejection means (nats-wire §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rejection {
    /// The target subject holds our own message: its acknowledgement was lost; continue from this stream sequence.
    Adopt(u64),
    /// The journal's first record exists already: another run created the session.
    Exists,
    /// Another writer appended to the journal.
    Locked,
}

/// Decide a fence rejection from the last message on the target subject (its msg-id and stream sequence).
pub(super) fn decide(seq: u64, ours: &str, last_on_subject: Option<(Option<&str>, u64)>) -> Rejection {
    match last_on_subject {
        Some((Some(id), stream_seq)) if id == ours => Rejection::Adopt(stream_seq),
        _ if seq == 1 => Rejection::Exists,
        _ => Rejection::Locked,
    }
}

/// Whether `e` is a conflict: a fence (10071, 10164 on replicated streams) or the per-subject limit (10077).
fn is_conflict(e: &PublishError) -> bool {
    if matches!(e.kind(), PublishErrorKind::WrongLastSequence) {
        return true;
    }
    let text = e.to_string();
    ["10071", "10164", "10077"].iter().any(|code| text.contains(code))
}

/// Whether a later attempt may succeed: the server was unreachable or did not answer in time.
fn is_transient(e: &PublishError) -> bool {
    matches!(
        e.kind(),
        PublishErrorKind::TimedOut
            | PublishErrorKind::BrokenPipe
            | PublishErrorKind::MaxAckPending
            | PublishErrorKind::StreamNotFound
    )
}

/// A new writer's nonce: 32 lowercase hex characters (a KSUID's 16 random payload bytes).
fn nonce() -> String {
    use std::fmt::Write;
    use svix_ksuid::KsuidLike;
    let ksuid = svix_ksuid::Ksuid::now(None);
    ksuid.payload().iter().fold(String::with_capacity(32), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

impl JetStreamJournal {
    pub(super) fn new(shared: Arc<Shared>, id: SessionId, last_seq: u64, fence: u64) -> Self {
        JetStreamJournal { shared, id, nonce: nonce(), guard: AppendGuard::new(last_seq), fence }
    }

    /// This writer's nonce: every message it publishes carries `Nats-Msg-Id: <nonce>-<seq>`.
    pub fn nonce(&self) -> &str {
        &self.nonce
    }

    /// The seq of the last record in the journal.
    pub fn last_seq(&self) -> u64 {
        self.guard.last_seq()
    }

    fn msg_id(&self, seq: u64) -> String {
        format!("{}-{seq}", self.nonce)
    }

    fn error(&self, subject: &str, what: impl fmt::Display) -> Error {
        Error::session(format!(
            "cannot append to session {} (stream {}, subject {subject}, context {}): {what}",
            self.id, self.shared.stream_name, self.shared.context
        ))
    }

    /// Publish `body` as record `seq` and return its stream sequence, retrying an unreachable server until the
    /// operation bound; a rejected fence is decided by [`decide`].
    async fn publish(&self, seq: u64, body: Vec<u8>) -> Result<u64> {
        let subject = self.shared.subject(&self.id, seq);
        let message = PublishMessage::build()
            .payload(body.into())
            .message_id(self.msg_id(seq))
            .expected_last_subject_sequence(self.fence)
            .header(FENCE_SUBJECT, self.shared.filter(&self.id).as_str());
        let deadline = tokio::time::Instant::now() + OP_TIMEOUT;
        let mut last_error = String::from("no acknowledgement");
        loop {
            let attempt = async {
                // Double await (deps.md gotcha 11): the first only means "sent"; stream errors come with the ack.
                self.shared.js.send_publish(subject.clone(), message.clone()).await?.await
            };
            match tokio::time::timeout_at(deadline, attempt).await {
                Err(_) => {
                    return Err(
                        self.error(&subject, format!("no acknowledgement within {OP_TIMEOUT:?} ({last_error})"))
                    );
                }
                Ok(Ok(ack)) => return Ok(ack.sequence),
                Ok(Err(e)) if is_conflict(&e) => return self.rejected(seq, &subject, deadline).await,
                Ok(Err(e)) if is_transient(&e) => {
                    // No responders reads as "stream not found" both while JetStream restarts (transient) and when
                    // the stream was deleted (final, SESS-34): ask the server which it is.
                    if matches!(e.kind(), PublishErrorKind::StreamNotFound) && self.stream_is_gone(deadline).await {
                        return Err(self.error(&subject, self.gone()));
                    }
                    last_error = e.to_string();
                    if tokio::time::timeout_at(deadline, tokio::time::sleep(RETRY_PAUSE)).await.is_err() {
                        return Err(self.error(&subject, format!("no acknowledgement within {OP_TIMEOUT:?} ({e})")));
                    }
                }
                Ok(Err(e)) => return Err(self.error(&subject, &e)),
            }
        }
    }

    /// SESS-34: whether the server answers that the stream does not exist (JetStream API error 10059). No answer,
    /// or any other, is not evidence: the publish is retried within its bound.
    async fn stream_is_gone(&self, deadline: tokio::time::Instant) -> bool {
        use async_nats::jetstream::ErrorCode;
        use async_nats::jetstream::context::GetStreamErrorKind;
        let asked = tokio::time::timeout_at(deadline, self.shared.js.get_stream(&self.shared.stream_name)).await;
        matches!(asked, Ok(Err(e)) if matches!(e.kind(), GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND))
    }

    /// The final error of a deleted stream: which, and how to create it again.
    fn gone(&self) -> String {
        format!(
            "session stream {} no longer exists (deleted while the run was writing); the agent never creates it: \
             create it with: {}, then resume the session",
            self.shared.stream_name,
            super::bind::add_hint(&self.shared.stream_name, &self.shared.prefix)
        )
    }

    /// A fence rejection on `subject`: adopt our own message whose acknowledgement was lost, else refuse.
    async fn rejected(&self, seq: u64, subject: &str, deadline: tokio::time::Instant) -> Result<u64> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        // Within what is left of the append's bound (SESS-31).
        let last = tokio::time::timeout_at(deadline, self.shared.stream.get_last_raw_message_by_subject(subject)).await;
        let last = match last {
            Ok(Ok(m)) => Some(m),
            Ok(Err(e)) if e.kind() == LastRawMessageErrorKind::NoMessageFound => None,
            // Not knowing what is there is not evidence of another writer: say what failed instead.
            Ok(Err(e)) => {
                return Err(self.error(subject, format!("the publish was refused and reading back failed: {e}")));
            }
            Err(_) => return Err(self.error(subject, "the publish was refused and reading back timed out")),
        };
        let seen = last.as_ref().map(|m| (m.headers.get("Nats-Msg-Id").map(|v| v.as_str()), m.sequence));
        match decide(seq, &self.msg_id(seq), seen) {
            Rejection::Adopt(stream_seq) => Ok(stream_seq),
            Rejection::Exists => Err(self.error(subject, "the session already exists (another run created it)")),
            Rejection::Locked => Err(self.error(
                subject,
                "the session is locked: another run appended to its journal since this one read it; stop that run \
                 or resume the session again",
            )),
        }
    }
}

#[async_trait]
impl JournalWriter for JetStreamJournal {
    async fn append(&mut self, record: &JournalRecord) -> Result<()> {
        if !self.guard.admit(record.seq, || format!("session {} (stream {})", self.id, self.shared.stream_name))? {
            return Ok(());
        }
        let published = self.publish(record.seq, record.to_json()).await;
        self.fence = self.guard.settle(record.seq, published)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sess_32_our_own_message_on_the_target_subject_is_adopted() {
        assert_eq!(decide(3, "n-3", Some((Some("n-3"), 42))), Rejection::Adopt(42));
        assert_eq!(decide(1, "n-1", Some((Some("n-1"), 7))), Rejection::Adopt(7));
    }

    #[test]
    fn sess_32_a_foreign_message_is_the_lock_error_or_already_exists_for_seq_1() {
        assert_eq!(decide(3, "n-3", Some((Some("other-3"), 42))), Rejection::Locked);
        assert_eq!(decide(3, "n-3", Some((None, 42))), Rejection::Locked);
        assert_eq!(decide(3, "n-3", None), Rejection::Locked);
        assert_eq!(decide(1, "n-1", Some((Some("other-1"), 1))), Rejection::Exists);
        assert_eq!(decide(1, "n-1", None), Rejection::Exists);
    }

    #[test]
    fn nonces_are_32_lowercase_hex_and_differ() {
        let (a, b) = (nonce(), nonce());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)), "{a}");
        assert_ne!(a, b);
    }
}
