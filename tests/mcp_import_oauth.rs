//! The OAuth client of an imported HTTP server (issue 28, OAUTHC-1..6): the client-credentials grant against an
//! authorization server this test runs, for a server built with the official Python MCP SDK behind its bearer
//! middleware. Discovery (the server's RFC 9728 metadata, then the issuer's RFC 8414 metadata), the `resource`
//! parameter (the Python server refuses tokens for another resource), renewal before expiry and once on a `401`,
//! and the secret kept from every child.
//!
//! Alone in its own test binary because it sets a variable in this process's environment before any thread exists.
//! Needs `FISK_AI_PYTHON` (a venv with `mcp`; `.ci/run` creates it).
#![cfg(feature = "mcp")]
// Setting this process's environment (before any other thread exists) is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;

use base64::Engine;
use common::turns::{call_with, done, result_of, turn};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::ScriptedProvider;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET_VAR: &str = "FISK_AI_TEST_OAUTH_SECRET";
const SECRET: &str = "s3cret-of-the-agent";
const CLIENT: &str = "fisk-agent";
const JSON: [(axum::http::HeaderName, &str); 1] = [(axum::http::header::CONTENT_TYPE, "application/json")];

/// One issued token: what it was issued for, and whether it still counts.
#[derive(Debug, Clone)]
struct Issued {
    scope: String,
    resource: String,
    active: bool,
}

/// The test's authorization server: metadata, a token endpoint taking only `client_secret_basic`, and the
/// introspection the Python server asks.
#[derive(Clone, Default)]
struct Issuer {
    tokens: Arc<Mutex<HashMap<String, Issued>>>,
    /// The token requests' form fields, in order.
    requests: Arc<Mutex<Vec<HashMap<String, String>>>>,
    expires_in: Arc<Mutex<u64>>,
}

fn form(body: &str) -> HashMap<String, String> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let mut out = Vec::new();
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%'
                && i + 2 < bytes.len()
                && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
            {
                out.push(b);
                i += 3;
                continue;
            }
            out.push(bytes[i]);
            i += 1;
        }
        String::from_utf8(out).unwrap()
    };
    body.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (decode(k), decode(v))).collect()
}

