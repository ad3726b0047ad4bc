//! The OAuth 2.1 resource server in front of MCP over HTTP (issue 28, AUTH-1..10): a real JWKS served over
//! loopback, tokens this test signs with the keys in tests/fixtures/jwt, and the official rmcp client.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::jwt::{Signer, fixture, now};
use fisk_ai::Config;
use fisk_ai::serve::mcp::McpServer;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_support::raw::INIT;
use mcp_support::*;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "https://mcp.example/mcp";
const METADATA_URL: &str = "https://mcp.example/.well-known/oauth-protected-resource/mcp";

/// Good claims for `sub` with `scope`.
fn claims(sub: &str, scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "client_id": "ops-console", "scope": scope,
           "exp": now() + 300, "nbf": now() - 5, "iat": now()})
}

/// The issuer's JWKS endpoint: serves whatever `keys` holds, counting requests.
#[derive(Clone, Default)]
struct Issuer {
    keys: Arc<Mutex<Vec<Value>>>,
    reads: Arc<AtomicUsize>,
}

impl Issuer {
    async fn start(keys: Vec<Value>) -> (Issuer, String) {
        let issuer = Issuer { keys: Arc::new(Mutex::new(keys)), reads: Arc::default() };
        let state = issuer.clone();
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let state = state.clone();
                async move {
                    state.reads.fetch_add(1, Ordering::SeqCst);
                    let body = json!({"keys": *state.keys.lock().unwrap()}).to_string();
                    ([(axum::http::header::CONTENT_TYPE, "application/json")], body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (issuer, url)
    }

    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    fn publish(&self, keys: Vec<Value>) {
        *self.keys.lock().unwrap() = keys;
    }
}

/// A configuration serving the auth fixture app with this `auth` block (lines under `auth:`).
fn auth_config(dir: &std::path::Path, auth: &[String]) -> Config {
    let app = common::fake_app(dir, "auth-app");
    let mut yaml =
        format!("identity: authsrv\napplication_path: {}\nexpose:\n  agent:\n    mcp:\n      auth:\n", app.display());
    for line in auth {
        yaml.push_str(&format!("        {line}\n"));
    }
    Config::from_yaml_str(&yaml).unwrap()
}

fn auth_lines(jwks_url: &str, extra: &[&str]) -> Vec<String> {
    let mut lines = vec![format!("issuer: {ISSUER}"), format!("audience: {AUDIENCE}"), format!("jwks_url: {jwks_url}")];
    lines.extend(extra.iter().map(|s| (*s).to_owned()));
    lines
}

/// A server with an `auth` block reading keys from `jwks_url`.
async fn serve_auth(jwks_url: &str, extra: &[&str], min_refresh: Duration) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let config = auth_config(dir.path(), &auth_lines(jwks_url, extra));
    serve_config(dir, config, move |b| b.jwks_min_refresh(min_refresh)).await
}

/// POST a bare `initialize` with this `Authorization` value (none when `None`): status, `WWW-Authenticate`, body.
async fn initialize(addr: SocketAddr, authorization: Option<&str>) -> (u16, String, String) {
    let mut req = raw::http_post(addr).body(INIT);
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let challenge = resp.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (status, challenge, resp.text().await.unwrap())
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// An rmcp client sending `token`.
async fn client_with(url: &str, token: &str) -> rmcp::service::RunningService<rmcp::RoleClient, TestClient> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    TestClient::new(false, Answer::Decline).serve(transport).await.expect("authorized client connects")
}

fn unverifiable_tokens(good: &Signer) -> Vec<(&'static str, String)> {
    use base64::Engine;
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let body = claims("alice", "");
    let none = format!("{}.{}.", b64(&json!({"alg": "none", "kid": good.kid})), b64(&body));
    let public_pem = fixture("rsa.pub");
    let mut hs = Header::new(Algorithm::HS256);
    hs.kid = Some(good.kid.to_owned());
    let confused = jsonwebtoken::encode(&hs, &body, &EncodingKey::from_secret(&public_pem).unwrap()).unwrap();
    let other = Signer::new(Algorithm::RS256, "rsa-1", "rsa-other.pem");
    let mut forged = good.sign(&body);
    forged.truncate(forged.len() - 4);
    forged.push_str("AAAA");
    vec![
        // Past the 30-second leeway either way.
        ("expired", good.sign(&with(&body, "exp", json!(now() - 120)))),
        ("not yet valid", good.sign(&with(&body, "nbf", json!(now() + 600)))),
        ("wrong issuer", good.sign(&with(&body, "iss", json!("https://evil.example")))),
        ("wrong audience", good.sign(&with(&body, "aud", json!("https://other.example/mcp")))),
        ("wrong key", other.sign(&body)),
        ("alg none", none),
        ("HS256 with the public key", confused),
        ("altered signature", forged),
        ("no exp", good.sign(&without(&body, "exp"))),
        ("garbage", "not-a-jwt".to_owned()),
    ]
}

/// `claims` with `key` set to `value`.
fn with(claims: &Value, key: &str, value: Value) -> Value {
    let mut c = claims.clone();
    c[key] = value;
    c
}

/// `claims` without `key`.
fn without(claims: &Value, key: &str) -> Value {
    let mut c = claims.clone();
    c.as_object_mut().unwrap().remove(key);
    c
}

#[tokio::test]
async fn auth_2_valid_tokens_of_each_algorithm_pass_and_every_bad_one_gets_401_with_the_challenge() {
    let signers = [
        Signer::rsa(),
        Signer::new(Algorithm::ES256, "ec-1", "ec.pem"),
        Signer::new(Algorithm::EdDSA, "ed-1", "ed.pem"),
    ];
    let (_issuer, jwks) = Issuer::start(signers.iter().map(Signer::jwk).collect()).await;
    let served = serve_auth(&jwks, &[], Duration::from_secs(10)).await;
    for signer in &signers {
        let (status, _, body) = initialize(served.addr, Some(&bearer(&signer.sign(&claims("alice", ""))))).await;
        assert_eq!(status, 200, "{:?}: {body}", signer.alg);
    }
    // An array audience naming this server, and the audience without its trailing slash difference, pass too.
    let listed = with(&claims("alice", ""), "aud", json!(["https://other.example", AUDIENCE]));
    assert_eq!(initialize(served.addr, Some(&bearer(&signers[0].sign(&listed)))).await.0, 200);
    for (case, token) in unverifiable_tokens(&signers[0]) {
        let (status, challenge, body) = initialize(served.addr, Some(&bearer(&token))).await;
        assert_eq!(status, 401, "{case}: {body}");
        assert!(challenge.starts_with("Bearer "), "{case}: {challenge}");
        assert!(challenge.contains("error=\"invalid_token\""), "{case}: {challenge}");
        assert!(challenge.contains(&format!("resource_metadata=\"{METADATA_URL}\"")), "{case}: {challenge}");
        assert!(!body.contains(&token) || token.len() < 12, "{case}: the body must not echo the token");
    }
    let (status, _, body) =
        initialize(served.addr, Some(&bearer(&signers[0].sign(&with(&claims("a", ""), "exp", json!(now() - 120))))))
            .await;
    assert_eq!((status, body.as_str()), (401, "the token has expired"));
    served.stop().await.unwrap();
}

#[tokio::test]
async fn auth_4_no_token_or_a_malformed_header_is_401_and_a_missing_required_scope_is_403() {
    let rsa = Signer::rsa();
    let (_issuer, jwks) = Issuer::start(vec![rsa.jwk()]).await;
    let served = serve_auth(&jwks, &["required_scopes: [mcp.use]"], Duration::from_secs(10)).await;
    let (status, challenge, _) = initialize(served.addr, None).await;
    assert_eq!(status, 401);
    assert_eq!(challenge, format!("Bearer resource_metadata=\"{METADATA_URL}\", scope=\"mcp.use\""));
    let good = rsa.sign(&claims("alice", "mcp.use ops.read"));
    let oversize = "a".repeat(9 * 1024);
    for header in [
        format!("Basic {good}"),
        "Bearer".to_owned(),
        "Bearer ".to_owned(),
        format!("Bearer {oversize}"),
        format!("Bearer {good}\u{7f}"),
    ] {
        let Ok(value) = reqwest::header::HeaderValue::from_str(&header) else { continue };
        let resp = raw::http_post(served.addr).header("authorization", value).body(INIT).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 401, "{header:.40}");
    }
    let twice = raw::http_post(served.addr)
        .header("authorization", bearer(&good))
        .header("authorization", bearer(&good))
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status().as_u16(), 401, "two Authorization headers");
    let (status, challenge, body) = initialize(served.addr, Some(&bearer(&rsa.sign(&claims("bob", "ops.read"))))).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp.use\""),
        "{challenge}"
    );
    assert!(challenge.contains(&format!("resource_metadata=\"{METADATA_URL}\"")), "{challenge}");
    assert_eq!(initialize(served.addr, Some(&bearer(&good))).await.0, 200);
    // `scp` as a list (Okta, Azure) grants too.
    let scp = without(&with(&claims("carol", ""), "scp", json!(["mcp.use"])), "scope");
    assert_eq!(initialize(served.addr, Some(&bearer(&rsa.sign(&scp)))).await.0, 200);
    served.stop().await.unwrap();
}

