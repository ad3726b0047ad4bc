//! Serve a synthetic 10,000-command application over MCP and report what it costs: load time, `tools/list` time
//! (first and later requests) and the process's peak and current resident memory from `/proc/self/status`.
//!
//! ```text
//! cargo run --release --example large_tree --features mcp [GROUPS LEAVES]
//! ```
//!
//! The application is a shell script printing the generated document, so loading goes through real introspection.

use fisk_ai::Config;
use fisk_ai::serve::mcp::McpServer;
use std::time::{Duration, Instant};

#[path = "../benches/common/raw_mcp.rs"]
mod raw_mcp;
#[path = "../benches/common/synthetic.rs"]
mod synthetic;

/// A line of `/proc/self/status`, such as `VmHWM` (peak resident set) or `VmRSS`.
fn status(key: &str) -> String {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim_start_matches(':').trim().to_owned())
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let groups = args.next().transpose()?.unwrap_or(100);
    let leaves = args.next().transpose()?.unwrap_or(100);
    let dir = tempfile::tempdir()?;
    let doc = dir.path().join("doc.json");
    std::fs::write(&doc, synthetic::synthetic(groups, leaves))?;
    let app = dir.path().join("app");
    std::fs::write(&app, format!("#!/bin/sh\nexec cat '{}'\n", doc.display()))?;
    std::fs::set_permissions(&app, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let yaml = format!(
        "identity: large\napplication_path: {}\nglobal_flags: [context]\nharness:\n  confirm_tags: [impact:rw]\n\
         expose:\n  agent:\n    mcp: {{}}\n",
        app.display()
    );
    println!("before loading: VmRSS {}", status("VmRSS"));

    let started = Instant::now();
    let server = McpServer::builder().config(Config::from_yaml_str(&yaml)?).build().await?;
    println!("introspected, loaded and built the listing of {} tools in {:?}", server.tools().len(), started.elapsed());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/", listener.local_addr()?);
    tokio::spawn(server.serve(listener, std::future::pending()));

    let client = raw_mcp::RawMcp::connect(&url).await;
    let (bytes, first) = client.list_tools().await;
    let mut later: Vec<Duration> = Vec::new();
    for _ in 0..20 {
        later.push(client.list_tools().await.1);
    }
    later.sort();
    println!(
        "tools/list: {bytes} bytes; first {first:?}, then median {:?} (min {:?}, max {:?}) over {} requests",
        later[later.len() / 2],
        later[0],
        later[later.len() - 1],
        later.len()
    );
    println!("serving: VmHWM {} (peak), VmRSS {}", status("VmHWM"), status("VmRSS"));
    Ok(())
}
