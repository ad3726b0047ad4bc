//! `cli mcp` end to end (CLI-17, MCP-2, MCP-19, MCP-21..23): the real example binary serving the real cowsay demo,
//! rmcp's client calling it over loopback HTTP, and SIGTERM stopping it gracefully.
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::cli::Cli;
use mcp_support::*;
use serde_json::json;
use std::process::Command;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running `cli mcp`, with the port and address variables removed so only the test's own apply.
fn start_mcp(args: &[&str], env: &[(&str, &str)]) -> Cli {
    Cli::start("mcp", args, &["FISK_AI_MCP_PORT", "FISK_AI_MCP_ADDRESS"], env)
}

#[tokio::test]
async fn cli_mcp_serves_the_cowsay_demo_logs_each_call_and_stops_on_sigterm() {
    let port = free_port();
    let port_s = port.to_string();
    // `--port 0` is unset, so the environment's port is used (MCP-2).
    let mut cli =
        start_mcp(&["--config", "examples/cowsay/agent.yaml", "--port", "0"], &[("FISK_AI_MCP_PORT", &port_s)]);
    assert!(cli.wait_for("register it with an MCP client"), "startup:\n{}", cli.stderr());
    let err = cli.stderr();
    assert!(err.contains("serving 5 tool(s) over MCP as cowsay: say, cow_say, cow_think, feed, list"), "{err}");
    assert!(err.contains("2 gated tool(s): cow_think (ai:confirm), feed (impact:rw)"), "{err}");
    assert!(err.contains("confirm_over_mcp: always"), "{err}");
    let url = format!("http://127.0.0.1:{port}/");
    assert!(err.contains(&format!("claude mcp add --transport http cowsay {url}")), "{err}");

    for era in ERAS {
        let client = connect(&url, TestClient::new(false, Answer::Decline), era).await;
        let out = exec_json(&call(&client, "say", json!({"message": format!("moo {era:?}")})).await);
        assert_eq!(out["exit_code"], 0);
        assert!(out["output"].as_str().unwrap().contains(&format!("moo {era:?}")), "{out}");
        // The default fails closed for a client that cannot be asked.
        let out = call(&client, "cow_think", json!({"message": "hmm"})).await;
        assert!(is_error(&out) && text(&out).contains("cannot be asked"), "{out:?}");
        client.cancel().await.unwrap();
    }
    assert!(
        cli.wait_for("-> say -- 'moo Modern'"),
        "MCP-19 per-call line, the spaced value quoted (GATE-8):\n{}",
        cli.stderr()
    );
    let err = cli.stderr();
    assert!(err.contains("-> say -- 'moo Legacy'"), "{err}");
    assert!(err.contains("denied: cow think -- hmm (client cannot be asked for approval)"), "{err}");
    assert!(err.contains("connected (protocol 2025-11-25, cannot be asked)"), "{err}");

    let status = cli.terminate();
    assert!(status.success(), "SIGTERM stops it gracefully: {status:?}\n{}", cli.stderr());
    assert!(cli.stderr().ends_with("stopped"), "{}", cli.stderr());
}

#[tokio::test]
async fn cli_mcp_without_an_application_serves_built_ins_and_warns_about_agent_only_tools() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.yaml");
    std::fs::write(
        &config,
        "identity: helper\nharness:\n  human_in_the_loop: {enabled: true}\n  tools: [{name: base64_encode}]\n\
         expose: {agent: {mcp: {}}}\n",
    )
    .unwrap();
    let port = free_port().to_string();
    let mut cli = start_mcp(&["--config", config.to_str().unwrap(), "--port", &port, "--address", "127.0.0.1"], &[]);
    assert!(cli.wait_for("register it with an MCP client"), "startup:\n{}", cli.stderr());
    let err = cli.stderr();
    assert!(err.contains("only the harness.tools built-ins are served"), "MCP-23: {err}");
    assert!(err.contains("warning: harness.human_in_the_loop is enabled but has no effect over MCP"), "MCP-21: {err}");
    assert!(err.contains("serving 1 tool(s) over MCP as helper: base64_encode"), "{err}");
    assert!(cli.terminate().success(), "{}", cli.stderr());
}

#[tokio::test]
async fn cli_mcp_refuses_a_configuration_without_the_expose_block() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.yaml");
    std::fs::write(&config, "identity: x\nharness:\n  tools: [{name: base64_encode}]\n").unwrap();
    let out =
        Command::new(common::example("cli")).args(["mcp", "--config", config.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("expose.agent.mcp"), "MCP-1: {err}");
}

#[tokio::test]
async fn cli_mcp_startup_line_names_at_most_twenty_tools_then_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "many");
    let config = dir.path().join("agent.yaml");
    std::fs::write(
        &config,
        format!("identity: many\napplication_path: {}\nexpose: {{agent: {{mcp: {{}}}}}}\n", app.display()),
    )
    .unwrap();
    let port = free_port().to_string();
    let mut cli = start_mcp(&["--config", config.to_str().unwrap(), "--port", &port], &[]);
    assert!(cli.wait_for("register it with an MCP client"), "startup:\n{}", cli.stderr());
    let err = cli.stderr();
    let first: Vec<String> = (0..20).map(|i| format!("cmd{i:02}")).collect();
    let line = format!("serving 25 tool(s) over MCP as many: {} … and 5 more", first.join(", "));
    assert!(err.lines().any(|l| l == line), "{err}");
    assert!(!err.contains("cmd20"), "{err}");
    assert!(cli.terminate().success(), "{}", cli.stderr());
}
