//! `tools/list` for the synthetic 10,000-leaf tree: building the server (which builds the listing once) against
//! serving the cached listing over loopback HTTP (target: under 5 ms after the first). The bare client reads the
//! body as bytes, so only the server's work and the transport are counted.

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::serve::mcp::McpServer;
use fisk_ai::source::fisk::FiskApp;
use fisk_ai::{Config, Selection};
use std::hint::black_box;

#[path = "common/raw_mcp.rs"]
mod raw_mcp;
#[path = "common/synthetic.rs"]
mod synthetic;

const CONFIG: &str = "identity: bench\nexpose:\n  agent:\n    mcp: {}\n";

fn toolset() -> fisk_ai::select::Toolset {
    let loaded = FiskApp::new("app").with_global_flags(["context"]).tools_from_slice(&synthetic::synthetic(100, 100));
    Selection::new().with_confirm_tags(["impact:rw"]).apply(loaded.unwrap().tools).unwrap()
}

async fn server(tools: fisk_ai::select::Toolset) -> McpServer {
    McpServer::builder().config(Config::from_yaml_str(CONFIG).unwrap()).toolset(tools).build().await.unwrap()
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut g = c.benchmark_group("tools_list_10k");
    g.sample_size(20);
    // Baseline: building the server from a loaded tool set, which builds every schema and the listing.
    g.bench_function("build_listing", |b| {
        b.iter_batched(toolset, |tools| black_box(rt.block_on(server(tools))), criterion::BatchSize::LargeInput)
    });
    let client = rt.block_on(async {
        let server = server(toolset()).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(server.serve(listener, std::future::pending()));
        let client = raw_mcp::RawMcp::connect(&url).await;
        let (bytes, _) = client.list_tools().await;
        assert!(bytes > 1_000_000, "the listing of 10,000 tools is served whole: {bytes} bytes");
        client
    });
    g.bench_function("cached_tools_list", |b| b.iter(|| black_box(rt.block_on(client.list_tools()))));
    g.finish();
}

criterion_group!(listing_benches, benches);
criterion_main!(listing_benches);
