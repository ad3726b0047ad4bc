//! The inbound requests a server reads on every call, decoded straight from their bytes when they plainly conform
//! (A2A-10).
//!
//! Parsing a tool request to a `serde_json::Value`, checking that value against the JSON Schema and deserializing
//! it again into the typed request (its flattened header buffered by serde) cost about a third of the CPU an a2a
//! server spends on a trivial call outside the command itself. Every request a real peer sends has the same simple
//! shape, so it is read here in one pass, each field checked as it is read, borrowing from the body:
//! - the fields only the schema needs (`id`, `time`, `recipient`, ...) are checked and dropped, never copied;
//! - `input` is read as dispatch reads every call's input (refusing a key given twice at any depth, and
//!   serde_json's private keys), within the same nesting limit as the whole body. Either leaves the request to the
//!   schema path: it refuses the private keys with its `400`, and finds the key given twice, which the server
//!   then refuses in band as the MCP server does, never merged.
//!
//! Input that is kept is written out compact, as on MCP: the audit trail, the event log and a command's argv see
//! one canonical text, never padding, escapes or number spellings a peer chose.
//!
//! What this reader admits, the schema admits, and it decodes alike (the property test `a2a_10_...` compares the
//! two on generated near-misses). Whatever it does not admit (a duplicate key, say) goes through the schema, so a
//! refusal is worded exactly as before.

use super::wire::{Inbound, MessageKind, ToolRequest};
use crate::json::{JsonValue, Twice};
use crate::tool::ToolInput;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// `body` as a tool request when it plainly conforms to the schema; `None` leaves it to the schema to judge.
pub(crate) fn tool_request(body: &[u8]) -> Option<Inbound> {
    let mut de = serde_json::Deserializer::from_slice(body);
    // `deserialize_map` reaches only `visit_map`: an array, whose items a derived struct would take by position,
    // is refused here.
    let fields = de.deserialize_map(RequestVisitor).ok()?;
    de.end().ok()?;
    fields.into_inbound(MessageKind::ToolRequest)
}

/// `request`, which the schema admitted from `body`, as a server takes it in; `None` when its `input` cannot be
/// read again as the schema read it (which a body the schema parsed never gives). The `Value` the schema judged
/// kept only the last of two equal keys, so the text of the last `input` key is read again for a key given twice
/// inside it, which the server refuses.
pub(crate) fn admitted(request: ToolRequest, body: &[u8]) -> Option<Inbound> {
    let duplicate = match serde_json::Deserializer::from_slice(body).deserialize_map(LastInput).ok()? {
        Some(raw) => match crate::json::from_str(raw.get(), Twice::Refuse) {
            Ok(_) => None,
            Err(e) => Some(crate::json::duplicate_key(&e)?),
        },
        None if request.input.is_none() => None,
        None => return None,
    };
    let header = request.header;
    Some(Inbound {
        request: header.request,
        conversation: header.conversation,
        sender: header.sender.name,
        name: request.name,
        input: request.input.as_ref().map_or_else(ToolInput::empty, ToolInput::from_value),
        duplicate,
    })
}

/// A JSON string as the body has it: borrowed unless it was written with escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text<'de>, D::Error> {
        deserializer.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(text.to_owned())))
    }
}

/// A tool request's fields as read; `None` until seen. The schema requires `id` and `time` to be strings but
/// nothing reads them past this check, as with `parent`, `recipient` and `must_understand`.
#[derive(Default)]
struct Fields<'de> {
    protocol: Option<Text<'de>>,
    id: Option<Text<'de>>,
    request: Option<Text<'de>>,
    conversation: Option<Text<'de>>,
    parent: Option<Text<'de>>,
    sequence: Option<u64>,
    time: Option<Text<'de>>,
    sender: Option<Text<'de>>,
    recipient: Option<Text<'de>>,
    must_understand: Option<bool>,
    name: Option<Text<'de>>,
    input: Option<Value>,
}

