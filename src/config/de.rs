//! Deserialization helpers: value checks done while decoding (so the YAML deserializer attaches the key path and
//! line/column to the error), normalization, the strict per-backend `options` pass, and the conversion of YAML
//! errors into [`Error`].

use std::fmt;
use std::path::PathBuf;

use serde::de::{Deserialize, Deserializer, Error as _, IgnoredAny, SeqAccess, Visitor};

use super::GoDuration;
use super::duration::DurationVisitor;
use super::validate;
use crate::error::{Error, Location};

/// Decodes `T`, treating YAML `null` (an empty value) as `T::default()`, as Go's YAML decoder does.
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

// Every check runs inside a `Visitor` method: the YAML deserializer attaches the key path and the line and column
// of the value only to errors returned from within its own `deserialize_*` call, not to errors raised after
// `T::deserialize` has returned.

/// Visits a scalar as a string (an optional one through `deserialize_option`) and converts it with `f`.
struct StrWith<F>(F);

impl<'de, T, F> Visitor<'de> for StrWith<F>
where
    F: FnOnce(Option<&str>) -> Result<T, String>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<T, E> {
        (self.0)(None).map_err(E::custom)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
        (self.0)(None).map_err(E::custom)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_str(self)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        (self.0)(Some(v)).map_err(E::custom)
    }
}

/// An optional string (`null` is `None`) converted by `f` inside the visitor.
pub(crate) fn str_opt<'de, D, T>(d: D, f: impl FnOnce(Option<&str>) -> Result<T, String>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    d.deserialize_option(StrWith(f))
}

/// A required string converted by `f` inside the visitor.
fn str_req<'de, D, T>(d: D, f: impl FnOnce(&str) -> Result<T, String>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    d.deserialize_str(StrWith(|s: Option<&str>| f(s.unwrap_or_default())))
}

/// Visits an optional integer and converts it with `f`.
struct IntWith<F>(F);

impl<'de, T, F> Visitor<'de> for IntWith<F>
where
    F: FnOnce(Option<i64>) -> Result<T, String>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<T, E> {
        (self.0)(None).map_err(E::custom)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
        (self.0)(None).map_err(E::custom)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_i64(self)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<T, E> {
        (self.0)(Some(v)).map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<T, E> {
        let v = i64::try_from(v).map_err(|_| E::custom(format!("{v} is too large")))?;
        (self.0)(Some(v)).map_err(E::custom)
    }
}

fn int_opt<'de, D, T>(d: D, f: impl FnOnce(Option<i64>) -> Result<T, String>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    d.deserialize_option(IntWith(f))
}

/// Visits an optional Go duration and checks it with `check`.
struct DurationWith(fn(GoDuration) -> Result<(), String>);

impl<'de> Visitor<'de> for DurationWith {
    type Value = Option<GoDuration>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Go duration string such as \"30s\"")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(DurationVisitor { check: self.0 }).map(Some)
    }
}

/// An optional string where empty means unset.
pub(crate) fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    str_opt(d, |s| Ok(s.filter(|s| !s.is_empty()).map(str::to_owned)))
}

/// An optional path where empty means unset.
pub(crate) fn opt_path<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
    Ok(opt_string(d)?.map(PathBuf::from))
}

/// An optional name (`identity`, `alias`) that must match `^[a-zA-Z0-9_-]+$`; empty means unset.
pub(crate) fn opt_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    str_opt(d, |s| match s.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => validate::check_name(s).map(|()| Some(s.to_owned())),
    })
}

/// A required name that must match `^[a-zA-Z0-9_-]+$`.
pub(crate) fn name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    str_req(d, |s| validate::check_name(s).map(|()| s.to_owned()))
}

/// A non-negative integer (CFG-8); `null` is 0.
pub(crate) fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    int_opt(d, |v| {
        let v = v.unwrap_or(0);
        u64::try_from(v).map_err(|_| format!("must not be negative, got {v}"))
    })
}

/// A TCP port, 0 meaning unset.
pub(crate) fn port<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    int_opt(d, |v| {
        let v = v.unwrap_or(0);
        u16::try_from(v).map_err(|_| format!("port must be between 0 and 65535, got {v}"))
    })
}

/// `max_concurrent_tools` (MCP-16, A2A-11): 0..=1024, 0 meaning unset.
pub(crate) fn concurrency<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    int_opt(d, |v| {
        let v = v.unwrap_or(0);
        validate::check_concurrency(v).map(|()| v as u32)
    })
}

