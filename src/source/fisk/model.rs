//! The fisk application model as `--fisk-introspect` prints it (docs: fisk-introspection.md §2-6).
//!
//! Unknown keys are ignored so newer fisk releases still load; the full `schema` is skipped unread, as only
//! `restricted_schema` is used (TOOL-10).

use serde::Deserialize;
use serde_json::value::RawValue;

/// The top-level application object.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct AppModel {
    /// The application name.
    #[serde(default)]
    pub name: String,
    /// Short help.
    #[serde(default)]
    pub help: String,
    /// Version, when the application declares one.
    #[serde(default)]
    pub version: Option<String>,
    /// Top-level commands, in declaration order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub commands: Vec<CmdModel>,
    /// Application-level (global) flags.
    #[serde(default, deserialize_with = "null_as_default")]
    pub flags: Vec<FlagModel>,
}

/// One command node; a leaf when it has no subcommands.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct CmdModel {
    /// The command name (one path element).
    pub name: String,
    /// Short help.
    #[serde(default)]
    pub help: String,
    /// Long help.
    #[serde(default)]
    pub help_long: String,
    /// Hidden commands are skipped with their subtree (TOOL-8).
    #[serde(default)]
    pub hidden: bool,
    /// Tags, in declared order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags: Vec<String>,
    /// The command's own flags, in declaration order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub flags: Vec<FlagModel>,
    /// Positional arguments, in declaration order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub args: Vec<ArgModel>,
    /// Subcommands.
    #[serde(default, deserialize_with = "null_as_default")]
    pub commands: Vec<CmdModel>,
    /// The precomputed restricted input schema (fisk v0.9+), kept as raw JSON: it is decoded only when a tool's
    /// schema is first needed, so a 10,000-command tree loads in milliseconds.
    #[serde(default, alias = "restrictedSchema", alias = "RestrictedSchema")]
    pub restricted_schema: Option<Box<RawValue>>,
}

/// A flag (global or command-level).
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct FlagModel {
    /// Long name without dashes.
    pub name: String,
    /// Help text.
    #[serde(default)]
    pub help: String,
    /// Default values (a cumulative flag may have several).
    #[serde(default, deserialize_with = "null_as_default")]
    pub default: Vec<String>,
    /// Whether the flag must be given.
    #[serde(default)]
    pub required: bool,
    /// Hidden flags are never exposed.
    #[serde(default)]
    pub hidden: bool,
    /// Boolean flags render as `--x` / `--no-x`.
    #[serde(default)]
    pub boolean: bool,
    /// Whether `--no-x` exists.
    #[serde(default)]
    pub negatable: bool,
    /// Whether the flag may repeat.
    #[serde(default)]
    pub cumulative: bool,
    /// Known values.
    #[serde(default, deserialize_with = "null_as_default")]
    pub completions: Vec<String>,
}

/// A positional argument.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct ArgModel {
    /// Name.
    pub name: String,
    /// Help text.
    #[serde(default)]
    pub help: String,
    /// Default values.
    #[serde(default, deserialize_with = "null_as_default")]
    pub default: Vec<String>,
    /// Whether the argument must be given.
    #[serde(default)]
    pub required: bool,
    /// Hidden arguments are left out of derived schemas.
    #[serde(default)]
    pub hidden: bool,
    /// Whether it consumes the rest of the line.
    #[serde(default)]
    pub cumulative: bool,
}

// Go marshals a nil slice as `null`; treat it as empty.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl AppModel {
    /// Decode an introspection document. Leading noise before the JSON (a PreAction printing a line) is tolerated.
    ///
    /// # Errors
    ///
    /// The JSON error when no introspection document can be decoded from `bytes`.
    pub fn from_slice(bytes: &[u8]) -> Result<AppModel, serde_json::Error> {
        match serde_json::from_slice(bytes) {
            Ok(m) => Ok(m),
            Err(first) => {
                // Skip to the first line that opens an object, as fisk applications may print before the JSON.
                let start = bytes.windows(2).position(|w| w[0] == b'\n' && w[1] == b'{').map(|p| p + 1).ok_or(first)?;
                serde_json::from_slice(&bytes[start..])
            }
        }
    }
}
