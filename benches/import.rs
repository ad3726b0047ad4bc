//! MCP import costs, each against a bare rmcp client doing the same work against the same server in the same run:
//!
//! - `list_select/*`: starting the fixture server over stdio, initializing, listing 1,000 tools and (ours)
//!   building and selecting them, against rmcp connecting and listing alone;
//! - `call_stdio/*` and `call_http/*`: one trivial `tools/call` (`add`) through the one dispatch path (validation,
//!   gate check, MCPI-8 content), against `call_tool` on a bare rmcp client session (target: at most 1.1x).
//!
//! The fixture is examples/mcp_fixture_server.rs, built here in the bench profile.

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::dispatch::{Approval, Gated, Outcome, Surface, dispatch};
use fisk_ai::select::{Selection, Toolset};
use fisk_ai::source::mcp::McpImport;
use fisk_ai::tool::ToolInput;
use rmcp::model::CallToolRequestParams;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Stdio;
use tokio::runtime::Runtime;

#[path = "../examples/mcp_fixture_server.rs"]
#[allow(dead_code)]
mod fixture;

/// The fixture server, built in release like this bench.
fn fixture_bin() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(env!("CARGO"))
        .args(["build", "--release", "--example", "mcp_fixture_server", "--features", "mcp"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    target.join("release/examples/mcp_fixture_server")
}

struct Approving;

#[fisk_ai::async_trait]
impl Surface for Approving {
    type Halt = ();
    async fn approve(&mut self, _call: &Gated<'_>) -> Approval<()> {
        Approval::Approved(fisk_ai::dispatch::Answer::Ungated)
    }
}

/// A bare rmcp client over the fixture's stdio, started by hand.
async fn bare_stdio(bin: &PathBuf, args: &[&str]) -> (RunningService<RoleClient, ()>, tokio::process::Child) {
    let mut child = tokio::process::Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    (().serve_with_lifecycle((stdout, stdin), modern()).await.unwrap(), child)
}

/// The era the import negotiates with the fixture, so both sides speak the same protocol.
fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
}

fn add_params() -> CallToolRequestParams {
    let Ok(serde_json::Value::Object(args)) = serde_json::from_str(r#"{"a": 2, "b": 40}"#) else { unreachable!() };
    CallToolRequestParams::new("add").with_arguments(args)
}

async fn ours(tools: &Toolset, input: &ToolInput) {
    match dispatch(&mut Approving, tools, "add", input).await {
        Outcome::Ran(out) => assert_eq!(black_box(out).content(), "42"),
        _ => panic!("add did not run"),
    }
}

fn list_select(c: &mut Criterion, rt: &Runtime, bin: &PathBuf) {
    let mut group = c.benchmark_group("list_select");
    group.sample_size(20);
    // The fixture's own tools plus synthetic ones: 1,000 in all.
    let own = rt.block_on(async { bare_stdio(bin, &[]).await.0.list_all_tools().await.unwrap().len() });
    let many = (1000 - own).to_string();
    let command = vec![bin.display().to_string(), "--many".into(), many, "--page".into(), "100".into()];
    group.bench_function("bare_rmcp", |b| {
        b.iter(|| {
            rt.block_on(async {
                let args: Vec<&str> = command[1..].iter().map(String::as_str).collect();
                let (client, _child) = bare_stdio(bin, &args).await;
                assert_eq!(black_box(client.list_all_tools().await.unwrap()).len(), 1000);
            })
        })
    });
    group.bench_function("fisk_ai", |b| {
        b.iter(|| {
            rt.block_on(async {
                let loaded = McpImport::stdio("bench", command.clone()).unwrap().load().await.unwrap();
                let tools = Selection::new().apply(loaded.tools).unwrap();
                assert_eq!(black_box(tools).len(), 1000);
            })
        })
    });
    group.finish();
}

fn calls(c: &mut Criterion, rt: &Runtime, bin: &PathBuf) {
    let input = ToolInput::from_json(r#"{"a": 2, "b": 40}"#).unwrap();
    let stdio_tools = rt.block_on(async {
        let loaded = McpImport::stdio("bench", [bin.display().to_string()]).unwrap().load().await.unwrap();
        Selection::new().apply(loaded.tools).unwrap()
    });
    let (bare, _child) = rt.block_on(bare_stdio(bin, &[]));
    let mut group = c.benchmark_group("call_stdio");
    group.bench_function("bare_rmcp", |b| {
        b.iter(|| rt.block_on(async { black_box(bare.call_tool(add_params()).await.unwrap()) }))
    });
    group.bench_function("fisk_ai", |b| b.iter(|| rt.block_on(ours(&stdio_tools, &input))));
    group.finish();

    let url = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { fixture::serve_http(fixture::Fixture::from_args(&[]), listener).await.unwrap() });
        url
    });
    let http_tools = rt.block_on(async {
        let loaded = McpImport::http("bench", url.clone()).unwrap().load().await.unwrap();
        Selection::new().apply(loaded.tools).unwrap()
    });
    let bare_http = rt.block_on(async {
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.clone());
        ().serve_with_lifecycle(transport, modern()).await.unwrap()
    });
    let mut group = c.benchmark_group("call_http");
    group.bench_function("bare_rmcp", |b| {
        b.iter(|| rt.block_on(async { black_box(bare_http.call_tool(add_params()).await.unwrap()) }))
    });
    group.bench_function("fisk_ai", |b| b.iter(|| rt.block_on(ours(&http_tools, &input))));
    group.finish();
}

fn benches(c: &mut Criterion) {
    let bin = fixture_bin();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    list_select(c, &rt, &bin);
    calls(c, &rt, &bin);
}

criterion_group!(import_benches, benches);
criterion_main!(import_benches);
