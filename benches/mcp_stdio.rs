//! MCP over stdio with the traffic pattern assistants use: one client on the server's stdin and stdout, its
//! `tools/call` requests pipelined on that one stream (rmcp's client, as Claude Code's and the SDKs' clients do).
//! The server is `McpServer::serve_io` on its own runtime over a real pipe pair, so every message crosses the
//! kernel as it does between two processes. Compared in the same run with spawning the same command directly at the
//! same concurrency (target: at least 0.95x: stdio has no HTTP framing).
//!
//! Before the criterion group it prints the time from a client's `notifications/cancelled` to the call's process
//! being gone (killed and reaped), p50 and p99 over 50 cancels (target: within 100 ms).

#[path = "common/echo_app.rs"]
mod echo_app;
#[path = "common/stats.rs"]
mod stats;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fisk_ai::Config;
use fisk_ai::serve::mcp::McpServer;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

const CONCURRENCY: [usize; 2] = [1, 8];

type Client = RunningService<RoleClient, ()>;

/// The bench application with one more command, `hang`, which writes its pid to the file it is given and sleeps.
fn app(dir: &Path) -> std::path::PathBuf {
    let app = echo_app::write(dir);
    let doc = r#"{"name":"bench","commands":[{"name":"echo","args":[{"name":"words","cumulative":true}],"restricted_schema":{"additionalProperties":false,"properties":{"words":{"items":{"type":"string"},"type":"array"}},"type":"object"}},{"name":"hang","args":[{"name":"pidfile","required":true}],"restricted_schema":{"additionalProperties":false,"properties":{"pidfile":{"type":"string"}},"required":["pidfile"],"type":"object"}}]}"#;
    std::fs::write(dir.join("doc.json"), doc).unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --fisk-introspect ]; then exec cat '{}'; fi\ncmd=$1; shift; shift\n\
         if [ \"$cmd\" = hang ]; then echo $$ > \"$1\"; exec sleep 30; fi\necho \"$@\"\n",
        dir.join("doc.json").display()
    );
    std::fs::write(&app, script).unwrap();
    app
}

/// Serve `app` over a fresh pipe pair on `server_rt`; rmcp's client on the other ends, on `rt`.
fn connect(server_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, app: &Path) -> Client {
    let yaml = format!(
        "identity: bench\napplication_path: {}\nexpose:\n  agent:\n    mcp:\n      max_concurrent_tools: 32\n",
        app.display()
    );
    let (to_server, server_in) = server_rt.block_on(async { tokio::net::unix::pipe::pipe() }).unwrap();
    let (server_out, from_server) = server_rt.block_on(async { tokio::net::unix::pipe::pipe() }).unwrap();
    server_rt.block_on(async {
        let server = McpServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap();
        tokio::spawn(server.serve_io(server_in, server_out, std::future::pending()));
    });
    // The client's ends move to the client's runtime: a pipe is registered with the reactor that polls it.
    let (to_server, from_server) = (to_server.into_blocking_fd().unwrap(), from_server.into_blocking_fd().unwrap());
    rt.block_on(async move {
        let write = tokio::net::unix::pipe::Sender::from_owned_fd(to_server).unwrap();
        let read = tokio::net::unix::pipe::Receiver::from_owned_fd(from_server).unwrap();
        ().serve((read, write)).await.unwrap()
    })
}

fn echo() -> CallToolRequestParams {
    let args = serde_json::json!({"words": ["hello"]});
    CallToolRequestParams::new("echo").with_arguments(args.as_object().unwrap().clone())
}

async fn call(client: &Client) {
    let out = client.call_tool(echo()).await.unwrap();
    assert_ne!(out.is_error, Some(true), "{out:?}");
    black_box(out);
}

/// Whether `pid` is gone: killed and reaped (a zombie still counts as there).
fn gone(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

fn cancel_report(rt: &tokio::runtime::Runtime, client: &Client, dir: &Path) {
    const CANCELS: usize = 50;
    let mut took = Vec::with_capacity(CANCELS);
    for i in 0..CANCELS {
        let pidfile = dir.join(format!("pid-{i}"));
        let args = serde_json::json!({"pidfile": pidfile.display().to_string()});
        let params = CallToolRequestParams::new("hang").with_arguments(args.as_object().unwrap().clone());
        rt.block_on(async {
            let request = ClientRequest::CallToolRequest(Request::new(params));
            let handle =
                client.peer().send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
            let pid = loop {
                if let Some(pid) = std::fs::read_to_string(&pidfile).ok().and_then(|s| s.trim().parse::<i32>().ok()) {
                    break pid;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            };
            let t = Instant::now();
            handle.cancel(None).await.unwrap();
            while !gone(pid) {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            took.push(t.elapsed());
        });
    }
    took.sort();
    let pct = |p: f64| stats::percentile(&took, p);
    eprintln!("mcp stdio cancel -> process gone ({CANCELS} cancels): p50 {:?} p99 {:?}", pct(0.50), pct(0.99));
}

fn benches(c: &mut Criterion) {
    let server_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let client = connect(&server_rt, &rt, &app);
    cancel_report(&rt, &client, dir.path());

    let mut g = c.benchmark_group("mcp_stdio");
    g.sample_size(20);
    for n in CONCURRENCY {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("direct_spawn", n), &n, |b, &n| {
            b.iter(|| rt.block_on(async { black_box(echo_app::spawn_directly(&app, n).await) }))
        });
        g.bench_with_input(BenchmarkId::new("stdio_rmcp_client", n), &n, |b, &n| {
            b.iter(|| rt.block_on(futures::future::join_all((0..n).map(|_| call(&client)))))
        });
    }
    g.finish();
    rt.block_on(async { client.cancel().await.unwrap() });
}

criterion_group!(mcp_stdio_benches, benches);
criterion_main!(mcp_stdio_benches);
