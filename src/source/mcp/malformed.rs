//! A server message that cannot be parsed (MCPI-14): why, in words, and the error answer that stands in for it, so
//! the request it was meant to answer fails at once, saying why, instead of waiting out the timeout.

use rmcp::model::{ErrorData, RequestId, ServerJsonRpcMessage};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Why a server's message cannot be parsed, for an error naming the server.
pub(crate) fn unparsable(e: &serde_json::Error) -> String {
    if e.to_string().starts_with("recursion limit exceeded") {
        format!("it sent a message nested deeper than 128 levels ({e})")
    } else if e.is_data() {
        format!("it sent a message that is not a JSON-RPC message ({e})")
    } else {
        format!("it sent a message that is not valid JSON ({e})")
    }
}

/// The error answer to request `id`, saying `why` its real answer cannot be read.
pub(crate) fn refusal(id: RequestId, why: String) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(ErrorData::parse_error(why, None), Some(id))
}

/// Whether `text` is JSON a full parse accepts: its syntax, and serde_json's 128-level nesting limit. Nothing is
/// built, so checking costs one pass over the text and no memory.
pub(crate) fn well_formed(text: &str) -> Result<(), serde_json::Error> {
    serde_json::from_str::<Shape>(text).map(|_| ())
}

/// Any JSON value, visited and dropped. Arrays and objects are visited through `deserialize_any`, which counts
/// nesting as a real parse does (skipping a value would not).
struct Shape;

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Shape, D::Error> {
        deserializer.deserialize_any(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape)
    }

    fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape)
    }

    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(Shape)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Shape, A::Error> {
        while items.next_element::<Shape>()?.is_some() {}
        Ok(Shape)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Shape, A::Error> {
        while members.next_entry::<IgnoredAny, Shape>()?.is_some() {}
        Ok(Shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_agrees_with_a_full_parse() {
        let deep = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n), "]".repeat(n));
        let texts = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"b\u00e9"}],"n":-1.5e3}}"#
                .to_owned(),
            deep(126),
            deep(127),
            deep(10_000),
            r#"{"unclosed": [1, 2"#.to_owned(),
            r#"{"a":1} trailing"#.to_owned(),
            "".to_owned(),
        ];
        for text in texts {
            let full = serde_json::from_str::<serde_json::Value>(&text);
            assert_eq!(well_formed(&text).is_ok(), full.is_ok(), "{:.80}", text);
        }
        let why = unparsable(&well_formed(&deep(10_000)).unwrap_err());
        assert!(why.starts_with("it sent a message nested deeper than 128 levels"), "{why}");
        assert!(unparsable(&well_formed("{").unwrap_err()).starts_with("it sent a message that is not valid JSON"));
    }
}
