//! A clap command tree as the fisk introspection document (CLAP-1, CLAP-2): the same JSON a fisk application prints
//! for `--fisk-introspect` (../shared/docs/fisk-introspection.md §2-6), so the rest of the crate, and the Go
//! reference, read it unchanged.
//!
//! The mapping follows what this crate's argv mapping can say to clap: a flag is written `--long=value` and
//! positionals follow a lone `--`. So an option needs a long name, an array option needs `ArgAction::Append` (one
//! value per occurrence, what clap's derive gives a `Vec<T>`), and root arguments that are not global are left
//! out (they would have to come before the subcommand, and the argv puts the command path first).

use super::tags::Tags;
use crate::error::Result;
use ::clap::builder::ValueParser;
use ::clap::{Arg, ArgAction, Command};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The top-level object (§2). Go's key order: `commands` before `flags`.
#[derive(Serialize)]
struct AppDoc {
    name: String,
    help: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    version: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    commands: Vec<CmdDoc>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    flags: Vec<FlagDoc>,
}

/// One command node (§3).
#[derive(Serialize)]
struct CmdDoc {
    name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    aliases: Vec<String>,
    help: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    help_long: String,
    #[serde(skip_serializing_if = "is_false")]
    hidden: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    schema: Value,
    restricted_schema: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    flags: Vec<FlagDoc>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    args: Vec<ArgDoc>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    commands: Vec<CmdDoc>,
}

/// A flag (§5).
#[derive(Serialize)]
struct FlagDoc {
    name: String,
    help: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    short: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    default: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    place_holder: String,
    #[serde(skip_serializing_if = "is_false")]
    required: bool,
    #[serde(skip_serializing_if = "is_false")]
    hidden: bool,
    boolean: bool,
    cumulative: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    completions: Vec<String>,
}

/// A positional argument (§6).
#[derive(Serialize)]
struct ArgDoc {
    name: String,
    help: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    default: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    place_holder: String,
    #[serde(skip_serializing_if = "is_false")]
    required: bool,
    #[serde(skip_serializing_if = "is_false")]
    hidden: bool,
    cumulative: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// How an argument reaches argv.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `--x` when true, nothing when false (`SetTrue`, `SetFalse`, `Count`, or an option taking no value).
    Presence,
    /// One value (`--x=v`, or one positional token).
    One,
    /// An array: `--x=a --x=b` (`Append`), or several positional tokens.
    Many,
}

/// The argument's kind, or `None` for clap's generated `--help` and `--version` (never properties, CLAP-1) and for
/// an option that takes two or more values per occurrence (argv cannot say it, CLAP-2).
fn kind(arg: &Arg) -> Option<Kind> {
    let takes_none = arg.get_num_args().is_some_and(|r| r.max_values() == 0);
    let takes_many = arg.get_num_args().is_some_and(|r| r.max_values() > 1);
    match arg.get_action() {
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version => None,
        _ if arg.is_positional() => {
            Some(if takes_many || matches!(arg.get_action(), ArgAction::Append) { Kind::Many } else { Kind::One })
        }
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count => Some(Kind::Presence),
        // `--x=v` gives one value per occurrence: an option that needs two or more at once cannot be said.
        _ if arg.get_num_args().is_some_and(|r| r.min_values() > 1) => None,
        ArgAction::Append => Some(Kind::Many),
        // `Set` (and any action a later clap adds, read as `Set`): each occurrence overrides, so one value.
        _ if takes_none => Some(Kind::Presence),
        _ => Some(Kind::One),
    }
}

/// Whether the value parser produces a `T` (clap records the produced type; a closure parser of `T` has the same).
fn produces<T: Clone + Send + Sync + 'static>(parser: &ValueParser) -> bool {
    parser.type_id() == ValueParser::new(|_: &str| Err::<T, String>(String::new())).type_id()
}

/// The JSON type of one value: typed value parsers map to `integer`, `number` and `boolean`, the rest to `string`.
fn json_type(parser: &ValueParser) -> &'static str {
    if produces::<bool>(parser) {
        "boolean"
    } else if produces::<i64>(parser)
        || produces::<i32>(parser)
        || produces::<i16>(parser)
        || produces::<i8>(parser)
        || produces::<isize>(parser)
        || produces::<u64>(parser)
        || produces::<u32>(parser)
        || produces::<u16>(parser)
        || produces::<u8>(parser)
        || produces::<usize>(parser)
        || produces::<i128>(parser)
        || produces::<u128>(parser)
    {
        "integer"
    } else if produces::<f64>(parser) || produces::<f32>(parser) {
        "number"
    } else {
        "string"
    }
}

/// The range of an integer value parser's type, as `minimum` and `maximum` for the full schema (fisk gives its
/// sized integers the same, §4.2): `None` where the type is not one of Rust's integers or has no bound to state.
fn integer_bounds(parser: &ValueParser) -> Option<(Value, Option<Value>)> {
    macro_rules! bounds {
        ($($t:ty),*) => {
            $(if produces::<$t>(parser) {
                return Some((json!(i64::try_from(<$t>::MIN).ok()?), u64::try_from(<$t>::MAX).ok().map(|m| json!(m))));
            })*
        };
    }
    bounds!(i8, i16, i32, u8, u16, u32, u64, usize, u128);
    None
}

