//! Leaf walk, naming, descriptions and schemas (TOOL-8..17, TAG-6/7, GLOBAL-2..8).

use super::doc::{DocCmd, LeafParts};
use super::model::{ArgModel, CmdModel, FlagModel};
use crate::error::{Error, Result};
use crate::tool::Tags;
use crate::warning::Warning;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::borrow::{Borrow, Cow};
use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;

/// Flags fisk adds itself; never exposable (GLOBAL-4).
pub(crate) const FRAMEWORK_FLAGS: [&str; 10] = [
    "help",
    "help-long",
    "help-man",
    "help-llm",
    "help-compact",
    "completion-bash",
    "completion-script-bash",
    "completion-script-zsh",
    "fisk-introspect",
    "version",
];

/// One runnable leaf, ready to become a tool.
#[derive(Debug)]
pub(crate) struct Leaf {
    pub(crate) path: Vec<String>,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) plain_description: String,
    pub(crate) tags: Tags,
    /// The schema text (when the document has an object there; none means derive it, TOOL-10), flags and args.
    pub(crate) parts: LeafParts,
}

/// What every leaf walk collects. Each leaf goes straight to `sink`: a large tree's leaves are never held in a
/// list of their own.
struct Walk<'w, F: FnMut(Leaf)> {
    sink: F,
    derived: usize,
    warnings: &'w mut Vec<Warning>,
}

impl<F: FnMut(Leaf)> Walk<'_, F> {
    /// The leaf at `path`, after its TAG-6/TAG-7 warnings.
    fn leaf<S: Borrow<str>>(&mut self, path: &[S], help: &str, long: &str, tags: Tags, parts: LeafParts) {
        // TAG-6 and TAG-7 cover every leaf, before deny stripping and filtering.
        for tag in tags.unknown_ai_tags() {
            self.warnings.push(Warning::UnknownAiTag { tag: tag.to_owned(), command: path.join(" ") });
        }
        let conflicts = tags.behavior_conflicts();
        if !conflicts.is_empty() {
            self.warnings.push(Warning::ConflictingBehaviorTags { command: path.join(" "), tags: conflicts });
        }
        if parts.schema().is_none() {
            self.derived += 1;
        }
        (self.sink)(Leaf {
            name: path.join("_"),
            description: model_description(help, long, &tags),
            plain_description: if help.is_empty() { long.to_owned() } else { help.to_owned() },
            path: path.iter().map(|p| p.borrow().to_owned()).collect(),
            tags,
            parts,
        });
    }
}

/// The raw restricted schema's text when it is an object (anything else means derive one, TOOL-10).
fn object_schema(raw: Option<&RawValue>) -> Option<&str> {
    raw.map(RawValue::get).filter(|r| r.trim_start().starts_with('{'))
}

/// Walk the tree depth first in document order, handing each leaf to `sink`; hidden commands are skipped with their
/// subtree and grouping nodes are recursed into but never tools (TOOL-8). Returns how many leaves derive their
/// schema.
pub(crate) fn leaves(commands: Vec<CmdModel>, warnings: &mut Vec<Warning>, sink: impl FnMut(Leaf)) -> usize {
    fn walk<F: FnMut(Leaf)>(commands: Vec<CmdModel>, path: &mut Vec<String>, w: &mut Walk<'_, F>) {
        for cmd in commands {
            if cmd.hidden {
                continue;
            }
            path.push(cmd.name);
            if cmd.commands.is_empty() {
                let parts = LeafParts::owned(object_schema(cmd.restricted_schema.as_deref()), cmd.flags, cmd.args);
                w.leaf(path, &cmd.help, &cmd.help_long, Tags::new(cmd.tags), parts);
            } else {
                walk(cmd.commands, path, w);
            }
            path.pop();
        }
    }
    let mut w = Walk { sink, derived: 0, warnings };
    walk(commands, &mut Vec::new(), &mut w);
    w.derived
}