/// `expose.agent.a2a.queue` (A2A-14): 0 (unset) up to [`MAX_A2A_QUEUE`](super::expose::MAX_A2A_QUEUE).
pub(crate) fn a2a_queue<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    int_opt(d, |v| {
        let v = v.unwrap_or(0);
        super::validate::check_a2a_queue(v).map(|()| v as u32)
    })
}

/// `expose.agent.mcp.max_sessions`: 0 (unset) up to [`MAX_MCP_SESSIONS`](super::expose::MAX_MCP_SESSIONS).
pub(crate) fn max_sessions<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    int_opt(d, |v| {
        let v = v.unwrap_or(0);
        let max = super::expose::MAX_MCP_SESSIONS as i64;
        if v < 0 {
            Err(format!("must not be negative, got {v}"))
        } else if v > max {
            Err(format!("must be at most {max}, got {v}"))
        } else {
            Ok(v as u32)
        }
    })
}

/// `expose.agent.mcp.tasks.max`: 0 (unset) up to [`MAX_MCP_TASKS`](super::expose::MAX_MCP_TASKS).
pub(crate) fn task_max<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    int_opt(d, |v| {
        let v = v.unwrap_or(0);
        let max = super::expose::MAX_MCP_TASKS as i64;
        if v < 0 {
            Err(format!("must not be negative, got {v}"))
        } else if v > max {
            Err(format!("must be at most {max}, got {v}"))
        } else {
            Ok(v as u32)
        }
    })
}

/// A duration that must not be negative (MCP-17, A2A-11).
pub(crate) fn non_negative_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<GoDuration>, D::Error> {
    d.deserialize_option(DurationWith(validate::check_non_negative_duration))
}

/// A duration that must be above zero (CFG-9, MCPI-12).
pub(crate) fn positive_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<GoDuration>, D::Error> {
    d.deserialize_option(DurationWith(validate::check_positive_duration))
}

/// One `tools` pattern, compiled to prove it is a valid regular expression (SEL-6).
struct Pattern(String);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        str_req(d, |s| validate::check_pattern(s).map(|()| Pattern(s.to_owned())))
    }
}

/// A list of `tools` patterns, each a valid regular expression.
pub(crate) fn patterns<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v: Vec<Pattern> = nullable(d)?;
    Ok(v.into_iter().map(|p| p.0).collect())
}

/// OAuth scopes (`required_scopes`, `scopes`): each a non-empty RFC 6749 scope token (printable ASCII but space,
/// `"` and `\`); duplicates are dropped.
pub(crate) fn scopes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v: Vec<String> = nullable(d)?;
    let mut out: Vec<String> = Vec::with_capacity(v.len());
    for s in v {
        validate::check_scope(&s).map_err(serde::de::Error::custom)?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(out)
}

/// `global_flags`, normalized per GLOBAL-2.
pub(crate) fn global_flags<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v: Vec<String> = nullable(d)?;
    Ok(validate::normalize_global_flags(&v))
}

/// `harness.confirm_tags`, normalized per CFG-11.
pub(crate) fn confirm_tags<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v: Vec<String> = nullable(d)?;
    Ok(validate::normalize_tags(&v))
}

/// A backend name (any a registry may hold; the harness checks it is registered); empty or `null` means `file`.
fn backend<'de, D: Deserializer<'de>>(d: D, what: &str) -> Result<String, D::Error> {
    str_opt(d, |s| {
        let v = s.filter(|s| !s.is_empty()).unwrap_or("file");
        validate::check_backend(what, v).map(|()| v.to_owned())
    })
}

/// `harness.memory.backend` (MEM-18).
pub(crate) fn memory_backend<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    backend(d, "memory")
}

/// `harness.sessions.backend` (SESS-25).
pub(crate) fn sessions_backend<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    backend(d, "sessions")
}

/// `llm.provider`; empty or `null` means `anthropic`.
pub(crate) fn provider<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    str_opt(d, |s| Ok(s.filter(|s| !s.is_empty()).unwrap_or(super::DEFAULT_PROVIDER).to_owned()))
}

/// An MCP server `url` (MCPI-2), validated like PROV-7; empty means unset.
pub(crate) fn url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    str_opt(d, |s| match s.filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(u) => {
            validate::check_http_url(u).map_err(|e| format!("invalid url {u:?}: {e}"))?;
            Ok(Some(u.to_owned()))
        }
    })
}

