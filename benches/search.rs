//! Client-side tool search (issue 15 part 3) over the synthetic 10,000-leaf tree: one agent run whose model asks
//! `search_tools` once, against the same run calling a trivial in-process tool instead (the baseline: the loop
//! and the dispatch path without the search). The difference is the search's own latency.

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::agent::{Agent, RunOptions, SEARCH_TOOLS};
use fisk_ai::llm::{Block, Caps, ModelProvider, ProviderError, Request, Response, StopReason, Usage};
use fisk_ai::source::fisk::FiskApp;
use fisk_ai::source::{Loaded, ToolSource};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, async_trait};
use std::hint::black_box;

#[path = "common/synthetic.rs"]
mod synthetic;

/// The 10,000 leaves as a source (never called: only searched).
struct Tree(Vec<u8>);

#[async_trait]
impl ToolSource for Tree {
    fn name(&self) -> &str {
        "tree"
    }

    async fn load(&self, _ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
        FiskApp::new("app").tools_from_slice(&self.0)
    }
}

/// A direct in-process tool that does nothing.
struct Noop(ToolSpec);

#[async_trait]
impl Tool for Noop {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        ToolOutput::success("ok")
    }
}

/// First turn: call `tool` with `input`; once a result is back: answer. Stateless, so one provider serves every
/// iteration.
struct Once {
    caps: Caps,
    tool: &'static str,
    input: &'static str,
}

#[async_trait]
impl ModelProvider for Once {
    fn capabilities(&self) -> &Caps {
        &self.caps
    }

    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
        if req.messages.len() > 1 {
            return Ok(Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default()));
        }
        let input = ToolInput::from_json(self.input).unwrap();
        let call = Block::ToolUse { id: "1".into(), name: self.tool.into(), input };
        Ok(Response::new(vec![call], StopReason::ToolUse, Usage::default()))
    }
}

fn agent(rt: &tokio::runtime::Runtime, tool: &'static str, input: &'static str) -> Agent {
    let config = Config::from_yaml_str("identity: b\nsystem_prompt: s\nllm:\n  model: m\n").unwrap();
    let noop = Noop(
        ToolSpec::new("noop", ToolKind::Custom, serde_json::json!({"type": "object"}))
            .with_description("Do nothing")
            .with_no_defer(true),
    );
    let provider = Once { caps: Caps::new("bench"), tool, input };
    let built = Agent::builder()
        .config(config)
        .provider(provider)
        .source(Tree(synthetic::synthetic(100, 100)))
        .tool(noop)
        .build();
    let agent = rt.block_on(built).unwrap();
    assert!(agent.client_tool_search());
    agent
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let baseline = agent(&rt, "noop", "{}");
    // Words every tool's text holds (the worst case: each document is scored), and a selective query.
    let broad = agent(&rt, SEARCH_TOOLS, r#"{"query": "leaf 42 of group 7 impact rw", "limit": 5}"#);
    let narrow = agent(&rt, SEARCH_TOOLS, r#"{"query": "group7 leaf42", "limit": 5}"#);
    let mut g = c.benchmark_group("client_search_10k");
    g.bench_function("run_with_direct_noop_call", |b| {
        b.iter(|| black_box(rt.block_on(baseline.run("go", RunOptions::new()))))
    });
    g.bench_function("run_with_selective_search", |b| {
        b.iter(|| black_box(rt.block_on(narrow.run("go", RunOptions::new()))))
    });
    g.bench_function("run_with_search_matching_every_tool", |b| {
        b.iter(|| black_box(rt.block_on(broad.run("go", RunOptions::new()))))
    });
    g.finish();
}

criterion_group!(search_benches, benches);
criterion_main!(search_benches);