/// The visible possible values, in clap's order.
fn possible_values(arg: &Arg) -> Vec<String> {
    arg.get_possible_values().iter().filter(|p| !p.is_hide_set()).map(|p| p.get_name().to_owned()).collect()
}

/// `help` and `long_help`, joined by a blank line when both are set and differ.
fn arg_help(arg: &Arg) -> String {
    let (short, long) = (arg.get_help().map(ToString::to_string), arg.get_long_help().map(ToString::to_string));
    match (short, long) {
        (Some(s), Some(l)) if s != l => format!("{s}\n\n{l}"),
        (Some(s), _) => s,
        (None, l) => l.unwrap_or_default(),
    }
}

/// The full property schema of one argument: its JSON type, `enum` for possible values, an array for `Many`, and
/// the bounds clap checks (an integer type's range, a positional's count of values).
fn property(arg: &Arg, kind: Kind) -> Value {
    let mut p = if kind == Kind::Presence {
        json!({"type": "boolean"})
    } else {
        let ty = json_type(arg.get_value_parser());
        let mut scalar = json!({"type": ty});
        let values = possible_values(arg);
        if ty == "string" && !values.is_empty() {
            scalar["enum"] = json!(values);
        }
        if let Some((min, max)) = integer_bounds(arg.get_value_parser()).filter(|_| ty == "integer") {
            scalar["minimum"] = min;
            if let Some(max) = max {
                scalar["maximum"] = max;
            }
        }
        if kind == Kind::Many { array_of(arg, scalar) } else { scalar }
    };
    p["description"] = Value::String(arg_help(arg));
    p
}

/// An array of `items`, with a positional's `num_args` as `minItems` and `maxItems` (an option's count is per
/// occurrence, one with `Append`).
fn array_of(arg: &Arg, items: Value) -> Value {
    let mut array = json!({"type": "array", "items": items});
    if let Some(range) = arg.get_num_args().filter(|_| arg.is_positional()) {
        if range.min_values() > 1 {
            array["minItems"] = json!(range.min_values());
        }
        if range.max_values() != usize::MAX {
            array["maxItems"] = json!(range.max_values());
        }
    }
    array
}

/// The restricted form of a full schema (§4.2): the same without numeric bounds and item counts, which the strict
/// tool-input subset has not; clap still checks them when it parses, and its refusal is the call's result.
fn restricted(full: &Value) -> Value {
    let Value::Object(schema) = full else { return full.clone() };
    let keep = schema.iter().filter(|(k, _)| !matches!(k.as_str(), "minimum" | "maximum" | "minItems" | "maxItems"));
    Value::Object(
        keep.map(|(k, v)| {
            let v = match (k.as_str(), v) {
                // Property names are not keywords: a property called `minimum` stays.
                ("properties", Value::Object(props)) => {
                    Value::Object(props.iter().map(|(name, p)| (name.clone(), restricted(p))).collect())
                }
                ("items", items) => restricted(items),
                _ => v.clone(),
            };
            (k.clone(), v)
        })
        .collect(),
    )
}

fn defaults(arg: &Arg) -> Vec<String> {
    arg.get_default_values().iter().map(|d| d.to_string_lossy().into_owned()).collect()
}

/// A flag's model, or `None` when argv cannot name it (no long name) or it is clap's own.
fn flag(arg: &Arg) -> Option<(FlagDoc, Kind)> {
    let kind = kind(arg)?;
    let name = arg.get_long()?.to_owned();
    // A presence flag's JSON value says whether `--x` is given: clap's implied `false` (SetTrue), `true`
    // (SetFalse) and `0` (Count) describe the parsed value instead, and would make `false` unsayable.
    let default = match arg.get_action() {
        ArgAction::SetTrue => defaults(arg).into_iter().filter(|d| d != "false").collect(),
        _ if kind == Kind::Presence => Vec::new(),
        _ => defaults(arg),
    };
    let doc = FlagDoc {
        name,
        help: arg_help(arg),
        short: arg.get_short().map(u32::from),
        default,
        place_holder: arg.get_value_names().map(|v| v.join(" ")).unwrap_or_default(),
        required: arg.is_required_set(),
        hidden: arg.is_hide_set(),
        boolean: kind == Kind::Presence,
        // Not fisk's Counter (cumulative): the argv gives `--x` once for `true`, and a cumulative global would be
        // offered as an array of booleans, which no boolean flag renders.
        cumulative: kind == Kind::Many,
        completions: if kind == Kind::Presence { Vec::new() } else { possible_values(arg) },
    };
    Some((doc, kind))
}