/// `llm.base_url`, validated by PROV-7; empty means unset.
pub(crate) fn base_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    str_opt(d, |s| match s.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(u) => {
            validate::check_http_url(u).map_err(|e| format!("invalid base URL {u:?}: {e}"))?;
            Ok(Some(u.to_owned()))
        }
    })
}

/// Visits an MCP server `command` (MCPI-3): a non-empty list whose first entry is not empty.
struct CommandVisitor;

impl<'de> Visitor<'de> for CommandVisitor {
    type Value = Option<Vec<String>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list: the executable path followed by its arguments")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(s) = seq.next_element::<String>()? {
            out.push(s);
        }
        validate::check_command(&out).map_err(A::Error::custom)?;
        Ok(Some(out))
    }
}

/// An MCP server `command` (MCPI-3).
pub(crate) fn command<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    d.deserialize_option(CommandVisitor)
}

/// Free-form tool options: a mapping, `null` meaning empty.
pub(crate) fn options_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<serde_json::Map<String, serde_json::Value>, D::Error> {
    nullable(d)
}

// ---- strict per-backend options (CFG-4) -------------------------------------------------------------------------
//
// The first pass decodes `options` into a union of every backend's keys (unknown keys are already errors there).
// This second pass re-reads only the two `options` blocks with the key set of the selected backend, so a key that
// belongs to the other backend is an error with its line, column and key path.

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct ShadowDoc<M, S> {
    harness: Option<ShadowHarness<M, S>>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct ShadowHarness<M, S> {
    memory: Option<ShadowBlock<M>>,
    sessions: Option<ShadowBlock<S>>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct ShadowBlock<O> {
    options: Option<O>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys")]
#[allow(dead_code)]
struct FileOptions {
    #[serde(default)]
    directory: Option<IgnoredAny>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys")]
#[allow(dead_code)]
struct JetStreamMemoryOptions {
    #[serde(default)]
    bucket: Option<IgnoredAny>,
    #[serde(default)]
    prefix: Option<IgnoredAny>,
    #[serde(default)]
    no_require_read_before_update: Option<IgnoredAny>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys")]
#[allow(dead_code)]
struct JetStreamSessionOptions {
    #[serde(default)]
    stream: Option<IgnoredAny>,
    #[serde(default)]
    pins_bucket: Option<IgnoredAny>,
}

fn shadow<'de, M, S>(yaml: &'de str) -> Result<(), serde_yaml::Error>
where
    M: Deserialize<'de>,
    S: Deserialize<'de>,
{
    serde_yaml::from_str::<Option<ShadowDoc<M, S>>>(yaml).map(drop)
}

/// Re-reads the memory and session `options` blocks strictly for the built-in backends `cfg` selected; a host
/// backend's options are its factory's to check, when the harness opens it.
pub(crate) fn check_backend_options(yaml: &str, memory: &str, sessions: &str) -> crate::error::Result<()> {
    let res = match memory {
        "jetstream" => shadow::<JetStreamMemoryOptions, IgnoredAny>(yaml),
        "file" => shadow::<FileOptions, IgnoredAny>(yaml),
        _ => Ok(()),
    }
    .and_then(|()| match sessions {
        "jetstream" => shadow::<IgnoredAny, JetStreamSessionOptions>(yaml),
        "file" => shadow::<IgnoredAny, FileOptions>(yaml),
        _ => Ok(()),
    });
    res.map_err(|e| {
        let (msg, key, loc) = parts(&e);
        let which = match key.as_deref() {
            Some(k) if k.starts_with("harness.sessions.") => format!("sessions backend \"{sessions}\""),
            _ => format!("memory backend \"{memory}\""),
        };
        build(format!("{msg} (for the {which})"), key, loc)
    })
}

/// The `options` of `harness.memory` and `harness.sessions` as written, for the backends' factories.
pub(crate) fn backend_option_maps(yaml: &str) -> (serde_json::Map<String, serde_json::Value>, OptionMap) {
    type Maps = ShadowDoc<OptionMap, OptionMap>;
    match serde_yaml::from_str::<Option<Maps>>(yaml) {
        Ok(Some(ShadowDoc { harness: Some(h) })) => {
            let take = |b: Option<ShadowBlock<OptionMap>>| b.and_then(|b| b.options).unwrap_or_default();
            (take(h.memory), take(h.sessions))
        }
        _ => (OptionMap::new(), OptionMap::new()),
    }
}

/// A backend's options as written.
pub(crate) type OptionMap = serde_json::Map<String, serde_json::Value>;

// ---- YAML errors ------------------------------------------------------------------------------------------------

/// Splits `path: message` when the text before the first `": "` looks like a YAML key path.
fn split_path(msg: &str) -> (Option<&str>, &str) {
    if let Some(i) = msg.find(": ") {
        let head = &msg[..i];
        if !head.is_empty()
            && head.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'[' | b']' | b'?'))
        {
            return (Some(head), &msg[i + 2..]);
        }
    }
    (None, msg)
}

/// The name inside the first pair of backticks after `prefix`, as in ``unknown field `x`, expected ...``.
fn field_after<'a>(msg: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = msg.strip_prefix(prefix)?;
    let end = rest.find('`')?;
    Some(&rest[..end])
}

/// Converts a YAML decoding error into a configuration [`Error`]: the message keeps the key path the deserializer
/// reported, the line and column move into the [`Location`], and the key path (the unknown or missing key itself
/// when that is what the error is about) becomes [`Error::key`].
pub(crate) fn yaml_error(yaml: &str, err: serde_yaml::Error) -> Error {
    let (msg, key, mut loc) = parts(&err);
    // serde reports a duplicate field at the start of its mapping; the operator needs the second occurrence.
    if let Some(k) = key.as_deref()
        && msg.contains("duplicate field `")
    {
        loc = super::locate::locate_duplicate(yaml, k).or(loc);
    }
    build(msg, key, loc)
}

type Parts = (String, Option<String>, Option<(usize, usize)>);

fn parts(err: &serde_yaml::Error) -> Parts {
    let loc = err.location().map(|l| (l.line(), l.column()));
    let mut msg = err.to_string();
    // The position is the location's job: take the library's rendering of that same position out of the text
    // (a suffix, or before a parser's ", while parsing ... at line L column C" context, which stays).
    if let Some((line, column)) = loc {
        msg = msg.replacen(&format!(" at line {line} column {column}"), "", 1);
    }
    let (path, rest) = split_path(&msg);
    let join = |p: Option<&str>, f: &str| match p {
        Some(p) => format!("{p}.{f}"),
        None => f.to_owned(),
    };
    let key = if let Some(f) = field_after(rest, "unknown field `") {
        Some(join(path, f))
    } else if let Some(f) = field_after(rest, "missing field `") {
        Some(join(path, f))
    } else if let Some(f) = field_after(rest, "duplicate field `") {
        Some(join(path, f))
    } else {
        path.map(str::to_owned)
    };
    (msg, key, loc)
}

// The YAML error is not kept as the source: the message, key and location already say all it says, and a chain
// reporter would print it a second time.
fn build(msg: String, key: Option<String>, loc: Option<(usize, usize)>) -> Error {
    let mut out = match key {
        Some(k) => Error::config_key(k, msg),
        None => Error::config(msg),
    };
    if let Some((line, column)) = loc {
        out = out.with_location(Location { file: None, line, column });
    }
    out
}

/// A price or an amount of dollars: a non-negative, finite number (an integer or a decimal).
pub(crate) fn price<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    check_price(v).map_err(serde::de::Error::custom)
}

