//! Progress notifications (PROG-1..3) from the real server over loopback HTTP, on both lifecycles, and over MCP's
//! stdio transport served in process: a three-second command reported at most once a second, its output quoted only
//! when the tool is tagged `ai:progress`, and nothing sent to a client that asked for no progress.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::Config;
use mcp_support::*;
use serde_json::json;

async fn served() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "progress-app");
    let yaml = format!("identity: prog\napplication_path: {}\nexpose:\n  agent:\n    mcp: {{}}\n", app.display());
    serve_config(dir, Config::from_yaml_str(&yaml).unwrap(), |b| b).await
}

/// Call `name` (rmcp's client puts a progress token on every request); what the client received while it ran.
async fn reported(url: &str, era: Era, name: &str) -> Vec<rmcp::model::ProgressNotificationParam> {
    let handler = TestClient::new(false, Answer::Decline);
    let progress = handler.progress.clone();
    let client = connect(url, handler, era).await;
    let request = params(name, json!({}));
    let started = std::time::Instant::now();
    let result = client.call_tool(request).await.unwrap();
    let took = started.elapsed();
    assert_eq!(exec_json(&result)["exit_code"], 0, "{era:?} {name}");
    client.cancel().await.unwrap();
    let got = progress.lock().unwrap().clone();
    // PROG-1: at most one a second: never more than the whole seconds the call took, plus the one at its end.
    assert!(got.len() as u64 <= took.as_secs() + 1, "{era:?} {name}: {} in {took:?}", got.len());
    for pair in got.windows(2) {
        assert!(pair[1].0.duration_since(pair[0].0).as_millis() >= 900, "{era:?} {name}: spaced out");
        assert!(pair[1].1.progress > pair[0].1.progress, "{era:?} {name}: progress increases");
    }
    got.into_iter().map(|(_, p)| p).collect()
}

#[tokio::test]
async fn prog_1_2_a_three_second_command_reports_once_a_second_and_quotes_output_only_with_the_tag() {
    let served = served().await;
    for era in ERAS {
        let tagged = reported(&served.url, era, "tick").await;
        assert!(tagged.len() >= 2, "{era:?}: a 3-second command is reported on: {tagged:?}");
        assert!(tagged.iter().all(|p| p.progress_token == tagged[0].progress_token), "{era:?}: {tagged:?}");
        let first = tagged[0].message.as_deref().unwrap();
        assert!(first.starts_with("running for 1s: step "), "{era:?}: {first}");
        assert!(first.contains("of 6"), "{era:?}: the last output line: {first}");

        let quiet = reported(&served.url, era, "quiet").await;
        assert!(quiet.len() >= 2, "{era:?}: {quiet:?}");
        for p in &quiet {
            let message = p.message.as_deref().unwrap();
            assert!(message.starts_with("running for ") && !message.contains("step"), "{era:?}: {message}");
            assert!(!message.contains("hunter2"), "{era:?}: output quoted without ai:progress");
        }
    }
    served.stop().await.unwrap();
}

/// PROG-3: the client's own token comes back on every report; a call without one gets no report at all (raw
/// JSON-RPC here, since rmcp's client always sends a token).
#[tokio::test]
async fn prog_3_reports_echo_the_token_and_a_call_without_one_gets_none() {
    let served = served().await;
    let http = reqwest::Client::new();
    let session = raw_session(&http, served.addr).await;
    let call = |meta: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"tick","arguments":{{}}{meta}}}}}"#)
    };
    let (status, body) = mcp_support::raw::in_session(&http, served.addr, &session, call("")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("done") && !body.contains("notifications/progress"), "{body}");
    let with = call(r#","_meta":{"progressToken":"mine-7"}"#);
    let (status, body) = mcp_support::raw::in_session(&http, served.addr, &session, with).await;
    assert_eq!(status, 200, "{body}");
    let reports = body.matches(r#""method":"notifications/progress""#).count();
    assert!(reports >= 2 && body.matches(r#""progressToken":"mine-7""#).count() == reports, "{body}");
    served.stop().await.unwrap();
}

/// A legacy session opened by hand, initialized.
async fn raw_session(http: &reqwest::Client, addr: std::net::SocketAddr) -> String {
    let session = mcp_support::raw::open_session(http, addr).await.unwrap();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
    let (status, body) = mcp_support::raw::in_session(http, addr, &session, initialized).await;
    assert!(status == 202 || status == 200, "{status} {body}");
    session
}

/// PROG-1 over MCP's stdio transport, served in process by `McpServer::serve_io` on an in-memory pipe (STDIO-1):
/// the official rmcp client gets the same reports as over HTTP, and `serve_io` returns once the client leaves.
#[tokio::test]
async fn prog_1_progress_reaches_a_client_over_the_stdio_transport_on_any_byte_stream_pair() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "progress-app");
    let yaml = format!("identity: prog\napplication_path: {}\nexpose:\n  agent:\n    mcp: {{}}\n", app.display());
    let config = Config::from_yaml_str(&yaml).unwrap();
    let server = fisk_ai::serve::mcp::McpServer::builder().config(config).build().await.unwrap();
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let serving = tokio::spawn(server.serve_io(read, write, std::future::pending::<()>()));
    let handler = TestClient::new(false, Answer::Decline);
    let progress = handler.progress.clone();
    let client = rmcp::ServiceExt::serve(handler, tokio::io::split(theirs)).await.unwrap();
    let result = client.call_tool(params("tick", json!({}))).await.unwrap();
    assert_eq!(exec_json(&result)["exit_code"], 0);
    let got: Vec<_> = progress.lock().unwrap().iter().map(|(_, p)| p.clone()).collect();
    assert!(got.len() >= 2, "a 3-second command is reported on: {got:?}");
    let first = got[0].message.as_deref().unwrap();
    assert!(first.starts_with("running for 1s: step "), "{first}");
    client.cancel().await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(30), serving).await.unwrap().unwrap().unwrap();
}
