//! Policy hooks over MCP (POL-1, POL-2, POL-5): a host's [`PolicyHook`] given to the harness is consulted by the
//! MCP server's dispatch path, with the surface named, for calls from the official Rust SDK client.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::async_trait;
use fisk_ai::harness::Harness;
use fisk_ai::policy::{PolicyCall, PolicyHook, SurfaceKind, Verdict};
use fisk_ai::serve::mcp::McpServer;
use fisk_ai::tool::ToolOutput;
use mcp_support::*;
use serde_json::json;
use std::sync::{Arc, Mutex};

/// Denies encoding `deny`, redacts results holding `aGk` (base64 of `hi`), records what it saw.
#[derive(Default)]
struct Rules {
    seen: Mutex<Vec<(String, SurfaceKind, Option<String>)>>,
}

#[async_trait]
impl PolicyHook for Rules {
    async fn before(&self, call: &PolicyCall<'_>) -> Verdict {
        self.seen.lock().unwrap().push((call.tool.to_owned(), call.surface, call.caller.map(str::to_owned)));
        match call.input["text"].as_str() {
            Some("deny") => Verdict::Deny("not this text".into()),
            Some("ask") => Verdict::Ask,
            _ => Verdict::Allow,
        }
    }

    async fn after(&self, _call: &PolicyCall<'_>, output: &ToolOutput) -> Option<ToolOutput> {
        // A redaction keeps the shape the tool's output schema declares; a typed result that breaks it is refused.
        output.content().contains("aGk").then(|| ToolOutput::json(&json!({"encoded": "[redacted]"})))
    }
}

#[tokio::test]
async fn pol_1_the_mcp_surface_consults_the_harness_hook_before_and_after_each_call() {
    let dir = tempfile::tempdir().unwrap();
    let rules = Arc::new(Rules::default());
    let harness = Harness::builder().config(config(dir.path(), &[])).for_agent(false).policy(rules.clone());
    let server = McpServer::builder().harness(Arc::new(harness.build().await.unwrap())).build().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(server.serve(listener, stop.clone().cancelled_owned()));

    let client = connect(&url, TestClient::new(false, Answer::Decline), Era::Legacy).await;
    let denied = call(&client, "base64_encode", json!({"text": "deny"})).await;
    assert!(text(&denied).contains("not this text") && text(&denied).contains(r#""allowed":false"#), "{denied:?}");
    let redacted = call(&client, "base64_encode", json!({"text": "hi"})).await;
    assert_eq!(text(&redacted), r#"{"encoded":"[redacted]"}"#);
    // POL-3: a client that cannot be asked never gets a policy-asked call run, whatever confirm_over_mcp says.
    let asked = call(&client, "base64_encode", json!({"text": "ask"})).await;
    assert!(is_error(&asked) && !text(&asked).contains("encoded"), "{asked:?}");
    let plain = call(&client, "base64_encode", json!({"text": "ok"})).await;
    assert_eq!(text(&plain), r#"{"encoded":"b2s="}"#);
    client.cancel().await.unwrap();
    let seen = rules.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert!(
        seen.iter()
            .all(|(tool, surface, caller)| tool == "base64_encode" && *surface == SurfaceKind::Mcp && caller.is_none())
    );
    stop.cancel();
    task.await.unwrap().unwrap();
}

/// POL-1 over MCP's stdio transport (`cli mcp --stdio`, a real child, the official rmcp client): the configured
/// command hook is consulted before and after each call, sees the local user as the caller (as the audit trail
/// records it), and its deny reaches the client as the decision.
#[tokio::test]
async fn pol_1_the_stdio_surface_consults_the_command_hook_with_the_local_user_as_caller() {
    use mcp_support::stdio::StdioServer;
    let hook = common::root().join("tests/fixtures/bin/policy-hook");
    let log = tempfile::NamedTempFile::new().unwrap();
    let extra =
        format!("  policy:\n    command: [{:?}, {:?}]\n", hook.display().to_string(), log.path().display().to_string());
    let (mut server, stdout, stdin) = StdioServer::start_with(&[], &extra);
    let client = rmcp::ServiceExt::serve(TestClient::new(false, Answer::Decline), (stdout, stdin)).await.unwrap();
    let ok = call(&client, "echo", json!({"words": ["hi"]})).await;
    assert!(!is_error(&ok) && text(&ok).contains("echo: hi"), "{ok:?}");
    let denied = call(&client, "echo", json!({"words": ["deny me"]})).await;
    // A denial is the decision the model reads, as a declined approval is.
    assert!(text(&denied).contains(r#""allowed":false"#) && text(&denied).contains("no moo on Fridays"), "{denied:?}");
    client.cancel().await.unwrap();
    assert!(server.exited().await.success(), "{}", server.stderr());
    let seen: Vec<serde_json::Value> =
        std::fs::read_to_string(log.path()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let phases: Vec<&str> = seen.iter().map(|c| c["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["before", "after", "before"], "the denied call never ran, so no after: {seen:#?}");
    let user = fisk_ai::audit::local_user();
    assert!(seen.iter().all(|c| c["surface"] == "mcp" && c["caller"] == user.as_str()), "{seen:#?}");
}
