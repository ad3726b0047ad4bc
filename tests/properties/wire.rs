//! A2A-10: the conforming reader an a2a server runs on each tool request admits only what the request's JSON
//! Schema admits, and decodes it as the schema path does. Generated requests are valid ones with a few mutations
//! each (a key dropped, added, retyped, nulled; an identity or sequence bent), then written with a few textual
//! twists no `Value` can hold (a key twice, in the request or in its input, a key spelled with escapes, spaces, the
//! whole wrapped in an array or in serde_json's private wrapper key), so most land just either side of the schema.

use fisk_ai::nats::wire::tool_request_both_ways;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Every property the schema names, written out here rather than taken from `nats::conforming`, so a key the hand
/// check forgets or invents is still generated and caught.
const KEYS: [&str; 12] = [
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
    "name",
    "input",
];

/// A value of any of the shapes a property might wrongly hold.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        Just(json!(1.0)),
        Just(json!(u64::MAX)),
        "[a-zA-Z0-9_-]{0,6}".prop_map(Value::from),
        "\\PC{0,6}".prop_map(Value::from),
        Just(json!({})),
        Just(json!([])),
        Just(json!({"name": "ok"})),
        Just(json!({"name": "ok", "instance": "i-1"})),
        Just(json!({"name": "ok", "extra": 1})),
        Just(json!({"name": ""})),
        Just(json!({"name": "a b"})),
        Just(json!({"name": "ok\n"})),
        Just(json!({"instance": "x"})),
        Just(json!(["name"])),
        Just(Value::from("io.choria.fisk-ai.v1.tool.request")),
        Just(Value::from("io.choria.fisk-ai.v1.tool.reply")),
        // serde_json's `Value` would read these as the JSON in their strings.
        Just(json!({"$serde_json::private::RawValue": "{}"})),
        Just(json!({"words": {"$serde_json::private::RawValue": "[\"x\"]"}})),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Drop(usize),
    Set(usize, Value),
    Add(String, Value),
}

/// A twist to the request's text, applied after it is written.
#[derive(Debug, Clone)]
enum Twist {
    /// The key with this value written a second time, first.
    Twice(usize, Value),
    /// Every occurrence of the key's first letter in key position written as a `\u` escape.
    Escaped(usize),
    /// Spaces and newlines after every comma and colon.
    Spaced,
    /// The object as the only item of an array.
    InArray,
    /// The object as the string of serde_json's private wrapper key, which its `Value` would unwrap.
    Wrapped,
    /// A key of `input` given twice (when the request has an `input`).
    InputTwice,
}

fn twist() -> impl Strategy<Value = Twist> {
    prop_oneof![
        (0..KEYS.len(), odd_value()).prop_map(|(k, v)| Twist::Twice(k, v)),
        (0..KEYS.len()).prop_map(Twist::Escaped),
        Just(Twist::Spaced),
        Just(Twist::InArray),
        Just(Twist::Wrapped),
        Just(Twist::InputTwice),
    ]
}

fn apply(body: String, twist: &Twist) -> String {
    match twist {
        Twist::Twice(k, v) => format!("{{{}:{v},{}", Value::from(KEYS[*k]), &body[1..]),
        Twist::Escaped(k) => {
            let key = KEYS[*k];
            let escaped = format!("\"\\u{:04x}{}\":", u32::from(key.as_bytes()[0]), &key[1..]);
            body.replace(&format!("\"{key}\":"), &escaped)
        }
        Twist::Spaced => body.replace(',', ", \n").replace("\":", "\" :\t"),
        Twist::InArray => format!("[{body}]"),
        Twist::Wrapped => format!("{{\"$serde_json::private::RawValue\":{}}}", Value::from(body)),
        Twist::InputTwice => body.replace("\"input\":{\"words\":", "\"input\":{\"words\":[],\"words\":"),
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0..KEYS.len()).prop_map(Mutation::Drop),
        (0..KEYS.len(), odd_value()).prop_map(|(k, v)| Mutation::Set(k, v)),
        ("[a-z_]{1,8}", odd_value()).prop_map(|(k, v)| Mutation::Add(k, v)),
    ]
}

fn valid() -> impl Strategy<Value = Map<String, Value>> {
    ("[a-zA-Z0-9]{1,27}", any::<u32>(), "[a-zA-Z0-9_-]{1,12}", any::<bool>(), any::<bool>()).prop_map(
        |(id, sequence, peer, optional, input)| {
            let mut m = json!({
                "protocol": "io.choria.fisk-ai.v1.tool.request", "id": id, "request": id, "conversation": id,
                "sequence": sequence, "time": "2026-12-01T10:00:00Z", "sender": {"name": peer}, "name": "echo",
            });
            if optional {
                m["parent"] = json!("p");
                m["recipient"] = json!({"name": "bench", "instance": "n1"});
                m["must_understand"] = json!(false);
            }
            if input {
                m["input"] = json!({"words": ["hello"]});
            }
            let Value::Object(map) = m else { unreachable!() };
            map
        },
    )
}

/// Runs the property over `cases` generated requests.
pub fn check(cases: u32) {
    let request = (valid(), prop::collection::vec(mutation(), 0..3), prop::collection::vec(twist(), 0..2));
    super::run(cases, request, |(mut map, mutations, twists)| {
        // Escapes and spaces leave a request valid; a key twice or an array is the schema path's to judge.
        let untouched = mutations.is_empty() && twists.iter().all(|t| matches!(t, Twist::Escaped(_) | Twist::Spaced));
        for m in mutations {
            match m {
                Mutation::Drop(k) => drop(map.remove(KEYS[k])),
                Mutation::Set(k, v) => drop(map.insert(KEYS[k].to_owned(), v)),
                Mutation::Add(k, v) => drop(map.insert(k, v)),
            }
        }
        let body = twists.iter().fold(Value::Object(map).to_string(), apply).into_bytes();
        let (fast, slow) = tool_request_both_ways(&body);
        if let Some(fast) = &fast {
            let text = String::from_utf8_lossy(&body);
            prop_assert!(slow.is_ok(), "the conforming reader admitted what the schema refuses ({slow:?}): {text}");
            prop_assert_eq!(slow.as_ref().ok(), Some(fast), "the two decodings differ for {}", text);
        }
        // A request as peers send it is never left to the schema.
        prop_assert!(!untouched || fast.is_some(), "a valid request missed the conforming reader");
        Ok(())
    });
}
