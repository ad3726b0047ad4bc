//! Load cost: parse + walk + pipeline of the real natscli tree against a bare `serde_json::Value` parse of the same
//! bytes (target: at most 2x), and a synthetic 10,000-leaf tree (target: under 20 ms).

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::Selection;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use serde_json::{Value, json};
use std::hint::black_box;

fn load(bytes: &[u8], globals: &[&str]) -> usize {
    let model = AppModel::from_slice(bytes).unwrap();
    let loaded = FiskApp::new("app").with_global_flags(globals.iter().copied()).tools_from_model(model).unwrap();
    Selection::new().with_confirm_tags(["impact:rw"]).apply(loaded.tools).unwrap().len()
}

/// The same, then every tool's schema decoded and merged (what the first model request or an MCP listing costs).
fn load_and_materialize(bytes: &[u8], globals: &[&str]) -> usize {
    let model = AppModel::from_slice(bytes).unwrap();
    let loaded = FiskApp::new("app").with_global_flags(globals.iter().copied()).tools_from_model(model).unwrap();
    let set = Selection::new().with_confirm_tags(["impact:rw"]).apply(loaded.tools).unwrap();
    set.iter().map(|t| t.spec().input_schema().as_object().map_or(0, |o| o.len())).sum()
}

fn synthetic(groups: usize, leaves: usize) -> Vec<u8> {
    let commands: Vec<Value> = (0..groups)
        .map(|g| {
            let subs: Vec<Value> = (0..leaves)
                .map(|l| {
                    json!({
                        "name": format!("leaf{l}"),
                        "help": format!("Leaf {l} of group {g}"),
                        "tags": ["scope:user", if l % 2 == 0 { "impact:ro" } else { "impact:rw" }],
                        "restricted_schema": {
                            "additionalProperties": false,
                            "properties": {
                                "name": {"description": "Name", "type": "string"},
                                "force": {"description": "Force", "type": "boolean"},
                                "level": {"description": "Level", "enum": ["a", "b", "c"], "type": "string"}
                            },
                            "required": ["name"],
                            "type": "object"
                        },
                        "flags": [
                            {"name": "force", "help": "Force", "boolean": true, "cumulative": false},
                            {"name": "level", "help": "Level", "boolean": false, "cumulative": false, "completions": ["a", "b", "c"]}
                        ],
                        "args": [{"name": "name", "help": "Name", "required": true, "cumulative": false}]
                    })
                })
                .collect();
            json!({"name": format!("group{g}"), "help": "A group", "commands": subs})
        })
        .collect();
    serde_json::to_vec(&json!({"name": "synthetic", "help": "", "commands": commands,
        "flags": [{"name": "context", "help": "Context", "boolean": false, "cumulative": false}]}))
    .unwrap()
}

fn benches(c: &mut Criterion) {
    let natscli = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fisk/natscli.json")).unwrap();
    let mut g = c.benchmark_group("natscli");
    g.bench_function("baseline_value_parse", |b| {
        b.iter(|| black_box(serde_json::from_slice::<Value>(&natscli).unwrap()))
    });
    g.bench_function("parse_walk_select", |b| b.iter(|| black_box(load(&natscli, &["context"]))));
    g.bench_function("parse_walk_select_schemas", |b| {
        b.iter(|| black_box(load_and_materialize(&natscli, &["context"])))
    });
    g.finish();

    let big = synthetic(100, 100);
    assert_eq!(load(&big, &["context"]), 10_000);
    let mut g = c.benchmark_group("synthetic_10k");
    g.sample_size(20);
    g.bench_function("baseline_value_parse", |b| b.iter(|| black_box(serde_json::from_slice::<Value>(&big).unwrap())));
    g.bench_function("parse_walk_select", |b| b.iter(|| black_box(load(&big, &["context"]))));
    g.bench_function("parse_walk_select_schemas", |b| b.iter(|| black_box(load_and_materialize(&big, &["context"]))));
    g.finish();
}

criterion_group!(load_benches, benches);
criterion_main!(load_benches);
