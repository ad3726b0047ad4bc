//! EXEC-1..5: the argv mapper, for any JSON input, refuses naming the property or renders exactly the argument
//! vector the SPEC describes: path, globals, flags in declared order, then `--` and the positionals.

use fisk_ai::source::fisk::{AppModel, CommandShape};
use proptest::prelude::*;
use serde_json::Value;

/// One command with every flag and argument shape the mapper distinguishes, and one exposed global.
const APP: &str = r#"{"name":"app","flags":[{"name":"context"}],"commands":[{"name":"do",
  "flags":[{"name":"force","boolean":true},{"name":"color","boolean":true,"negatable":true},
           {"name":"on","boolean":true,"default":["true"]},{"name":"name"},{"name":"tag","cumulative":true},
           {"name":"header"}],
  "args":[{"name":"first"},{"name":"second","default":["d"]},{"name":"rest","cumulative":true}]}]}"#;

const FLAGS: [&str; 7] = ["context", "force", "color", "on", "name", "tag", "header"];
const ARGS: [&str; 3] = ["first", "second", "rest"];

/// Strings that look like flags, separators, assignments or invisible text, and anything else.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["", "--", "-", "-x", "--force", "=", "a=b", " ", "\u{202e}", "1.50", "null"])
            .prop_map(str::to_owned),
        any::<String>(),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    let known: Vec<&str> = FLAGS.iter().chain(&ARGS).copied().collect();
    prop_oneof![4 => prop::sample::select(known).prop_map(str::to_owned), 1 => "[a-z-]{1,6}"]
}

/// The input as the model might write it: an object, keys possibly repeated, or (rarely) any other JSON value.
fn input() -> impl Strategy<Value = (Vec<(String, Value)>, Option<Value>)> {
    prop_oneof![
        9 => prop::collection::vec((key(), value()), 0..7).prop_map(|e| (e, None)),
        1 => value().prop_map(|v| (Vec::new(), Some(v))),
    ]
}

fn render(entries: &[(String, Value)]) -> String {
    let body: Vec<String> = entries.iter().map(|(k, v)| format!("{}:{v}", Value::from(k.as_str()))).collect();
    format!("{{{}}}", body.join(","))
}

/// A scalar as one argv element (EXEC-3): strings as written, numbers as their JSON text, null as empty.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some(String::new()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The SPEC's rendering, written independently of the mapper; `None` where the input must be refused.
fn expected(entries: &[(String, Value)]) -> Option<Vec<String>> {
    let known = |k: &str| FLAGS.contains(&k) || ARGS.contains(&k);
    let mut keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if keys.windows(2).any(|w| w[0] == w[1]) || !keys.iter().all(|k| known(k)) {
        return None;
    }
    let get = |name: &str| entries.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let mut out = vec!["do".to_owned()];
    for flag in FLAGS {
        let Some(v) = get(flag) else { continue };
        match (flag, v) {
            ("force" | "color" | "on", Value::Bool(true)) => out.push(format!("--{flag}")),
            ("color", Value::Bool(false)) => out.push("--no-color".to_owned()),
            ("force", Value::Bool(false)) => {}
            ("force" | "color" | "on", _) => return None,
            (_, Value::Array(items)) => {
                for item in items {
                    out.push(format!("--{flag}={}", scalar(item)?));
                }
            }
            (_, Value::Object(map)) => {
                for (k, item) in map {
                    out.push(format!("--{flag}={k}={}", scalar(item)?));
                }
            }
            (_, v) => out.push(format!("--{flag}={}", scalar(v)?)),
        }
    }
    let Some(last) = ARGS.iter().rposition(|a| get(a).is_some()) else { return Some(out) };
    out.push("--".to_owned());
    for arg in &ARGS[..=last] {
        match get(arg) {
            None if *arg == "second" => out.push("d".to_owned()),
            None => return None,
            Some(Value::Array(items)) => {
                for item in items {
                    out.push(scalar(item)?);
                }
            }
            Some(v) => out.push(scalar(v)?),
        }
    }
    Some(out)
}

/// Runs the property over `cases` generated inputs.
pub fn check(cases: u32) {
    let app = AppModel::from_slice(APP.as_bytes()).unwrap();
    let cmd = &app.commands[0];
    let path = vec!["do".to_owned()];
    let shape = CommandShape { path: &path, globals: &app.flags, flags: &cmd.flags, args: &cmd.args };
    super::run(cases, input(), |(mut entries, mut other)| {
        if let Some(Value::Object(map)) = &other {
            entries = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            other = None;
        }
        let text = match &other {
            Some(v) => v.to_string(),
            None => render(&entries),
        };
        match shape.argv(&text) {
            Err(e) => {
                let msg = e.to_string();
                // An object is refused naming one of its properties; anything else is not an object at all.
                let named = entries.iter().any(|(k, _)| msg.contains(&format!("\"{k}\"")));
                prop_assert!(named || (other.is_some() && msg.contains("invalid JSON")), "{text} -> {msg}");
            }
            Ok(argv) => {
                let want =
                    if other.as_ref().is_some_and(Value::is_null) { Some(path.clone()) } else { expected(&entries) };
                prop_assert_eq!(Some(&argv), want.as_ref(), "{}", text);
                // Every positional follows the one separator: nothing after it came from a flag.
                if let Some(sep) = argv.iter().position(|a| a == "--") {
                    prop_assert!(argv[1..sep].iter().all(|a| a.starts_with("--") && a.len() > 2), "{argv:?}");
                }
            }
        }
        Ok(())
    });
}