#[tokio::test]
async fn auth_3_the_protected_resource_metadata_is_published_without_a_token() {
    let rsa = Signer::rsa();
    let (_issuer, jwks) = Issuer::start(vec![rsa.jwk()]).await;
    let served = serve_auth(&jwks, &["required_scopes: [mcp.use]"], Duration::from_secs(10)).await;
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let resp = reqwest::get(format!("http://{}{path}", served.addr)).await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        assert_eq!(resp.headers()["content-type"], "application/json");
        let doc: Value = resp.json().await.unwrap();
        assert_eq!(doc["resource"], AUDIENCE);
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        // The required scope and every scope a tool tag names.
        assert_eq!(doc["scopes_supported"], json!(["mcp.use", "ops.write"]));
    }
    // Anything else still needs the token.
    let other = reqwest::get(format!("http://{}/.well-known/other", served.addr)).await.unwrap();
    assert_eq!(other.status().as_u16(), 401);
    served.stop().await.unwrap();
}

#[tokio::test]
async fn auth_5_a_tool_whose_scope_the_caller_lacks_is_neither_listed_nor_callable() {
    let rsa = Signer::rsa();
    let (_issuer, jwks) = Issuer::start(vec![rsa.jwk()]).await;
    let served = serve_auth(&jwks, &[], Duration::from_secs(10)).await;
    let reader = client_with(&served.url, &rsa.sign(&claims("alice", "ops.read"))).await;
    let names: Vec<String> = reader.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["status"]);
    let refused = call(&reader, "deploy", json!({})).await;
    assert!(is_error(&refused) && text(&refused).contains("unknown tool \"deploy\""), "{refused:?}");
    assert!(text(&call(&reader, "status", json!({})).await).contains("ran status"));
    let writer = client_with(&served.url, &rsa.sign(&claims("bob", "ops.read ops.write"))).await;
    let names: Vec<String> = writer.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["status", "deploy"]);
    assert!(text(&call(&writer, "deploy", json!({})).await).contains("ran deploy"));
    // The listing a legacy session's plain JSON request gets from the HTTP layer is filtered the same way.
    let http = reqwest::Client::new();
    let token = rsa.sign(&claims("alice", "ops.read"));
    let resp = raw::http_post(served.addr).header("authorization", bearer(&token)).body(INIT).send().await.unwrap();
    let session = resp.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let list = http
        .post(&served.url)
        .header("authorization", bearer(&token))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#)
        .send()
        .await
        .unwrap();
    let listing: Value = list.json().await.unwrap();
    let names: Vec<&str> =
        listing["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["status"]);
    reader.cancel().await.unwrap();
    writer.cancel().await.unwrap();
    served.stop().await.unwrap();
}

