//! Confinement cost (SBX-8): spawn-to-exit of a trivial command through a command tool, unconfined against the
//! same call confined, in one run (target: at most 1.10x).
//!
//! - `unconfined`: no sandbox (the standard library spawns with `posix_spawn`);
//! - `fs_net_rlimits`: Landlock `fs` rules, `network: none` and the rlimits (cpu, files, file size): the post-fork
//!   hook makes the standard library `fork` instead, and the child installs the prepared rules;
//! - `full`: the same plus `processes` and `memory`, which as root (or with a delegated hierarchy) are a per-call
//!   cgroup made, joined and removed per call;
//! - `fs_loopback_rlimits_step`: `fs_net_rlimits` with `network: loopback` instead of `none`: the child also joins
//!   the confinement's network namespace (`setns`).
//!
//! Each confined profile is measured both ways (SBX-9): `_step`, children started with `posix_spawn` as the
//! confinement step, and `_hook`, through the post-fork hook, which makes the standard library `fork` this process.
//! A `fork` copies the page tables, so its cost grows with the agent's resident memory: the bench holds 40 MB of
//! touched heap, about what the MCP server of a 10,000-command tree holds (`examples/large_tree.rs`).

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::exec::ChildEnv;
use fisk_ai::sandbox::{Confinement, Limits, Network, Sandbox};
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::{CallContext, Tool, ToolInput};
use std::hint::black_box;
use std::sync::Arc;

const DOC: &str = r#"{"name":"true","commands":[{"name":"run","help":"Succeed",
 "restricted_schema":{"type":"object","additionalProperties":false,"properties":{}}}]}"#;

fn tool(env: ChildEnv) -> Arc<dyn Tool> {
    let app = FiskApp::new("/bin/true").with_env(env);
    app.tools_from_model(AppModel::from_slice(DOC.as_bytes()).unwrap()).unwrap().tools.remove(0)
}

fn confined(limits: Limits, dir: &std::path::Path, hook: bool) -> Arc<dyn Tool> {
    confined_on(Network::None, limits, dir, hook)
}

fn confined_on(network: Network, limits: Limits, dir: &std::path::Path, hook: bool) -> Arc<dyn Tool> {
    let profile = Sandbox::new().read("/etc").write(dir).exec("/usr/bin").network(network).limits(limits);
    let confinement = Confinement::new(profile).expect("this machine enforces the profile");
    let confinement = if hook { confinement.with_post_fork_hook() } else { confinement };
    tool(ChildEnv::new().with_confinement(Arc::new(confinement)))
}

/// 40 MB of touched heap, kept for the whole run.
fn ballast() -> Vec<u8> {
    let mut heap = vec![0u8; 40 << 20];
    for page in heap.chunks_mut(4096) {
        page[0] = 1;
    }
    heap
}

fn benches(c: &mut Criterion) {
    let heap = black_box(ballast());
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rlimits = Limits::new().cpu_seconds(10).files(256).file_size(16 << 20);
    let full = rlimits.processes(64).memory(512 << 20);
    let tools = [
        ("unconfined", tool(ChildEnv::new())),
        ("fs_net_rlimits_step", confined(rlimits, dir.path(), false)),
        ("fs_net_rlimits_hook", confined(rlimits, dir.path(), true)),
        ("full_step", confined(full, dir.path(), false)),
        ("full_hook", confined(full, dir.path(), true)),
        ("fs_loopback_rlimits_step", confined_on(Network::Loopback, rlimits, dir.path(), false)),
    ];
    let input = ToolInput::from_json("{}").unwrap();
    let ctx = CallContext::new();
    let mut g = c.benchmark_group("sandbox");
    for (name, tool) in &tools {
        let out = rt.block_on(tool.call(&input, &ctx));
        assert_eq!(out.exec_report().map(|r| r.exit_code), Some(0), "{name}: {}", out.content());
        g.bench_function(*name, |b| b.iter(|| rt.block_on(async { black_box(tool.call(&input, &ctx).await) })));
    }
    g.finish();
    interleaved(&rt, &tools, &input, &ctx);
    drop(heap);
}

/// The same calls in turn, one of each per round, so every variant sees the same machine (criterion's groups run
/// one after another, and this machine's speed drifts between them by more than the differences measured here):
/// median and p99 of each, and their ratio to the unconfined call's.
fn interleaved(rt: &tokio::runtime::Runtime, tools: &[(&str, Arc<dyn Tool>)], input: &ToolInput, ctx: &CallContext) {
    const ROUNDS: usize = 500;
    let mut times = vec![Vec::with_capacity(ROUNDS); tools.len()];
    for _ in 0..ROUNDS {
        for ((_, tool), t) in tools.iter().zip(&mut times) {
            let started = std::time::Instant::now();
            black_box(rt.block_on(tool.call(input, ctx)));
            t.push(started.elapsed());
        }
    }
    let at = |t: &mut Vec<std::time::Duration>, q: usize| {
        t.sort();
        t[(t.len() - 1) * q / 100]
    };
    let base = (at(&mut times[0], 50), at(&mut times[0], 99));
    println!("sandbox interleaved, {ROUNDS} rounds (ratio to unconfined):");
    for ((name, _), t) in tools.iter().zip(&mut times) {
        let (p50, p99) = (at(t, 50), at(t, 99));
        let r = |a: std::time::Duration, b: std::time::Duration| a.as_secs_f64() / b.as_secs_f64();
        println!("  {name:<26} p50 {p50:>9.2?} ({:.2}x)  p99 {p99:>9.2?} ({:.2}x)", r(p50, base.0), r(p99, base.1));
    }
}

criterion_group!(sandbox_benches, benches);
criterion_main!(sandbox_benches);
