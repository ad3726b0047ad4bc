//! Remote import through the example binary (IMPORT-10, INFO-9, CLI-7, CFG-15): `cli run` connects from its
//! `nats_context` (a NATS CLI context in its own XDG config home), imports a fake peer's tool, calls it through the
//! real Anthropic provider against the in-process fake Messages API, and traces `-> <name> (remote <host>)`;
//! `cli info` lists each host's reachability and the imported tools, leniently.
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "terminal", feature = "nats"))]

mod common;
mod fake_anthropic;

use common::a2a_peer::{A2aPeer, Reply, client, descriptor, tool_reply};
use common::nats::{NatsServer, context_dir, xdg_home_for};
use common::*;
use fake_anthropic::{FakeAnthropic, streamed};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn write_config(dir: &Path, hosts: &str) -> PathBuf {
    let path = dir.join("agent.yaml");
    let yaml = format!(
        "identity: importer\nsystem_prompt: Use the cow.\nnats_context: t\nllm:\n  model: claude-haiku-4-5\n\
         remote_tools:\n{hosts}"
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

/// The binary with `xdg` as its XDG config home (so `nats_context: t` is the test's context).
async fn cli(args: Vec<String>, dir: &Path, xdg: &Path) -> std::process::Output {
    let (dir, xdg) = (dir.to_owned(), xdg.to_owned());
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        example_cli(&args, &dir).env("XDG_CONFIG_HOME", &xdg).output().unwrap()
    })
    .await
    .unwrap()
}

/// A peer `cow` with one tool `say`, answering with an EXEC-13 result.
async fn cow(server: &NatsServer) -> A2aPeer {
    A2aPeer::serving(client(&server.url()).await, "cow", vec![descriptor("say", "The cow says it")], |req| {
        let text = req["input"]["text"].as_str().unwrap_or_default().to_owned();
        Reply::Json(tool_reply(req, "cow", json!({"output": format!("moo {text}"), "exec": {"command": "cow say"}})))
    })
    .await
}

/// IMPORT-10, CLI-7: the run imports over its own connection, calls the tool, traces it as remote and counts it.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_10_cli_run_calls_a_remote_tool_and_traces_it() {
    let server = NatsServer::start();
    let peer = cow(&server).await;
    let contexts = context_dir("t", json!({"url": server.url()}), false);
    let xdg = xdg_home_for(contexts.path());
    let model = FakeAnthropic::with_replies([
        streamed(&[json!({"type": "tool_use", "id": "toolu_1", "name": "say", "input": {"text": "hi"}})], "tool_use"),
        streamed(&[json!({"type": "text", "text": "The cow spoke."})], "end_turn"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "  - name: cow\n    alias: c\n");
    let args = ["run", "--config", config.to_str().unwrap(), "--base-url", &model.url(), "talk"];
    let out = cli(args.map(str::to_owned).to_vec(), dir.path(), xdg.path()).await;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "The cow spoke.\n");
    assert!(stderr.contains("-> say (remote cow)"), "IMPORT-10 trace: {stderr}");
    assert!(stderr.contains("remote_tool_calls=1"), "counted as remote: {stderr}");
    let reqs = model.requests();
    let result = &reqs[1].body_json()["messages"][2]["content"][0];
    let exec: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(exec, json!({"command": "cow say", "exit_code": 0, "output": "moo hi"}));
    let sent = peer.requests("choria.fisk-ai.tool.cow");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["sender"]["name"], "importer", "the run's identity is the sender");
}

/// INFO-9, IMPORT-7: `info` is lenient. A reachable host shows its version, round trip and counts; an
/// unreachable one its context and error; imported tools join the table with their source.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn info_9_lists_each_hosts_reachability_and_its_tools() {
    let server = NatsServer::start();
    let _peer = cow(&server).await;
    let contexts = context_dir("t", json!({"url": server.url()}), false);
    let xdg = xdg_home_for(contexts.path());
    let dir = tempfile::tempdir().unwrap();
    let config =
        write_config(dir.path(), "  - name: cow\n    alias: c\n    include:\n      tags: [x]\n  - name: gone\n");
    let out = cli(vec!["info".into(), "--config".into(), config.display().to_string()], dir.path(), xdg.path()).await;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Remote tool hosts:"), "{stdout}");
    let line = stdout.lines().find(|l| l.contains("cow (alias c): ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("reachable, version 1.2.3") && line.contains("1 tool(s) advertised, 1 imported"), "{line}");
    // IMPORT-3, INFO-9: the ignored include.tags is listed under its host (and does not filter anything out).
    let next = stdout.lines().skip_while(|l| !l.contains("cow (alias c): ")).nth(1).unwrap_or_default();
    assert!(next.starts_with("    warning: ") && next.contains("include.tags is ignored"), "{stdout}");
    let line = stdout.lines().find(|l| l.contains("gone (alias gone): ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("unavailable (context t, after") && line.contains("no responders"), "{line}");
    let say = stdout.lines().find(|l| l.contains(" say ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(say.contains("remote cow"), "SOURCE column: {say}");

    // No NATS at all: a warning, the hosts unavailable, still exit 0 (INFO-9, INFO-13).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let nowhere = context_dir("t", json!({"url": format!("nats://127.0.0.1:{port}")}), false);
    let xdg = xdg_home_for(nowhere.path());
    let out = cli(
        vec!["info".into(), "--json".into(), "--config".into(), config.display().to_string()],
        dir.path(),
        xdg.path(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: "), "the connection failure warns");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hosts = doc["remote_tool_hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert!(hosts.iter().all(|h| h["reachable"] == false && h["context"] == "t"), "{hosts:?}");
}
