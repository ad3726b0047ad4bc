//! Request building for the Anthropic provider: the body of every turn of a 50-turn conversation with 300 tools.
//! The tools are rendered once per plan, so a turn costs one pass over the conversation and one buffer of about the
//! body's size. Before the timings, the bytes allocated per turn are printed (counted by a global allocator).

// The counting allocator has to implement the unsafe GlobalAlloc trait.
#![allow(unsafe_code)]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use fisk_ai::async_trait;
use fisk_ai::llm::anthropic::AnthropicProvider;
use fisk_ai::llm::{Block, Message, Request, Role, ToolPlan};
use fisk_ai::select::{Selection, Toolset};
use fisk_ai::tool::{CallContext, Tags, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counts every byte handed out (a realloc counts its whole new size: the bytes the caller now occupies anew).
struct Counting;

static BYTES: AtomicU64 = AtomicU64::new(0);
static CALLS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's own arguments; the counters have no effect on memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
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

/// 300 command tools shaped like a large fisk application's: a few flags and args each, tags, a Tags line.
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

/// A growing conversation: each turn is thinking, narration and a tool call, answered by a ~1.5 KB tool result.
fn conversation() -> Vec<Message> {
    let mut messages = vec![Message::user("Report on every stream that lost messages in the last hour.")];
    let signature = "EqQBCkgIARABGAIiQL".repeat(22);
    let output = "subject orders.new: 12931 msgs, 44.1 MiB, last seq 889122, consumers 3, lag 0\n".repeat(20);
    for turn in 0..TURNS {
        let input =
            ToolInput::from_json(format!(r#"{{"name": "ORDERS_{turn}", "replicas": 3, "force": false}}"#)).unwrap();
        let id = format!("toolu_01{turn:022}");
        messages.push(Message::assistant(vec![
            Block::Thinking {
                text: format!("Stream {turn} is next; I will check its state before the consumers. ").repeat(4),
                signature: signature.clone(),
            },
            Block::text(format!("Checking stream ORDERS_{turn}.")),
            Block::ToolUse { id: id.clone(), name: format!("stream_op_{:03}", turn % TOOLS), input },
        ]));
        messages.push(Message { role: Role::User, content: vec![Block::tool_result(id, output.clone(), false)] });
    }
    messages
}

fn report_allocations(provider: &AnthropicProvider, plan: &ToolPlan, system: &[String], messages: &[Message]) {
    let turn_request = |t: usize| Request::new("claude-sonnet-4-6", system, &messages[..2 * t + 1], plan);
    // Turn 0 renders the tools once; every later turn reuses them.
    let (b0, c0) = (BYTES.load(Ordering::Relaxed), CALLS.load(Ordering::Relaxed));
    let first = provider.request_body(&turn_request(0));
    let first_alloc = BYTES.load(Ordering::Relaxed) - b0;
    let first_calls = CALLS.load(Ordering::Relaxed) - c0;
    let (mut bytes, mut calls, mut body) = (0u64, 0u64, 0u64);
    for t in 1..TURNS {
        let (b, c) = (BYTES.load(Ordering::Relaxed), CALLS.load(Ordering::Relaxed));
        let out = black_box(provider.request_body(&turn_request(t)));
        bytes += BYTES.load(Ordering::Relaxed) - b;
        calls += CALLS.load(Ordering::Relaxed) - c;
        body += out.len() as u64;
    }
    let n = (TURNS - 1) as u64;
    println!("request_build: {TOOLS} tools, {TURNS} turns");
    println!(
        "  first turn (renders the tools): {first_alloc} B in {first_calls} allocations for a {} B body",
        first.len()
    );
    println!(
        "  later turns: {} B allocated in {:.1} allocations per turn on average, for bodies of {} B on average \
         ({:.2} B allocated per body byte)",
        bytes / n,
        calls as f64 / n as f64,
        body / n,
        bytes as f64 / body as f64
    );
    let start = Instant::now();
    let rounds = 20;
    for _ in 0..rounds {
        for t in 0..TURNS {
            black_box(provider.request_body(&turn_request(t)));
        }
    }
    println!("  mean time per turn: {:.1} µs", start.elapsed().as_secs_f64() * 1e6 / (rounds * TURNS) as f64);
}

fn benches(c: &mut Criterion) {
    let toolset = toolset();
    let plan = ToolPlan::new(toolset.clone(), true);
    let provider = AnthropicProvider::new("sk-ant-bench");
    let system = vec![
        "You are an operations agent for a NATS deployment. Use the tools to inspect before you answer.".to_owned(),
        "Operator rules: never delete a stream; ask before purging.".to_owned(),
    ];
    let messages = conversation();
    report_allocations(&provider, &plan, &system, &messages);

    let mut g = c.benchmark_group("request_build");
    g.throughput(Throughput::Elements(TURNS as u64));
    g.bench_function("50_turns_300_tools", |b| {
        b.iter(|| {
            for t in 0..TURNS {
                let req = Request::new("claude-sonnet-4-6", &system, &messages[..2 * t + 1], &plan);
                black_box(provider.request_body(&req));
            }
        })
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("turn_50_of_50", |b| {
        let req = Request::new("claude-sonnet-4-6", &system, &messages, &plan);
        b.iter(|| black_box(provider.request_body(&req)))
    });
    // For comparison: the first turn of a new plan, which renders the 300 tools.
    g.bench_function("turn_1_new_plan", |b| {
        b.iter_batched(
            || ToolPlan::new(toolset.clone(), true),
            |plan| {
                let req = Request::new("claude-sonnet-4-6", &system, &messages[..1], &plan);
                black_box(provider.request_body(&req))
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(request_build_benches, benches);
criterion_main!(request_build_benches);
