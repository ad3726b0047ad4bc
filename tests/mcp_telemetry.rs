//! The `tracing` spans of MCP serving (issue 16 part 3): one `mcp.request` span per request, and a `tools/call`'s
//! `execute_tool` span under it, on both lifecycles, with no argument or output in any field.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::telemetry::{self as t, MCP_SPAN, TOOL_SPAN};
use mcp_support::*;
use serde_json::json;

const WORD: &str = "SECRET-WORD";

#[tokio::test]
async fn each_request_is_an_mcp_request_span_and_a_tools_call_runs_in_an_execute_tool_child() {
    let (capture, guard) = common::trace::capture();
    let served = serve(&[]).await;
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(true, Answer::Decline), era).await;
        let out = exec_json(&call(&client, "echo", json!({"words": [WORD]})).await);
        assert_eq!(out["exit_code"], 0, "{era:?}");
        client.cancel().await.unwrap();
    }
    drop(guard);
    let trace = capture.trace();
    let requests = trace.named(MCP_SPAN);
    let methods: Vec<&str> = requests.iter().filter_map(|s| s.field(t::MCP_METHOD_NAME)).collect();
    assert!(methods.contains(&"initialize") && methods.contains(&"server/discover"), "{methods:?}");

    let calls: Vec<_> = requests.iter().filter(|s| s.field(t::MCP_METHOD_NAME) == Some("tools/call")).collect();
    assert_eq!(calls.len(), 2, "{requests:#?}");
    for call in &calls {
        assert_eq!(call.field(t::OTEL_NAME), Some("tools/call echo"));
        assert_eq!(call.field(t::OTEL_KIND), Some("server"));
        assert_eq!(call.field(t::TOOL_NAME), Some("echo"));
        assert!(call.field(t::JSONRPC_REQUEST_ID).is_some(), "{call:#?}");
    }
    assert!(calls.iter().any(|c| c.field(t::MCP_SESSION_ID).is_some()), "the legacy session's id: {calls:#?}");

    let tools = trace.named(TOOL_SPAN);
    assert_eq!(tools.len(), 2);
    for (tool, call) in tools.iter().zip(&calls) {
        assert_eq!(tool.parent, Some(call.index));
        assert_eq!(tool.field(t::OPERATION_NAME), Some("execute_tool"));
        assert_eq!(tool.field(t::TOOL_NAME), Some("echo"));
        assert_eq!(tool.field(t::TOOL_KIND), Some("command"));
        assert_eq!(tool.field(t::TOOL_OUTCOME), Some("ran"));
        assert_eq!(tool.field(t::PROCESS_EXIT_CODE), Some("0"));
        assert_eq!(tool.field(t::TOOL_TRUNCATED), Some("false"));
        assert_eq!(tool.field(t::TOOL_CALL_ID), None, "MCP has no model call id");
    }
    for (where_, value) in trace.values("fisk_ai") {
        assert!(!value.contains(WORD), "{where_} = {value}");
    }
}

/// CANCEL-1: a call the client cancelled is recorded as cancelled on its `execute_tool` span, not as ran.
#[tokio::test]
async fn cancel_1_a_cancelled_call_is_recorded_as_cancelled() {
    let (capture, guard) = common::trace::capture();
    let served = serve(&["max_concurrent_tools: 1", "tool_timeout: 60s"]).await;
    let client = connect(&served.url, TestClient::new(false, Answer::Decline), Era::Legacy).await;
    cancel_then_call_again(&client, &served.path("pids")).await;
    client.cancel().await.unwrap();
    served.stop().await.unwrap();
    drop(guard);
    let trace = capture.trace();
    let outcomes: Vec<_> =
        trace.named(TOOL_SPAN).iter().map(|s| (s.field(t::TOOL_NAME), s.field(t::TOOL_OUTCOME))).collect();
    assert_eq!(outcomes, [(Some("hang"), Some("cancelled")), (Some("echo"), Some("ran"))]);
}

/// AUTH-8: on a server with `auth`, the caller's subject and client are on the request and tool spans. (Here, not in
/// tests/mcp_auth.rs: every test of this binary captures spans, so no test without a subscriber caches the
/// callsites as disabled meanwhile.)
#[tokio::test]
async fn auth_8_the_caller_is_on_the_request_and_tool_spans() {
    use common::jwt::{Signer, now};
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let (capture, guard) = common::trace::capture();
    let dir = tempfile::tempdir().unwrap();
    let rsa = Signer::rsa();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [rsa.jwk()]}).to_string()).unwrap();
    let mcp = format!(
        "auth: {{issuer: \"https://issuer.example\", audience: \"https://mcp.example/\", jwks_file: \"{}\"}}",
        jwks.display()
    );
    let config = config(dir.path(), &[&mcp]);
    let served = serve_config(dir, config, |b| b).await;
    let claims = json!({"iss": "https://issuer.example", "aud": "https://mcp.example/", "sub": "alice",
        "client_id": "ops-console", "exp": now() + 300});
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(served.url.clone()).auth_header(rsa.sign(&claims)),
    );
    let client = TestClient::new(false, Answer::Decline).serve(transport).await.unwrap();
    call(&client, "echo", json!({"words": ["hi"]})).await;
    client.cancel().await.unwrap();
    drop(guard);
    let trace = capture.trace();
    let calls: Vec<_> =
        trace.named(MCP_SPAN).into_iter().filter(|s| s.field(t::MCP_METHOD_NAME) == Some("tools/call")).collect();
    assert_eq!(calls.len(), 1);
    let tool = trace.named(TOOL_SPAN);
    for span in [calls[0], tool[0]] {
        assert_eq!(span.field(t::ENDUSER_ID), Some("alice"), "{span:#?}");
        assert_eq!(span.field(t::CLIENT_ID), Some("ops-console"), "{span:#?}");
    }
    served.stop().await.unwrap();
}