#[tokio::test]
async fn auth_8_the_caller_is_in_events_and_a_session_serves_only_the_caller_that_opened_it() {
    let rsa = Signer::rsa();
    let (_issuer, jwks) = Issuer::start(vec![rsa.jwk()]).await;
    let served = serve_auth(&jwks, &[], Duration::from_secs(10)).await;
    let alice = client_with(&served.url, &rsa.sign(&claims("alice", ""))).await;
    call(&alice, "status", json!({})).await;
    let events = served.events();
    assert!(events.iter().any(|e| e == "call status status by alice (client ops-console)"), "{events:?}");
    let connected =
        "connected fisk-test-client 1.0 2025-11-25 elicitation=false NoneGated by alice (client ops-console)";
    assert!(events.iter().any(|e| e == connected), "{events:?}");
    // Mallory, with a valid token of her own, cannot use Alice's session.
    let alice_token = rsa.sign(&claims("alice", ""));
    let resp =
        raw::http_post(served.addr).header("authorization", bearer(&alice_token)).body(INIT).send().await.unwrap();
    let session = resp.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let list = |token: String| {
        let session = session.clone();
        async move {
            raw::http_post(served.addr)
                .header("authorization", bearer(&token))
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25")
                .body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(list(rsa.sign(&claims("mallory", ""))).await, 404);
    assert_eq!(list(rsa.sign(&claims("alice", ""))).await, 200);
    alice.cancel().await.unwrap();
    served.stop().await.unwrap();
}

#[tokio::test]
async fn auth_7_a_rotated_key_is_fetched_on_its_first_token_and_an_unknown_kid_flood_is_rate_limited() {
    let old = Signer::rsa();
    let new = Signer::new(Algorithm::ES256, "ec-2", "ec.pem");
    let (issuer, jwks) = Issuer::start(vec![old.jwk()]).await;
    // The least interval a URL source allows.
    let interval = Duration::from_secs(1);
    let served = serve_auth(&jwks, &[], interval).await;
    assert_eq!(issuer.reads(), 1, "read once at start");
    let old_token = old.sign(&claims("alice", ""));
    assert_eq!(initialize(served.addr, Some(&bearer(&old_token))).await.0, 200);

    // A flood of tokens naming key ids the issuer never published: at most one read per interval.
    let started = std::time::Instant::now();
    for i in 0..60 {
        let token = old.sign_as(&format!("made-up-{i}"), &claims("mallory", ""));
        let (status, _, body) = initialize(served.addr, Some(&bearer(&token))).await;
        assert_eq!(status, 401);
        assert_eq!(body, "the token's key id is not one of the issuer's keys");
    }
    let allowed = 1 + (started.elapsed().as_millis() / interval.as_millis()) as usize + 1;
    assert!(issuer.reads() <= allowed, "{} reads for the flood, at most {allowed} allowed", issuer.reads());

    // The issuer rotates: the new key only. Its first token is accepted once the interval allows a read.
    issuer.publish(vec![new.jwk()]);
    tokio::time::sleep(interval).await;
    let before = issuer.reads();
    assert_eq!(initialize(served.addr, Some(&bearer(&new.sign(&claims("alice", ""))))).await.0, 200);
    assert_eq!(issuer.reads(), before + 1);
    // The retired key no longer verifies, though a token it signed was accepted (and remembered) before.
    tokio::time::sleep(interval).await;
    let (status, _, body) = initialize(served.addr, Some(&bearer(&old_token))).await;
    assert_eq!((status, body.as_str()), (401, "the token's key id is not one of the issuer's keys"));
    served.stop().await.unwrap();
}

#[tokio::test]
async fn auth_7_a_local_jwks_file_is_read_at_start_and_again_for_a_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    let rsa = Signer::rsa();
    let ed = Signer::new(Algorithm::EdDSA, "ed-1", "ed.pem");
    std::fs::write(&file, json!({"keys": [rsa.jwk()]}).to_string()).unwrap();
    let lines =
        vec![format!("issuer: {ISSUER}"), format!("audience: {AUDIENCE}"), format!("jwks_file: {}", file.display())];
    let config = auth_config(dir.path(), &lines);
    let served = serve_config(dir, config, |b| b.jwks_min_refresh(Duration::ZERO)).await;
    assert_eq!(initialize(served.addr, Some(&bearer(&rsa.sign(&claims("a", ""))))).await.0, 200);
    assert_eq!(initialize(served.addr, Some(&bearer(&ed.sign(&claims("a", ""))))).await.0, 401);
    std::fs::write(&file, json!({"keys": [rsa.jwk(), ed.jwk()]}).to_string()).unwrap();
    assert_eq!(initialize(served.addr, Some(&bearer(&ed.sign(&claims("a", ""))))).await.0, 200);
    served.stop().await.unwrap();
}

/// Build a server whose issuer serves `body` at its JWKS URL (or nothing listens there): the build error's text.
async fn build_error(body: Option<String>) -> String {
    let url = match body {
        Some(body) => {
            let app = axum::Router::new().route("/jwks", axum::routing::get(move || async move { body }));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/jwks", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, app).await });
            url
        }
        None => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}/jwks", listener.local_addr().unwrap());
            drop(listener);
            url
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let config = auth_config(dir.path(), &auth_lines(&url, &[]));
    McpServer::builder().config(config).build().await.expect_err("the keys are not usable").to_string()
}

#[tokio::test]
async fn auth_1_keys_that_cannot_be_read_or_used_refuse_the_start_naming_the_source() {
    let secret = json!({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "s"}]}).to_string();
    let why = build_error(Some(secret)).await;
    assert!(why.contains("expose.agent.mcp.auth") && why.contains("jwks_url") && why.contains("oct"), "{why}");
    let why = build_error(Some("<html>".to_owned())).await;
    assert!(why.contains("not a JWKS document"), "{why}");
    let why = build_error(Some(format!("{{\"keys\":[{}]}}", "\"x\",".repeat(100_000)))).await;
    assert!(why.contains("larger than 256 KiB"), "{why}");
    let why = build_error(None).await;
    assert!(why.contains("cannot fetch the keys"), "{why}");
    // An encryption key is no signature key.
    let mut enc = Signer::rsa().jwk();
    enc["use"] = json!("enc");
    let why = build_error(Some(json!({"keys": [enc]}).to_string())).await;
    assert!(why.contains("not a signature key"), "{why}");
}

