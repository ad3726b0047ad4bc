//! Compaction (long-runs issue, Measure): a 200-turn run, each turn one tool call whose result is 2 KB, against a
//! provider that reads the whole request (as a real one serializes it) and reports the tokens it would count
//! (a quarter per byte, plus the prefix). Summaries come back at once, so the summarising call's own latency is
//! left aside and what remains is the harness's.
//!
//! 1. Printed: tokens per request (mean and largest) without compaction and with it (window 60K, trigger 0.8,
//!    four turns kept), and how many compactions ran.
//! 2. Criterion: the whole 200-turn run three ways; the harness time per turn is the run's time over 200. The
//!    baseline is the run without compaction, in the same process; "armed" has compaction on with a window it never
//!    reaches (the per-turn check alone); "compaction" compacts as above.

use criterion::{Criterion, criterion_group};
use fisk_ai::agent::{Agent, DEFAULT_COMPACTION_PROMPT, RunOptions};
use fisk_ai::llm::{Block, Caps, Message, ModelProvider, ProviderError, Request, Response, StopReason, Usage};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, async_trait};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

const TURNS: u32 = 200;
const RESULT_BYTES: usize = 2_048;
const PREFIX_TOKENS: u64 = 500;

/// Counts each request's tokens from its bytes; calls the tool until turn 200, then answers.
struct Sized {
    caps: Caps,
    turn: AtomicU32,
    /// Tokens of each request of the run (not the summaries).
    seen: Mutex<Vec<u64>>,
}

fn bytes(messages: &[Message]) -> usize {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            Block::Text { text } => text.len(),
            Block::ToolUse { input, .. } => input.as_str().len(),
            Block::ToolResult { content, .. } => content.len(),
            _ => 0,
        })
        .sum()
}

#[async_trait]
impl ModelProvider for Sized {
    fn capabilities(&self) -> &Caps {
        &self.caps
    }

    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
        let tokens = PREFIX_TOKENS + (bytes(req.messages) / 4) as u64;
        let usage = Usage { input_tokens: tokens, output_tokens: 40, ..Usage::default() };
        if req.system.first().map(String::as_str) == Some(DEFAULT_COMPACTION_PROMPT) {
            let summary = "The operator asked for every host to be probed; hosts 1 to n answered ok. ".repeat(20);
            return Ok(Response::new(vec![Block::text(summary)], StopReason::EndTurn, usage));
        }
        self.seen.lock().unwrap().push(tokens);
        let turn = self.turn.fetch_add(1, Ordering::Relaxed) + 1;
        if turn > TURNS {
            return Ok(Response::new(vec![Block::text("all probed")], StopReason::EndTurn, usage));
        }
        let input = ToolInput::from_json(format!(r#"{{"host":"h{turn}"}}"#)).unwrap();
        let call = Block::ToolUse { id: format!("c{turn}"), name: "probe".into(), input };
        Ok(Response::new(vec![call], StopReason::ToolUse, usage))
    }
}

/// An in-process tool returning 2 KB.
struct Probe(ToolSpec);

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        ToolOutput::success("host ok; load 0.42; ".repeat(RESULT_BYTES / 20))
    }
}

/// Without compaction, with it armed but never triggered, and compacting.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Off,
    Armed,
    On,
}

fn agent(rt: &tokio::runtime::Runtime, mode: Mode) -> (Agent, std::sync::Arc<Sized>) {
    let extra = match mode {
        Mode::Off => "",
        Mode::Armed => "harness:\n  compaction:\n    context_window: 100000000\n",
        Mode::On => "harness:\n  compaction:\n    trigger: 0.8\n    keep_recent_turns: 4\n    context_window: 60000\n",
    };
    let yaml = format!(
        "identity: bench\nsystem_prompt: s\nllm:\n  model: m\n  budget:\n    max_iterations: 250\n    \
         max_tokens: 1000000000\n{extra}"
    );
    let provider =
        std::sync::Arc::new(Sized { caps: Caps::new("sized"), turn: AtomicU32::new(0), seen: Mutex::default() });
    let probe = Probe(ToolSpec::new("probe", ToolKind::Custom, serde_json::json!({"type": "object"})));
    let b = Agent::builder().config(Config::from_yaml_str(&yaml).unwrap()).provider_arc(provider.clone()).tool(probe);
    (rt.block_on(b.build()).unwrap(), provider)
}

fn run(rt: &tokio::runtime::Runtime, agent: &Agent, provider: &Sized) -> u32 {
    provider.turn.store(0, Ordering::Relaxed);
    provider.seen.lock().unwrap().clear();
    let outcome = rt.block_on(agent.run("probe every host", RunOptions::new()));
    assert_eq!(outcome.stats.llm_calls, TURNS + 1, "{:?}", outcome.error);
    outcome.stats.compactions
}

fn report(rt: &tokio::runtime::Runtime) {
    println!("tokens per request over a {TURNS}-turn run ({RESULT_BYTES}-byte results):");
    for mode in [Mode::Off, Mode::On] {
        let (agent, provider) = agent(rt, mode);
        let compactions = run(rt, &agent, &provider);
        let seen = provider.seen.lock().unwrap();
        let mean = seen.iter().sum::<u64>() / seen.len() as u64;
        let max = seen.iter().max().copied().unwrap_or_default();
        let label = if mode == Mode::On { "with compaction   " } else { "without compaction" };
        println!("  {label}: mean {mean}  largest {max}  compactions {compactions}");
    }
}

fn runs(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    report(&rt);
    let mut group = c.benchmark_group("200-turn run");
    group.sample_size(10);
    for (mode, name) in
        [(Mode::Off, "baseline, no compaction"), (Mode::Armed, "armed, never triggered"), (Mode::On, "compaction")]
    {
        let (agent, provider) = agent(&rt, mode);
        group.bench_function(name, |b| b.iter(|| run(&rt, &agent, &provider)));
    }
    group.finish();
}

criterion_group!(benches, runs);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
