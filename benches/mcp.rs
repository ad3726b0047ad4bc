//! MCP serving throughput: calls per second of a trivial command through the MCP server (rmcp's client over
//! loopback HTTP, both protocol eras) at concurrency 1, 2 and 8, against spawning the same command directly at
//! the same concurrency (target: at least 0.8x of that ceiling). Each iteration runs N calls at once; criterion's
//! throughput figure is calls per second.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use fisk_ai::Config;
use fisk_ai::serve::mcp::McpServer;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Stdio;

#[derive(Clone)]
struct Bench;

impl ClientHandler for Bench {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("bench", "1"))
    }
}

type Client = RunningService<RoleClient, Bench>;

fn app(dir: &Path) -> PathBuf {
    let link = dir.join("mcp-app");
    std::os::unix::fs::symlink(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin/fake-app"), &link)
        .unwrap();
    link
}

async fn connect(url: &str, modern: bool) -> Client {
    let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
    if modern {
        let mode = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        Bench.serve_with_lifecycle(transport, mode).await.unwrap()
    } else {
        Bench.serve(transport).await.unwrap()
    }
}

fn args() -> serde_json::Map<String, serde_json::Value> {
    serde_json::json!({"words": ["hello"]}).as_object().unwrap().clone()
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let yaml = format!(
        "identity: bench\napplication_path: {}\nexpose:\n  agent:\n    mcp:\n      max_concurrent_tools: 8\n",
        app.display()
    );
    let url = rt.block_on(async {
        let server = McpServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(server.serve(listener, std::future::pending()));
        url
    });

    let mut g = c.benchmark_group("mcp");
    for n in [1usize, 2, 8] {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("direct_spawn", n), &n, |b, &n| {
            b.iter(|| {
                rt.block_on(async {
                    let calls = (0..n).map(|_| {
                        tokio::process::Command::new(&app).args(["echo", "--", "hello"]).stdin(Stdio::null()).output()
                    });
                    black_box(futures::future::join_all(calls).await)
                })
            })
        });
        for (era, modern) in [("mcp_2025_11_25", false), ("mcp_2026_07_28", true)] {
            let clients: Vec<Client> = rt.block_on(async {
                let mut v = Vec::new();
                for _ in 0..n {
                    v.push(connect(&url, modern).await);
                }
                v
            });
            g.bench_with_input(BenchmarkId::new(era, n), &n, |b, _| {
                b.iter(|| {
                    rt.block_on(async {
                        let calls = clients
                            .iter()
                            .map(|c| c.call_tool(CallToolRequestParams::new("echo").with_arguments(args())));
                        let out = futures::future::join_all(calls).await;
                        assert!(out.iter().all(|r| r.as_ref().is_ok_and(|r| r.is_error != Some(true))));
                        black_box(out)
                    })
                })
            });
            rt.block_on(async {
                for c in clients {
                    let _ = c.cancel().await;
                }
            });
        }
    }
    g.finish();
}

criterion_group!(mcp_benches, benches);
criterion_main!(mcp_benches);