#[test]
fn auth_1_an_auth_block_needs_an_issuer_an_audience_and_exactly_one_key_source() {
    let dir = tempfile::tempdir().unwrap();
    let load = |lines: &[&str]| {
        let lines: Vec<String> = lines.iter().map(|s| (*s).to_owned()).collect();
        let app = common::fake_app(dir.path(), "auth-app");
        let mut yaml =
            format!("identity: a\napplication_path: {}\nexpose:\n  agent:\n    mcp:\n      auth:\n", app.display());
        for l in &lines {
            yaml.push_str(&format!("        {l}\n"));
        }
        Config::from_yaml_str(&yaml).map(drop).unwrap_err().to_string()
    };
    let why = load(&["audience: https://m.example", "jwks_url: https://i.example/jwks"]);
    assert!(why.contains("expose.agent.mcp.auth.issuer is required"), "{why}");
    let why = load(&["issuer: https://i.example", "jwks_url: https://i.example/jwks"]);
    assert!(why.contains("expose.agent.mcp.auth.audience is required"), "{why}");
    let why = load(&["issuer: https://i.example", "audience: https://m.example"]);
    assert!(why.contains("sets neither jwks_url nor jwks_file"), "{why}");
    let why = load(&[
        "issuer: https://i.example",
        "audience: https://m.example",
        "jwks_url: https://i.example/k",
        "jwks_file: /k",
    ]);
    assert!(why.contains("sets both jwks_url and jwks_file"), "{why}");
    let why = load(&["issuer: http://i.example", "audience: https://m.example", "jwks_file: /k"]);
    assert!(why.contains("http is only allowed for a loopback host"), "{why}");
    let why = load(&[
        "issuer: https://i.example",
        "audience: https://m.example",
        "jwks_file: /k",
        "required_scopes: [\"a b\"]",
    ]);
    assert!(why.contains("invalid scope"), "{why}");
    let why = load(&["issuer: https://i.example", "audience: https://m.example", "jwks_file: /k", "jwks: x"]);
    assert!(why.contains("jwks"), "{why}");
}

