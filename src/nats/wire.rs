//! The a2a v1 wire format (SPEC A2A-6..10, docs/nats-wire.md §2): four JSON messages, each one object carrying
//! the header fields beside its own, checked against fisk-ai's own JSON Schemas on the way in.
//!
//! Writers leave out empty and false optional fields and never write `null` or a property outside the schemas,
//! since a Go peer rejects the whole message; readers default what is absent.
//!
//! ```
//! use fisk_ai::nats::wire::{MessageKind, discovery_subject, tool_subject};
//! use serde_json::json;
//!
//! assert_eq!(tool_subject("ops"), "choria.fisk-ai.tool.ops");
//! assert_eq!(discovery_subject("ops"), "choria.fisk-ai.discovery.ops");
//!
//! let request = json!({
//!     "protocol": "io.choria.fisk-ai.v1.tool.request",
//!     "id": "2GbBFMYjIqJX0zFXuSpWpENKc4f", "request": "2GbBFMYjIqJX0zFXuSpWpENKc4f",
//!     "conversation": "2GbBFMYjIqJX0zFXuSpWpENKc4f", "sequence": 0, "time": "2026-12-01T10:00:00Z",
//!     "sender": {"name": "caller"}, "name": "cow_say", "input": {"text": "hi"}
//! });
//! assert!(MessageKind::ToolRequest.validate(&request).is_ok());
//!
//! let mut extra = request.clone();
//! extra["priority"] = json!(1); // not in the schema: a Go peer would reject it, so do we
//! assert!(MessageKind::ToolRequest.validate(&extra).is_err());
//! ```

use crate::json::Twice;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::sync::OnceLock;

/// The protocol namespace agents advertise in their card (A2A-8).
pub const NAMESPACE: &str = "io.choria.fisk-ai.v1";

/// The largest message accepted in either direction (A2A-10): 768 KiB.
pub const MAX_MESSAGE_BYTES: usize = 786_432;

/// The subject discovery requests for `identity` go to (A2A-3).
pub fn discovery_subject(identity: &str) -> String {
    format!("choria.fisk-ai.discovery.{identity}")
}

/// The subject tool requests for `identity` go to (A2A-3).
pub fn tool_subject(identity: &str) -> String {
    format!("choria.fisk-ai.tool.{identity}")
}

/// One of the four a2a v1 messages (A2A-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageKind {
    /// `io.choria.fisk-ai.v1.discovery.request`: asks an agent for its card.
    DiscoveryRequest,
    /// `io.choria.fisk-ai.v1.discovery.reply`: the agent card (A2A-8).
    DiscoveryReply,
    /// `io.choria.fisk-ai.v1.tool.request`: calls one tool (A2A-9).
    ToolRequest,
    /// `io.choria.fisk-ai.v1.tool.reply`: the call's result (A2A-9).
    ToolReply,
}

impl MessageKind {
    /// Every kind, in protocol order.
    pub const ALL: [MessageKind; 4] =
        [MessageKind::DiscoveryRequest, MessageKind::DiscoveryReply, MessageKind::ToolRequest, MessageKind::ToolReply];

    /// The protocol id the message's `protocol` field carries.
    pub fn protocol(self) -> &'static str {
        match self {
            MessageKind::DiscoveryRequest => "io.choria.fisk-ai.v1.discovery.request",
            MessageKind::DiscoveryReply => "io.choria.fisk-ai.v1.discovery.reply",
            MessageKind::ToolRequest => "io.choria.fisk-ai.v1.tool.request",
            MessageKind::ToolReply => "io.choria.fisk-ai.v1.tool.reply",
        }
    }

    /// fisk-ai's JSON Schema (draft 2020-12) for this message.
    pub fn schema(self) -> &'static Value {
        &compiled()[self as usize].0
    }

    /// Check `message` against [`schema`](MessageKind::schema).
    ///
    /// # Errors
    ///
    /// The first validation error, naming the property (`/sender/name: ...`).
    pub fn validate(self, message: &Value) -> Result<(), String> {
        match &compiled()[self as usize].1 {
            Ok(validator) => validator.validate(message).map_err(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
            }),
            Err(e) => Err(format!("the {} schema does not compile: {e}", self.protocol())),
        }
    }

    /// Parse, check the protocol, then validate an inbound body (A2A-10).
    pub(crate) fn decode(self, body: &[u8]) -> Result<Value, Rejection> {
        self.check(parse(body)?)
    }

    /// Check a parsed inbound body's protocol, then validate it (A2A-10).
    fn check(self, value: Value) -> Result<Value, Rejection> {
        match value.get("protocol").and_then(Value::as_str) {
            Some(p) if p != self.protocol() => {
                return Err(Rejection::Protocol { got: peer_text(p), want: self.protocol() });
            }
            _ => {}
        }
        self.validate(&value).map_err(|e| Rejection::invalid(&e))?;
        Ok(value)
    }
}

