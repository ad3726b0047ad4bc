//! The inbound requests a server reads on every call, decoded straight from their bytes when they plainly conform
//! (A2A-10).
//!
//! Parsing a tool request to a `serde_json::Value`, checking that value against the JSON Schema and deserializing
//! it again into the typed request (its flattened header buffered by serde) cost about a third of the CPU an a2a
//! server spends on a trivial call outside the command itself. Every request a real peer sends has the same simple
//! shape, so it is read here in one pass into its typed fields, each checked as it is read. What this reader
//! admits, the schema admits, and it decodes alike (the property test `a2a_10_...` compares the two on generated
//! near-misses). Whatever it does not admit (a duplicate key, say) goes through the schema, so a refusal is
//! worded exactly as before.

use super::wire::{Header, MessageKind, Peer, ToolRequest};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::fmt;

/// `body` as a tool request when it plainly conforms to the schema; `None` leaves it to the schema to judge.
pub(crate) fn tool_request(body: &[u8]) -> Option<ToolRequest> {
    let mut de = serde_json::Deserializer::from_slice(body);
    // `deserialize_map` reaches only `visit_map`: an array, whose items a derived struct would take by position,
    // is refused here.
    let fields = de.deserialize_map(RequestVisitor).ok()?;
    de.end().ok()?;
    fields.into_request(MessageKind::ToolRequest)
}

/// A tool request's fields as read; `None` until seen.
#[derive(Default)]
struct Fields {
    protocol: Option<String>,
    id: Option<String>,
    request: Option<String>,
    conversation: Option<String>,
    parent: Option<String>,
    sequence: Option<u64>,
    time: Option<String>,
    sender: Option<Peer>,
    recipient: Option<Peer>,
    must_understand: Option<bool>,
    name: Option<String>,
    input: Option<Value>,
}

impl Fields {
    /// The request, when the protocol is `kind`'s and every required field was there.
    fn into_request(self, kind: MessageKind) -> Option<ToolRequest> {
        if self.protocol.as_deref() != Some(kind.protocol()) {
            return None;
        }
        let header = Header {
            protocol: self.protocol?,
            id: self.id?,
            request: self.request?,
            conversation: self.conversation?,
            parent: self.parent,
            sequence: self.sequence?,
            time: self.time?,
            sender: self.sender?,
            recipient: self.recipient,
            must_understand: self.must_understand,
        };
        Some(ToolRequest { header, name: self.name?, input: self.input })
    }
}

/// Every key the schema names (A2A-6, A2A-9, and an identity's); any other is `Other`.
enum Key {
    Protocol,
    Id,
    Request,
    Conversation,
    Parent,
    Sequence,
    Time,
    Sender,
    Recipient,
    MustUnderstand,
    Name,
    Input,
    /// An identity's second key; outside a request's own.
    Instance,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    // A key written with escapes arrives here unescaped, so it is matched by what it says.
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "protocol" => Key::Protocol,
            "id" => Key::Id,
            "request" => Key::Request,
            "conversation" => Key::Conversation,
            "parent" => Key::Parent,
            "sequence" => Key::Sequence,
            "time" => Key::Time,
            "sender" => Key::Sender,
            "recipient" => Key::Recipient,
            "must_understand" => Key::MustUnderstand,
            "name" => Key::Name,
            "input" => Key::Input,
            "instance" => Key::Instance,
            _ => Key::Other,
        })
    }
}

/// Keep the first sighting of a field; a second is not plain conformance (the schema path decides).
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    match slot {
        Some(_) => Err(E::custom("duplicate key")),
        None => {
            *slot = Some(value);
            Ok(())
        }
    }
}

struct RequestVisitor;

impl<'de> Visitor<'de> for RequestVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool request object")
    }

    // Each value is read as the schema's type for its key: `String` refuses `null` and every non-string, `u64`
    // every negative, fractional or out-of-range number, `bool` all but booleans.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut f = Fields::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Protocol => once(&mut f.protocol, map.next_value()?)?,
                Key::Id => once(&mut f.id, map.next_value()?)?,
                Key::Request => once(&mut f.request, map.next_value()?)?,
                Key::Conversation => once(&mut f.conversation, map.next_value()?)?,
                Key::Parent => once(&mut f.parent, map.next_value()?)?,
                Key::Sequence => once(&mut f.sequence, map.next_value()?)?,
                Key::Time => once(&mut f.time, map.next_value()?)?,
                Key::Sender => once(&mut f.sender, map.next_value::<Identity>()?.0)?,
                Key::Recipient => once(&mut f.recipient, map.next_value::<Identity>()?.0)?,
                Key::MustUnderstand => once(&mut f.must_understand, map.next_value()?)?,
                Key::Name => once(&mut f.name, map.next_value()?)?,
                Key::Input => match map.next_value::<Value>()? {
                    object @ Value::Object(_) => once(&mut f.input, object)?,
                    _ => return Err(de::Error::custom("input is not an object")),
                },
                Key::Instance | Key::Other => return Err(de::Error::custom("a key outside the schema")),
            }
        }
        Ok(f)
    }
}

/// `{name, instance?}`, each matching `^[a-zA-Z0-9_-]+$`, nothing else (the schema's `identity`).
struct Identity(Peer);

impl<'de> Deserialize<'de> for Identity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Identity, D::Error> {
        deserializer.deserialize_map(IdentityVisitor)
    }
}

struct IdentityVisitor;

impl<'de> Visitor<'de> for IdentityVisitor {
    type Value = Identity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an identity")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Identity, A::Error> {
        let (mut name, mut instance) = (None, None);
        while let Some(key) = map.next_key::<Key>()? {
            let slot = match key {
                Key::Name => &mut name,
                Key::Instance => &mut instance,
                _ => return Err(de::Error::custom("a key outside the identity")),
            };
            let word: String = map.next_value()?;
            if word.is_empty() || !word.bytes().all(is_word_byte) {
                return Err(de::Error::custom("not an identity word"));
            }
            once(slot, word)?;
        }
        let name = name.ok_or_else(|| de::Error::custom("an identity without a name"))?;
        Ok(Identity(Peer { name, instance }))
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a peer sends (the bench's and the Go reference's shape) is read without the schema.
    #[test]
    fn a2a_10_a_peer_s_request_is_read_without_the_schema() {
        let body = br#"{"protocol":"io.choria.fisk-ai.v1.tool.request","id":"1","request":"1","conversation":"1","sequence":0,"time":"2026-12-01T10:00:00Z","sender":{"name":"bench-caller"},"recipient":{"name":"bench"},"name":"echo","input":{"words":["hello"]}}"#;
        let request = tool_request(body).expect("conforms");
        assert_eq!((request.name.as_str(), request.header.sender.name.as_str()), ("echo", "bench-caller"));
        assert_eq!(request.input, Some(serde_json::json!({"words": ["hello"]})));
    }
}
