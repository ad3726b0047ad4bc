//! CLAP-5: the argv this crate builds parses with clap itself into the values the model chose.
//!
//! Generated command trees (nested groups, root globals and a group's own global, every option kind the mapping
//! covers: string, integer, number, typed boolean, possible values, `Append` strings and integers, `SetTrue`,
//! `SetFalse`, `Count`, hidden; positionals required, defaulted and multiple), and for every leaf a generated input the leaf's schema accepts. The input is
//! mapped by the crate's own argv mapping from `introspection`'s document, then `Command::try_get_matches_from`
//! must accept it and hold exactly the chosen values.
#![cfg(feature = "clap")]

use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};
use fisk_ai::FiskApp;
use fisk_ai::clap::introspection;
use fisk_ai::source::fisk::{AppModel, CmdModel, CommandShape};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const COLOURS: [&str; 3] = ["red", "green", "blue"];
// clap takes `'static` names without its `string` feature.
const OPTS: [&str; 6] = ["o0", "o1", "o2", "o3", "o4", "o5"];
const POSITIONALS: [&str; 4] = ["p0", "p1", "p2", "p3"];
const COMMANDS: [&str; 3] = ["c0", "c1", "c2"];
const DEFAULTS: [&str; 4] = ["d", "-dash", "déf", ""];

/// One option and the value chosen for it (`None`: left out of the input).
#[derive(Debug, Clone)]
enum Opt {
    Str(Option<String>),
    Int(Option<i64>),
    Float(Option<f64>),
    Bool(Option<bool>),
    Enum(Option<usize>),
    Append(Vec<String>),
    Ports(Vec<u16>),
    /// A sized integer (`u8`): the full schema bounds it, the restricted one does not.
    Byte(Option<u8>),
    /// `num_args(2)` with `Set`: argv cannot give two values in one `--x=v`, so the mapping leaves it out.
    Pair,
    SetTrue(bool),
    SetFalse(bool),
    Count(bool),
    Hidden,
}