/// An inbound body parsed, within the size peers may send (A2A-10).
fn parse(body: &[u8]) -> Result<Value, Rejection> {
    if body.len() > MAX_MESSAGE_BYTES {
        return Err(Rejection::Oversize);
    }
    // Read as `Value` reads it (a key twice: the last kept), but refusing serde_json's private keys, which `Value`
    // would read as the JSON in their strings (see `crate::json`).
    crate::json::from_slice(body, Twice::LastWins).map_err(|e| Rejection::invalid(&e.to_string()))
}

/// A tool request a server received, decoded and checked (A2A-9, A2A-10): one that plainly conforms is read
/// straight into its fields (`super::conforming`), anything else is judged by the schema as [`MessageKind::decode`]
/// does.
pub(crate) fn tool_request(body: &[u8]) -> Result<Inbound, Rejection> {
    if body.len() > MAX_MESSAGE_BYTES {
        return Err(Rejection::Oversize);
    }
    match super::conforming::tool_request(body) {
        Some(request) => Ok(request),
        None => slow(body),
    }
}

/// The schema's path: parse, check, then read the typed request.
fn slow(body: &[u8]) -> Result<Inbound, Rejection> {
    let request = MessageKind::ToolRequest.decode(body).and_then(typed::<ToolRequest>)?;
    // Fails closed: an input it cannot find again is refused, never merged.
    super::conforming::admitted(request, body).ok_or_else(|| Rejection::invalid("input could not be read"))
}

/// Not API: a hook for the property tests. A tool request's body decoded both ways: what the conforming reader
/// admits (`None`: it left the body to the schema) and what the schema and serde make of it, each as what a server
/// keeps of it (request, conversation, sender, tool, input) encoded, or the refusal's text.
#[doc(hidden)]
pub fn tool_request_both_ways(body: &[u8]) -> (Option<Vec<u8>>, Result<Vec<u8>, String>) {
    // What a server keeps of a request; its input parsed, so texts that mean the same compare equal.
    let kept = |r: Inbound| {
        let input = r.input.to_value().unwrap_or(Value::Null);
        encode(&(r.request, r.conversation, r.sender, r.name, input, r.duplicate))
    };
    let fast = super::conforming::tool_request(body).map(kept);
    (fast, slow(body).map(kept).map_err(|e| e.to_string()))
}

type Compiled = [(Value, Result<jsonschema::Validator, String>); 4];

fn compiled() -> &'static Compiled {
    static SCHEMAS: OnceLock<Compiled> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let texts = [
            include_str!("schemas/discovery.request.json"),
            include_str!("schemas/discovery.reply.json"),
            include_str!("schemas/tool.request.json"),
            include_str!("schemas/tool.reply.json"),
        ];
        texts.map(|text| {
            // The texts are ours and tested; a parse failure would surface as the compile error below.
            let schema: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            // `time` is advisory (A2A-6): its format is not enforced, as the reference does not.
            let validator =
                jsonschema::options().should_validate_formats(false).build(&schema).map_err(|e| e.to_string());
            (schema, validator)
        })
    })
}

/// The longest piece of a peer's text (a key it sent, a protocol it named) a rejection quotes.
const PEER_TEXT_LIMIT: usize = 512;

/// Text a peer controls, made safe for a NATS header, the operator's log and a terminal: control characters
/// (CR and LF would break the header) and escape sequences out, invisible characters escaped, length capped.
pub(crate) fn peer_text(text: &str) -> String {
    crate::gate::sanitize(text, PEER_TEXT_LIMIT)
}

/// Why an inbound body was refused: the services framework's `400` error reply (A2A-10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    Oversize,
    Invalid(String),
    Protocol { got: String, want: &'static str },
}

impl Rejection {
    /// A validation failure whose text quotes the peer's message (an unexpected key, say): sanitized and capped.
    pub(crate) fn invalid(why: &str) -> Rejection {
        Rejection::Invalid(crate::gate::sanitize(why, 4 * PEER_TEXT_LIMIT))
    }
}

impl fmt::Display for Rejection {
    /// The `Nats-Service-Error` texts of docs/nats-wire.md §2.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Oversize => write!(f, "request exceeds {MAX_MESSAGE_BYTES} bytes"),
            Rejection::Invalid(why) => write!(f, "invalid request: {why}"),
            Rejection::Protocol { got, want } => write!(f, "unexpected message protocol: got {got:?}, want {want:?}"),
        }
    }
}

/// `{name, instance?}` (A2A-6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Peer {
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) instance: Option<String>,
}

impl Peer {
    pub(crate) fn named(name: &str) -> Peer {
        Peer { name: name.to_owned(), instance: None }
    }
}

/// The header every message carries (A2A-6). Absent optional fields are left out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Header {
    pub(crate) protocol: String,
    pub(crate) id: String,
    pub(crate) request: String,
    pub(crate) conversation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parent: Option<String>,
    #[serde(default)]
    pub(crate) sequence: u64,
    #[serde(default)]
    pub(crate) time: String,
    pub(crate) sender: Peer,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) recipient: Option<Peer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) must_understand: Option<bool>,
}

