//! Leaf walk, naming, descriptions and schemas (TOOL-8..17, TAG-6/7, GLOBAL-2..8).

use super::model::{AppModel, ArgModel, CmdModel, FlagModel};
use crate::tool::Tags;
use crate::warning::Warning;
use crate::{Error, Result};
use serde_json::{Map, Value, json};
use std::path::Path;

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
    /// The precomputed schema, when the document has an object there; `None` means derive it (TOOL-10).
    pub(crate) schema: Option<Box<serde_json::value::RawValue>>,
    pub(crate) flags: Vec<FlagModel>,
    pub(crate) args: Vec<ArgModel>,
}

/// Walk the tree depth first in document order; hidden commands are skipped with their subtree and grouping nodes
/// are recursed into but never tools (TOOL-8).
pub(crate) fn leaves(commands: Vec<CmdModel>, warnings: &mut Vec<Warning>) -> (Vec<Leaf>, usize) {
    let mut out = Vec::new();
    let mut derived = 0;
    let mut path = Vec::new();
    walk(commands, &mut path, &mut out, &mut derived, warnings);
    (out, derived)
}

fn walk(
    commands: Vec<CmdModel>,
    path: &mut Vec<String>,
    out: &mut Vec<Leaf>,
    derived: &mut usize,
    warnings: &mut Vec<Warning>,
) {
    for mut cmd in commands {
        if cmd.hidden {
            continue;
        }
        path.push(std::mem::take(&mut cmd.name));
        if cmd.commands.is_empty() {
            out.push(leaf(cmd, path.clone(), derived, warnings));
        } else {
            walk(std::mem::take(&mut cmd.commands), path, out, derived, warnings);
        }
        path.pop();
    }
}

fn leaf(cmd: CmdModel, path: Vec<String>, derived: &mut usize, warnings: &mut Vec<Warning>) -> Leaf {
    let tags = Tags::new(cmd.tags);
    // TAG-6 and TAG-7 cover every leaf, before deny stripping and filtering.
    for tag in tags.unknown_ai_tags() {
        warnings.push(Warning::UnknownAiTag { tag: tag.to_owned(), command: path.join(" ") });
    }
    let conflicts = tags.behavior_conflicts();
    if !conflicts.is_empty() {
        warnings.push(Warning::ConflictingBehaviorTags { command: path.join(" "), tags: conflicts });
    }
    let schema = cmd.restricted_schema.filter(|raw| raw.get().trim_start().starts_with('{'));
    if schema.is_none() {
        *derived += 1;
    }
    Leaf {
        name: path.join("_"),
        description: model_description(&cmd.help, &cmd.help_long, &tags),
        plain_description: if cmd.help.is_empty() { cmd.help_long } else { cmd.help },
        path,
        tags,
        schema,
        flags: cmd.flags,
        args: cmd.args,
    }
}

/// TOOL-10 and TOOL-16: a leaf's input schema, built when first needed: the precomputed restricted schema (or one
/// derived from the flags and args), closed against unknown keys, with the exposed globals merged in.
pub(crate) fn input_schema(
    raw: Option<&serde_json::value::RawValue>,
    globals: &[FlagModel],
    flags: &[FlagModel],
    args: &[ArgModel],
) -> Value {
    let mut schema = match raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok()) {
        Some(s @ Value::Object(_)) => s,
        _ => derive_schema(flags, args),
    };
    // The schema is the trust boundary: whatever the document says, no key outside its properties reaches argv.
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    merge_globals(&mut schema, globals, flags, args);
    schema
}

/// TOOL-13 and TOOL-14: the description models and clients see.
pub(crate) fn model_description(help: &str, long: &str, tags: &Tags) -> String {
    let base = if help.is_empty() {
        long.to_owned()
    } else if long.is_empty() || help.contains(long) {
        help.to_owned()
    } else if long.contains(help) {
        long.to_owned()
    } else {
        format!("{help}\n\n{long}")
    };
    if tags.is_empty() {
        base
    } else if base.is_empty() {
        format!("Tags: {tags}")
    } else {
        format!("{base}\n\nTags: {tags}")
    }
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
fn merge_globals(schema: &mut Value, globals: &[FlagModel], flags: &[FlagModel], args: &[ArgModel]) {
    if globals.is_empty() {
        return;
    }
    let Some(obj) = schema.as_object_mut() else { return };
    let mut added_required = Vec::new();
    {
        let props = obj.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        let Some(props) = props.as_object_mut() else { return };
        for g in globals {
            let clash = flags.iter().any(|f| f.name == g.name)
                || args.iter().any(|a| a.name == g.name)
                || props.contains_key(&g.name);
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
pub(crate) fn exposed_globals(app: &AppModel, allowlist: &[String], binary: &Path) -> Result<Vec<FlagModel>> {
    let wanted = normalize_flag_names(allowlist);
    for name in &wanted {
        match app.flags.iter().find(|f| &f.name == name) {
            None => {
                let known: Vec<&str> = app.flags.iter().filter(|f| exposable(f)).map(|f| f.name.as_str()).collect();
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
    Ok(app.flags.iter().filter(|f| exposable(f) && (f.required || wanted.contains(&f.name))).cloned().collect())
}

/// Whether a global flag may ever be exposed (GLOBAL-4).
pub(crate) fn exposable(f: &FlagModel) -> bool {
    !f.hidden && !FRAMEWORK_FLAGS.contains(&f.name.as_str())
}
