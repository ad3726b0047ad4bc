//! JSON read one way wherever what one reader checked and what a later reader uses must agree (every call's
//! input, the a2a wire): a leaf every module may use.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// The prefix of the keys serde_json gives a meaning of its own.
const RESERVED: &str = "$serde_json::private::";

/// What a [`JsonValue`] does with a key given twice in one object.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Twice {
    /// Refuse the document, naming the key (`duplicate property "<key>"`).
    Refuse,
    /// Keep the last, as `serde_json::Value` does.
    #[cfg_attr(not(feature = "nats"), allow(dead_code, reason = "only the a2a wire reads whole messages this way"))]
    LastWins,
}

/// A JSON value parsed by serde_json but built here rather than by `serde_json::Value`'s own visitor, for two
/// reasons. A key given twice can be refused (dispatch's one parse of every call's input). And with serde_json's `raw_value` feature (on in
/// this crate), `Value` reads an object whose first key is `$serde_json::private::RawValue` as the JSON text in
/// that key's string: a checker reading one way and a tool reading the other would see different inputs. Every
/// key in that namespace is refused instead (`reserved property "<key>"`). Used as a seed, it reads a value inside
/// a larger document, whose nesting limit then counts it too.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JsonValue(pub(crate) Twice);

impl<'de> DeserializeSeed<'de> for JsonValue {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for JsonValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key.starts_with(RESERVED) {
                return Err(serde::de::Error::custom(format!("reserved property \"{key}\"")));
            }
            if matches!(self.0, Twice::Refuse) && out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("duplicate property \"{key}\"")));
            }
            let value = map.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// `text` as one JSON value, read by [`JsonValue`] with `twice`.
pub(crate) fn from_str(text: &str, twice: Twice) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    JsonValue(twice).deserialize(&mut de).and_then(|v| de.end().map(|()| v))
}

/// `body` as one JSON value, read by [`JsonValue`] with `twice`.
#[cfg(feature = "nats")]
pub(crate) fn from_slice(body: &[u8], twice: Twice) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    JsonValue(twice).deserialize(&mut de).and_then(|v| de.end().map(|()| v))
}

/// The key a [`Twice::Refuse`] read failed on for being given twice; `None` when it failed for another reason.
pub(crate) fn duplicate_key(e: &serde_json::Error) -> Option<String> {
    key_after(e, "duplicate property \"")
}

/// The key in serde_json's private namespace a read failed on; `None` when it failed for another reason.
pub(crate) fn reserved_key(e: &serde_json::Error) -> Option<String> {
    key_after(e, "reserved property \"")
}

/// The quoted key after `prefix` in `e`'s message (a key with a `"` in it is cut there; it only names the culprit).
fn key_after(e: &serde_json::Error, prefix: &str) -> Option<String> {
    e.to_string().strip_prefix(prefix).and_then(|rest| rest.split('"').next()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_twice_is_refused_naming_it_or_the_last_kept() {
        let err = from_str(r#"{"o":[{"k":1,"k":2}]}"#, Twice::Refuse).unwrap_err();
        assert_eq!(duplicate_key(&err).as_deref(), Some("k"));
        assert_eq!(from_str(r#"{"a":1,"a":2}"#, Twice::LastWins).unwrap()["a"], 2);
    }

    /// With `raw_value` on, serde_json's own `Value` reads the wrapper as the JSON in its string; this reader
    /// refuses it, and the refusal is not taken for a key given twice.
    #[test]
    fn serde_json_s_private_keys_are_refused_where_value_would_unwrap_them() {
        let wrapped = r#"{"$serde_json::private::RawValue":"[1]"}"#;
        assert_eq!(serde_json::from_str::<Value>(wrapped).unwrap(), serde_json::json!([1]));
        for twice in [Twice::Refuse, Twice::LastWins] {
            let err = from_str(wrapped, twice).unwrap_err();
            assert!(err.to_string().starts_with(r#"reserved property "$serde_json::private::RawValue""#), "{err}");
            assert_eq!(duplicate_key(&err), None);
            assert_eq!(reserved_key(&err).as_deref(), Some("$serde_json::private::RawValue"));
        }
    }
}