impl Header {
    /// A request from `sender` to `target`: one fresh KSUID as id, request and conversation; sequence 0.
    pub(crate) fn request(kind: MessageKind, sender: &str, target: &str) -> Header {
        let id = ksuid();
        Header {
            protocol: kind.protocol().to_owned(),
            request: id.clone(),
            conversation: id.clone(),
            id,
            parent: None,
            sequence: 0,
            time: now(),
            sender: Peer::named(sender),
            recipient: Some(Peer::named(target)),
            must_understand: None,
        }
    }

    /// The reply to `to`: a fresh id, its request and conversation echoed, addressed back to its sender.
    #[cfg_attr(not(test), allow(dead_code, reason = "serve::a2a writes replies; remote import only reads them"))]
    pub(crate) fn reply(kind: MessageKind, to: &Header, sender: &str) -> Header {
        let origin = Origin { request: &to.request, conversation: &to.conversation, sender: &to.sender.name };
        Header::reply_to(kind, origin, sender)
    }

    /// The reply to the request `to` came from.
    pub(crate) fn reply_to(kind: MessageKind, to: Origin<'_>, sender: &str) -> Header {
        Header {
            protocol: kind.protocol().to_owned(),
            id: ksuid(),
            request: to.request.to_owned(),
            conversation: to.conversation.to_owned(),
            parent: None,
            sequence: 0,
            time: now(),
            sender: Peer::named(sender),
            recipient: (!to.sender.is_empty()).then(|| Peer::named(to.sender)),
            must_understand: None,
        }
    }
}

fn ksuid() -> String {
    super::ksuid::new()
}

fn now() -> String {
    crate::time::rfc3339(std::time::SystemTime::now())
}

/// A discovery request: the header only.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DiscoveryRequest {
    #[serde(flatten)]
    pub(crate) header: Header,
}

/// The agent card (A2A-8), flat beside the header. The server writes it pre-serialized; importers read it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Card {
    #[serde(flatten)]
    pub(crate) header: Header,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) protocols: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<Descriptor>,
}

/// One tool in a card.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Descriptor {
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_schema: Option<Value>,
}

/// What a reply echoes of its request (A2A-9): the request and conversation ids, and the sender it goes back to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) request: &'a str,
    pub(crate) conversation: &'a str,
    pub(crate) sender: &'a str,
}

/// A tool request as a server takes it in (A2A-9, A2A-10): what its reply echoes, the tool, its input written
/// compact (`{}` when absent), and a key given twice inside the input, which the server refuses as the MCP server
/// does. The header's other fields are checked, not kept.
#[derive(Debug)]
pub(crate) struct Inbound {
    pub(crate) request: String,
    pub(crate) conversation: String,
    pub(crate) sender: String,
    pub(crate) name: String,
    pub(crate) input: crate::tool::ToolInput,
    /// A key the peer gave twice in one object of `input` (the schema's `Value` kept the last).
    pub(crate) duplicate: Option<String>,
}

impl Inbound {
    /// What the reply echoes.
    pub(crate) fn origin(&self) -> Origin<'_> {
        Origin { request: &self.request, conversation: &self.conversation, sender: &self.sender }
    }
}

/// A tool request (A2A-9); `input` absent means `{}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ToolRequest {
    #[serde(flatten)]
    pub(crate) header: Header,
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input: Option<Value>,
}

/// A tool reply (A2A-9).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ToolReplyBody {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) is_error: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) exec: Option<ExecResult>,
}

/// A tool reply with its header.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ToolReply {
    #[serde(flatten)]
    pub(crate) header: Header,
    #[serde(flatten)]
    pub(crate) body: ToolReplyBody,
}

/// What ran (A2A-9): zero and empty fields are left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ExecResult {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) command: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) exit_code: i64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) truncated: bool,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Serialize a message the type system built (strings, numbers, maps: it cannot fail).
pub(crate) fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    serde_json::to_vec(message).unwrap_or_default()
}

/// Decode a validated value into its message type.
pub(crate) fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, Rejection> {
    serde_json::from_value(value).map_err(|e| Rejection::invalid(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_compiles() {
        for kind in MessageKind::ALL {
            assert!(compiled()[kind as usize].1.is_ok(), "{kind:?}");
            assert_eq!(kind.schema()["properties"]["protocol"]["const"], kind.protocol());
        }
    }

    #[test]
    fn replies_leave_out_empty_fields() {
        let req = Header::request(MessageKind::ToolRequest, "a", "b");
        let reply = ToolReply { header: Header::reply(MessageKind::ToolReply, &req, "b"), body: Default::default() };
        let value = serde_json::to_value(&reply).unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["conversation", "id", "protocol", "recipient", "request", "sender", "sequence", "time"]);
        assert_eq!(value["request"], req.id);
        assert!(MessageKind::ToolReply.validate(&value).is_ok());
    }
}