/// A positional's model, or `None` when it is clap's own.
fn positional(arg: &Arg) -> Option<(ArgDoc, Kind)> {
    let kind = kind(arg)?;
    let doc = ArgDoc {
        name: arg.get_id().as_str().to_owned(),
        help: arg_help(arg),
        default: defaults(arg),
        place_holder: arg.get_value_names().map(|v| v.join(" ")).unwrap_or_default(),
        required: arg.is_required_set(),
        hidden: arg.is_hide_set(),
        cumulative: kind == Kind::Many,
    };
    Some((doc, kind))
}

/// A command's flags, args and input schema (§4.1: own flags and args only, hidden ones left out, closed).
struct Params {
    flags: Vec<FlagDoc>,
    args: Vec<ArgDoc>,
    schema: Value,
}

fn params(cmd: &Command, root_globals: &[String]) -> Params {
    let (mut props, mut required) = (Map::new(), Vec::new());
    let mut add = |name: &str, arg: &Arg, kind: Kind, hidden: bool, needed: bool| {
        if hidden {
            return;
        }
        props.insert(name.to_owned(), property(arg, kind));
        if needed {
            required.push(Value::String(name.to_owned()));
        }
    };
    let mut flags = Vec::new();
    // Copies of the root's globals (`build` propagates them) are the application's `flags`, not the command's.
    let own = cmd.get_arguments().filter(|a| !a.is_positional() && !root_globals.iter().any(|g| a.get_id() == g));
    for a in own {
        if let Some((doc, kind)) = flag(a) {
            add(&doc.name, a, kind, doc.hidden, doc.required && doc.default.is_empty());
            flags.push(doc);
        }
    }
    let mut positionals: Vec<&Arg> = cmd.get_positionals().collect();
    positionals.sort_by_key(|a| a.get_index().unwrap_or(usize::MAX));
    let mut args = Vec::new();
    for a in positionals {
        if let Some((doc, kind)) = positional(a) {
            add(&doc.name, a, kind, doc.hidden, doc.required && doc.default.is_empty());
            args.push(doc);
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), false.into());
    Params { flags, args, schema: Value::Object(schema) }
}

/// The tree walk: every command's path is recorded, so the tag table can be checked against it.
struct Walker<'t> {
    tags: &'t Tags,
    root_globals: Vec<String>,
    paths: Vec<String>,
}

impl Walker<'_> {
    fn command(&mut self, cmd: &Command, path: &mut Vec<String>) -> CmdDoc {
        path.push(cmd.get_name().to_owned());
        let key = path.join(" ");
        let p = params(cmd, &self.root_globals);
        let commands = cmd.get_subcommands().map(|c| self.command(c, path)).collect();
        path.pop();
        let doc = CmdDoc {
            name: cmd.get_name().to_owned(),
            aliases: cmd.get_visible_aliases().map(str::to_owned).collect(),
            help: cmd.get_about().map(ToString::to_string).unwrap_or_default(),
            help_long: cmd.get_long_about().map(ToString::to_string).unwrap_or_default(),
            hidden: cmd.is_hide_set(),
            tags: self.tags.get(&key).to_vec(),
            restricted_schema: restricted(&p.schema),
            schema: p.schema,
            flags: p.flags,
            args: p.args,
            commands,
        };
        self.paths.push(key);
        doc
    }
}

/// The tree with no generated `help` subcommand at any level: clap adds one to every command with subcommands,
/// and it is not a tool. A `help` subcommand the author wrote stays.
fn without_help_subcommands(cmd: Command) -> Command {
    cmd.disable_help_subcommand(true).mut_subcommands(without_help_subcommands)
}

/// Render the document for `cmd`, tagged from `tags` (CLAP-1..3).
pub(crate) fn render(cmd: &Command, tags: &Tags) -> Result<String> {
    let mut cmd = without_help_subcommands(cmd.clone());
    // `build` propagates global arguments (and settings) to every subcommand, as a real parse would.
    cmd.build();
    let root_globals: Vec<String> =
        cmd.get_arguments().filter(|a| a.is_global_set()).map(|a| a.get_id().as_str().to_owned()).collect();
    let flags = cmd
        .get_arguments()
        .filter(|a| a.is_global_set() && !a.is_positional())
        .filter_map(flag)
        .map(|(doc, _)| doc)
        .collect();
    let mut walker = Walker { tags, root_globals, paths: Vec::new() };
    let mut commands = Vec::new();
    for sub in cmd.get_subcommands() {
        commands.push(walker.command(sub, &mut Vec::new()));
    }
    tags.check_paths(cmd.get_name(), &walker.paths)?;
    let app = AppDoc {
        name: cmd.get_name().to_owned(),
        help: cmd.get_about().or_else(|| cmd.get_long_about()).map(ToString::to_string).unwrap_or_default(),
        version: cmd.get_version().unwrap_or_default().to_owned(),
        commands,
        flags,
    };
    // Serializing plain structs, strings and JSON values cannot fail.
    Ok(serde_json::to_string(&app).unwrap_or_default())
}
