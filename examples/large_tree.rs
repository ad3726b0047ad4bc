//! Serve a synthetic 10,000-command application over MCP and report what it costs: load time, `tools/list` time
//! (first and later requests) and the process's peak and current resident memory from `/proc/<pid>/status`.
//!
//! ```text
//! cargo run --release --example large_tree --features mcp [GROUPS LEAVES [distinct]]
//! ```
//!
//! `distinct` gives every command three flags and a positional argument of its own, so no two schemas are equal;
//! by default all commands share one schema.
//!
//! The application is a shell script printing the generated document, so loading goes through real introspection;
//! the server runs as a child process whose `/proc/<pid>/status` is read, so the client's memory is not counted.

use fisk_ai::Config;
use fisk_ai::serve::mcp::McpServer;
use std::time::{Duration, Instant};

#[path = "../benches/common/raw_mcp.rs"]
mod raw_mcp;
#[path = "../benches/common/synthetic.rs"]
mod synthetic;

/// A line of `/proc/<pid>/status`, such as `VmHWM` (peak resident set) or `VmRSS`.
fn status(pid: u32, key: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim_start_matches(':').trim().to_owned())
        .unwrap_or_default()
}

/// The server process: load the application, serve it, and print the URL once listening.
async fn serve(app: &str) -> Result<(), Box<dyn std::error::Error>> {
    let yaml = format!(
        "identity: large\napplication_path: {app}\nglobal_flags: [context]\nharness:\n  confirm_tags: [impact:rw]\n\
         expose:\n  agent:\n    mcp: {{}}\n"
    );
    let started = Instant::now();
    let server = McpServer::builder().config(Config::from_yaml_str(&yaml)?).build().await?;
    let loaded = started.elapsed();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/ {} {loaded:?}", listener.local_addr()?, server.tools().len());
    // Until the client closes stdin, so the server exits normally (and a heap profiler wrapping it can report).
    let stdin_closed = async {
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut tokio::io::sink()).await;
    };
    server.serve(listener, stdin_closed).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("serve") {
        return serve(&args.next().ok_or("serve needs the application path")?).await;
    }
    let mut sizes = std::env::args().skip(1).take(2).map(|a| a.parse::<usize>());
    let groups = sizes.next().transpose()?.unwrap_or(100);
    let leaves = sizes.next().transpose()?.unwrap_or(100);
    let distinct = std::env::args().nth(3).as_deref() == Some("distinct");
    let dir = tempfile::tempdir()?;
    let doc = dir.path().join("doc.json");
    let text = if distinct { synthetic::distinct(groups, leaves) } else { synthetic::synthetic(groups, leaves) };
    std::fs::write(&doc, text)?;
    let app = dir.path().join("app");
    // The document for introspection; a trivial command (one short line) for calls.
    let script =
        format!("#!/bin/sh\ncase \"$*\" in *--fisk-introspect*) exec cat '{}' ;; *) echo ok ;; esac\n", doc.display());
    std::fs::write(&app, script)?;
    std::fs::set_permissions(&app, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;

    // The server runs in its own process so that its memory figures count nothing of this client's.
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg("serve")
        .arg(&app)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?), &mut line)?;
    let mut words = line.split_whitespace();
    let (url, tools, loaded) = (words.next().unwrap_or_default(), words.next().unwrap_or_default(), words.next());
    println!("server: introspected, loaded and built the listing of {tools} tools in {}", loaded.unwrap_or("?"));
    println!("server after build: VmHWM {}, VmRSS {}", status(child.id(), "VmHWM"), status(child.id(), "VmRSS"));

    let client = raw_mcp::RawMcp::connect(url).await;
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
    println!(
        "server while serving: VmHWM {} (peak), VmRSS {}",
        status(child.id(), "VmHWM"),
        status(child.id(), "VmRSS")
    );
    // Calls of 100 different commands: each compiles its tool's validator and runs the (fake) application.
    for i in 0..100 {
        let (g, l) = (i % groups, (i * 7) % leaves);
        let args = if distinct {
            format!(r#"{{"target{g}x{l}":"t","force{g}x{l}":true}}"#)
        } else {
            r#"{"name":"t","force":true}"#.to_owned()
        };
        client.call_tool(&format!("group{g}_leaf{l}"), &args).await;
    }
    println!(
        "server after 100 calls: VmHWM {} (peak), VmRSS {}",
        status(child.id(), "VmHWM"),
        status(child.id(), "VmRSS")
    );
    drop(child.stdin.take());
    child.wait()?;
    Ok(())
}