impl Fields<'_> {
    /// The request, when the protocol is `kind`'s and every required field was there.
    fn into_inbound(self, kind: MessageKind) -> Option<Inbound> {
        if self.protocol.as_ref().map(|p| &*p.0) != Some(kind.protocol()) {
            return None;
        }
        let _required = (self.id?, self.sequence?, self.time?);
        let input = self.input.as_ref().map_or_else(ToolInput::empty, ToolInput::from_value);
        Some(Inbound {
            request: self.request?.0.into_owned(),
            conversation: self.conversation?.0.into_owned(),
            sender: self.sender?.0.into_owned(),
            name: self.name?.0.into_owned(),
            input,
            duplicate: None,
        })
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
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool request object")
    }

    // Each value is read as the schema's type for its key: `Text` refuses `null` and every non-string, `u64`
    // every negative, fractional or out-of-range number, `bool` all but booleans, and `input` all but an object
    // (with a key twice at any depth, it is the schema path's).
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
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
                Key::Sender => once(&mut f.sender, map.next_value::<Identity<'de>>()?.0)?,
                Key::Recipient => once(&mut f.recipient, map.next_value::<Identity<'de>>()?.0)?,
                Key::MustUnderstand => once(&mut f.must_understand, map.next_value()?)?,
                Key::Name => once(&mut f.name, map.next_value()?)?,
                Key::Input => match map.next_value_seed(JsonValue(Twice::Refuse))? {
                    object @ Value::Object(_) => once(&mut f.input, object)?,
                    _ => return Err(de::Error::custom("input is not an object")),
                },
                Key::Instance | Key::Other => return Err(de::Error::custom("a key outside the schema")),
            }
        }
        Ok(f)
    }
}

/// `{name, instance?}`, each matching `^[a-zA-Z0-9_-]+$`, nothing else (the schema's `identity`); its name.
struct Identity<'de>(Text<'de>);

impl<'de> Deserialize<'de> for Identity<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Identity<'de>, D::Error> {
        deserializer.deserialize_map(IdentityVisitor)
    }
}

struct IdentityVisitor;

impl<'de> Visitor<'de> for IdentityVisitor {
    type Value = Identity<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an identity")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Identity<'de>, A::Error> {
        let (mut name, mut instance) = (None, None);
        while let Some(key) = map.next_key::<Key>()? {
            let slot = match key {
                Key::Name => &mut name,
                Key::Instance => &mut instance,
                _ => return Err(de::Error::custom("a key outside the identity")),
            };
            let word: Text<'de> = map.next_value()?;
            if word.0.is_empty() || !word.0.bytes().all(is_word_byte) {
                return Err(de::Error::custom("not an identity word"));
            }
            once(slot, word)?;
        }
        name.map(Identity).ok_or_else(|| de::Error::custom("an identity without a name"))
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The text of a request's last `input` key, the one a parse to `Value` keeps; every other value skipped.
struct LastInput;

impl<'de> Visitor<'de> for LastInput {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<&'de RawValue>, A::Error> {
        let mut input = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Input => input = Some(map.next_value()?),
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: &[u8] = br#"{"protocol":"io.choria.fisk-ai.v1.tool.request","id":"1","request":"r1","conversation":"c1","sequence":0,"time":"2026-12-01T10:00:00Z","sender":{"name":"bench-caller"},"recipient":{"name":"bench"},"name":"echo","input":{"words":["hello"]}}"#;