/// [`leaves`] over a borrowed document: each leaf keeps ranges of `text` instead of owned flags, args and schema.
pub(crate) fn doc_leaves(
    text: &Arc<String>,
    commands: &[DocCmd<'_>],
    warnings: &mut Vec<Warning>,
    sink: impl FnMut(Leaf),
) -> usize {
    // The document is only borrowed: its flags and args may be checked on another thread meanwhile.
    fn walk<'c, F: FnMut(Leaf)>(
        text: &Arc<String>,
        commands: &'c [DocCmd<'_>],
        path: &mut Vec<&'c str>,
        w: &mut Walk<'_, F>,
    ) {
        for cmd in commands.iter().filter(|c| !c.hidden) {
            path.push(&cmd.name);
            if cmd.commands.is_empty() {
                let parts = LeafParts::borrowed(text.clone(), cmd, object_schema(cmd.restricted_schema));
                let tags = Tags::new(cmd.tags.iter().map(|t| t.as_ref()));
                w.leaf(path, &cmd.help, &cmd.help_long, tags, parts);
            } else {
                walk(text, &cmd.commands, path, w);
            }
            path.pop();
        }
    }
    let mut w = Walk { sink, derived: 0, warnings };
    walk(text, commands, &mut Vec::new(), &mut w);
    w.derived
}

/// TOOL-10 and TOOL-16: a leaf's input schema, built when first needed: the precomputed restricted schema (or one
/// derived from the flags and args), closed against unknown keys, with the exposed globals merged in.
pub(crate) fn input_schema(raw: Option<&str>, globals: &[FlagModel], flags: &[FlagModel], args: &[ArgModel]) -> Value {
    let schema = match raw.and_then(|r| serde_json::from_str::<Value>(r).ok()) {
        Some(s @ Value::Object(_)) => s,
        _ => derive_schema(flags, args),
    };
    close_and_merge(schema, globals, |n| flags.iter().any(|f| f.name == n) || args.iter().any(|a| a.name == n))
}

/// [`input_schema`] of a precomputed object schema, knowing only the names of the command's flags and args (all
/// the global merge needs, so a listing decodes no flag in full).
pub(crate) fn input_schema_named(raw: &str, globals: &[FlagModel], owned: &[Cow<'_, str>]) -> Option<Value> {
    let schema = serde_json::from_str::<Value>(raw).ok().filter(Value::is_object)?;
    Some(close_and_merge(schema, globals, |n| owned.iter().any(|o| o == n)))
}

/// The schema is the trust boundary: whatever the document says, no key outside its properties reaches argv. Then
/// the exposed globals the command does not own (`owns`) are merged in.
fn close_and_merge(mut schema: Value, globals: &[FlagModel], owns: impl Fn(&str) -> bool) -> Value {
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    merge_globals(&mut schema, globals, owns);
    schema
}

/// TOOL-13 and TOOL-14: the description models and clients see.
pub(crate) fn model_description(help: &str, long: &str, tags: &Tags) -> String {
    let (first, second) = if help.is_empty() {
        (long, "")
    } else if long.is_empty() || help.contains(long) {
        (help, "")
    } else if long.contains(help) {
        (long, "")
    } else {
        (help, long)
    };
    // Written into one allocation: every command of a large tree gets one.
    let tag_len: usize = tags.iter().map(|t| t.len() + 2).sum();
    let mut out = String::with_capacity(first.len() + second.len() + tag_len + 12);
    for part in [first, second].into_iter().filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(part);
    }
    if !tags.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        // Writing to a String cannot fail.
        let _ = write!(out, "Tags: {tags}");
    }
    out
}