#[tokio::test]
async fn auth_9_a_server_that_is_not_loopback_needs_auth_or_the_explicit_opt_out() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "auth-app");
    let yaml = |extra: &str| {
        format!("identity: a\napplication_path: {}\nexpose:\n  agent:\n    mcp:\n      port: 1\n{extra}", app.display())
    };
    let server = McpServer::builder()
        .config(Config::from_yaml_str(&yaml("")).unwrap())
        .address("0.0.0.0")
        .build()
        .await
        .unwrap();
    let why = server.bind().await.expect_err("no auth on all interfaces").to_string();
    assert!(
        why.contains("expose.agent.mcp.auth") && why.contains("insecure_no_auth") && why.contains("0.0.0.0"),
        "{why}"
    );
    // The same check holds for a listener the host bound itself.
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let why = server.serve(listener, async {}).await.expect_err("no auth on all interfaces").to_string();
    assert!(why.contains("without authentication"), "{why}");
    // Loopback needs nothing, as before.
    let local = McpServer::builder().config(Config::from_yaml_str(&yaml("")).unwrap()).build().await.unwrap();
    assert!(local.warnings().iter().all(|w| w.kind() != "insecure_no_auth"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    local.serve(listener, async {}).await.unwrap();
    // The opt-out serves, with a warning.
    let config = Config::from_yaml_str(&yaml("      insecure_no_auth: true\n")).unwrap();
    let open = McpServer::builder().config(config).address("0.0.0.0").build().await.unwrap();
    let warning = open.warnings().iter().find(|w| w.kind() == "insecure_no_auth").expect("a warning");
    assert!(warning.to_string().contains("without authentication"), "{warning}");
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    open.serve(listener, async {}).await.unwrap();
}

#[tokio::test]
async fn auth_5_scope_tags_without_auth_are_warned_about_and_every_tool_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "auth-app");
    let yaml = format!("identity: a\napplication_path: {}\nexpose:\n  agent:\n    mcp: {{}}\n", app.display());
    let server = McpServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap();
    assert_eq!(server.tools().len(), 2);
    let w = server.warnings().iter().find(|w| w.kind() == "scope_tag").expect("a scope_tag warning");
    assert!(w.to_string().contains("deploy") && w.to_string().contains("not enforced"), "{w}");
}

