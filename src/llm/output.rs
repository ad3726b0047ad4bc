//! A structured final answer (OUT-1..OUT-9): the JSON Schema a run's final answer must satisfy.
//!
//! The schema is compiled once, and its JSON text rendered once, when the [`OutputSchema`] is made: every request
//! of a run carries it, and re-serializing it per request could only cost time and risk a prefix that moves. A
//! provider asks for the answer its own way (Anthropic through a forced [`FINAL_ANSWER_TOOL`], OpenAI-compatible
//! servers through `response_format`); the agent loop validates what comes back with [`OutputSchema::validate`].

use crate::error::{Error, Result};
use serde_json::Value;
use serde_json::value::RawValue;
use std::fmt;
use std::sync::Arc;
#[cfg(feature = "anthropic")]
use std::sync::OnceLock;

/// The name under which the final answer is asked for: the Anthropic tool and the OpenAI `json_schema` name.
pub const FINAL_ANSWER_TOOL: &str = "final_answer";

/// How many validation errors are reported: enough to repair an answer, few enough for one message.
const MAX_ERRORS: usize = 10;
/// A validation error longer than this names the instance generically: the validator's own text quotes the whole
/// offending value, which for a large answer would flood the repair message and the run's error.
const MAX_ERROR_LEN: usize = 300;

/// A JSON Schema the final answer of a run must be valid against (OUT-1).
///
/// Cheap to clone: the compiled validator and the rendered schema are shared.
///
/// ```
/// use fisk_ai::llm::OutputSchema;
/// use serde_json::json;
///
/// let schema = OutputSchema::new(json!({
///     "type": "object",
///     "properties": {"count": {"type": "integer"}},
///     "required": ["count"]
/// }))?;
/// assert_eq!(schema.validate(r#"{"count": 3}"#).unwrap(), json!({"count": 3}));
/// let errors = schema.validate(r#"{"count": "three"}"#).unwrap_err();
/// assert!(errors[0].starts_with("/count: "), "{errors:?}");
/// # Ok::<(), fisk_ai::Error>(())
/// ```
#[derive(Clone)]
pub struct OutputSchema {
    inner: Arc<Inner>,
}

struct Inner {
    schema: Value,
    /// The schema's JSON text, rendered once.
    rendered: Box<RawValue>,
    validator: jsonschema::Validator,
    /// The Anthropic final tool's rendering, made on first use and kept for the schema's life.
    #[cfg(feature = "anthropic")]
    wire: OnceLock<Vec<u8>>,
}

impl OutputSchema {
    /// Compile `schema` (formats are not asserted, as everywhere in this crate).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::ErrorKind::Config) naming what is wrong when `schema` is not a valid JSON
    /// Schema (neither an object nor a boolean, an unknown type, a bad `$ref`, ...).
    pub fn new(schema: Value) -> Result<Self> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(Error::config("the output schema must be a JSON object (or a boolean)"));
        }
        let validator = jsonschema::options()
            .should_validate_formats(false)
            .build(&schema)
            .map_err(|e| Error::config(format!("the output schema is not a valid JSON Schema: {e}")))?;
        let rendered = serde_json::value::to_raw_value(&schema)
            .map_err(|e| Error::config(format!("the output schema cannot be rendered as JSON: {e}")))?;
        let inner = Inner {
            schema,
            rendered,
            validator,
            #[cfg(feature = "anthropic")]
            wire: OnceLock::new(),
        };
        Ok(OutputSchema { inner: Arc::new(inner) })
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.inner.schema
    }

    /// The schema's JSON text, rendered once (what providers put on the wire).
    pub fn json(&self) -> &str {
        self.inner.rendered.get()
    }

    /// Whether the schema describes a JSON object (`"type": "object"`): only such a schema can be a tool's input
    /// schema as it is; any other is wrapped in an object under [`ANSWER_KEY`].
    #[cfg(feature = "anthropic")]
    pub(crate) fn is_object(&self) -> bool {
        self.inner.schema.get("type").and_then(Value::as_str) == Some("object")
    }

    /// The Anthropic final tool, rendered by `render` the first time (OpenAI-compatible servers take the schema's
    /// text as it is, so only this provider needs a slot).
    #[cfg(feature = "anthropic")]
    pub(crate) fn wire(&self, render: impl FnOnce(&OutputSchema) -> Vec<u8>) -> &[u8] {
        self.inner.wire.get_or_init(|| render(self))
    }

    /// Parse `text` as JSON and validate it: the value, or readable error lines, each naming where in the answer
    /// it is (`/items/0: ...`, or `(root)`). Never panics: JSON nested too deeply for the parser is an error line.
    ///
    /// # Errors
    ///
    /// The reasons `text` is not JSON, or not valid against the schema (at most ten).
    pub fn validate(&self, text: &str) -> std::result::Result<Value, Vec<String>> {
        let value: Value =
            serde_json::from_str(text.trim()).map_err(|e| vec![format!("the answer is not JSON: {e}")])?;
        let errors: Vec<String> = self
            .inner
            .validator
            .iter_errors(&value)
            .take(MAX_ERRORS)
            .map(|e| {
                let at = match e.instance_path().as_str() {
                    "" => "(root)".to_owned(),
                    path => path.to_owned(),
                };
                let mut text = e.to_string();
                if text.len() > MAX_ERROR_LEN {
                    text = e.masked().to_string();
                }
                format!("{at}: {text}")
            })
            .collect();
        if errors.is_empty() { Ok(value) } else { Err(errors) }
    }
}

/// The one property a non-object schema is wrapped under as a tool input (Anthropic tools take objects only).
#[cfg(feature = "anthropic")]
pub(crate) const ANSWER_KEY: &str = "answer";

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema").field("schema", &self.json()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn out_1_an_invalid_schema_is_a_config_error_naming_the_problem() {
        let err = OutputSchema::new(json!({"type": "no-such-type"})).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Config);
        assert!(err.to_string().contains("not a valid JSON Schema"), "{err}");
        assert!(OutputSchema::new(json!([1])).is_err());
    }

    #[test]
    fn out_3_errors_name_the_instance_path_and_a_huge_value_is_not_quoted() {
        let schema = OutputSchema::new(json!({"type": "array", "items": {"type": "integer"}})).unwrap();
        let errors = schema.validate(r#"[1, "x"]"#).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("/1: "), "{errors:?}");
        let big = format!("\"{}\"", "y".repeat(10_000));
        let errors = schema.validate(&big).unwrap_err();
        assert!(errors[0].starts_with("(root): ") && errors[0].len() <= MAX_ERROR_LEN, "{errors:?}");
    }
}
