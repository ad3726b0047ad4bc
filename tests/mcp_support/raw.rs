//! Raw HTTP against a served MCP endpoint: a server the test mounts itself (so it can ask how many sessions are
//! open), bare `initialize` handshakes that walk away, and requests inside a session, without an SDK client in the
//! way.

use super::config;
use fisk_ai::serve::mcp::McpServer;
use std::net::SocketAddr;
use std::sync::Arc;

/// A bare legacy `initialize` on 2025-11-25.
pub const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;

/// A server for `mcp` settings, mounted by the test itself through [`McpServer::router`] at `path`, so the test
/// keeps the server to ask how many sessions are open.
pub async fn mounted(mcp: &[&str], path: &str) -> (Arc<McpServer>, SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let server = Arc::new(McpServer::builder().config(config(dir.path(), mcp)).build().await.unwrap());
    let app = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
    let app = if path == "/" { app.merge(server.router()) } else { app.nest_service(path, server.router()) };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stopping = server.clone();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                std::future::pending::<()>().await;
                stopping.shutdown().await;
            })
            .await
    });
    (server, addr, dir)
}

/// A JSON-RPC POST to the root, with the headers the transport requires.
pub fn http_post(addr: SocketAddr) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("http://{addr}/"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
}

/// Open a session with a bare `initialize` and walk away; its id, or the refusal's status and body.
pub async fn open_session(http: &reqwest::Client, addr: SocketAddr) -> Result<String, (u16, String)> {
    let resp = http
        .post(format!("http://{addr}/"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INIT)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let id = resp.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    let body = resp.text().await.unwrap();
    match (status, id) {
        (200, Some(id)) => Ok(id),
        _ => Err((status, body)),
    }
}

/// POST `body` in legacy session `session`; the status and the whole response body.
pub async fn in_session(http: &reqwest::Client, addr: SocketAddr, session: &str, body: String) -> (u16, String) {
    let resp = http
        .post(format!("http://{addr}/"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

/// The resident set size of this process (the in-process server included), in KiB.
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// [`open_session`], waiting out 503s: a session stays busy until the server has finished sending a response the
/// client may already have read, so "no session is busy" becomes true a moment after the test knows it.
pub async fn open_session_when_free(http: &reqwest::Client, addr: SocketAddr) -> String {
    for _ in 0..400 {
        match open_session(http, addr).await {
            Ok(id) => return id,
            Err((503, _)) => tokio::time::sleep(std::time::Duration::from_millis(25)).await,
            Err(other) => panic!("unexpected answer to initialize: {other:?}"),
        }
    }
    panic!("every session stayed busy")
}
