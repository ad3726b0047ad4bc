//! `harness.sandbox` reaches every child a configured harness starts (SBX-1, SBX-3): command tools in an agent run
//! and behind `cli mcp --stdio`, and a stdio MCP server it imports from. Each case has its unconfined control.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::gate::RecordingGate;
use common::turns::{call_with, done, result_of, turn};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::ScriptedProvider;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A configuration wrapping the sandbox_app, with `sandbox` (lines under `harness.sandbox`, indented by four) when
/// given, plus `extra` top-level lines.
fn yaml(sandbox: Option<&str>, extra: &str) -> String {
    let harness = sandbox.map(|s| format!("harness:\n  sandbox:\n{s}")).unwrap_or_default();
    format!(
        "identity: sbx\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\n{extra}{harness}",
        common::example("sandbox_app").display()
    )
}

/// The lines that serve the agent over MCP.
const SERVE: &str = "expose:\n  agent:\n    mcp: {}\n";

/// A TCP listener on the host's loopback (kept while the first value lives) and its address.
fn loopback_listener() -> (std::net::TcpListener, String) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    (listener, addr)
}

fn network_none(work: &Path) -> String {
    format!("    network: none\n    fs:\n      write: [{}]\n", work.display())
}

/// Runs `tcp` on `addr` and `write` into `work` in one agent turn; both results.
async fn agent_run(yaml: &str, addr: &str, work: &Path) -> Vec<(String, bool)> {
    let config = fisk_ai::Config::from_yaml_str(yaml).unwrap();
    let harness = fisk_ai::Harness::builder().config(config).build().await.unwrap();
    let target = work.join("agent.txt");
    let calls =
        [("t", "tcp", json!({"target": addr}).to_string()), ("w", "write", json!({"target": target}).to_string())];
    let blocks = calls.iter().map(|(id, tool, input)| call_with(id, tool, input)).collect();
    let provider = Arc::new(ScriptedProvider::new([turn(blocks), done()]));
    let (gate, _log) = RecordingGate::new(&[]);
    let agent = Agent::builder().harness(Arc::new(harness)).provider_arc(provider.clone()).gate(gate);
    let out = agent.build().await.unwrap().run("go", RunOptions::new()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    let messages = provider.requests().last().unwrap().messages.clone();
    calls.iter().map(|(id, _, _)| result_of(&messages, id)).collect()
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_an_agent_runs_its_command_tools_confined() {
    let work = common::fresh_dir("sbx-agent");
    let (_listener, addr) = loopback_listener();

    let open = agent_run(&yaml(None, ""), &addr, &work).await;
    assert!(open[0].0.contains("ok connected"), "the control connects: {open:?}");

    let confined = agent_run(&yaml(Some(&network_none(&work)), ""), &addr, &work).await;
    assert!(confined[0].0.contains("denied Permission denied"), "{confined:?}");
    assert!(confined[1].0.contains("ok wrote"), "the writable path stays writable: {confined:?}");
}

/// `cli mcp --stdio --config` on `yaml`: the result text of one `tools/call` of `tool` with `target`.
async fn mcp_stdio_call(yaml: &str, tool: &str, target: &str) -> String {
    mcp_stdio_call_as(yaml, tool, target, None).await
}

/// [`mcp_stdio_call`], with the server run as the user `uid` (whose own directory holds the configuration).
async fn mcp_stdio_call_as(yaml: &str, tool: &str, target: &str, uid: Option<u32>) -> String {
    let dir = common::fresh_dir("sbx-mcp");
    let config = dir.join("agent.yaml");
    std::fs::write(&config, yaml).unwrap();
    let mut cmd = tokio::process::Command::new(common::example("cli"));
    if let Some(uid) = uid {
        std::os::unix::fs::chown(&dir, Some(uid), Some(uid)).unwrap();
        std::os::unix::fs::chown(&config, Some(uid), Some(uid)).unwrap();
        cmd.uid(uid).gid(uid).env("HOME", &dir);
    }
    let mut child = cmd
        .args(["mcp", "--stdio", "--config"])
        .arg(&config)
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": tool, "arguments": {"target": target}}}),
    ];
    for m in messages {
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    }
    stdin.flush().await.unwrap();
    let text = loop {
        let line = lines.next_line().await.unwrap().expect("the server answers");
        let reply: Value = serde_json::from_str(&line).unwrap();
        if reply["id"] == 2 {
            break reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        }
    };
    // The end of input stops the server the way a client leaving does, so it ends whatever its calls left running
    // (EXEC-17) rather than being killed and leaving that to whoever adopts it.
    drop(stdin);
    let exited = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait()).await;
    assert!(exited.expect("the server stops at the end of its input").unwrap().success());
    text
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_mcp_over_stdio_serves_confined_tools() {
    let work = common::fresh_dir("sbx-mcp-work");
    let outside = common::fresh_dir("sbx-mcp-outside");
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    let secret = outside.join("secret.txt").display().to_string();

    let serve = SERVE;
    let open = mcp_stdio_call(&yaml(None, serve), "read", &secret).await;
    assert!(open.contains("ok secret"), "the control reads it: {open}");

    let sandbox = format!("    fs:\n      read: [{}]\n", work.display());
    let confined = mcp_stdio_call(&yaml(Some(&sandbox), serve), "read", &secret).await;
    assert!(confined.contains("denied Permission denied") && !confined.contains("ok secret"), "{confined}");
}

#[tokio::test]
#[ignore = "needs root (to serve as another user) and user namespaces for that user"]
async fn sbx_3_an_agent_that_is_not_root_gets_loopback_in_a_user_namespace_of_its_own() {
    let (_listener, addr) = loopback_listener();
    let serve = SERVE;
    let nobody = Some(65534);

    let open = mcp_stdio_call_as(&yaml(None, serve), "tcp", &addr, nobody).await;
    assert!(open.contains("ok connected"), "the control, as nobody, reaches the host's loopback: {open}");

    let loopback = yaml(Some("    network: loopback\n"), serve);
    let own = mcp_stdio_call_as(&loopback, "loop", "-", nobody).await;
    assert!(own.contains("ok talked to itself"), "{own}");
    let host = mcp_stdio_call_as(&loopback, "tcp", &addr, nobody).await;
    assert!(host.contains("denied Connection refused"), "{host}");
    // A command tagged ai:net=none joins no namespace, and runs (socketless) all the same.
    let none = mcp_stdio_call_as(&loopback, "tcp_nonet", &addr, nobody).await;
    assert!(none.contains("denied Permission denied"), "{none}");
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_mcp_over_http_serves_confined_tools() {
    use mcp_support::{Answer, Era, TestClient};
    let (_listener, addr) = loopback_listener();
    let serve = SERVE;
    for (sandbox, expected) in [(None, "ok connected"), (Some("    network: none\n"), "denied Permission denied")] {
        let config = fisk_ai::Config::from_yaml_str(&yaml(sandbox, serve)).unwrap();
        let served = mcp_support::serve_config(tempfile::tempdir().unwrap(), config, |b| b).await;
        let client = mcp_support::connect(&served.url, TestClient::new(false, Answer::Decline), Era::Legacy).await;
        let result = mcp_support::call(&client, "tcp", json!({"target": addr})).await;
        let text = mcp_support::text(&result);
        assert!(text.contains(expected), "{sandbox:?}: {text}");
        client.cancel().await.unwrap();
        served.stop().await.unwrap();
    }
}

/// Builds a harness importing a stdio MCP server started through `sh`, which first tries to create `marker`.
async fn import(sandbox: Option<&str>, marker: &Path) -> usize {
    let server = common::example("mcp_fixture_server");
    let command = format!("[/bin/sh, -c, 'touch \"$0\"; exec \"$1\"', {}, {}]", marker.display(), server.display());
    let servers = format!("mcp_servers:\n  - name: files\n    command: {command}\n");
    let config = fisk_ai::Config::from_yaml_str(&yaml(sandbox, &servers)).unwrap();
    let harness = fisk_ai::Harness::builder().config(config).pin_store(common::pin_store()).build().await.unwrap();
    common::imported_names(harness.toolset()).len()
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_a_stdio_mcp_server_the_harness_imports_from_runs_confined() {
    let outside = common::fresh_dir("sbx-import");
    let marker = outside.join("marker");
    assert!(import(None, &marker).await > 0);
    assert!(marker.exists(), "the control: unconfined, the server's shell writes anywhere");
    std::fs::remove_file(&marker).unwrap();

    // Confined: the server may execute the system's programs and its own binary, and write nowhere.
    let server_dir = common::example("mcp_fixture_server").parent().unwrap().to_owned();
    let sandbox = format!("    fs:\n      exec: [/usr/bin, /bin, {}]\n", server_dir.display());
    assert!(import(Some(&sandbox), &marker).await > 0, "the confined server still serves its tools");
    assert!(!marker.exists(), "the confined server's shell could not write outside");
}

/// Builds a harness on `yaml` plus an environment that asks the app's introspection to write `probe`; whether it
/// did.
async fn introspection_wrote(sandbox: Option<&str>, probe: &Path) -> bool {
    let env = format!("harness:\n  env:\n    set: {{SANDBOX_APP_INTROSPECT_WRITE: {}}}\n", probe.display());
    let yaml = yaml(None, "") + &env + &sandbox.map(|s| format!("  sandbox:\n{s}")).unwrap_or_default();
    let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
    let harness = fisk_ai::Harness::builder().config(config).build().await.unwrap();
    assert!(harness.toolset().get("write").is_some(), "the app was introspected");
    let wrote = probe.exists();
    let _ = std::fs::remove_file(probe);
    wrote
}

#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_introspection_runs_confined_read_only() {
    let work = common::fresh_dir("sbx-introspect");
    let probe = work.join("probe");
    assert!(introspection_wrote(None, &probe).await, "the control: unconfined, introspection writes");
    // The directory is writable to the commands, yet not to introspection, which gets the read-only form.
    let sandbox = format!("    fs:\n      write: [{}]\n", work.display());
    assert!(!introspection_wrote(Some(&sandbox), &probe).await, "introspection wrote under the sandbox");
}

/// The worked example of README "Confining tools", `examples/cowsay/sandboxed.yaml`: its profile builds on this
/// kernel, and the demo's commands still work inside it.
#[tokio::test]
#[ignore = "needs Landlock (Linux 6.2+, ABI 3) and seccomp"]
async fn sbx_1_the_readmes_sandboxed_demo_runs_its_commands_confined() {
    let config = fisk_ai::Config::load(common::root().join("examples/cowsay/sandboxed.yaml")).unwrap();
    let harness = fisk_ai::Harness::builder().config(config).build().await.unwrap();
    assert!(harness.warnings().is_empty(), "{:?}", harness.warnings());
    let confinement = harness.child_env().confinement().expect("the example is confined");
    assert_eq!(confinement.profile().network_setting().as_str(), "none");
    let say = harness.toolset().get("say").unwrap().tool().clone();
    let input = fisk_ai::tool::ToolInput::from_json(r#"{"message": "moo from the sandbox"}"#).unwrap();
    let out = say.call(&input, &fisk_ai::tool::CallContext::new()).await;
    assert!(!out.is_error(), "{}", out.content());
    assert!(out.content().contains("moo from the sandbox") && out.content().contains("(oo)"), "{}", out.content());
}

/// SBX-4 for an agent that is not root and has no delegated cgroup: `processes` is `RLIMIT_NPROC` and `memory`
/// `RLIMIT_AS`, so a fork loop stops and an allocation fails, each a clear tool result, and the server goes on.
#[tokio::test]
#[ignore = "needs root (to serve as another user)"]
async fn sbx_4_an_agent_that_is_not_root_gets_its_limits_as_rlimits() {
    let serve = SERVE;
    let nobody = Some(65534);
    let limited = yaml(Some("    limits:\n      processes: 16\n      memory: 256MiB\n"), serve);

    let open = mcp_stdio_call_as(&yaml(None, serve), "hog", "300", nobody).await;
    assert!(open.contains("ok held 300 MiB"), "the control, as nobody, allocates: {open}");
    let hog = mcp_stdio_call_as(&limited, "hog", "300", nobody).await;
    assert!(hog.contains("allocation failed"), "{hog}");

    let open = mcp_stdio_call_as(&yaml(None, serve), "fork", "20", nobody).await;
    assert!(open.contains("ok started 20"), "the control, as nobody, forks: {open}");
    let forks = mcp_stdio_call_as(&limited, "fork", "40", nobody).await;
    assert!(forks.contains("then: Resource temporarily unavailable"), "{forks}");
    let started: usize = forks.split("started ").nth(1).and_then(|s| s.split(',').next()).unwrap().parse().unwrap();
    assert!(started < 16, "{forks}");
    // The user's process limit, not a pids cgroup (which would explain itself): nobody cannot make one here.
    assert!(!forks.contains("limits.processes"), "{forks}");
}
