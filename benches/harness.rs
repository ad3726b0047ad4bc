//! Assembly cost (harness issue, Measure): building a [`Harness`] for the cowsay demo and for a 10,000-leaf tree,
//! and building an agent on the configuration (which assembles a harness inside), against the hand-wired minimum
//! on the same input in the same run: [`FiskApp::load`] (the introspection process and the parse) then
//! [`Selection::apply`]. Each iteration introspects the application once, as a real start does; the ratio of
//! `harness_build` and `agent_build` to `baseline_load_select` is what the harness adds (target: at most 1.05x).

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::harness::Harness;
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::{Agent, Config, FiskApp, Selection};
use std::hint::black_box;
use std::path::Path;

#[path = "common/synthetic.rs"]
mod synthetic;

/// A configuration wrapping `app`, as a run's would (a model, so the agent path builds).
fn config(app: &Path) -> Config {
    let yaml = format!(
        "identity: bench\napplication_path: {}\nsystem_prompt: s\nharness:\n  confirm_tags: [impact:rw]\nllm:\n  model: m\n",
        app.display()
    );
    Config::from_yaml_str(&yaml).unwrap()
}

/// The hand-wired minimum: introspect, then deny/include/exclude and gate tags.
async fn baseline(config: &Config) -> usize {
    let loaded = FiskApp::from_config(config).unwrap().load().await.unwrap();
    Selection::from_config(config).unwrap().apply(loaded.tools).unwrap().len()
}

async fn harness(config: &Config) -> usize {
    Harness::builder().config(config.clone()).build().await.unwrap().toolset().len()
}

async fn agent(config: &Config) -> usize {
    let agent = Agent::builder().config(config.clone()).provider(ScriptedProvider::new([])).build().await.unwrap();
    black_box(&agent);
    1
}

/// A shell script printing `doc` on `--fisk-introspect`: loading goes through a real introspection process.
fn write_app(dir: &Path, doc: &[u8]) -> std::path::PathBuf {
    std::fs::write(dir.join("doc.json"), doc).unwrap();
    let script = format!("#!/bin/sh\nexec cat '{}'\n", dir.join("doc.json").display());
    let path = dir.join("tree-app");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

fn group(c: &mut Criterion, rt: &tokio::runtime::Runtime, name: &str, config: &Config, expected: usize) {
    assert_eq!(rt.block_on(baseline(config)), expected);
    assert_eq!(rt.block_on(harness(config)), expected, "the harness selects what the hand-wired path does");
    let mut g = c.benchmark_group(name);
    g.sample_size(20);
    g.bench_function("baseline_load_select", |b| b.iter(|| rt.block_on(baseline(config))));
    g.bench_function("harness_build", |b| b.iter(|| rt.block_on(harness(config))));
    g.bench_function("agent_build", |b| b.iter(|| rt.block_on(agent(config))));
    g.finish();
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let cowsay = config(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cowsay/cowsay"));
    let cows = rt.block_on(baseline(&cowsay));
    group(c, &rt, "cowsay", &cowsay, cows);

    let dir = tempfile::tempdir().unwrap();
    let tree = config(&write_app(dir.path(), &synthetic::synthetic(100, 100)));
    group(c, &rt, "synthetic_10k", &tree, 10_000);
}

criterion_group!(group_benches, benches);
criterion_main!(group_benches);
