//! MCP over stdio with the traffic pattern assistants use: one client on the server's stdin and stdout, its
//! `tools/call` requests pipelined on that one stream (rmcp's client, as Claude Code's and the SDKs' clients do).
//! The server is `McpServer::serve_io` on its own runtime over a real pipe pair, so every message crosses the
//! kernel as it does between two processes. Compared in the same run with spawning the same command directly at the
//! same concurrency (target: at least 0.95x: stdio has no HTTP framing).
//!
//! Before the criterion group it prints the time from a client's `notifications/cancelled` to the call's process
//! being gone (killed and reaped), p50 and p99 over 50 cancels (target: within 100 ms), and where a call's time
//! goes at concurrency 1: the spawn, the least any stdio server adds to it, this crate's server and rmcp's client
//! ([`stdio_floor`]).

#[path = "common/echo_app.rs"]
mod echo_app;
#[path = "common/stats.rs"]
mod stats;
#[path = "common/stdio_floor.rs"]
mod stdio_floor;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fisk_ai::Config;
use fisk_ai::serve::mcp::McpServer;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use std::hint::black_box;
use std::os::fd::OwnedFd;
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

/// Serve `app` over a fresh pipe pair on `server_rt`; the client's ends `(write, read)`, for the runtime that will
/// poll them (a pipe is registered with the reactor that polls it).
fn serve(server_rt: &tokio::runtime::Runtime, app: &Path) -> (OwnedFd, OwnedFd) {
    let yaml = format!(
        "identity: bench\napplication_path: {}\nexpose:\n  agent:\n    mcp:\n      max_concurrent_tools: 32\n",
        app.display()
    );
    let ((server_in, to_server), (from_server, server_out)) = stdio_floor::pipes();
    server_rt.block_on(async {
        let server_in = tokio::net::unix::pipe::Receiver::from_owned_fd(server_in).unwrap();
        let server_out = tokio::net::unix::pipe::Sender::from_owned_fd(server_out).unwrap();
        let server = McpServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap();
        tokio::spawn(server.serve_io(server_in, server_out, std::future::pending()));
    });
    (to_server, from_server)
}

/// rmcp's client on a server of `app`, on `rt`.
fn connect(server_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, app: &Path) -> Client {
    let (to_server, from_server) = serve(server_rt, app);
    rt.block_on(async move {
        let write = tokio::net::unix::pipe::Sender::from_owned_fd(to_server).unwrap();
        let read = tokio::net::unix::pipe::Receiver::from_owned_fd(from_server).unwrap();
        ().serve((read, write)).await.unwrap()
    })
}

/// Issue 27: how far the spawn is from a stdio call at concurrency 1, layer by layer ([`stdio_floor`]).
fn floor_report(server_rt: &tokio::runtime::Runtime, rt: &tokio::runtime::Runtime, app: &Path, client: &Client) {
    const ROUNDS: usize = 60;
    const BLOCK: usize = 20;
    let (floor_write, floor_read) = server_rt.block_on(async { stdio_floor::floor_server(app.to_owned()) });
    let (server_write, server_read) = serve(server_rt, app);
    let times = rt.block_on(async {
        let mut floor = stdio_floor::LineClient::new(floor_write, floor_read);
        let mut server = stdio_floor::LineClient::new(server_write, server_read);
        floor.initialize().await;
        server.initialize().await;
        let mut times: [Vec<Duration>; 4] = Default::default();
        for _ in 0..ROUNDS {
            for (i, t) in times.iter_mut().enumerate() {
                for _ in 0..BLOCK {
                    let start = Instant::now();
                    match i {
                        0 => drop(black_box(echo_app::spawn_directly(app, 1).await)),
                        1 => floor.call().await,
                        2 => server.call().await,
                        _ => call(client).await,
                    }
                    t.push(start.elapsed());
                }
            }
        }
        times
    });
    let [spawn, floor, server, rmcp] = times;
    stdio_floor::report(vec![("spawn", spawn), ("floor", floor), ("server", server), ("rmcp client", rmcp)]);
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
    floor_report(&server_rt, &rt, &app, &client);

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
