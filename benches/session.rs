//! Checkpointing cost: a scripted five-turn run with two in-process tool calls per turn, plain against journaled
//! (17 records, each written and fdatasync'd before the run goes on, SESS-14), and the fold of that journal on
//! resume. The scripted provider and in-process tools make the journal the only I/O, so the ratio is the worst
//! case: with a real model call (hundreds of milliseconds) and real processes per step it vanishes.

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::Config;
use fisk_ai::agent::{Agent, RunOptions};
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::session::{FileSessionStore, Journal, SessionId, SessionStore};
use fisk_ai::tool::{ToolKind, ToolSpec};
use std::hint::black_box;

#[path = "common/scripted.rs"]
mod scripted;
use scripted::{FakeTool, script};

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir_in(std::env::var_os("CARGO_TARGET_TMPDIR").unwrap_or_else(|| ".".into())).unwrap();
    let store = FileSessionStore::new(dir.path().join("runs"));
    let config = Config::from_yaml_str("identity: b\nsystem_prompt: s\nllm:\n  model: m\n").unwrap();
    let schema = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let agent = |provider: ScriptedProvider| {
        rt.block_on(
            Agent::builder()
                .config(config.clone())
                .provider(provider)
                .session_store(store.clone())
                .tool(FakeTool(ToolSpec::new("nop", ToolKind::Custom, schema.clone())))
                .build(),
        )
        .unwrap()
    };

    let mut g = c.benchmark_group("session");
    g.bench_function("baseline_plain_run", |b| {
        b.iter_batched(
            || agent(ScriptedProvider::new(script())),
            |a: Agent| rt.block_on(async { black_box(a.run("go", RunOptions::new()).await) }),
            criterion::BatchSize::SmallInput,
        )
    });
    g.bench_function("checkpointed_run", |b| {
        b.iter_batched(
            || (agent(ScriptedProvider::new(script())), SessionId::generate()),
            |(a, id): (Agent, SessionId)| {
                rt.block_on(async { black_box(a.run("go", RunOptions::new().with_checkpoint(id)).await) })
            },
            criterion::BatchSize::SmallInput,
        )
    });
    let id = SessionId::generate();
    let done =
        rt.block_on(agent(ScriptedProvider::new(script())).run("go", RunOptions::new().with_checkpoint(id.clone())));
    assert!(done.reason.is_success());
    g.bench_function("read_and_fold_journal", |b| {
        b.iter(|| rt.block_on(async { black_box(Journal::fold(store.read(&id).await.unwrap()).unwrap()) }))
    });
    g.finish();
}

criterion_group!(session_benches, benches);
criterion_main!(session_benches);
