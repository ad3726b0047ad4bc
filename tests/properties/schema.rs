//! TOOL-16 and the dispatch path's input check: for the schema of every tool of the natscli tree (enums, patterns,
//! bounds, arrays, formats) and any input, the validator's boolean answer agrees with its error walk. The check
//! accepts on the boolean alone (`is_valid`, the fast walk) and walks the errors (`iter_errors`) only to name what
//! is wrong, so an input the first accepted while the second found an error would run unchecked; one the first
//! refused while the second found nothing is refused without a reason.

use fisk_ai::source::fisk::FiskApp;
use proptest::prelude::*;
use serde_json::{Map, Value};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A tool's schema, its validator, and its properties with their definitions.
struct Checked {
    schema: Value,
    validator: jsonschema::Validator,
    properties: Vec<(String, Value)>,
}

/// Built as `src/tool/compiled.rs` builds the validator the dispatch path uses (formats are not asserted).
static TOOLS: LazyLock<Vec<Checked>> = LazyLock::new(|| {
    let doc = include_bytes!("../fixtures/fisk/natscli.json");
    let loaded = FiskApp::new("/nonexistent/nats").tools_from_slice(doc).unwrap();
    loaded
        .tools
        .iter()
        .map(|t| {
            let schema = t.spec().input_schema().clone();
            let validator = jsonschema::options().should_validate_formats(false).build(&schema).unwrap();
            let properties = schema["properties"]
                .as_object()
                .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            Checked { schema, validator, properties }
        })
        .collect()
});

/// How many generated inputs each walk accepted, so a run shows it tried both kinds.
pub static ACCEPTED: AtomicU64 = AtomicU64::new(0);
pub static REFUSED: AtomicU64 = AtomicU64::new(0);

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["", "a", "ORDERS", "1", "-1", "1.5", "1s", "5m", "true", "a b", "\u{0}", "é"])
            .prop_map(str::to_owned),
        "[a-zA-Z0-9_.:-]{0,12}",
        any::<String>(),
    ]
}

/// Any JSON value, small.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..2).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A value shaped by `def` most of the time (an enum member, the declared type, near its bounds), else anything.
fn shaped(def: &Value) -> BoxedStrategy<Value> {
    let typed: BoxedStrategy<Value> = match (def["enum"].as_array(), def["type"].as_str()) {
        (Some(members), _) if !members.is_empty() => prop::sample::select(members.clone()).boxed(),
        (_, Some("boolean")) => any::<bool>().prop_map(Value::Bool).boxed(),
        (_, Some("integer")) => {
            prop_oneof![(-3i64..300).prop_map(Value::from), any::<i64>().prop_map(Value::from)].boxed()
        }
        (_, Some("number")) => (-1e3f64..1e3).prop_map(Value::from).boxed(),
        (_, Some("string")) => text().prop_map(Value::String).boxed(),
        (_, Some("array")) => prop::collection::vec(shaped(&def["items"]), 0..4).prop_map(Value::Array).boxed(),
        _ => any_value().boxed(),
    };
    prop_oneof![6 => typed, 1 => any_value()].boxed()
}

/// A tool, and an input for it: each property present or not, shaped by its definition or not, and sometimes a
/// key the schema does not have.
pub fn case() -> impl Strategy<Value = (usize, Value)> {
    (0..TOOLS.len()).prop_flat_map(|i| {
        let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = TOOLS[i]
            .properties
            .iter()
            .map(|(name, def)| {
                let name = name.clone();
                prop::option::weighted(0.6, shaped(def).prop_map(move |v| (name.clone(), v))).boxed()
            })
            .collect();
        let extra = prop::option::weighted(0.1, ("[a-z]{1,8}", any_value()));
        (Just(i), fields, extra).prop_map(|(i, fields, extra)| {
            let mut input: Map<String, Value> = fields.into_iter().flatten().collect();
            if let Some((k, v)) = extra {
                input.insert(k, v);
            }
            (i, Value::Object(input))
        })
    })
}

pub fn check((i, input): (usize, Value)) -> Result<(), TestCaseError> {
    let tool = &TOOLS[i];
    let accepted = tool.validator.is_valid(&input);
    let first = tool.validator.iter_errors(&input).next().map(|e| e.to_string());
    prop_assert_eq!(accepted, first.is_none(), "schema {} input {} error {:?}", tool.schema, input, first);
    let kind = if accepted { &ACCEPTED } else { &REFUSED };
    kind.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
