use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use std::fmt;

/// The JSON input of a tool call, kept exactly as the model wrote it.
///
/// Keeping the text (not a parsed `Value`) means numbers reach a command's argv in their original form: `1.50`
/// stays `1.50`. Parse it into your own type with [`ToolInput::parse`].
///
/// ```
/// use fisk_ai::tool::ToolInput;
///
/// #[derive(serde::Deserialize)]
/// struct Args {
///     path: String,
/// }
///
/// let input = ToolInput::from_json(r#"{"path": "docs/intro.md"}"#).unwrap();
/// assert_eq!(input.parse::<Args>().unwrap().path, "docs/intro.md");
/// assert_eq!(ToolInput::from_json("").unwrap().as_str(), "{}");
/// ```
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolInput(Box<RawValue>);

impl ToolInput {
    /// Input from JSON text. Empty (or all-whitespace) text is `{}` (TOOL-19); invalid JSON is an error.
    ///
    /// # Errors
    ///
    /// The JSON error for text that is not JSON.
    pub fn from_json(text: impl Into<String>) -> Result<Self, serde_json::Error> {
        let text = text.into();
        let text = if text.trim().is_empty() { "{}".to_owned() } else { text };
        RawValue::from_string(text).map(ToolInput)
    }

    /// Input from a parsed value (for example MCP arguments), rendered as compact JSON.
    pub fn from_value(value: &Value) -> Self {
        // A Value always serializes to valid JSON.
        ToolInput(serde_json::value::to_raw_value(value).unwrap_or_else(|_| Self::empty().0))
    }

    /// Input from a JSON object's entries (MCP `arguments`), rendered as compact JSON without copying the map.
    pub fn from_map(map: &serde_json::Map<String, Value>) -> Self {
        // A map of Values always serializes to valid JSON.
        ToolInput(serde_json::value::to_raw_value(map).unwrap_or_else(|_| Self::empty().0))
    }

    /// `{}`.
    pub fn empty() -> Self {
        ToolInput(RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| unreachable!("{{}} is valid JSON")))
    }

    /// The JSON text, trimmed.
    pub fn as_str(&self) -> &str {
        self.0.get().trim()
    }

    /// The input as a `Value`.
    ///
    /// # Errors
    ///
    /// The JSON error if the text is not JSON (input from [`ToolInput::from_json`] always is).
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    /// The input decoded into `T`.
    ///
    /// # Errors
    ///
    /// The JSON error when the input does not decode into `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    /// Whether the input is `null` (which callers treat like `{}`, EXEC-5).
    pub fn is_null(&self) -> bool {
        self.as_str() == "null"
    }
}

impl From<Box<RawValue>> for ToolInput {
    fn from(raw: Box<RawValue>) -> Self {
        ToolInput(raw)
    }
}

impl PartialEq for ToolInput {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl Eq for ToolInput {}

impl fmt::Debug for ToolInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ToolInput({})", self.0.get())
    }
}

impl fmt::Display for ToolInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
