//! Steps 2-4 of the dispatch path: parse the input once, the required check (TOOL-18..21), then the whole schema
//! (EXEC-3). Every refusal here happens before any operator is asked and before anything runs.

use crate::tool::schema::{InputError, MissingRequired};
use crate::tool::{ToolInput, ToolKind, ToolSpec};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Why a call was refused before the gate. Its `Display` is the text the model or client reads, the same on every
/// surface.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No selected tool has this name.
    UnknownTool {
        /// The name the caller used.
        name: String,
    },
    /// Required parameters are absent (TOOL-18..20).
    Missing(MissingRequired),
    /// The input is not valid for the schema: wrong type, unknown key, enum violation, duplicate key (EXEC-3).
    Invalid {
        /// The tool.
        tool: String,
        /// What is wrong, naming the property.
        error: InputError,
        /// Whether the tool runs a command (the text says "the command did not run").
        command: bool,
    },
    /// The call's audit records could not be written, so it did not run (AUD-6).
    Unrecorded {
        /// The tool.
        tool: String,
        /// Why, naming the sink.
        reason: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::UnknownTool { name } => write!(f, "unknown tool \"{name}\""),
            Refusal::Missing(m) => m.fmt(f),
            Refusal::Invalid { tool, error, command } => {
                let what = if *command { "command" } else { "tool" };
                write!(f, "tool \"{tool}\": {error}; the {what} did not run")
            }
            Refusal::Unrecorded { reason, .. } => f.write_str(reason),
        }
    }
}

impl std::error::Error for Refusal {}

/// Check `input` for `spec`: parsed once, required parameters, then the schema. The parsed input is returned, so
/// nothing after this step parses it again for the gate.
pub(crate) fn check(spec: &ToolSpec, input: &ToolInput) -> Result<Value, Refusal> {
    let invalid =
        |error| Refusal::Invalid { tool: spec.name().to_owned(), error, command: spec.kind() == ToolKind::Command };
    let value =
        if input.is_null() { Value::Object(Map::new()) } else { parse_unique(input.as_str()).map_err(invalid)? };
    // One lookup for both checks: a lazy schema is not kept by its spec (see `ToolSpec::checker`).
    let checker = spec.checker();
    if let Value::Object(map) = &value
        && let Some(missing) = crate::tool::schema::missing_required_in(spec.name(), checker.schema(), map)
    {
        return Err(Refusal::Missing(missing));
    }
    if checker.schema().is_object() {
        checker.validate(&value).map_err(invalid)?;
    }
    Ok(value)
}

/// Parse JSON text, refusing a duplicate key at any depth: a validator keeps only the last of two keys while other
/// readers may keep the first, so what was validated and what is used could differ.
pub(crate) fn parse_unique(text: &str) -> Result<Value, InputError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = UniqueValue.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    value.map_err(|e| {
        let message = e.to_string();
        match message.strip_prefix("duplicate property \"").and_then(|rest| rest.split('"').next()) {
            Some(key) => duplicate(key),
            None => InputError::new(None, format!("invalid arguments: {message}")),
        }
    })
}

/// The refusal of a duplicate key, the same text on every surface (the MCP transport finds them in the body
/// before its JSON-RPC layer keeps only the last).
pub(crate) fn duplicate(key: &str) -> InputError {
    InputError::new(Some(key.to_owned()), format!("invalid arguments: duplicate property \"{key}\""))
}

#[cfg(feature = "mcp")]
impl Refusal {
    /// A duplicate `key` in a call of `spec`.
    pub(crate) fn duplicate(spec: &ToolSpec, key: &str) -> Self {
        Refusal::Invalid {
            tool: spec.name().to_owned(),
            error: duplicate(key),
            command: spec.kind() == ToolKind::Command,
        }
    }
}

/// A JSON value read as [`parse_unique`] reads it, for a reader that meets it inside a larger document (the a2a
/// intake's `input`), so its depth counts against the same limit as the document's.
pub(crate) struct UniqueValue;

impl<'de> DeserializeSeed<'de> for UniqueValue {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueValue {
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
        while let Some(v) = seq.next_element_seed(UniqueValue)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("duplicate property \"{key}\"")));
            }
            let value = map.next_value_seed(UniqueValue)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_at_any_depth_and_named() {
        for (text, property) in
            [(r#"{"a":1,"a":2}"#, "a"), (r#"{"o":{"b":1,"b":1}}"#, "b"), (r#"[{"c":1,"c":2}]"#, "c")]
        {
            let err = parse_unique(text).unwrap_err();
            assert_eq!(err.property(), Some(property), "{text}");
            assert!(err.to_string().contains(&format!("duplicate property \"{property}\"")), "{err}");
        }
        assert_eq!(parse_unique(r#"{"a":{"a":1},"b":[1,2.5,"x",null,true]}"#).unwrap()["b"][1], 2.5);
    }

    #[test]
    fn hostile_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = parse_unique(&deep).unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");
        let wide = format!("{{{}}}", (0..10_000).map(|i| format!("\"k{i}\":{i}")).collect::<Vec<_>>().join(","));
        assert_eq!(parse_unique(&wide).unwrap().as_object().unwrap().len(), 10_000);
    }
}
