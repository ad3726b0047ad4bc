//! Steps 2-4 of the dispatch path: parse the input once, the required check (TOOL-18..21), then the whole schema
//! (EXEC-3). Every refusal here happens before any operator is asked and before anything runs.

use crate::json::Twice;
use crate::tool::schema::{InputError, MissingRequired};
use crate::tool::{ToolInput, ToolKind, ToolSpec};
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
/// readers may keep the first, so what was validated and what is used could differ. A key in serde_json's private
/// namespace is refused too (see `crate::json`).
pub(crate) fn parse_unique(text: &str) -> Result<Value, InputError> {
    crate::json::from_str(text, Twice::Refuse).map_err(|e| {
        if let Some(key) = crate::json::duplicate_key(&e) {
            return duplicate(&key);
        }
        // Named without the position, which depends on how the surface wrote the input, so every surface says
        // the same; and with no property, which marks a key given twice (the MCP transports probe for those).
        match crate::json::reserved_key(&e) {
            Some(key) => InputError::new(None, format!("invalid arguments: reserved property \"{key}\"")),
            None => InputError::new(None, format!("invalid arguments: {e}")),
        }
    })
}

/// The refusal of a duplicate key, the same text on every surface (the MCP transport finds them in the body
/// before its JSON-RPC layer keeps only the last).
pub(crate) fn duplicate(key: &str) -> InputError {
    InputError::new(Some(key.to_owned()), format!("invalid arguments: duplicate property \"{key}\""))
}

#[cfg(any(feature = "mcp", feature = "nats"))]
impl Refusal {
    /// A call of `spec` whose input, as the caller sent it, fails with `error` (a key given twice, say).
    pub(crate) fn of_input(spec: &ToolSpec, error: InputError) -> Self {
        Refusal::Invalid { tool: spec.name().to_owned(), error, command: spec.kind() == ToolKind::Command }
    }

    /// A duplicate `key` in a call of `spec`.
    #[cfg(feature = "nats")]
    pub(crate) fn duplicate(spec: &ToolSpec, key: &str) -> Self {
        Refusal::of_input(spec, duplicate(key))
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

    /// serde_json's `Value` would read the first two as the JSON in their strings (`[1]`, and an object with `x`
    /// merged): what a checker validated and what a tool parsing with `Value` used would differ. Refused at any
    /// place and depth, however the key is spelled, and not mistaken for a duplicate.
    #[test]
    fn exec_3_serde_json_s_private_keys_are_refused() {
        for text in [
            r#"{"$serde_json::private::RawValue":"[1]"}"#,
            r#"{"o":{"\u0024serde_json::private::RawValue":"{\"x\":1,\"x\":2}"}}"#,
            r#"[{"a":1,"$serde_json::private::Number":"12"}]"#,
        ] {
            let err = parse_unique(text).unwrap_err();
            assert!(
                err.to_string().starts_with("invalid arguments: reserved property \"$serde_json::private::"),
                "{err}"
            );
            assert_eq!(err.property(), None, "{text}");
            assert!(!err.to_string().contains("column"), "the same text whatever the spelling: {err}");
        }
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
