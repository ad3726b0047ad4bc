//! A JSON object read member by member, in file order, each value kept as the exact text it was written as.
//!
//! A client's configuration file holds far more than its server list (`~/.claude.json` is Claude Code's whole
//! state). Reading it into a `serde_json::Value` would sort every key and reformat every value, so adding one entry
//! would rewrite the user's file. Here only the object being edited is rebuilt; every other member goes back out
//! byte for byte, in its place.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// An object's members in file order, each value as its original JSON text.
#[derive(Debug, Default)]
pub(super) struct Ordered(pub(super) Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push((key, value));
                }
                Ok(Ordered(members))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

impl Ordered {
    /// The value of the first member named `key`.
    pub(super) fn get(&self, key: &str) -> Option<&RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &**v)
    }

    /// Set `key` to `value`: in the first member's place when there is one (later duplicates are dropped, as
    /// every JSON reader would ignore them), else at the end.
    pub(super) fn set(&mut self, key: &str, value: Box<RawValue>) {
        let mut slot = Some(value);
        self.0.retain_mut(|(k, v)| {
            if k != key {
                return true;
            }
            match slot.take() {
                Some(value) => {
                    *v = value;
                    true
                }
                None => false,
            }
        });
        if let Some(value) = slot {
            self.0.push((key.to_owned(), value));
        }
    }

    /// Remove every member named `key`; whether there was one.
    pub(super) fn remove(&mut self, key: &str) -> bool {
        let before = self.0.len();
        self.0.retain(|(k, _)| k != key);
        self.0.len() != before
    }

    /// The object as JSON text: one member per line at `indent` spaces, each value as it was read.
    pub(super) fn render(&self, indent: usize) -> String {
        if self.0.is_empty() {
            return "{}".to_owned();
        }
        let pad = " ".repeat(indent + 2);
        let members: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| {
                let key = serde_json::to_string(k).unwrap_or_else(|_| "\"\"".to_owned());
                format!("{pad}{key}: {}", v.get())
            })
            .collect();
        format!("{{\n{}\n{}}}", members.join(",\n"), " ".repeat(indent))
    }

    /// [`render`](Self::render) as a raw value, to nest inside another object.
    pub(super) fn to_raw(&self, indent: usize) -> serde_json::Result<Box<RawValue>> {
        RawValue::from_string(self.render(indent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_their_order_and_their_exact_text() {
        let text = r#"{"z": 1, "a": {"x":[1,2,  3]}, "m": "s"}"#;
        let mut o: Ordered = serde_json::from_str(text).unwrap();
        o.set("a", RawValue::from_string("true".into()).unwrap());
        o.set("new", RawValue::from_string("null".into()).unwrap());
        assert_eq!(o.render(0), "{\n  \"z\": 1,\n  \"a\": true,\n  \"m\": \"s\",\n  \"new\": null\n}");
        let o: Ordered = serde_json::from_str(text).unwrap();
        assert!(o.render(0).contains(r#""a": {"x":[1,2,  3]}"#), "kept byte for byte");
    }

    #[test]
    fn set_replaces_the_first_duplicate_and_drops_the_rest() {
        let mut o: Ordered = serde_json::from_str(r#"{"k": 1, "j": 2, "k": 3}"#).unwrap();
        o.set("k", RawValue::from_string("9".into()).unwrap());
        assert_eq!(o.render(0), "{\n  \"k\": 9,\n  \"j\": 2\n}");
        assert!(o.remove("j") && !o.remove("j"));
    }
}