#[tokio::test]
async fn auth_2_a_token_without_kid_is_checked_against_the_keys_and_a_kid_with_another_alg_fails() {
    let rsa = Signer::rsa();
    let ec = Signer::new(Algorithm::ES256, "ec-1", "ec.pem");
    let (_issuer, jwks) = Issuer::start(vec![rsa.jwk(), ec.jwk()]).await;
    let served = serve_auth(&jwks, &[], Duration::from_secs(10)).await;
    let mut header = Header::new(Algorithm::ES256);
    header.kid = None;
    let keyless =
        jsonwebtoken::encode(&header, &claims("alice", ""), &EncodingKey::from_ec_pem(&fixture("ec.pem")).unwrap())
            .unwrap();
    assert_eq!(initialize(served.addr, Some(&bearer(&keyless))).await.0, 200);
    // Signed with the EC key but naming the RSA key's id: that key cannot verify ES256, and no other key is tried.
    let (status, _, body) = initialize(served.addr, Some(&bearer(&ec.sign_as("rsa-1", &claims("alice", ""))))).await;
    assert_eq!((status, body.as_str()), (401, "the token's signature does not verify"));
    // Within the leeway, nbf passes.
    let soon = with(&claims("alice", ""), "nbf", json!(now() + 10));
    assert_eq!(initialize(served.addr, Some(&bearer(&rsa.sign(&soon)))).await.0, 200);
    served.stop().await.unwrap();
}

#[tokio::test]
async fn auth_8_a_session_id_that_is_not_text_and_a_token_naming_nobody_are_refused() {
    let rsa = Signer::rsa();
    let (_issuer, jwks) = Issuer::start(vec![rsa.jwk()]).await;
    let served = serve_auth(&jwks, &[], Duration::from_secs(10)).await;
    let token = rsa.sign(&claims("alice", ""));
    let odd = reqwest::header::HeaderValue::from_bytes(b"\xff\xfe").unwrap();
    let resp = raw::http_post(served.addr)
        .header("authorization", bearer(&token))
        .header("mcp-session-id", odd)
        .body(INIT)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400, "rmcp would open a session nobody owns");
    let nobody = without(&without(&claims("x", ""), "sub"), "client_id");
    let (status, _, body) = initialize(served.addr, Some(&bearer(&rsa.sign(&nobody)))).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("names no subject"), "{body}");
    served.stop().await.unwrap();
}