impl Issuer {
    async fn start(&self) -> String {
        use axum::http::{HeaderMap, StatusCode};
        use axum::routing::{get, post};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let meta = json!({
            "issuer": url, "token_endpoint": format!("{url}/token"), "authorization_endpoint": format!("{url}/authorize"),
            "grant_types_supported": ["client_credentials"], "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "response_types_supported": ["code"],
        })
        .to_string();
        let (token_state, introspect_state) = (self.clone(), self.clone());
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(move || async move { ([(axum::http::header::CONTENT_TYPE, "application/json")], meta) }),
            )
            .route(
                "/token",
                post(move |headers: HeaderMap, body: String| {
                    let state = token_state.clone();
                    async move {
                        let fields = form(&body);
                        state.requests.lock().unwrap().push(fields.clone());
                        let basic = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
                        let expected = base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT}:{SECRET}"));
                        if basic != format!("Basic {expected}") || fields.get("grant_type").map(String::as_str) != Some("client_credentials") {
                            return (StatusCode::UNAUTHORIZED, JSON, r#"{"error":"invalid_client"}"#.to_owned());
                        }
                        let token = format!("tok-{}", state.requests.lock().unwrap().len());
                        let issued = Issued {
                            scope: fields.get("scope").cloned().unwrap_or_default(),
                            resource: fields.get("resource").cloned().unwrap_or_default(),
                            active: true,
                        };
                        state.tokens.lock().unwrap().insert(token.clone(), issued.clone());
                        let expires_in = *state.expires_in.lock().unwrap();
                        let answer = json!({"access_token": token, "token_type": "Bearer", "expires_in": expires_in, "scope": issued.scope});
                        (StatusCode::OK, JSON, answer.to_string())
                    }
                }),
            )
            .route(
                "/introspect",
                post(move |body: String| {
                    let state = introspect_state.clone();
                    async move {
                        let token = form(&body).remove("token").unwrap_or_default();
                        let answer = match state.tokens.lock().unwrap().get(&token) {
                            Some(t) if t.active => {
                                json!({"active": true, "client_id": CLIENT, "scope": t.scope, "resource": t.resource})
                            }
                            _ => json!({"active": false}),
                        };
                        ([(axum::http::header::CONTENT_TYPE, "application/json")], answer.to_string())
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    fn issued(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    fn revoke_all(&self) {
        self.tokens.lock().unwrap().values_mut().for_each(|t| t.active = false);
    }
}

/// Start the Python server on a free port; its MCP URL once it answers.
async fn python_server(issuer: &str) -> (tokio::process::Child, String) {
    let (child, port) =
        common::python::spawn_on_free_port("mcp_oauth_server.py", |port| vec![port.to_string(), issuer.to_owned()]);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let metadata = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    for _ in 0..150 {
        if reqwest::get(&metadata).await.is_ok_and(|r| r.status().is_success()) {
            return (child, url);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the Python server did not come up on {url}");
}

#[test]
#[ignore = "needs FISK_AI_PYTHON with the mcp SDK; .ci/run provides it"]
fn oauthc_1_6_client_credentials_against_the_python_sdk_bearer_middleware() {
    // SAFETY: this test binary holds one test, and no other thread runs yet.
    unsafe { std::env::set_var(SECRET_VAR, SECRET) };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let issuer = Issuer::default();
        *issuer.expires_in.lock().unwrap() = 3600;
        let as_url = issuer.start().await;
        let (_python, url) = python_server(&as_url).await;

        let dir = tempfile::tempdir().unwrap();
        let app = common::fake_app(dir.path(), "envdump");
        let stdio = common::example("mcp_fixture_server");
        let yaml = format!(
            "identity: e\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\nmcp_servers:\n  - name: inv\n    \
             url: {url}\n    oauth:\n      client_id: {CLIENT}\n      client_secret_env: {SECRET_VAR}\n      \
             scopes: [inventory.read]\n  - name: files\n    command: [{}]\n",
            app.display(),
            stdio.display()
        );
        let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
        let provider = Arc::new(ScriptedProvider::new([
            turn(vec![call_with("1", "greet", r#"{"name": "ada"}"#), call_with("2", "env", "{}")]),
            turn(vec![call_with("3", "greet", r#"{"name": "bob"}"#)]),
            turn(vec![call_with("4", "greet", r#"{"name": "cy"}"#)]),
            done(),
        ]));
        let agent = Agent::builder()
            .pin_store(common::pin_store())
            .config(config)
            .provider_arc(provider.clone())
            .build()
            .await
            .unwrap();

        // Discovery found the token endpoint; the request carried the scopes and this server as the resource.
        assert_eq!(issuer.issued(), 1, "one token for the load");
        let first = issuer.requests.lock().unwrap()[0].clone();
        assert_eq!(first.get("scope").map(String::as_str), Some("inventory.read"));
        assert_eq!(first.get("resource").map(String::as_str), Some(url.as_str()), "RFC 8707 resource: {first:?}");
        assert!(!first.contains_key("client_secret"), "client_secret_basic, as the issuer advertises: {first:?}");

        // Once the issuer revokes the token, the server answers 401: one new token, and the call goes through.
        issuer.revoke_all();
        let outcome = agent.run("x", RunOptions::default()).await;
        assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
        for (id, who) in [("1", "ada"), ("3", "bob"), ("4", "cy")] {
            let (text, is_error) = result_of(&outcome.messages, id);
            assert!(!is_error && text.contains(&format!("hello {who}")), "{id}: {text}");
        }
        assert_eq!(issuer.issued(), 2, "one renewal on the 401, then the new token is reused");

        // The secret reached neither the stdio server nor the application's introspection.
        let (env, _) = result_of(&outcome.messages, "2");
        assert!(env.contains("PATH=") && !env.contains(SECRET_VAR) && !env.contains(SECRET), "{env}");
        let introspected = std::fs::read_to_string(dir.path().join("introspect.env")).unwrap();
        assert!(!introspected.contains(SECRET_VAR) && !introspected.contains(SECRET));
    });
    renewed_before_expiry(&rt);
}

/// OAUTHC-3, renewal before expiry: a token that expires in 2 seconds is replaced after 1 (half its life), without
/// a 401; the token endpoint is configured instead of discovered.
fn renewed_before_expiry(rt: &tokio::runtime::Runtime) {
    rt.block_on(async {
        use fisk_ai::config::McpOAuth;
        use fisk_ai::source::mcp::McpImport;
        use fisk_ai::tool::{CallContext, ToolInput};
        let issuer = Issuer::default();
        *issuer.expires_in.lock().unwrap() = 2;
        let as_url = issuer.start().await;
        let (_python, url) = python_server(&as_url).await;
        let oauth =
            McpOAuth::new(CLIENT, SECRET_VAR).with_scopes(["inventory.read"]).with_token_url(format!("{as_url}/token"));
        let loaded =
            McpImport::http("inv", url).unwrap().with_oauth(oauth).load().await.unwrap_or_else(|e| panic!("{e}"));
        let greet = loaded.tools.iter().find(|t| t.spec().name() == "greet").unwrap().clone();
        let input = ToolInput::from_json(r#"{"name": "ada"}"#).unwrap();
        assert_eq!(greet.call(&input, &CallContext::new()).await.content(), "hello ada");
        let before = issuer.issued();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert_eq!(greet.call(&input, &CallContext::new()).await.content(), "hello ada");
        assert_eq!(issuer.issued(), before + 1, "renewed at half its life");
        let tokens = issuer.tokens.lock().unwrap();
        assert!(tokens.values().all(|t| t.active), "no token was refused: {tokens:?}");
    });
}
