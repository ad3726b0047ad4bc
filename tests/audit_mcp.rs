//! The audit trail on the MCP surface (AUD-1, AUD-8): over HTTP with OAuth callers (real signed JWTs, the
//! official rmcp client) each record names the token's subject and client, the session and the request; over stdio
//! (`cli mcp --stdio`, a real child) the caller is the local user, and a call stopped by `tool_timeout` is recorded as timed out.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::jwt::{Signer, now};
use mcp_support::stdio::StdioServer;
use mcp_support::*;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use std::path::Path;

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "https://mcp.example/mcp";

fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The events of the calls of `tool` by `caller`, in order.
fn events(all: &[Value], tool: &str, caller: &str) -> Vec<String> {
    let mine = all.iter().filter(|r| r["tool"] == tool && r["caller"] == caller);
    mine.map(|r| r["event"].as_str().unwrap().to_owned()).collect()
}

async fn client_as(url: &str, token: &str, answer: Answer) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    TestClient::new(true, answer).serve(StreamableHttpClientTransport::from_config(config)).await.unwrap()
}

#[tokio::test]
async fn aud_1_mcp_records_name_the_oauth_caller_its_client_session_and_request_and_the_chain_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let signer = Signer::rsa();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [signer.jwk()]}).to_string()).unwrap();
    let trail = dir.path().join("trail.jsonl");
    let extra = format!("  audit:\n    file: {}\n", trail.display());
    let mcp = [
        "auth:".to_owned(),
        format!("  issuer: {ISSUER}"),
        format!("  audience: {AUDIENCE}"),
        format!("  jwks_file: {}", jwks.display()),
    ];
    let mcp: Vec<&str> = mcp.iter().map(String::as_str).collect();
    let config = fisk_ai::Config::from_yaml_str(&config_yaml(dir.path(), &mcp, &extra)).unwrap();
    let served = serve_config(dir, config, |b| b).await;
    let token = |sub: &str| {
        signer.sign(&json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "client_id": "ops-console",
            "exp": now() + 300, "iat": now()}))
    };
    let alice = client_as(&served.url, &token("alice"), Answer::Approve).await;
    let bob = client_as(&served.url, &token("bob"), Answer::Decline).await;

    let echoed = call(&alice, "echo", json!({"words": ["hi"]})).await;
    assert!(text(&echoed).contains("echo: hi"), "{echoed:?}");
    assert!(!is_error(&call(&alice, "purge", json!({"target": "a"})).await));
    assert!(is_error(&call(&bob, "purge", json!({"target": "b"})).await));
    assert!(is_error(&call(&bob, "echo", json!({"words": 5})).await));
    assert!(is_error(&call(&bob, "nope", json!({})).await));
    assert_eq!(served.ran(), ["purge a"]);
    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
    // Durable before each result went out; read while the server (and its directory) is still there.
    let all = records(&trail);
    assert_eq!(fisk_ai::audit::verify_file(&trail).unwrap().records, all.len() as u64);
    served.stop().await.unwrap();
    assert_eq!(events(&all, "echo", "alice"), ["requested", "validated", "run", "finished"]);
    assert_eq!(events(&all, "purge", "alice"), ["requested", "validated", "gated", "approved", "run", "finished"]);
    assert_eq!(events(&all, "purge", "bob"), ["requested", "validated", "gated", "declined"]);
    assert_eq!(events(&all, "echo", "bob"), ["requested", "refused"]);
    assert_eq!(events(&all, "nope", "bob"), ["requested", "refused"]);
    for r in &all {
        assert_eq!((r["surface"].as_str(), r["client"].as_str()), (Some("mcp"), Some("ops-console")), "{r}");
        assert!(r["session"].as_str().is_some_and(|s| !s.is_empty()), "the MCP session: {r}");
        assert!(r["request"].as_str().is_some_and(|s| !s.is_empty()), "the JSON-RPC id: {r}");
    }
    let approved = all.iter().find(|r| r["event"] == "approved").unwrap();
    assert_eq!(approved["answer"].as_str(), Some("accepted"));
    let declined = all.iter().find(|r| r["event"] == "declined").unwrap();
    assert_eq!(declined["answer"].as_str(), Some("declined"));
}

#[tokio::test]
async fn aud_1_stdio_records_a_call_stopped_by_tool_timeout_as_timed_out() {
    let extra = "  audit:\n    file: trail.jsonl\n";
    let (server, stdout, stdin) = StdioServer::start_with(&["tool_timeout: 1s"], extra);
    let client = TestClient::new(false, Answer::Decline).serve((stdout, stdin)).await.expect("stdio connect");
    let pidfile = server.path("pids");
    let hung = call(&client, "hang", json!({"pidfile": pidfile.to_str().unwrap()})).await;
    assert!(is_error(&hung), "{hung:?}");
    assert!(!is_error(&call(&client, "echo", json!({"words": ["x"]})).await));
    client.cancel().await.unwrap();
    // The trail is relative to the configuration file's directory.
    let trail = server.path("trail.jsonl");
    let all = records(&trail);
    let hang: Vec<&str> = all.iter().filter(|r| r["tool"] == "hang").map(|r| r["event"].as_str().unwrap()).collect();
    assert_eq!(hang, ["requested", "validated", "run", "timed_out"], "{all:#?}");
    let timed_out = all.iter().find(|r| r["event"] == "timed_out").unwrap();
    assert!(timed_out["reason"].as_str().unwrap().contains("did not finish within 1s"), "{timed_out}");
    let user = fisk_ai::audit::local_user();
    assert!(all.iter().all(|r| r["surface"] == "mcp" && r["caller"] == user.as_str()), "stdio: the local user");
    fisk_ai::audit::verify_file(&trail).unwrap();
}

/// AUD-1 and CANCEL-1: a call the client cancels (`notifications/cancelled`, through the official rmcp client, over
/// stdio) is recorded as cancelled after its `run`, and the chain verifies.
#[tokio::test]
async fn aud_1_a_call_the_client_cancels_is_recorded_as_cancelled() {
    let extra = "  audit:\n    file: trail.jsonl\n";
    let (mut server, stdout, stdin) = StdioServer::start_with(&["max_concurrent_tools: 1"], extra);
    let client = TestClient::new(false, Answer::Decline).serve((stdout, stdin)).await.expect("stdio connect");
    cancel_then_call_again(&client, &server.path("pids")).await;
    client.cancel().await.unwrap();
    // The trail is complete once the server has stopped.
    assert!(server.exited().await.success(), "{}", server.stderr());
    let trail = server.path("trail.jsonl");
    let all = records(&trail);
    let hang: Vec<&Value> = all.iter().filter(|r| r["tool"] == "hang").collect();
    let events: Vec<&str> = hang.iter().map(|r| r["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["requested", "validated", "run", "cancelled"], "{all:#?}");
    assert!(hang.iter().all(|r| r["call"] == hang[0]["call"]), "one call: {hang:#?}");
    fisk_ai::audit::verify_file(&trail).unwrap();
}