/// AUTH-5 on the paged path (2026-07-28): pages run over the tools this caller sees, so a page is full and the
/// cursors count visible tools only.
#[tokio::test]
async fn auth_5_pages_of_a_long_listing_hold_only_the_visible_tools() {
    use fisk_ai::Selection;
    use fisk_ai::source::fisk::FiskApp;
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let mut doc = String::from(r#"{"name":"big","help":"","commands":["#);
    for i in 0..2100 {
        let tag = if i % 2 == 1 { r#","tags":["auth:scope=ops.write"]"# } else { "" };
        doc.push_str(&format!(r#"{}{{"name":"c{i}","help":"Command {i}"{tag}}}"#, if i > 0 { "," } else { "" }));
    }
    doc.push_str("]}");
    let dir = tempfile::tempdir().unwrap();
    let loaded = FiskApp::new(common::fake_app(dir.path(), "mcp-app")).tools_from_slice(doc.as_bytes()).unwrap();
    let tools = Selection::new().apply(loaded.tools).unwrap();
    let rsa = Signer::rsa();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [rsa.jwk()]}).to_string()).unwrap();
    let yaml = format!(
        "identity: big\nexpose:\n  agent:\n    mcp:\n      auth:\n        issuer: {ISSUER}\n        audience: {AUDIENCE}\n        \
         jwks_file: {}\n",
        jwks.display()
    );
    let config = Config::from_yaml_str(&yaml).unwrap();
    let served = serve_config(dir, config, move |b| b.toolset(tools)).await;
    let config =
        StreamableHttpClientTransportConfig::with_uri(served.url.clone()).auth_header(rsa.sign(&claims("alice", "")));
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client = TestClient::new(false, Answer::Decline)
        .serve_with_lifecycle(StreamableHttpClientTransport::from_config(config), lifecycle)
        .await
        .unwrap();
    let first = client.peer().list_tools(None).await.unwrap();
    assert_eq!((first.tools.len(), first.next_cursor.as_deref()), (1000, Some("1000")));
    let all = client.list_all_tools().await.unwrap();
    assert_eq!(all.len(), 1050);
    assert!(all.iter().all(|t| t.name.trim_start_matches('c').parse::<usize>().unwrap() % 2 == 0));
    client.cancel().await.unwrap();
    served.stop().await.unwrap();
}

/// AUTH-8 on the stateless 2026-07-28 lifecycle, where no session separates callers: a task is visible only to the
/// caller that made it.
#[tokio::test]
async fn auth_8_a_task_is_visible_only_to_the_caller_that_made_it() {
    use rmcp::model::{CallToolResponse, GetTaskParams, ProtocolVersion};
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let rsa = Signer::rsa();
    let (_issuer, jwks) = Issuer::start(vec![rsa.jwk()]).await;
    let served = serve_auth(&jwks, &[], Duration::from_secs(10)).await;
    let connect = |sub: &'static str| {
        let config =
            StreamableHttpClientTransportConfig::with_uri(served.url.clone()).auth_header(rsa.sign(&claims(sub, "")));
        let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        TestClient::new(false, Answer::Decline)
            .with_tasks()
            .serve_with_lifecycle(StreamableHttpClientTransport::from_config(config), lifecycle)
    };
    let (alice, mallory) = (connect("alice").await.unwrap(), connect("mallory").await.unwrap());
    let id = match alice.peer().call_tool_once(params("status", json!({}))).await.unwrap() {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("a task: {other:?}"),
    };
    let get = |client: &rmcp::service::RunningService<rmcp::RoleClient, TestClient>, id: String| {
        let peer = client.peer().clone();
        async move { peer.get_task(GetTaskParams::new(id)).await.map(drop).map_err(|e| e.to_string()) }
    };
    get(&alice, id.clone()).await.expect("the owner sees it");
    let foreign = get(&mallory, id.clone()).await.expect_err("another caller does not");
    let unknown = get(&mallory, "00000000-0000-4000-8000-000000000000".to_owned()).await.unwrap_err();
    assert_eq!(foreign.replace(&id, "ID"), unknown.replace("00000000-0000-4000-8000-000000000000", "ID"));
    alice.cancel().await.unwrap();
    mallory.cancel().await.unwrap();
    served.stop().await.unwrap();
}
