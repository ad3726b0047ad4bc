//! One request and its reply over NATS, held to the a2a limits (A2A-10, docs/nats-wire.md §2): bounded in time
//! and by a cancellation token, the services framework's error headers recognized, the reply checked for size,
//! JSON, protocol and schema before anything reads it.

use crate::nats::wire::{MAX_MESSAGE_BYTES, MessageKind, Rejection};
use crate::tool::CancellationToken;
use async_nats::client::{Request, RequestErrorKind};
use async_nats::service::{NATS_SERVICE_ERROR, NATS_SERVICE_ERROR_CODE};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// The most of a peer's error description kept in an error: a peer chooses that text, and it reaches the model.
const MAX_PEER_TEXT: usize = 1024;

/// Why an exchange produced no usable reply. Its text names the host, never the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No responders, or no reply before the deadline: `remote agent "<host>" unavailable`, naming the subject.
    Unavailable(String),
    /// The peer's transport error reply (`Nats-Service-Error-Code` / `Nats-Service-Error`).
    Refused(String),
    /// A reply that is too large, not JSON, of the wrong protocol or against the schema.
    BadReply(String),
    /// Any other client error (a closed connection, say).
    Client(String),
    /// The caller's cancellation token fired first.
    Cancelled,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Unavailable(text) | Failure::Refused(text) | Failure::BadReply(text) | Failure::Client(text) => {
                f.write_str(text)
            }
            Failure::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl Failure {
    /// Whether the host could not be reached at all (a transport problem rather than a bad peer).
    pub(crate) fn is_transport(&self) -> bool {
        matches!(self, Failure::Unavailable(_) | Failure::Client(_))
    }
}

/// One request: where it goes, what it is, and the id its reply must echo.
pub(crate) struct Outgoing<'a> {
    pub(crate) host: &'a str,
    pub(crate) subject: &'a str,
    pub(crate) id: &'a str,
    pub(crate) body: Vec<u8>,
    /// The kind of the reply.
    pub(crate) kind: MessageKind,
}

/// A reply that passed every check: its body, decoded, and how many bytes it took on the wire.
pub(crate) struct Received {
    pub(crate) value: Value,
    pub(crate) read: usize,
}

/// Send the request and return the reply, decoded and validated as its kind, and answering this very request.
/// The raw reply is dropped before this returns: only the decoded value is kept.
pub(crate) async fn exchange(
    client: &async_nats::Client,
    out: Outgoing<'_>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Received, Failure> {
    let Outgoing { host, subject, id, body, kind } = out;
    let request = Request::new().payload(body.into()).timeout(Some(timeout));
    let sent = client.send_request(subject.to_owned(), request);
    // The client's own timeout bounds the wait; the outer one is a second fence should it not fire.
    let reply = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(Failure::Cancelled),
        r = tokio::time::timeout(timeout.saturating_add(Duration::from_secs(1)), sent) => r,
    };
    let unavailable = |why: String| Failure::Unavailable(format!("remote agent \"{host}\" unavailable: {why}"));
    let within = crate::config::format_duration(timeout);
    let message = match reply {
        Err(_) => return Err(unavailable(format!("no reply on {subject} within {within}"))),
        Ok(Err(e)) => {
            return Err(match e.kind() {
                RequestErrorKind::NoResponders => unavailable(format!("no responders on {subject}")),
                RequestErrorKind::TimedOut => unavailable(format!("no reply on {subject} within {within}")),
                _ => Failure::Client(format!("remote agent \"{host}\": request on {subject} failed: {e}")),
            });
        }
        Ok(Ok(message)) => message,
    };
    if let Some(refused) = service_error(host, message.headers.as_ref()) {
        return Err(refused);
    }
    let read = message.length;
    let value = decode(host, kind, &message.payload)?;
    drop(message);
    // A sanity check, not authentication (NATS permissions are the boundary): a reply must answer this request
    // and come from the host asked.
    if value.get("request").and_then(Value::as_str) != Some(id) {
        return Err(Failure::BadReply(format!("remote agent \"{host}\" sent a reply to another request")));
    }
    if value.pointer("/sender/name").and_then(Value::as_str) != Some(host) {
        return Err(Failure::BadReply(format!("remote agent \"{host}\" sent a reply from another agent")));
    }
    Ok(Received { value, read })
}

/// A2A-10: the framework's error reply, reported with its code and description.
fn service_error(host: &str, headers: Option<&async_nats::HeaderMap>) -> Option<Failure> {
    let headers = headers?;
    let code = headers.get(NATS_SERVICE_ERROR_CODE).map(|v| v.as_str());
    let text = headers.get(NATS_SERVICE_ERROR).map(|v| v.as_str());
    if code.is_none() && text.is_none() {
        return None;
    }
    let code = crate::gate::sanitize(code.unwrap_or("?"), 16);
    let text = crate::gate::sanitize(text.unwrap_or(""), MAX_PEER_TEXT);
    Some(Failure::Refused(format!("remote agent \"{host}\" refused the request: error {code}: {text}")))
}

/// The same limits a server holds requests to (A2A-10), for a reply.
fn decode(host: &str, kind: MessageKind, body: &[u8]) -> Result<Value, Failure> {
    kind.decode(body).map_err(|rejection| {
        let why = match rejection {
            Rejection::Oversize => format!("a reply of {} bytes, over the {MAX_MESSAGE_BYTES}-byte limit", body.len()),
            Rejection::Invalid(why) => format!("an invalid reply: {}", crate::gate::sanitize(&why, MAX_PEER_TEXT)),
            Rejection::Protocol { got, want } => {
                format!("a reply of the wrong protocol: got {:?}, want {want:?}", crate::gate::sanitize(&got, 200))
            }
        };
        Failure::BadReply(format!("remote agent \"{host}\" sent {why}"))
    })
}
