//! MCPI-17: how an imported stdio MCP server is closed (EOF, its grace, `SIGTERM`, more grace, then the kill), and
//! the host's two ways to end the closing: waiting with a bound, and killing every server at once on a way out
//! that skips destructors. Its own binary, and one test run in phases: `wait_servers_closed` and
//! `kill_servers_now` act on every server of the process, and would end other tests' servers.
#![cfg(feature = "mcp")]

mod common;

use fisk_ai::source::mcp::{McpImport, kill_servers_now, wait_servers_closed};
use fisk_ai::tool::{CallContext, Tool, ToolInput};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The fixture server, writing what it sees while closing to `file`; its tools and its pid.
async fn start(file: &Path, stubborn: bool) -> (Vec<Arc<dyn Tool>>, i32) {
    let mut command = vec![common::example("mcp_fixture_server").display().to_string()];
    command.extend(["--on-exit".to_owned(), file.display().to_string()]);
    if stubborn {
        command.push("--stubborn".to_owned());
    }
    let tools = McpImport::stdio("closing", command).unwrap().load().await.unwrap().tools;
    let pid = tools.iter().find(|t| t.spec().name() == "pid").unwrap();
    let pid = pid.call(&ToolInput::from_json("{}").unwrap(), &CallContext::new()).await;
    (tools, pid.content().parse().unwrap())
}

fn seen(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap_or_default()
}

#[tokio::test]
async fn mcpi_17_closing_a_stdio_server_eof_then_sigterm_then_the_kill_and_the_hosts_ways_to_end_it() {
    let dir = tempfile::tempdir().unwrap();

    // A server that saves its state when its input ends gets to, where a kill at once would lose it.
    let file = dir.path().join("saver");
    let (tools, pid) = start(&file, false).await;
    drop(tools);
    assert!(wait_servers_closed(Duration::from_secs(15)).await);
    assert_eq!(seen(&file), "eof\n", "it saw EOF and exited on its own");
    common::procs::wait_gone(pid, "the server").await;

    // One that ignores the end of its input gets SIGTERM; one that ignores that too is killed. Meanwhile it is
    // still closing, and running.
    let file = dir.path().join("stubborn");
    let (tools, pid) = start(&file, true).await;
    drop(tools);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(common::procs::alive(pid), "in its grace");
    assert!(!seen(&file).contains("term"), "no SIGTERM in the first grace");
    assert!(wait_servers_closed(Duration::from_secs(20)).await);
    assert_eq!(seen(&file), "eof\nterm\n", "EOF, then SIGTERM, then the kill");
    common::procs::wait_gone(pid, "the stubborn server").await;

    // A host that cannot wait the whole grace: what is still closing when its wait ends is killed then.
    let file = dir.path().join("late");
    let (tools, pid) = start(&file, true).await;
    drop(tools);
    assert!(!wait_servers_closed(Duration::from_millis(300)).await, "still in its grace");
    common::procs::wait_gone(pid, "a server still closing when the wait ended").await;
    assert!(!seen(&file).contains("term"), "killed in its first grace, before any SIGTERM");

    // A way out that skips destructors (`exit` after a second Ctrl-C): every server ends now, even one whose
    // tools are still held.
    let file = dir.path().join("held");
    let (tools, pid) = start(&file, true).await;
    kill_servers_now();
    common::procs::wait_gone(pid, "a server whose tools were held at kill_servers_now").await;
    assert_eq!(seen(&file), "", "killed without being closed");
    drop(tools);
    assert!(wait_servers_closed(Duration::from_secs(10)).await, "its later closing finds it gone");
}
