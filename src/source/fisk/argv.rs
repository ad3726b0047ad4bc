//! JSON input to argument vector, exactly as fisk's `CmdModel.ArgsFromJSON` renders it (EXEC-1..5, GLOBAL-9).
//!
//! The input is read as raw JSON so numbers keep the text the model wrote (`1.50` stays `1.50`). No shell is ever
//! involved: each element becomes one argv entry, and positionals follow a lone `--` so a value starting with `-`
//! is never read as a flag.

use super::model::{ArgModel, FlagModel};
use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// Why an input could not be mapped to arguments. The text names the property.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgvError(String);

impl fmt::Display for ArgvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgvError {}

fn err(msg: impl Into<String>) -> ArgvError {
    ArgvError(msg.into())
}

/// Object entries in input order, values left raw.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut out: Vec<(String, &'de RawValue)> = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    // A validator keeps only the last of duplicate keys; refusing them keeps what was validated
                    // and what reaches argv the same.
                    if out.iter().any(|(seen, _)| *seen == k) {
                        return Err(serde::de::Error::custom(format!("duplicate property \"{k}\"")));
                    }
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

enum Json<'a> {
    Null,
    Bool(bool),
    Number(&'a str),
    String(String),
    Array(Vec<&'a RawValue>),
    Object(Vec<(String, &'a RawValue)>),
}

impl Json<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }
}

fn classify(raw: &RawValue) -> Result<Json<'_>, ArgvError> {
    let text = raw.get().trim();
    let bad = |e: serde_json::Error| err(format!("invalid JSON value: {e}"));
    Ok(match text.as_bytes().first() {
        Some(b'n') => Json::Null,
        Some(b't') => Json::Bool(true),
        Some(b'f') => Json::Bool(false),
        Some(b'"') => Json::String(serde_json::from_str(text).map_err(bad)?),
        Some(b'[') => Json::Array(serde_json::from_str(text).map_err(bad)?),
        Some(b'{') => Json::Object(serde_json::from_str::<Entries<'_>>(text).map_err(bad)?.0),
        _ => Json::Number(text),
    })
}

fn scalar(v: Json<'_>) -> Result<String, ArgvError> {
    match v {
        Json::Null => Ok(String::new()),
        Json::Bool(b) => Ok(b.to_string()),
        Json::Number(n) => Ok(n.to_owned()),
        Json::String(s) => Ok(s),
        other => Err(err(format!("unsupported value type {}", other.kind()))),
    }
}

// Go's strconv.ParseBool true set.
fn parses_true(s: &str) -> bool {
    matches!(s, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

fn render_flag(flag: &FlagModel, raw: &RawValue, out: &mut Vec<String>) -> Result<(), ArgvError> {
    let name = &flag.name;
    let value = classify(raw).map_err(|e| err(format!("flag \"{name}\": {e}")))?;
    if flag.boolean {
        let Json::Bool(b) = value else {
            return Err(err(format!("flag \"{name}\": expected boolean, got {}", value.kind())));
        };
        if b {
            out.push(format!("--{name}"));
        } else if flag.negatable {
            out.push(format!("--no-{name}"));
        } else if flag.default.iter().any(|d| parses_true(d)) {
            return Err(err(format!(
                "flag \"{name}\": cannot be set to false: the flag has no negation and defaults to true"
            )));
        }
        return Ok(());
    }
    let wrap = |e: ArgvError| err(format!("flag \"{name}\": {e}"));
    match value {
        Json::Array(items) => {
            for item in items {
                out.push(format!("--{name}={}", scalar(classify(item).map_err(wrap)?).map_err(wrap)?));
            }
        }
        Json::Object(mut entries) => {
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, v) in entries {
                out.push(format!("--{name}={k}={}", scalar(classify(v).map_err(wrap)?).map_err(wrap)?));
            }
        }
        other => out.push(format!("--{name}={}", scalar(other).map_err(wrap)?)),
    }
    Ok(())
}

/// The parts of a command the mapper needs.
#[derive(Debug, Clone, Copy)]
pub struct CommandShape<'a> {
    /// The command path, e.g. `["stream", "rm"]`.
    pub path: &'a [String],
    /// Exposed global flags; a global whose name is also one of the command's flags or args is ignored here
    /// (GLOBAL-6: the local one wins).
    pub globals: &'a [FlagModel],
    /// The command's own flags in declared order.
    pub flags: &'a [FlagModel],
    /// The command's positional args in declared order.
    pub args: &'a [ArgModel],
}

impl CommandShape<'_> {
    fn owns(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f.name == name) || self.args.iter().any(|a| a.name == name)
    }

    /// Map a JSON object (raw text) to the argument vector: path, globals, flags, then `--` and positionals when
    /// any positional is present. Empty input and `null` map like `{}` (EXEC-5). Duplicate keys are refused.
    ///
    /// This is fisk's `ArgsFromJSON` and checks only what it checks (known keys, boolean flags, nesting); types,
    /// enums and patterns are the schema's job, which a command tool's `call` validates first.
    ///
    /// # Errors
    ///
    /// An [`ArgvError`] naming the property: input that is not a JSON object, an unknown property, a value of the wrong
    /// type, or a boolean flag set to false that has no negation.
    ///
    /// ```
    /// use fisk_ai::source::fisk::{AppModel, CommandShape};
    ///
    /// let app = AppModel::from_slice(br#"{"name":"cowsay","commands":[{"name":"say",
    ///   "flags":[{"name":"wrap","boolean":true}],"args":[{"name":"message","required":true}]}]}"#).unwrap();
    /// let say = &app.commands[0];
    /// let path = vec!["say".to_string()];
    /// let shape = CommandShape { path: &path, globals: &[], flags: &say.flags, args: &say.args };
    /// assert_eq!(shape.argv(r#"{"message": "-rf /", "wrap": true}"#).unwrap(), ["say", "--wrap", "--", "-rf /"]);
    /// assert!(shape.argv(r#"{"colour": 1}"#).unwrap_err().to_string().contains(r#"unknown property "colour""#));
    /// ```
    pub fn argv(&self, input: &str) -> Result<Vec<String>, ArgvError> {
        let trimmed = input.trim();
        let entries = if trimmed.is_empty() || trimmed == "null" {
            Vec::new()
        } else {
            serde_json::from_str::<Entries<'_>>(trimmed).map_err(|e| err(format!("invalid JSON arguments: {e}")))?.0
        };
        let find = |name: &str| entries.iter().rev().find(|(k, _)| k == name).map(|(_, v)| *v);

        // Every key must be a flag, an argument or an exposed global; report the first in input order.
        for (key, _) in &entries {
            if !self.owns(key) && !self.globals.iter().any(|g| &g.name == key) {
                return Err(err(format!("unknown property \"{key}\"")));
            }
        }

        let mut out = Vec::with_capacity(self.path.len() + entries.len() + 2);
        out.extend(self.path.iter().cloned());
        for g in self.globals.iter().filter(|g| !self.owns(&g.name)) {
            if let Some(raw) = find(&g.name) {
                render_flag(g, raw, &mut out)?;
            }
        }
        for f in self.flags {
            if let Some(raw) = find(&f.name) {
                render_flag(f, raw, &mut out)?;
            }
        }

        if let Some(pos) = self.args.iter().position(|a| a.cumulative)
            && pos + 1 != self.args.len()
        {
            return Err(err(format!(
                "argument \"{}\" is cumulative but is not the last argument",
                self.args[pos].name
            )));
        }
        let Some(last) = self.args.iter().rposition(|a| find(&a.name).is_some()) else {
            return Ok(out);
        };
        out.push("--".to_owned());
        for arg in &self.args[..=last] {
            let name = &arg.name;
            match find(name) {
                None if !arg.default.is_empty() => out.extend(arg.default.iter().cloned()),
                None => {
                    return Err(err(format!(
                        "argument \"{name}\" must be set because a later argument is set (\"{}\")",
                        self.args[last].name
                    )));
                }
                Some(raw) => {
                    let wrap = |e: ArgvError| err(format!("argument \"{name}\": {e}"));
                    match classify(raw).map_err(wrap)? {
                        Json::Array(items) => {
                            for item in items {
                                out.push(scalar(classify(item).map_err(wrap)?).map_err(wrap)?);
                            }
                        }
                        other => out.push(scalar(other).map_err(wrap)?),
                    }
                }
            }
        }
        Ok(out)
    }
}
