//! A bare MCP client over streamable HTTP for measuring the server alone: it posts JSON-RPC and reads the response
//! body as bytes, so no client-side decoding of 10,000 tools is counted.

use std::time::{Duration, Instant};

/// One session with a server at `url`, after `initialize` and `notifications/initialized`.
pub struct RawMcp {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
}

const PROTOCOL: &str = "2025-11-25";

impl RawMcp {
    /// Connect and initialize.
    pub async fn connect(url: &str) -> RawMcp {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
        let mut c = RawMcp { http, url: url.to_owned(), session: None };
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL}","capabilities":{{}},"clientInfo":{{"name":"bench","version":"1"}}}}}}"#
        );
        let resp = c.post(init).await;
        c.session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        assert!(resp.status().is_success(), "initialize: {}", resp.status());
        resp.bytes().await.unwrap();
        c.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()).await.bytes().await.unwrap();
        c
    }

    async fn post(&self, body: String) -> reqwest::Response {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .body(body);
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        req.send().await.unwrap()
    }

    /// `tools/call` of `name` with `arguments` (a JSON object's text), returning the response body.
    #[allow(dead_code)]
    pub async fn call_tool(&self, name: &str, arguments: &str) -> String {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
        );
        let resp = self.post(body).await;
        assert!(resp.status().is_success(), "tools/call: {}", resp.status());
        resp.text().await.unwrap()
    }

    /// `tools/list`, returning the response body's size and how long the whole exchange took.
    pub async fn list_tools(&self) -> (usize, Duration) {
        let started = Instant::now();
        let resp = self.post(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.to_owned()).await;
        assert!(resp.status().is_success(), "tools/list: {}", resp.status());
        let body = resp.bytes().await.unwrap();
        (body.len(), started.elapsed())
    }
}