/// An optional [`price`]; null or absent is unset.
pub(crate) fn opt_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)?.map(check_price).transpose().map_err(serde::de::Error::custom)
}

fn check_price(v: f64) -> Result<f64, String> {
    if (0.0..=1e15).contains(&v) { Ok(v) } else { Err(format!("must be a non-negative number of dollars, got {v}")) }
}

/// A share: a number above 0 and at most 1.
pub(crate) fn share<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!("must be a share above 0 and at most 1, got {v}")))
    }
}

/// A count of at least 1.
pub(crate) fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    int_opt(d, |v| match v {
        Some(v) if v >= 1 => Ok(v.unsigned_abs()),
        Some(v) => Err(format!("must be at least 1, got {v}")),
        None => Err("must be at least 1".to_owned()),
    })
}

/// `harness.knowledge.top_k`: 1 to [`MAX_KNOWLEDGE_TOP_K`](super::MAX_KNOWLEDGE_TOP_K).
pub(crate) fn knowledge_top_k<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let max = super::MAX_KNOWLEDGE_TOP_K;
    int_opt(d, |v| match v {
        Some(v) if (1..=max as i64).contains(&v) => Ok(v.unsigned_abs()),
        Some(v) => Err(format!("must be at least 1 and at most {max}, got {v}")),
        None => Err(format!("must be at least 1 and at most {max}")),
    })
}