/// One positional: whether clap requires it, its default, whether it takes several values (and how many: `num_args`
/// from `min` to `max`, unbounded when `max` is `None`), and the chosen values.
#[derive(Debug, Clone)]
struct Pos {
    required: bool,
    default: Option<&'static str>,
    many: bool,
    min: usize,
    max: Option<usize>,
    value: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
struct Leaf {
    opts: Vec<(Opt, bool)>,
    positionals: Vec<Pos>,
    global_s: Option<String>,
    global_b: bool,
    /// The value of the top-level group's own global `--gg`, for a leaf under a group.
    group_global: Option<String>,
}

#[derive(Debug, Clone)]
enum Node {
    Leaf(Leaf),
    Group(Vec<Node>),
}

fn text() -> impl Strategy<Value = String> {
    // Leading dashes, `=`, spaces and non-ASCII: the argv must carry each as one value.
    "[-a-z0-9 =_.é]{0,8}"
}

fn opt() -> impl Strategy<Value = (Opt, bool)> {
    let required = any::<bool>();
    prop_oneof![
        (proptest::option::of(text()), required).prop_map(|(v, r)| (Opt::Str(v), r)),
        (proptest::option::of(any::<i64>()), required).prop_map(|(v, r)| (Opt::Int(v), r)),
        (proptest::option::of(-1.0e9..1.0e9f64), required).prop_map(|(v, r)| (Opt::Float(v), r)),
        (proptest::option::of(any::<bool>()), required).prop_map(|(v, r)| (Opt::Bool(v), r)),
        (proptest::option::of(0..COLOURS.len()), required).prop_map(|(v, r)| (Opt::Enum(v), r)),
        proptest::collection::vec(text(), 0..3).prop_map(|v| (Opt::Append(v), false)),
        proptest::collection::vec(any::<u16>(), 0..3).prop_map(|v| (Opt::Ports(v), false)),
        (proptest::option::of(any::<u8>()), required).prop_map(|(v, r)| (Opt::Byte(v), r)),
        Just((Opt::Pair, false)),
        any::<bool>().prop_map(|v| (Opt::SetTrue(v), false)),
        any::<bool>().prop_map(|v| (Opt::SetFalse(v), false)),
        any::<bool>().prop_map(|v| (Opt::Count(v), false)),
        Just((Opt::Hidden, false)),
    ]
}

fn pos() -> impl Strategy<Value = Pos> {
    (
        any::<bool>(),
        proptest::option::of(proptest::sample::select(&DEFAULTS[..])),
        any::<bool>(),
        (1..3usize, proptest::option::of(1..3usize)),
        proptest::option::of(proptest::collection::vec(text(), 1..5)),
    )
        .prop_map(|(required, default, many, (min, extra), value)| Pos {
            required,
            default,
            many,
            min,
            max: extra.map(|e| min + e),
            value,
        })
}

fn leaf() -> impl Strategy<Value = Leaf> {
    (
        proptest::collection::vec(opt(), 0..6),
        proptest::collection::vec(pos(), 0..4),
        proptest::option::of(text()),
        any::<bool>(),
        proptest::option::of(text()),
    )
        .prop_map(|(opts, positionals, global_s, global_b, group_global)| {
            let mut leaf = Leaf { opts, positionals, global_s, global_b, group_global };
            normalize(&mut leaf);
            leaf
        })
}

/// Make a generated leaf one clap accepts and an input the mapping accepts: required positionals first, no default
/// on a required one, only the last takes several values, every one before the last given either given or defaulted,
/// and a required option always given.
fn normalize(leaf: &mut Leaf) {
    leaf.positionals.sort_by_key(|p| !p.required);
    let n = leaf.positionals.len();
    for (i, p) in leaf.positionals.iter_mut().enumerate() {
        if p.required {
            p.default = None;
            p.value.get_or_insert_with(|| vec!["req".to_owned()]);
        }
        p.many &= i + 1 == n;
        if let Some(v) = &mut p.value {
            if p.many {
                // As many values as `num_args` takes: the full schema's `minItems` and `maxItems`.
                v.truncate(p.max.unwrap_or(usize::MAX));
                while v.len() < p.min {
                    v.push("more".to_owned());
                }
            } else {
                v.truncate(1);
            }
        }
    }
    if let Some(last) = leaf.positionals.iter().rposition(|p| p.value.is_some()) {
        for p in &mut leaf.positionals[..last] {
            if p.value.is_none() && p.default.is_none() {
                p.value = Some(vec!["fill".to_owned()]);
            }
        }
    }
    for (opt, required) in &mut leaf.opts {
        let given = match opt {
            Opt::Str(v) => v.is_some(),
            Opt::Int(v) => v.is_some(),
            Opt::Float(v) => v.is_some(),
            Opt::Bool(v) => v.is_some(),
            Opt::Enum(v) => v.is_some(),
            Opt::Byte(v) => v.is_some(),
            _ => true,
        };
        // A required option left out would be refused by the schema: such an input is not a valid one.
        *required &= given;
    }
}

fn tree() -> impl Strategy<Value = Vec<Node>> {
    let node = leaf()
        .prop_map(Node::Leaf)
        .prop_recursive(2, 12, 3, |inner| proptest::collection::vec(inner, 1..3).prop_map(Node::Group));
    proptest::collection::vec(node, 1..4)
}

fn build_leaf(name: &'static str, leaf: &Leaf) -> Command {
    let mut cmd = Command::new(name);
    for (i, (opt, required)) in leaf.opts.iter().enumerate() {
        let arg = Arg::new(OPTS[i]).long(OPTS[i]).required(*required);
        cmd = cmd.arg(match opt {
            Opt::Str(_) => arg,
            Opt::Int(_) => arg.value_parser(value_parser!(i64)),
            Opt::Float(_) => arg.value_parser(value_parser!(f64)),
            Opt::Bool(_) => arg.value_parser(value_parser!(bool)),
            Opt::Enum(_) => arg.value_parser(COLOURS),
            Opt::Append(_) => arg.action(ArgAction::Append),
            Opt::Ports(_) => arg.action(ArgAction::Append).value_parser(value_parser!(u16)),
            Opt::Byte(_) => arg.value_parser(value_parser!(u8)),
            Opt::Pair => arg.num_args(2),
            Opt::SetTrue(_) => arg.action(ArgAction::SetTrue),
            Opt::SetFalse(_) => arg.action(ArgAction::SetFalse),
            Opt::Count(_) => arg.action(ArgAction::Count),
            Opt::Hidden => arg.hide(true),
        });
    }
    for (i, p) in leaf.positionals.iter().enumerate() {
        let mut arg = Arg::new(POSITIONALS[i]).required(p.required);
        if let Some(d) = p.default {
            arg = arg.default_value(d);
        }
        if p.many {
            arg = match p.max {
                Some(max) => arg.num_args(p.min..=max),
                None => arg.num_args(p.min..),
            };
        }
        cmd = cmd.arg(arg);
    }
    cmd
}

fn build(name: &'static str, nodes: &[Node], depth: usize) -> Command {
    let mut cmd = Command::new(name);
    if depth == 1 {
        // A group's own global: not the application's, so each command under it owns it.
        cmd = cmd.arg(Arg::new("gg").long("gg").global(true));
    }
    for (i, node) in nodes.iter().enumerate() {
        cmd = cmd.subcommand(match node {
            Node::Leaf(leaf) => build_leaf(COMMANDS[i], leaf),
            Node::Group(children) => build(COMMANDS[i], children, depth + 1),
        });
    }
    cmd
}

fn root(nodes: &[Node]) -> Command {
    build("app", nodes, 0)
        .arg(Arg::new("gs").long("gs").global(true))
        .arg(Arg::new("gb").long("gb").global(true).action(ArgAction::SetTrue))
}

fn leaves<'a>(nodes: &'a [Node], path: &mut Vec<String>, out: &mut Vec<(Vec<String>, &'a Leaf)>) {
    for (i, node) in nodes.iter().enumerate() {
        path.push(format!("c{i}"));
        match node {
            Node::Leaf(leaf) => out.push((path.clone(), leaf)),
            Node::Group(children) => leaves(children, path, out),
        }
        path.pop();
    }
}

/// The model's input for `leaf` at `path`.
fn input(leaf: &Leaf, path: &[String]) -> Value {
    let mut m = Map::new();
    for (i, (opt, _)) in leaf.opts.iter().enumerate() {
        let v = match opt {
            Opt::Str(v) => v.clone().map(Value::from),
            Opt::Int(v) => v.map(Value::from),
            Opt::Float(v) => v.map(Value::from),
            Opt::Bool(v) => v.map(Value::from),
            Opt::Enum(v) => v.map(|i| Value::from(COLOURS[i])),
            Opt::Append(v) => Some(json!(v)),
            Opt::Ports(v) => Some(json!(v)),
            Opt::Byte(v) => v.map(Value::from),
            Opt::SetTrue(b) | Opt::SetFalse(b) | Opt::Count(b) => Some(Value::from(*b)),
            Opt::Hidden | Opt::Pair => None,
        };
        if let Some(v) = v {
            m.insert(format!("o{i}"), v);
        }
    }
    for (i, p) in leaf.positionals.iter().enumerate() {
        if let Some(v) = &p.value {
            m.insert(format!("p{i}"), if p.many { json!(v) } else { json!(v[0]) });
        }
    }
    if let Some(s) = &leaf.global_s {
        m.insert("gs".into(), json!(s));
    }
    m.insert("gb".into(), json!(leaf.global_b));
    if let Some(g) = leaf.group_global.as_ref().filter(|_| path.len() > 1) {
        m.insert("gg".into(), json!(g));
    }
    Value::Object(m)
}

fn find<'a>(commands: &'a [CmdModel], path: &[String]) -> &'a CmdModel {
    let node = commands.iter().find(|c| c.name == path[0]).unwrap();
    if path.len() == 1 { node } else { find(&node.commands, &path[1..]) }
}

