//! Request building for the OpenAI provider: the body of every turn of a 50-turn conversation with 300 tools,
//! against the Anthropic provider building the same conversation in the same run (the baseline). Before the
//! criterion timings, the figures are printed as ratios to the baseline (time per turn, bytes allocated per turn,
//! body size), so they mean the same on any machine. Nothing is asserted; prefix stability is a test
//! (`tests/openai_provider.rs`).

// The counting allocator has to implement the unsafe GlobalAlloc trait.
#![allow(unsafe_code)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fisk_ai::async_trait;
use fisk_ai::llm::anthropic::AnthropicProvider;
use fisk_ai::llm::openai::OpenAiProvider;
use fisk_ai::llm::{Block, Message, Request, Role, ToolPlan};
use fisk_ai::select::{Selection, Toolset};
use fisk_ai::tool::{CallContext, Tags, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Counts every byte handed out (a realloc counts its whole new size).
struct Counting;

static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's own arguments; the counter has no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const TOOLS: usize = 300;
const TURNS: usize = 50;

struct BenchTool(ToolSpec);

#[async_trait]
impl Tool for BenchTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        ToolOutput::success("")
    }
}

/// 300 command tools shaped like a large fisk application's (the same as benches/request_build.rs).
fn toolset() -> Toolset {
    let tools = (0..TOOLS)
        .map(|i| {
            let schema = json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "description": "The stream name"},
                    "subjects": {"type": "array", "items": {"type": "string"}, "description": "Subjects to consume"},
                    "replicas": {"type": "integer", "description": "Number of replicas"},
                    "storage": {"type": "string", "enum": ["file", "memory"], "description": "Storage backend"},
                    "force": {"type": "boolean", "description": "Act without prompting"}
                }
            });
            let desc = format!(
                "Manage stream number {i}: create, inspect and report on its state and configuration.\n\n\
                 Tags: impact:ro, area:streams"
            );
            let spec = ToolSpec::new(format!("stream_op_{i:03}"), ToolKind::Command, schema)
                .with_description(desc)
                .with_command_path(["stream", "op", &i.to_string()])
                .with_tags(Tags::new(["impact:ro", "area:streams"]));
            Arc::new(BenchTool(spec)) as Arc<dyn Tool>
        })
        .collect();
    Selection::new().apply(tools).unwrap()
}

/// A growing conversation: each turn is reasoning, narration and a tool call, answered by a ~1.5 KB tool result.
fn conversation() -> Vec<Message> {
    let mut messages = vec![Message::user("Report on every stream that lost messages in the last hour.")];
    let output = "subject orders.new: 12931 msgs, 44.1 MiB, last seq 889122, consumers 3, lag 0\n".repeat(20);
    for turn in 0..TURNS {
        let input =
            ToolInput::from_json(format!(r#"{{"name": "ORDERS_{turn}", "replicas": 3, "force": false}}"#)).unwrap();
        let id = format!("call_{turn:024}");
        messages.push(Message::assistant(vec![
            Block::Thinking {
                text: format!("Stream {turn} is next; I will check its state before the consumers. ").repeat(4),
                signature: String::new(),
            },
            Block::text(format!("Checking stream ORDERS_{turn}.")),
            Block::ToolUse { id: id.clone(), name: format!("stream_op_{:03}", turn % TOOLS), input },
        ]));
        messages.push(Message { role: Role::User, content: vec![Block::tool_result(id, output.clone(), false)] });
    }
    messages
}

/// What one provider costs over the 50 turns (after its tools were rendered once).
#[derive(Default)]
struct Cost {
    time: Duration,
    bytes: u64,
    body: u64,
}

fn measure(build: &dyn Fn(usize) -> Vec<u8>) -> Cost {
    let mut cost = Cost::default();
    for t in 0..TURNS {
        let (b, start) = (BYTES.load(Ordering::Relaxed), Instant::now());
        let out = black_box(build(t));
        cost.time += start.elapsed();
        cost.bytes += BYTES.load(Ordering::Relaxed) - b;
        cost.body += out.len() as u64;
    }
    cost
}

fn report(openai: &dyn Fn(usize) -> Vec<u8>, anthropic: &dyn Fn(usize) -> Vec<u8>) {
    // Warm both tool caches, then alternate rounds so machine noise hits both alike.
    openai(0);
    anthropic(0);
    let (mut o, mut a) = (Cost::default(), Cost::default());
    for _ in 0..20 {
        let (x, y) = (measure(openai), measure(anthropic));
        (o.time, o.bytes, o.body) = (o.time + x.time, o.bytes + x.bytes, x.body);
        (a.time, a.bytes, a.body) = (a.time + y.time, a.bytes + y.bytes, y.body);
    }
    let per_turn = |c: &Cost| c.time.as_secs_f64() * 1e6 / (20 * TURNS) as f64;
    println!("openai_request: {TOOLS} tools, {TURNS} turns; baseline: the Anthropic provider, same conversation");
    println!(
        "  time per turn:       openai/anthropic = {:.2} ({:.1} µs vs {:.1} µs on this machine)",
        per_turn(&o) / per_turn(&a),
        per_turn(&o),
        per_turn(&a)
    );
    println!("  allocated per turn:  openai/anthropic = {:.2}", o.bytes as f64 / a.bytes as f64);
    println!("  body bytes per turn: openai/anthropic = {:.2}", o.body as f64 / a.body as f64);
    println!("  allocated per body byte: openai {:.2}, anthropic {:.2}", o.bytes as f64 / 20.0 / o.body as f64, {
        a.bytes as f64 / 20.0 / a.body as f64
    });
}

fn benches(c: &mut Criterion) {
    // No tool search on either side, so both send the same 300 tools directly on every turn.
    let plan = ToolPlan::new(toolset(), false);
    let openai = OpenAiProvider::new("sk-bench");
    let anthropic = AnthropicProvider::new("sk-ant-bench");
    let system = vec![
        "You are an operations agent for a NATS deployment. Use the tools to inspect before you answer.".to_owned(),
        "Operator rules: never delete a stream; ask before purging.".to_owned(),
    ];
    let messages = conversation();
    let request = |t: usize| Request::new("gpt-4.1", &system, &messages[..2 * t + 1], &plan);
    let build_openai = |t: usize| openai.request_body(&request(t));
    let build_anthropic = |t: usize| anthropic.request_body(&request(t));
    report(&build_openai, &build_anthropic);

    let mut g = c.benchmark_group("openai_request");
    g.throughput(Throughput::Elements(TURNS as u64));
    g.bench_function("openai_50_turns_300_tools", |b| b.iter(|| (0..TURNS).for_each(|t| drop(build_openai(t)))));
    g.bench_function("anthropic_50_turns_300_tools", |b| b.iter(|| (0..TURNS).for_each(|t| drop(build_anthropic(t)))));
    g.throughput(Throughput::Elements(1));
    g.bench_function("openai_turn_50_of_50", |b| b.iter(|| black_box(build_openai(TURNS - 1))));
    g.bench_function("anthropic_turn_50_of_50", |b| b.iter(|| black_box(build_anthropic(TURNS - 1))));
    g.finish();
}

criterion_group!(openai_request_benches, benches);
criterion_main!(openai_request_benches);