    /// What a peer sends (the bench's and the Go reference's shape) is read without the schema, its input as sent.
    #[test]
    fn a2a_10_a_peer_s_request_is_read_without_the_schema() {
        let request = tool_request(PEER).expect("conforms");
        assert_eq!(
            (request.name.as_str(), request.sender.as_str(), request.request.as_str(), request.conversation.as_str()),
            ("echo", "bench-caller", "r1", "c1")
        );
        assert_eq!(request.input.as_str(), r#"{"words":["hello"]}"#);
    }

    /// A key given twice inside `input` is the schema path's to judge. That path finds it in the text of the
    /// last `input` (the one a parse to `Value` keeps), for the server to refuse, and keeps the input compact, as
    /// the schema read it. Here `name` is twice as well, last wins.
    #[test]
    fn a2a_10_a_key_twice_in_input_is_found_for_the_server_to_refuse() {
        let peer = std::str::from_utf8(PEER).unwrap();
        let twice = peer.replace(r#"{"words":["hello"]}"#, r#"{"words":["a"],"words":["b"]}"#);
        assert!(tool_request(twice.as_bytes()).is_none(), "a key twice in input is the schema's to judge");
        let request = crate::nats::wire::tool_request(twice.as_bytes()).expect("the schema admits it");
        assert_eq!((request.duplicate.as_deref(), request.input.as_str()), (Some("words"), r#"{"words":["b"]}"#));
        let body = br#"{"protocol":"io.choria.fisk-ai.v1.tool.request","id":"1","request":"1","conversation":"1","sequence":0,"time":"t","sender":{"name":"a"},"name":"x","name":"echo","input":{"w":1},"input":{"w":[{"v":1,"v":2}]}}"#;
        assert!(tool_request(body).is_none(), "a key twice is the schema's to judge");
        let request = crate::nats::wire::tool_request(body).expect("the schema admits it");
        assert_eq!(request.name, "echo");
        assert_eq!((request.duplicate.as_deref(), request.input.as_str()), (Some("v"), r#"{"w":[{"v":2}]}"#));
    }

    /// serde_json's `Value` reads an object whose first key is `$serde_json::private::RawValue` as the JSON in its
    /// string. Neither path gives it that meaning: both refuse such a key, in `input` or around the whole request.
    #[test]
    fn a2a_10_serde_json_s_private_keys_are_refused_on_both_paths() {
        let peer = std::str::from_utf8(PEER).unwrap();
        let escaped = serde_json::to_string(peer).unwrap();
        for body in [
            peer.replace(r#"{"words":["hello"]}"#, r#"{"$serde_json::private::RawValue":"{\"words\":[\"x\"]}"}"#),
            peer.replace(r#"{"words":["hello"]}"#, r#"{"o":{"\u0024serde_json::private::RawValue":"1"}}"#),
            format!(r#"{{"$serde_json::private::RawValue":{escaped}}}"#),
        ] {
            assert!(tool_request(body.as_bytes()).is_none(), "{body}");
            let refused = crate::nats::wire::tool_request(body.as_bytes()).expect_err(&body).to_string();
            assert!(refused.contains("reserved property"), "{refused}");
        }
    }

    /// Input a peer padded, escaped or spelled oddly is kept compact and canonical, as on MCP: the audit trail,
    /// the event log and a command's argv see what the schema judged, not the peer's spelling.
    #[test]
    fn a2a_10_a_kept_input_is_written_compact() {
        let peer = std::str::from_utf8(PEER).unwrap();
        let body = peer.replace(r#"{"words":["hello"]}"#, "{ \"n\" :\t1.0e0 ,\n \"p\": \"\\u002e\" }");
        let request = tool_request(body.as_bytes()).expect("conforms");
        assert_eq!(request.input.as_str(), r#"{"n":1.0,"p":"."}"#);
    }

    /// `input` counts against the body's nesting limit, as on the schema path, which parses the whole body: at
    /// each depth the two paths admit alike, and the deepest the schema admits is admitted here too.
    #[test]
    fn a2a_10_a_deep_input_is_judged_alike_on_both_paths() {
        let peer = std::str::from_utf8(PEER).unwrap();
        let mut admitted = Vec::new();
        for n in 120..130 {
            let input = format!(r#"{{"a":{}{}}}"#, "[".repeat(n), "]".repeat(n));
            let body = peer.replace(r#"{"words":["hello"]}"#, &input);
            let (fast, slow) = (tool_request(body.as_bytes()), crate::nats::wire::tool_request(body.as_bytes()));
            assert_eq!(fast.is_some(), slow.is_ok(), "{n} levels");
            admitted.push(slow.is_ok());
        }
        assert!(admitted.first() == Some(&true) && admitted.last() == Some(&false), "{admitted:?}");
    }

    /// Text a skip checks only for syntax, but a parse refuses, is the schema's to judge: it refuses it too.
    #[test]
    fn a2a_10_an_input_only_a_parse_refuses_is_left_to_the_schema() {
        let peer = std::str::from_utf8(PEER).unwrap();
        for input in [r#"{"words":["\ud800"]}"#, r#"{"n":1e999}"#] {
            let body = peer.replace(r#"{"words":["hello"]}"#, input);
            assert!(tool_request(body.as_bytes()).is_none(), "{input}");
            assert!(crate::nats::wire::tool_request(body.as_bytes()).is_err(), "{input}");
        }
    }
}