fn strings(m: &ArgMatches, id: &str) -> Option<Vec<String>> {
    m.get_many::<String>(id).map(|v| v.cloned().collect())
}

/// Every chosen value is what clap parsed.
fn check(m: &ArgMatches, leaf: &Leaf, path: &[String]) -> Result<(), TestCaseError> {
    for (i, (opt, _)) in leaf.opts.iter().enumerate() {
        let id = format!("o{i}");
        match opt {
            Opt::Str(Some(v)) => prop_assert_eq!(m.get_one::<String>(&id), Some(v)),
            Opt::Int(Some(v)) => prop_assert_eq!(m.get_one::<i64>(&id), Some(v)),
            Opt::Float(Some(v)) => prop_assert_eq!(m.get_one::<f64>(&id), Some(v)),
            Opt::Bool(Some(v)) => prop_assert_eq!(m.get_one::<bool>(&id), Some(v)),
            Opt::Enum(Some(v)) => prop_assert_eq!(m.get_one::<String>(&id).map(String::as_str), Some(COLOURS[*v])),
            Opt::Append(v) => prop_assert_eq!(strings(m, &id).unwrap_or_default(), v.clone()),
            Opt::Ports(v) => {
                prop_assert_eq!(
                    m.get_many::<u16>(&id).map(|p| p.copied().collect::<Vec<_>>()).unwrap_or_default(),
                    v.clone()
                )
            }
            Opt::SetTrue(b) => prop_assert_eq!(m.get_flag(&id), *b),
            // The model's `true` gives the flag, which clears the value.
            Opt::SetFalse(b) => prop_assert_eq!(m.get_flag(&id), !*b),
            Opt::Count(b) => prop_assert_eq!(m.get_count(&id), u8::from(*b)),
            Opt::Byte(Some(v)) => prop_assert_eq!(m.get_one::<u8>(&id), Some(v)),
            _ => prop_assert!(m.get_raw(&id).is_none(), "{id} was not chosen"),
        }
    }
    let last = leaf.positionals.iter().rposition(|p| p.value.is_some());
    for (i, p) in leaf.positionals.iter().enumerate().take(last.map_or(0, |l| l + 1)) {
        let want = p.value.clone().or_else(|| p.default.map(|d| vec![d.to_owned()]));
        prop_assert_eq!(strings(m, &format!("p{i}")), want, "p{}", i);
    }
    prop_assert_eq!(m.get_one::<String>("gs"), leaf.global_s.as_ref());
    prop_assert_eq!(m.get_flag("gb"), leaf.global_b);
    if path.len() > 1 {
        prop_assert_eq!(m.get_one::<String>("gg"), leaf.group_global.as_ref());
    }
    Ok(())
}

