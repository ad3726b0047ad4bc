//! Load cost: parse + walk + pipeline of the real natscli tree against a bare `serde_json::Value` parse of the same
//! bytes (target: at most 2x), and a synthetic 10,000-leaf tree (target: under 20 ms), also against a bare scan
//! of its bytes (`baseline_scan`: what reading the document once costs at the least). `parse_walk_select` is the
//! borrowed fast path `load` takes; `classic_parse_walk_select` decodes an owned `AppModel` first.
//!
//! `parse_walk_select` hands the tool set back, so its teardown (which a host pays once, when its run ends) is not
//! part of the load; `drop_toolset` measures that teardown on its own.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use fisk_ai::Selection;
use fisk_ai::select::Toolset;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use serde::de::IgnoredAny;
use serde_json::Value;
use std::hint::black_box;

#[path = "common/synthetic.rs"]
mod synthetic;
use synthetic::synthetic;

/// What `load` does with the introspection output it owns: the borrowed fast path, keeping the bytes uncopied.
fn load(bytes: Vec<u8>, globals: &[&str]) -> Toolset {
    let loaded = FiskApp::new("app").with_global_flags(globals.iter().copied()).tools_from_vec(bytes).unwrap();
    Selection::new().with_confirm_tags(["impact:rw"]).apply(loaded.tools).unwrap()
}

/// [`load`] of a fresh copy of `doc` each iteration, as each `load` gets its own output; neither the copy nor the
/// tool set's drop is timed (criterion drops a batch's outputs after timing it).
fn bench_load(b: &mut criterion::Bencher<'_>, doc: &[u8], globals: &[&str]) {
    b.iter_batched(|| doc.to_vec(), |bytes| load(bytes, globals), BatchSize::LargeInput)
}

/// The teardown [`bench_load`] leaves out: dropping a loaded tool set.
fn bench_drop(b: &mut criterion::Bencher<'_>, doc: &[u8], globals: &[&str]) {
    b.iter_batched(|| load(doc.to_vec(), globals), drop, BatchSize::LargeInput)
}

/// The classic path: the owned [`AppModel`] decode, then its tools (what hosts holding a model still use).
fn load_classic(bytes: &[u8], globals: &[&str]) -> usize {
    let model = AppModel::from_slice(bytes).unwrap();
    let loaded = FiskApp::new("app").with_global_flags(globals.iter().copied()).tools_from_model(model).unwrap();
    Selection::new().with_confirm_tags(["impact:rw"]).apply(loaded.tools).unwrap().len()
}

/// The same, then every tool's schema decoded and merged (what the first model request or an MCP listing costs).
fn load_and_materialize(bytes: &[u8], globals: &[&str]) -> usize {
    let loaded = FiskApp::new("app").with_global_flags(globals.iter().copied()).tools_from_slice(bytes).unwrap();
    let set = Selection::new().with_confirm_tags(["impact:rw"]).apply(loaded.tools).unwrap();
    set.iter().map(|t| t.spec().input_schema().as_object().map_or(0, |o| o.len())).sum()
}

fn benches(c: &mut Criterion) {
    // `load` always runs inside a host's tokio runtime, so its process has threads (which changes how the
    // allocator behaves); the runtime is kept alive for the whole run and otherwise unused.
    let _host = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let natscli = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fisk/natscli.json")).unwrap();
    let mut g = c.benchmark_group("natscli");
    g.bench_function("baseline_value_parse", |b| {
        b.iter(|| black_box(serde_json::from_slice::<Value>(&natscli).unwrap()))
    });
    g.bench_function("parse_walk_select", |b| bench_load(b, &natscli, &["context"]));
    g.bench_function("classic_parse_walk_select", |b| b.iter(|| black_box(load_classic(&natscli, &["context"]))));
    g.bench_function("parse_walk_select_schemas", |b| {
        b.iter(|| black_box(load_and_materialize(&natscli, &["context"])))
    });
    g.finish();

    let big = synthetic(100, 100);
    assert_eq!(load(big.clone(), &["context"]).len(), 10_000);
    assert_eq!(load_classic(&big, &["context"]), 10_000);
    let mut g = c.benchmark_group("synthetic_10k");
    g.sample_size(20);
    g.bench_function("baseline_value_parse", |b| b.iter(|| black_box(serde_json::from_slice::<Value>(&big).unwrap())));
    g.bench_function("baseline_scan", |b| b.iter(|| black_box(serde_json::from_slice::<IgnoredAny>(&big).unwrap())));
    g.bench_function("parse_walk_select", |b| bench_load(b, &big, &["context"]));
    g.bench_function("drop_toolset", |b| bench_drop(b, &big, &["context"]));
    g.bench_function("classic_parse_walk_select", |b| b.iter(|| black_box(load_classic(&big, &["context"]))));
    g.bench_function("parse_walk_select_schemas", |b| b.iter(|| black_box(load_and_materialize(&big, &["context"]))));
    g.finish();
}

criterion_group!(load_benches, benches);
criterion_main!(load_benches);