/// TOOL-10: a restricted schema from the flags and args, for applications built with fisk older than v0.9.0.
pub(crate) fn derive_schema(flags: &[FlagModel], args: &[ArgModel]) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for f in flags.iter().filter(|f| !f.hidden) {
        let mut p = if f.boolean {
            json!({"type": "boolean"})
        } else if f.cumulative {
            let mut items = json!({"type": "string"});
            if !f.completions.is_empty() {
                items["enum"] = json!(f.completions);
            }
            json!({"type": "array", "items": items})
        } else if !f.completions.is_empty() {
            json!({"type": "string", "enum": f.completions})
        } else {
            json!({"type": "string"})
        };
        p["description"] = Value::String(f.help.clone());
        props.insert(f.name.clone(), p);
        if f.required && f.default.is_empty() {
            required.push(Value::String(f.name.clone()));
        }
    }
    for a in args.iter().filter(|a| !a.hidden) {
        let p = if a.cumulative {
            json!({"type": "array", "items": {"type": "string"}, "description": a.help})
        } else {
            json!({"type": "string", "description": a.help})
        };
        props.insert(a.name.clone(), p);
        if a.required && a.default.is_empty() {
            required.push(Value::String(a.name.clone()));
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), false.into());
    Value::Object(schema)
}

/// GLOBAL-6..8: add exposed globals as properties, skipping any the command defines itself.
fn merge_globals(schema: &mut Value, globals: &[FlagModel], owns: impl Fn(&str) -> bool) {
    if globals.is_empty() {
        return;
    }
    let Some(obj) = schema.as_object_mut() else { return };
    let mut added_required = Vec::new();
    {
        let props = obj.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        let Some(props) = props.as_object_mut() else { return };
        for g in globals {
            let clash = owns(&g.name) || props.contains_key(&g.name);
            if clash {
                continue;
            }
            props.insert(g.name.clone(), global_property(g));
            if g.required && g.default.is_empty() {
                added_required.push(Value::String(g.name.clone()));
            }
        }
    }
    if !added_required.is_empty() {
        match obj.entry("required").or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(req) => req.extend(added_required),
            other => *other = Value::Array(added_required),
        }
    }
}

/// GLOBAL-7: the restricted type of a global flag.
pub(crate) fn global_property(g: &FlagModel) -> Value {
    let description = if g.help.is_empty() { "Global flag".to_owned() } else { format!("Global flag: {}", g.help) };
    let mut p = if g.boolean { json!({"type": "boolean"}) } else { json!({"type": "string"}) };
    if !g.boolean && !g.cumulative && !g.completions.is_empty() {
        p["enum"] = json!(g.completions);
    }
    if g.cumulative {
        p = json!({"type": "array", "items": p});
    }
    p["description"] = Value::String(description);
    p
}

/// GLOBAL-2: trim, strip leading dashes, drop empties, dedupe keeping the first.
pub(crate) fn normalize_flag_names(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for n in names {
        let n = n.trim().trim_start_matches('-');
        if !n.is_empty() && !out.iter().any(|o| o == n) {
            out.push(n.to_owned());
        }
    }
    out
}

/// GLOBAL-2..5: the global flags exposed to the model, in document order.
pub(crate) fn exposed_globals(flags: &[FlagModel], allowlist: &[String], binary: &Path) -> Result<Vec<FlagModel>> {
    let wanted = normalize_flag_names(allowlist);
    for name in &wanted {
        match flags.iter().find(|f| &f.name == name) {
            None => {
                let known: Vec<&str> = flags.iter().filter(|f| exposable(f)).map(|f| f.name.as_str()).collect();
                return Err(Error::config_key(
                    "global_flags",
                    format!(
                        "global_flags entry \"{name}\" matches no global flag of {}; it has: {}",
                        binary.display(),
                        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                    ),
                ));
            }
            Some(f) if f.hidden || FRAMEWORK_FLAGS.contains(&f.name.as_str()) => {
                return Err(Error::config_key(
                    "global_flags",
                    format!(
                        "global_flags entry \"{name}\" is a hidden or framework flag of {} and can never be exposed",
                        binary.display()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(flags.iter().filter(|f| exposable(f) && (f.required || wanted.contains(&f.name))).cloned().collect())
}

/// Whether a global flag may ever be exposed (GLOBAL-4).
pub(crate) fn exposable(f: &FlagModel) -> bool {
    !f.hidden && !FRAMEWORK_FLAGS.contains(&f.name.as_str())
}
