//! A client as the MCP SDK clients (TypeScript, Python) build one over streamable HTTP: its own connection pool of
//! one kept-alive HTTP/1.1 connection, one session, JSON-RPC `tools/call` POSTs answered as SSE.

use std::sync::atomic::{AtomicU64, Ordering};

/// A client as the SDKs build one: its own connection pool of one kept-alive connection, one session.
pub struct SdkClient {
    http: reqwest::Client,
    url: String,
    session: String,
    next_id: AtomicU64,
}

impl SdkClient {
    /// `initialize` and `notifications/initialized` at `url`, on a new connection.
    pub async fn open(url: &str) -> SdkClient {
        Self::open_with(url, None).await
    }

    /// As [`SdkClient::open`], sending `Authorization: Bearer <token>` on every request when given, as the SDKs do
    /// once they hold a token.
    pub async fn open_with(url: &str, token: Option<&str>) -> SdkClient {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(t) = token {
            headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {t}").parse().unwrap());
        }
        let http =
            reqwest::Client::builder().http1_only().pool_max_idle_per_host(1).default_headers(headers).build().unwrap();
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
        let resp = Self::post(&http, url, None).body(init).send().await.unwrap();
        let session = resp.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        resp.text().await.unwrap();
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let resp = Self::post(&http, url, Some(&session)).body(note).send().await.unwrap();
        assert!(resp.status().is_success(), "{}", resp.status());
        SdkClient { http, url: url.to_owned(), session, next_id: AtomicU64::new(1) }
    }

    fn post(http: &reqwest::Client, url: &str, session: Option<&str>) -> reqwest::RequestBuilder {
        let req = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        match session {
            Some(s) => req.header("mcp-session-id", s),
            None => req,
        }
    }

    /// One `tools/call` of `echo hello`; the SSE body, read to its end so the connection is reused.
    pub async fn call(&self) -> String {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"words":["hello"]}}}}}}"#
        );
        let resp = Self::post(&self.http, &self.url, Some(&self.session)).body(body).send().await.unwrap();
        let text = resp.text().await.unwrap();
        assert!(text.contains(r#"\"exit_code\":0"#) && !text.contains(r#""isError":true"#), "{text}");
        text
    }
}