/// The document's schemas for `leaf`: the full one bounds a sized integer and a positional's count of values, the
/// restricted one states neither, and an option argv cannot say is in neither.
fn check_schemas(cmd: &Value, leaf: &Leaf) -> Result<(), TestCaseError> {
    let (full, restricted) = (&cmd["schema"]["properties"], &cmd["restricted_schema"]["properties"]);
    for (i, (opt, _)) in leaf.opts.iter().enumerate() {
        let id = format!("o{i}");
        match opt {
            Opt::Byte(_) => {
                prop_assert_eq!((&full[&id]["minimum"], &full[&id]["maximum"]), (&json!(0), &json!(255)));
                prop_assert_eq!(restricted[&id].get("minimum").or(restricted[&id].get("maximum")), None);
            }
            Opt::Pair => prop_assert!(full.get(&id).is_none() && restricted.get(&id).is_none(), "{id} is left out"),
            _ => {}
        }
    }
    for (i, p) in leaf.positionals.iter().enumerate().filter(|(_, p)| p.many) {
        let id = format!("p{i}");
        let min = (p.min > 1).then(|| json!(p.min));
        prop_assert_eq!(full[&id].get("minItems"), min.as_ref());
        let max = p.max.map(|m| json!(m));
        prop_assert_eq!(full[&id].get("maxItems"), max.as_ref());
        prop_assert_eq!(restricted[&id].get("minItems").or(restricted[&id].get("maxItems")), None);
    }
    Ok(())
}

fn command_json<'a>(doc: &'a Value, path: &[String]) -> &'a Value {
    path.iter()
        .fold(doc, |node, name| node["commands"].as_array().unwrap().iter().find(|c| c["name"] == *name).unwrap())
}

/// CLAP-5 for one generated tree: every leaf's valid input maps to an argv clap parses into the chosen values.
fn argv_parses_into_the_chosen_values(nodes: &[Node]) -> Result<(), TestCaseError> {
    let cmd = root(nodes);
    let doc = introspection(&cmd);
    let json: Value = serde_json::from_str(&doc).unwrap();
    let app = AppModel::from_slice(doc.as_bytes()).unwrap();
    let tools =
        FiskApp::new("/nonexistent/app").with_global_flags(["gs", "gb"]).tools_from_slice(doc.as_bytes()).unwrap();
    let mut all = Vec::new();
    leaves(nodes, &mut Vec::new(), &mut all);
    for (path, leaf) in all {
        check_schemas(command_json(&json, &path), leaf)?;
        let input = input(leaf, &path);
        let tool = tools.tools.iter().find(|t| t.spec().name() == path.join("_")).unwrap();
        prop_assert!(
            tool.spec().validate_input(&input).is_ok(),
            "{:?} for {}",
            tool.spec().validate_input(&input),
            input
        );
        let model = find(&app.commands, &path);
        let shape = CommandShape { path: &path, globals: &app.flags, flags: &model.flags, args: &model.args };
        let argv = shape.argv(&input.to_string()).unwrap();
        let matches = cmd.clone().try_get_matches_from(std::iter::once("app".to_owned()).chain(argv.iter().cloned()));
        let mut m = &matches.map_err(|e| TestCaseError::fail(format!("{argv:?}: {e}")))?;
        for name in &path {
            m = m.subcommand_matches(name).unwrap();
        }
        check(m, leaf, &path).map_err(|e| TestCaseError::fail(format!("{argv:?}: {e}")))?;
    }
    Ok(())
}

proptest! {
    // 128 trees of up to a dozen leaves each: every option kind and positional shape is drawn hundreds of times,
    // in well under a second.
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn clap_5_the_argv_for_a_valid_input_parses_with_clap_into_the_chosen_values(nodes in tree()) {
        argv_parses_into_the_chosen_values(&nodes)?;
    }
}

proptest! {
    // The long run: 10k trees (about half a minute of the debug build) in CI's long step, and the pre-release check
    // (scripts/long-properties.sh) at `FISK_AI_PROPERTY_CASES` trees, 1M there.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("FISK_AI_PROPERTY_CASES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(10_000),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    #[ignore = "long variant: 10k trees in CI, FISK_AI_PROPERTY_CASES (1M) in scripts/long-properties.sh"]
    fn clap_5_long_the_argv_for_a_valid_input_parses_with_clap_into_the_chosen_values(nodes in tree()) {
        argv_parses_into_the_chosen_values(&nodes)?;
    }
}
