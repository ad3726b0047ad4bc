//! Input checks every tool call passes before anything runs: the required-parameter check (TOOL-18..21) and
//! validation against the tool's JSON Schema (EXEC-3).

use serde::de::IgnoredAny;
use serde_json::{Map, Value};
use std::fmt;

/// Required parameters a call left out (TOOL-18..20).
///
/// Its `Display` is exactly the text the model receives:
///
/// ```
/// use fisk_ai::tool::schema::missing_required;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {"subject": {}, "level": {}}, "required": ["subject"]});
/// let missing = missing_required("do", &schema, "{}").unwrap();
/// assert_eq!(
///     missing.to_string(),
///     r#"tool "do" was called without required parameter(s): subject. required: subject; optional: level"#
/// );
/// assert!(missing_required("do", &schema, r#"{"subject": null}"#).is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MissingRequired {
    /// The tool name.
    pub tool: String,
    /// The absent required parameters, in schema order.
    pub missing: Vec<String>,
    /// Every required parameter, in schema order.
    pub required: Vec<String>,
    /// The non-required properties, sorted.
    pub optional: Vec<String>,
}

impl fmt::Display for MissingRequired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool \"{}\" was called without required parameter(s): {}. required: {}",
            self.tool,
            self.missing.join(", "),
            self.required.join(", ")
        )?;
        if !self.optional.is_empty() {
            write!(f, "; optional: {}", self.optional.join(", "))?;
        }
        Ok(())
    }
}

/// The required parameters of `schema` absent from `input` (raw JSON text), or `None` when none are missing.
///
/// A key counts as supplied whatever its value (TOOL-18). Empty input and `null` count as `{}`; JSON that is not an
/// object reports nothing, leaving it to argument validation to reject (TOOL-19).
pub fn missing_required(tool: &str, schema: &Value, input: &str) -> Option<MissingRequired> {
    let trimmed = input.trim();
    if trimmed.is_empty() || trimmed == "null" {
        return missing_from(tool, schema, |_| false);
    }
    // Keys only: the values are not needed here.
    let keys = serde_json::from_str::<std::collections::HashMap<String, IgnoredAny>>(trimmed).ok()?;
    missing_from(tool, schema, |k| keys.contains_key(k))
}

/// [`missing_required`] over an input already parsed (the dispatch path parses once).
pub(crate) fn missing_required_in(tool: &str, schema: &Value, input: &Map<String, Value>) -> Option<MissingRequired> {
    missing_from(tool, schema, |k| input.contains_key(k))
}

fn missing_from(tool: &str, schema: &Value, supplied: impl Fn(&str) -> bool) -> Option<MissingRequired> {
    let required: Vec<&str> = schema.get("required")?.as_array()?.iter().filter_map(Value::as_str).collect();
    let missing: Vec<String> = required.iter().filter(|r| !supplied(r)).map(|r| (*r).to_owned()).collect();
    if missing.is_empty() {
        return None;
    }
    let mut optional: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().filter(|k| !required.contains(&k.as_str())).cloned().collect())
        .unwrap_or_default();
    optional.sort();
    Some(MissingRequired {
        tool: tool.to_owned(),
        missing,
        required: required.into_iter().map(str::to_owned).collect(),
        optional,
    })
}

/// Why an input does not satisfy a tool's schema; the message names the property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    property: Option<String>,
    message: String,
}

impl InputError {
    pub(crate) fn new(property: Option<String>, message: String) -> Self {
        InputError { property, message }
    }

    /// An input a tool cannot use, for [`Tool::prepare`](crate::tool::Tool::prepare): `message` says what is wrong
    /// and should name `property` when there is one.
    ///
    /// ```
    /// use fisk_ai::tool::schema::InputError;
    ///
    /// let e = InputError::invalid(Some("replicas"), "replicas must be below 50");
    /// assert_eq!(e.property(), Some("replicas"));
    /// assert_eq!(e.to_string(), "replicas must be below 50");
    /// ```
    pub fn invalid(property: Option<&str>, message: impl Into<String>) -> Self {
        InputError { property: property.map(str::to_owned), message: message.into() }
    }

    /// The offending top-level property, when the problem is with one.
    pub fn property(&self) -> Option<&str> {
        self.property.as_deref()
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(crate) fn check(schema: &Value, validator: &jsonschema::Validator, input: &Value) -> Result<(), InputError> {
    let Some(obj) = input.as_object() else {
        return Err(InputError::new(None, format!("arguments must be a JSON object, got {}", type_name(input))));
    };
    // Unknown properties first, in the model's key order, with the wording EXEC-3 asks for.
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        let props = schema.get("properties").and_then(Value::as_object);
        if let Some(key) = obj.keys().find(|k| !props.is_some_and(|p| p.contains_key(k.as_str()))) {
            return Err(InputError::new(Some(key.clone()), format!("unknown property \"{key}\"")));
        }
    }
    // The boolean walk for the common case: `iter_errors` builds its error machinery even when there is nothing
    // to report, and a valid input is what nearly every call is.
    if validator.is_valid(input) {
        return Ok(());
    }
    let Some(err) = validator.iter_errors(input).next() else {
        // The two walks disagree: refused, since the boolean one said no.
        return Err(InputError::new(None, "invalid arguments: they do not match the tool's schema".to_owned()));
    };
    let pointer = err.instance_path().as_str();
    let property = pointer.strip_prefix('/').map(|p| {
        let first = p.split('/').next().unwrap_or(p);
        first.replace("~1", "/").replace("~0", "~")
    });
    let detail = compact(&err).unwrap_or_else(|| err.to_string());
    let message = match &property {
        Some(p) => format!("invalid value for property \"{p}\": {detail}"),
        None => format!("invalid arguments: {detail}"),
    };
    Err(InputError::new(property, message))
}

/// Array-size errors stated by count: the validator's own text echoes the whole array back to the model.
fn compact(err: &jsonschema::ValidationError<'_>) -> Option<String> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let count = err.instance().as_array().map(Vec::len)?;
    match err.kind() {
        Kind::MaxItems { limit } => Some(format!("has {count} entries; give at most {limit}")),
        Kind::MinItems { limit } => Some(format!("has {count} entries; give at least {limit}")),
        _ => None,
    }
}
