//! The inbound requests a server reads on every call, decoded without the schema validator when they plainly
//! conform (A2A-10).
//!
//! Checking a tool request against its JSON Schema and then deserializing the checked value (the header is a
//! flattened struct, which serde buffers) cost about a third of the CPU an a2a server spends on a trivial call
//! outside the command itself. Every request a real peer sends has the same simple shape, so the parsed value is
//! checked here by hand, and its fields are moved out of it. The check admits only values the schema admits (the
//! property test `a2a_10_...` compares the two on generated near-misses); whatever it does not admit goes through
//! the schema, so a refusal is worded exactly as before.

use super::wire::{Header, MessageKind, Peer, ToolRequest};
use serde_json::{Map, Value};

/// The header's keys (A2A-6).
const HEADER: [&str; 10] = [
    "protocol",
    "id",
    "request",
    "conversation",
    "parent",
    "sequence",
    "time",
    "sender",
    "recipient",
    "must_understand",
];
/// A tool request's own keys (A2A-9).
const TOOL_REQUEST: [&str; 2] = ["name", "input"];

/// `value` as a tool request when it plainly conforms to the schema; else `value` back, untouched, for the schema
/// to judge.
pub(crate) fn tool_request(value: Value) -> Result<ToolRequest, Value> {
    let Value::Object(mut map) = value else { return Err(value) };
    let own_fine = is(&map, "name", Value::is_string, true) && is(&map, "input", Value::is_object, false);
    if !own_fine || !header_conforms(&map, MessageKind::ToolRequest, &TOOL_REQUEST) {
        return Err(Value::Object(map));
    }
    let header = take_header(&mut map);
    let name = take_string(&mut map, "name");
    Ok(ToolRequest { header, name, input: map.remove("input") })
}

/// Whether `map` holds only header keys and `own`, with the header's required keys present and each of its values
/// of the schema's type: the protocol `kind`'s, strings, a non-negative integer sequence, identities.
fn header_conforms(map: &Map<String, Value>, kind: MessageKind, own: &[&str]) -> bool {
    let known = map.keys().all(|k| HEADER.contains(&k.as_str()) || own.contains(&k.as_str()));
    known
        && map.get("protocol").and_then(Value::as_str) == Some(kind.protocol())
        && ["id", "request", "conversation", "time"].iter().all(|k| is(map, k, Value::is_string, true))
        && is(map, "parent", Value::is_string, false)
        && is(map, "sequence", |v| v.as_u64().is_some(), true)
        && is(map, "sender", identity, true)
        && is(map, "recipient", identity, false)
        && is(map, "must_understand", Value::is_boolean, false)
}

/// Whether `key` is present (when `required`) and, if present, passes `test`. A present `null` fails every test
/// here, as the schema has no nullable property.
fn is(map: &Map<String, Value>, key: &str, test: impl Fn(&Value) -> bool, required: bool) -> bool {
    map.get(key).map_or(!required, test)
}

/// `{name, instance?}`, each matching `^[a-zA-Z0-9_-]+$`, nothing else.
fn identity(value: &Value) -> bool {
    let Some(map) = value.as_object() else { return false };
    let word = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty() && s.bytes().all(is_word_byte));
    map.keys().all(|k| k == "name" || k == "instance")
        && is(map, "name", word, true)
        && is(map, "instance", word, false)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The header out of a map [`header_conforms`] passed.
fn take_header(map: &mut Map<String, Value>) -> Header {
    Header {
        protocol: take_string(map, "protocol"),
        id: take_string(map, "id"),
        request: take_string(map, "request"),
        conversation: take_string(map, "conversation"),
        parent: map.remove("parent").map(into_string),
        sequence: map.get("sequence").and_then(Value::as_u64).unwrap_or_default(),
        time: take_string(map, "time"),
        sender: map.remove("sender").map(into_peer).unwrap_or_else(|| Peer::named("")),
        recipient: map.remove("recipient").map(into_peer),
        must_understand: map.get("must_understand").and_then(Value::as_bool),
    }
}

fn take_string(map: &mut Map<String, Value>, key: &str) -> String {
    map.remove(key).map(into_string).unwrap_or_default()
}

fn into_string(value: Value) -> String {
    match value {
        Value::String(s) => s,
        _ => String::new(),
    }
}

fn into_peer(value: Value) -> Peer {
    let Value::Object(mut map) = value else { return Peer::named("") };
    Peer { name: take_string(&mut map, "name"), instance: map.remove("instance").map(into_string) }
}
