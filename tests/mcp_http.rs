//! The HTTP layer in front of MCP (issue 10): strict `Host` and `Origin` headers (MCP-3, DNS rebinding), the
//! session settings' parsing, the cached listing, and the router a host mounts under its own path. The session cap
//! itself is tests/mcp_sessions.rs.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::Config;
use mcp_support::raw::*;
use mcp_support::*;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Send one raw HTTP/1.1 POST of `INIT` with exactly these extra header lines; the response's status code.
async fn raw_status(addr: std::net::SocketAddr, path: &str, headers: &[String]) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("POST {path} HTTP/1.1\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n");
    req.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n{INIT}", INIT.len()));
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    let line = String::from_utf8_lossy(&head).into_owned();
    line[9..12].parse().unwrap_or_else(|_| panic!("a status line, got {line:?}"))
}

#[tokio::test]
async fn mcp_3_host_headers_that_are_not_exactly_host_and_port_are_refused_403() {
    let served = serve(&[]).await;
    let p = served.addr.port();
    let bad = [
        format!("127.0.0.1:{p}.evil.example"),
        "127.0.0.1:abc".to_owned(),
        "127.0.0.1:99999".to_owned(),
        "127.0.0.1:0".to_owned(),
        "127.0.0.1:".to_owned(),
        format!("127.0.0.1:{p}:{p}"),
        format!("127.0.0.1:+{p}"),
        format!("[::1]:{p}x"),
        format!("[::1:{p}"),
        format!("evil.example:{p}"),
        format!("localhost.evil.example:{p}"),
        format!("user@127.0.0.1:{p}"),
        format!("127.0.0.1:{p}/evil"),
        String::new(),
    ];
    for host in &bad {
        let status = raw_status(served.addr, "/", &[format!("Host: {host}")]).await;
        assert_eq!(status, 403, "Host {host:?}");
    }
    let two = [format!("Host: 127.0.0.1:{p}"), format!("Host: evil.example:{p}")];
    assert_eq!(raw_status(served.addr, "/", &two).await, 403, "two Host headers");
    assert_eq!(raw_status(served.addr, "/", &[]).await, 403, "no Host header");
    for host in [format!("127.0.0.1:{p}"), format!("localhost:{p}"), format!("LocalHost:{p}"), format!("[::1]:{p}")]
        .into_iter()
        .chain(["127.0.0.1".to_owned(), "localhost".to_owned()])
    {
        let status = raw_status(served.addr, "/", &[format!("Host: {host}")]).await;
        assert_eq!(status, 200, "well-formed local Host {host:?}");
    }
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_3_origins_that_are_not_exactly_scheme_host_port_are_refused_403() {
    let served = serve(&[]).await;
    let p = served.addr.port();
    let host = format!("Host: 127.0.0.1:{p}");
    let bad = [
        format!("http://127.0.0.1:{p}/evil"),
        format!("http://127.0.0.1:{p}/"),
        format!("http://localhost:{p}.evil.example"),
        "http://127.0.0.1:abc".to_owned(),
        format!("http://evil@127.0.0.1:{p}"),
        format!("ftp://127.0.0.1:{p}"),
        format!("http://127.0.0.1:{p}?x=1"),
        "http://evil.example".to_owned(),
        "null".to_owned(),
        String::new(),
    ];
    for origin in &bad {
        let status = raw_status(served.addr, "/", &[host.clone(), format!("Origin: {origin}")]).await;
        assert_eq!(status, 403, "Origin {origin:?}");
    }
    for origin in [
        format!("http://127.0.0.1:{p}"),
        format!("https://localhost:{p}"),
        format!("http://[::1]:{p}"),
        "http://localhost".to_owned(),
    ] {
        let status = raw_status(served.addr, "/", &[host.clone(), format!("Origin: {origin}")]).await;
        assert_eq!(status, 200, "local Origin {origin:?}");
    }
    served.stop().await.unwrap();
}

#[tokio::test]
async fn mcp_router_mounted_at_a_path_serves_mcp_beside_the_host_routes() {
    let (server, addr, dir) = mounted(&[], "/mcp").await;
    let health = reqwest::get(format!("http://{addr}/healthz")).await.unwrap().text().await.unwrap();
    assert_eq!(health, "ok");
    let url = format!("http://{addr}/mcp");
    for era in ERAS {
        let client = connect(&url, TestClient::new(false, Answer::Decline), era).await;
        assert_eq!(client.list_all_tools().await.unwrap().len(), 9, "{era:?}");
        let out = exec_json(&call(&client, "echo", json!({"words": ["mounted"]})).await);
        assert_eq!(out["exit_code"], 0, "{out}");
        client.cancel().await.unwrap();
    }
    // The checks still apply under the host's path.
    let status = raw_status(addr, "/mcp", &["Host: evil.example".to_owned()]).await;
    assert_eq!(status, 403);
    let status = raw_status(addr, "/", &[format!("Host: 127.0.0.1:{}", addr.port())]).await;
    assert_eq!(status, 404, "nothing is served outside the mount");
    server.shutdown().await;
    drop(dir);
}

#[test]
fn mcp_max_sessions_and_idle_timeout_are_checked_with_their_location() {
    let base = "identity: x\nexpose:\n  agent:\n    mcp:\n";
    let ok =
        Config::from_yaml_str(&format!("{base}      max_sessions: 65536\n      session_idle_timeout: 90s\n")).unwrap();
    let mcp = ok.expose.agent.mcp.as_ref().unwrap();
    assert_eq!(mcp.max_sessions(), 65536);
    assert_eq!(mcp.session_idle_timeout(), Duration::from_secs(90));
    let defaults = Config::from_yaml_str(&format!("{base}      port: 1\n")).unwrap();
    let mcp = defaults.expose.agent.mcp.as_ref().unwrap();
    assert_eq!((mcp.max_sessions(), mcp.session_idle_timeout()), (256, Duration::from_secs(300)));
    for (line, want) in [
        ("max_sessions: 65537", "at most 65536"),
        ("max_sessions: -1", "must not be negative"),
        ("session_idle_timeout: 0s", "positive"),
        ("session_idle_timeout: -5s", "positive"),
    ] {
        let err = Config::from_yaml_str(&format!("{base}      {line}\n")).unwrap_err().to_string();
        assert!(err.contains(want) && err.contains("line 5"), "{line}: {err}");
        assert!(err.contains(line.split(':').next().unwrap()), "{line}: names the key: {err}");
    }
}

/// The JSON-RPC message in a response body, whether it came as plain JSON or as an SSE `data:` event.
fn rpc_message(content_type: &str, body: &str) -> serde_json::Value {
    if content_type.starts_with("application/json") {
        return serde_json::from_str(body).unwrap();
    }
    let data = body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|d| !d.is_empty());
    serde_json::from_str(data.unwrap_or_else(|| panic!("no data event in {body:?}"))).unwrap()
}

