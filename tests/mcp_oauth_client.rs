//! The importer's OAuth client (issue 28, OAUTHC-1..6) against this crate's own resource server (`McpServer` with
//! `expose.agent.mcp.auth`) and an authorization server this test runs, which signs JWTs with the fixture keys:
//! discovery from the served RFC 9728 metadata, and what goes wrong, each named. The Python SDK's side is
//! tests/mcp_import_oauth.rs.
//!
//! Alone in its own test binary, one test, because it sets variables in this process's environment before any
//! thread exists.
#![cfg(feature = "mcp")]
// Setting this process's environment (before any other thread exists) is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::jwt::{Signer, now};
use fisk_ai::Config;
use fisk_ai::config::McpOAuth;
use fisk_ai::source::mcp::McpImport;
use fisk_ai::tool::{CallContext, ToolInput};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const JSON: [(axum::http::HeaderName, &str); 1] = [(axum::http::header::CONTENT_TYPE, "application/json")];

/// The variable holding the client secret.
const SECRET_VAR: &str = "FISK_AI_TEST_OAUTHC_SECRET";
/// A variable no one sets.
const UNSET_VAR: &str = "FISK_AI_TEST_OAUTHC_UNSET";

/// An authorization server at its own loopback URL: RFC 8414 metadata and a token endpoint that answers `answer`
/// (JSON text) or, with `None`, a JWT for the requested resource signed by `signer`. Counts token requests.
async fn issuer(answer: Option<&'static str>) -> (String, Arc<AtomicUsize>) {
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let meta = json!({"issuer": url, "token_endpoint": format!("{url}/token"), "authorization_endpoint": format!("{url}/authorize"),
        "response_types_supported": ["code"], "token_endpoint_auth_methods_supported": ["client_secret_post"]})
    .to_string();
    let count = Arc::new(AtomicUsize::new(0));
    let (seen, iss) = (count.clone(), url.clone());
    let app = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", get(move || async move { (JSON, meta) }))
        .route(
            "/token",
            post(move |body: String| {
                seen.fetch_add(1, Ordering::SeqCst);
                let iss = iss.clone();
                async move {
                    let text = match answer {
                        // An OAuth error answer comes with 400 (RFC 6749 section 5.2).
                        Some(a) if a.contains("\"error\"") => {
                            return (axum::http::StatusCode::BAD_REQUEST, JSON, a.to_owned());
                        }
                        Some(a) => a.to_owned(),
                        None => {
                            // The resource, as the form sent it (percent-encoded).
                            let resource = body.split('&').find_map(|kv| kv.strip_prefix("resource=")).unwrap_or("");
                            let resource = resource.replace("%3A", ":").replace("%2F", "/");
                            let claims = json!({"iss": iss, "aud": resource, "sub": "agent", "client_id": "fisk",
                                "scope": "mcp.use", "exp": now() + 600});
                            let token = Signer::rsa().sign(&claims);
                            json!({"access_token": token, "token_type": "Bearer", "expires_in": 600}).to_string()
                        }
                    };
                    (axum::http::StatusCode::OK, JSON, text)
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, count)
}

/// Our MCP server requiring tokens from `issuer` for its own URL (which is only known once it is bound).
async fn protected_server(issuer: &str) -> mcp_support::Served {
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [Signer::rsa().jwk()]}).to_string()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let app = common::fake_app(dir.path(), "auth-app");
    let yaml = format!(
        "identity: guarded\napplication_path: {}\nexpose:\n  agent:\n    mcp:\n      port: {port}\n      auth:\n        \
         issuer: {issuer}\n        audience: http://127.0.0.1:{port}/\n        jwks_file: {}\n        \
         required_scopes: [mcp.use]\n",
        app.display(),
        jwks.display()
    );
    let config = Config::from_yaml_str(&yaml).unwrap();
    mcp_support::serve_on(dir, config, port).await
}

#[test]
fn oauthc_1_6_the_client_credentials_grant_against_our_own_resource_server() {
    // SAFETY: this test binary holds one test, and no other thread runs yet.
    unsafe { std::env::set_var(SECRET_VAR, "the-secret") };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        discovered().await;
        refused_answers_are_named().await;
    });
}

/// OAUTHC-2: the token endpoint is discovered from the metadata our server publishes, and the token it gives
/// opens the server (its `aud` is the `resource` the client asked for).
async fn discovered() {
    let (as_url, requests) = issuer(None).await;
    let served = protected_server(&as_url).await;
    let import = McpImport::http("guarded", &served.url).unwrap().with_oauth(McpOAuth::new("fisk", SECRET_VAR));
    let loaded = import.load().await.unwrap_or_else(|e| panic!("{e}"));
    let status = loaded.tools.iter().find(|t| t.spec().name() == "status").unwrap();
    let out = status.call(&ToolInput::empty(), &CallContext::new()).await;
    assert!(!out.is_error() && out.content().contains("ran status"), "{}", out.content());
    assert_eq!(requests.load(Ordering::SeqCst), 1, "one token, reused for the load and the call");
    let events = served.events();
    assert!(events.iter().any(|e| e.contains("call status status by agent (client fisk)")), "{events:?}");
    served.stop().await.unwrap();
}

/// OAUTHC-1, OAUTHC-5: what can go wrong fails the load with the server and the cause named, and never the secret.
async fn refused_answers_are_named() {
    let load = |url: String, oauth: McpOAuth| async move {
        let import = McpImport::http("guarded", url).unwrap().with_oauth(oauth);
        let why = import.load().await.map(drop).expect_err("the load fails").to_string();
        assert!(!why.contains("the-secret"), "the secret in an error: {why}");
        why
    };
    let (as_url, _) = issuer(None).await;
    let served = protected_server(&as_url).await;
    // An unset variable: named, and nothing is requested.
    let why = load(served.url.clone(), McpOAuth::new("fisk", UNSET_VAR)).await;
    assert!(why.contains("mcp server guarded") && why.contains(&format!("{UNSET_VAR} is not set")), "{why}");
    // The issuer refuses the client.
    let (bad, _) = issuer(Some(r#"{"error":"invalid_client","error_description":"unknown client"}"#)).await;
    let oauth = McpOAuth::new("fisk", SECRET_VAR).with_token_url(format!("{bad}/token"));
    let why = load(served.url.clone(), oauth).await;
    assert!(why.contains("client fisk") && why.contains("invalid_client"), "{why}");
    // A token endpoint answering something that is not a token.
    let (garbage, _) = issuer(Some("[1, 2, 3]")).await;
    let oauth = McpOAuth::new("fisk", SECRET_VAR).with_token_url(format!("{garbage}/token"));
    let why = load(served.url.clone(), oauth).await;
    assert!(why.contains("the token request failed"), "{why}");
    // A token endpoint over plain http to a host that is not loopback is refused before the secret is sent.
    let oauth = McpOAuth::new("fisk", SECRET_VAR).with_token_url("http://token.example/token");
    let why = load(served.url.clone(), oauth).await;
    assert!(why.contains("not acceptable") && why.contains("https"), "{why}");
    served.stop().await.unwrap();
    // A server that publishes no OAuth metadata: no guessed endpoint gets the secret.
    let (as_url, requests) = issuer(None).await;
    let plain = mcp_support::serve(&[]).await;
    let why = load(plain.url.clone(), McpOAuth::new("fisk", SECRET_VAR)).await;
    assert!(why.contains("publishes no OAuth metadata") && why.contains("oauth.token_url"), "{why}");
    assert_eq!(requests.load(Ordering::SeqCst), 0, "{as_url} was never asked");
    plain.stop().await.unwrap();
}