#[tokio::test]
async fn mcp_15_the_cached_listing_is_exactly_what_rmcp_serves() {
    let (_server, addr, _dir) = mounted(&[], "/").await;
    let http = reqwest::Client::new();
    let session = open_session(&http, addr).await.unwrap();
    let list = |body: &'static str, session: String| {
        http_post(addr).header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25").body(body).send()
    };
    let fast = list(r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/list"}"#, session.clone()).await.unwrap();
    assert_eq!(fast.status().as_u16(), 200);
    let fast_type = fast.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(fast_type.starts_with("application/json"), "{fast_type}");
    let fast = rpc_message(&fast_type, &fast.text().await.unwrap());
    // A 2026-07-28 client's listing goes through rmcp's own serialization.
    let url = format!("http://{addr}/");
    let modern = mcp_support::connect(&url, TestClient::new(false, Answer::Decline), Era::Modern).await;
    let slow = serde_json::to_value(modern.list_all_tools().await.unwrap()).unwrap();
    modern.cancel().await.unwrap();
    assert_eq!(fast["id"], "a-1");
    assert_eq!(fast["result"]["tools"].as_array().unwrap().len(), 9);
    assert_eq!(fast["result"]["tools"], slow, "the cached bytes are rmcp's own listing");
    // An unknown session is rmcp's to refuse.
    let unknown = list(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, "nope".to_owned()).await.unwrap();
    assert_eq!(unknown.status().as_u16(), 404);
}
