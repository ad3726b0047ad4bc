//! MCP replicas (REPL-1..5): under 2026-07-28 the server keeps no sessions, so N `cli mcp` behind a plain load
//! balancer share one NATS. Real parts: a real `nats-server -js` with the approvals bucket made as `nats kv add`
//! makes it, two real `cli mcp` processes, a test-local HTTP proxy that sends each request to the next replica in
//! turn, and rmcp's client on the 2026-07-28 protocol. A gated command that ran leaves a line in the fake app's
//! `ran` file, which both replicas share.
#![cfg(all(feature = "mcp", feature = "nats"))]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use common::cli::Cli;
use common::nats::NatsServer;
use mcp_support::*;
use rmcp::model::CallToolResponse;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;

/// A round-robin HTTP proxy: request n goes to backend n mod N, whatever it is. It logs which backend got each
/// JSON-RPC method, so a test can assert where each round went.
struct Proxy {
    backends: Vec<u16>,
    next: AtomicUsize,
    log: Mutex<Vec<(usize, String)>>,
    http: reqwest::Client,
}

impl Proxy {
    async fn start(backends: Vec<u16>) -> (Arc<Proxy>, String) {
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let proxy = Arc::new(Proxy { backends, next: AtomicUsize::new(0), log: Mutex::default(), http });
        let app = axum::Router::new().fallback(forward).with_state(proxy.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (proxy, url)
    }

    /// The backend that served the last `tools/call`.
    fn last_call(&self) -> usize {
        let log = self.log.lock().unwrap();
        log.iter().rev().find(|(_, m)| m == "tools/call").map(|(i, _)| *i).expect("a tools/call went through")
    }
}

const HOP_BY_HOP: [HeaderName; 4] =
    [header::HOST, header::CONTENT_LENGTH, header::TRANSFER_ENCODING, header::CONNECTION];

async fn forward(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let i = proxy.next.fetch_add(1, Ordering::SeqCst) % proxy.backends.len();
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let method = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["method"].as_str().map(str::to_owned));
    proxy.log.lock().unwrap().push((i, method.unwrap_or_default()));
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = proxy.http.request(parts.method.clone(), format!("http://127.0.0.1:{}{path}", proxy.backends[i]));
    for (k, v) in parts.headers.iter().filter(|(k, _)| !HOP_BY_HOP.contains(k)) {
        out = out.header(k, v);
    }
    match out.body(body).send().await {
        Ok(response) => {
            let mut back = Response::builder().status(response.status());
            for (k, v) in response.headers().iter().filter(|(k, _)| !HOP_BY_HOP.contains(k)) {
                back = back.header(k, v);
            }
            back.body(Body::from(response.bytes().await.unwrap_or_default())).unwrap()
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

/// NATS with the approvals bucket, a context for it, and the replicas' shared configuration.
struct Fleet {
    server: NatsServer,
    dir: TempDir,
    config: std::path::PathBuf,
    xdg: TempDir,
    _contexts: TempDir,
}

async fn fleet(bucket: &str) -> Fleet {
    let server = NatsServer::start();
    let client = async_nats::connect(server.url()).await.unwrap();
    // As `nats kv add APPROVALS --history 1` makes it (async-nats cannot create one on nats-server 2.9).
    common::kv::create_bucket(&client, "APPROVALS").await;
    let contexts = common::nats::context_dir("test", json!({ "url": server.url() }), false);
    let xdg = common::nats::xdg_home_for(contexts.path());
    let dir = tempfile::tempdir().unwrap();
    let approvals = format!("  approvals:\n    backend: nats\n    bucket: {bucket}\n");
    let yaml = format!("nats_context: test\n{}", config_yaml(dir.path(), &[], &approvals));
    let config = dir.path().join("agent.yaml");
    std::fs::write(&config, yaml).unwrap();
    Fleet { server, dir, config, xdg, _contexts: contexts }
}

impl Fleet {
    /// `cli <args> --config <the configuration>` with this fleet's NATS context.
    fn cli(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = common::example_cli(args, self.dir.path());
        cmd.arg("--config").arg(&self.config).env("XDG_CONFIG_HOME", self.xdg.path());
        cmd
    }

    /// One `cli mcp` replica on `port`, once it serves.
    fn replica(&self, port: u16) -> Cli {
        let (config, xdg) = (self.config.to_str().unwrap(), self.xdg.path().to_str().unwrap());
        let args = ["--config", config, "--port", &port.to_string()];
        let mut cli =
            Cli::start("mcp", &args, &["FISK_AI_MCP_PORT", "FISK_AI_MCP_ADDRESS"], &[("XDG_CONFIG_HOME", xdg)]);
        assert!(cli.wait_for("register it with an MCP client"), "replica on {port}:\n{}", cli.stderr());
        cli
    }

    fn ran(&self) -> Vec<String> {
        ran_in(self.dir.path())
    }
}

fn ran_in(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("ran")).map(|s| s.lines().map(str::to_owned).collect()).unwrap_or_default()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The first 2026-07-28 round: the approval request and the state.
async fn first_round(client: &Client, args: Value) -> String {
    match client.call_tool_once(params("purge", args)).await.unwrap() {
        CallToolResponse::InputRequired(r) => r.request_state.expect("state"),
        other => panic!("expected input_required, got {other:?}"),
    }
}

/// The second round: the state echoed with an answer.
async fn answer(client: &Client, args: Value, state: &str, approve: bool) -> rmcp::model::CallToolResult {
    let answer = json!({"action": "accept", "content": {"approve": approve}});
    let p = params("purge", args)
        .with_request_state(state)
        .with_input_responses(BTreeMap::from([("approval".to_owned(), answer)]));
    match client.call_tool_once(p).await.unwrap() {
        CallToolResponse::Complete(r) => r,
        other => panic!("expected a final result, got {other:?}"),
    }
}

fn assert_denied(out: &rmcp::model::CallToolResult, needle: &str) {
    assert!(is_error(out), "a denial is an error result: {out:?}");
    let t = text(out);
    assert!(t.contains("did not run") && t.contains(needle), "{needle:?} in {t}");
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn repl_1_2_4_an_elicitation_started_on_one_replica_is_accepted_on_the_other_and_a_replay_is_refused_on_both() {
    let fleet = fleet("APPROVALS").await;
    let (a, b) = (free_port(), free_port());
    let (mut one, mut two) = (fleet.replica(a), fleet.replica(b));
    let (proxy, url) = Proxy::start(vec![a, b]).await;
    let client = connect(&url, TestClient::new(true, Answer::Approve), Era::Modern).await;
    let args = || json!({"target": "x"});

    let state = first_round(&client, args()).await;
    let asked = proxy.last_call();
    // REPL-4: the record is in the bucket under mcp.<state>, with digests only; operators' tooling leaves it alone.
    let kv = async_nats::jetstream::new(async_nats::connect(fleet.server.url()).await.unwrap());
    let kv = kv.get_key_value("APPROVALS").await.unwrap();
    let record: Value = serde_json::from_slice(&kv.get(format!("mcp.{state}")).await.unwrap().unwrap()).unwrap();
    assert_eq!(record["tool"], "purge");
    assert_eq!(record["owner"], Value::Null, "no auth, no owner");
    assert!(!record.to_string().contains("\"x\""), "the arguments are kept as a digest: {record}");
    let listed = fleet.cli(&["approvals", "list", "--all"]).output().unwrap();
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(&state), "an MCP client's approval is not listed");
    let decided = fleet.cli(&["approvals", "approve", &format!("mcp.{state}")]).output().unwrap();
    assert!(!decided.status.success());
    assert!(String::from_utf8_lossy(&decided.stderr).contains("MCP client's pending approval"), "{decided:?}");

    // REPL-1: the answer goes to the other replica, which runs the call.
    let out = answer(&client, args(), &state, true).await;
    assert_ne!(proxy.last_call(), asked, "round-robin sent the answer to the other replica");
    assert_eq!(exec_json(&out)["output"], "purged x\n");
    assert_eq!(fleet.ran(), ["purge x"]);

    // REPL-2: replaying the same approval is refused by both replicas, and runs nothing again.
    let mut refused_by = Vec::new();
    for _ in 0..2 {
        let out = answer(&client, args(), &state, true).await;
        assert_denied(&out, "does not match a pending approval");
        refused_by.push(proxy.last_call());
    }
    refused_by.sort_unstable();
    assert_eq!(refused_by, [0, 1], "the replay reached both replicas");
    assert_eq!(fleet.ran(), ["purge x"], "ran exactly once");

    // A refusal answered on the other replica denies, and uses the record up too.
    let state = first_round(&client, json!({"target": "y"})).await;
    let out = answer(&client, json!({"target": "y"}), &state, false).await;
    assert_denied(&out, "refused to approve");
    let out = answer(&client, json!({"target": "y"}), &state, true).await;
    assert_denied(&out, "does not match a pending approval");
    assert_eq!(fleet.ran(), ["purge x"]);
    client.cancel().await.unwrap();
    for replica in [&mut one, &mut two] {
        assert!(replica.terminate().success(), "{}", replica.stderr());
    }
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn repl_2_an_answer_for_another_call_is_refused_by_the_other_replica_and_burns_the_record() {
    let fleet = fleet("APPROVALS").await;
    let (a, b) = (free_port(), free_port());
    let (_one, _two) = (fleet.replica(a), fleet.replica(b));
    let (_proxy, url) = Proxy::start(vec![a, b]).await;
    let client = connect(&url, TestClient::new(true, Answer::Approve), Era::Modern).await;
    let state = first_round(&client, json!({"target": "x"})).await;
    // Another target, or a state never issued: refused wherever it lands.
    let out = answer(&client, json!({"target": "y"}), &state, true).await;
    assert_denied(&out, "does not match");
    let out = answer(&client, json!({"target": "x"}), &state, true).await;
    assert_denied(&out, "does not match a pending approval");
    let forged = "ab".repeat(32);
    let out = answer(&client, json!({"target": "x"}), &forged, true).await;
    assert_denied(&out, "does not match a pending approval");
    let out = answer(&client, json!({"target": "x"}), "../../$KV.APPROVALS.>", true).await;
    assert_denied(&out, "does not match a pending approval");
    assert!(fleet.ran().is_empty());
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn repl_3_a_missing_approvals_bucket_is_refused_at_start_with_its_fix() {
    let fleet = fleet("NOPE").await;
    let out = fleet.cli(&["mcp", "--port", &free_port().to_string()]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("harness.approvals.bucket") && err.contains("nats kv add NOPE"), "{err}");
}

/// Two servers of this process, built from the fleet's configuration with a short confirmation timeout, each
/// with its own NATS connection; their ports, and what stops them.
async fn in_process(fleet: &Fleet, timeout: Duration) -> (Vec<u16>, tokio_util::sync::CancellationToken) {
    let stop = tokio_util::sync::CancellationToken::new();
    let mut ports = Vec::new();
    for _ in 0..2 {
        let client = async_nats::connect(fleet.server.url()).await.unwrap();
        let nats = fisk_ai::nats::NatsConnection::borrowed(client, "test");
        let config = fisk_ai::Config::from_yaml_str(&std::fs::read_to_string(&fleet.config).unwrap()).unwrap();
        let harness = fisk_ai::harness::Harness::builder().config(config).nats(nats).for_agent(false);
        let harness = Arc::new(harness.build().await.unwrap());
        assert!(harness.approvals().is_some(), "the harness bound the bucket");
        let server = fisk_ai::McpServer::builder().harness(harness).confirm_timeout(timeout).build().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        ports.push(listener.local_addr().unwrap().port());
        tokio::spawn(server.serve(listener, stop.clone().cancelled_owned()));
    }
    (ports, stop)
}

/// Two in-process replicas whose approvals expire after 400 ms, behind the round-robin proxy, and a client of it.
async fn expiring_pair(fleet: &Fleet) -> (Arc<Proxy>, Client, tokio_util::sync::CancellationToken) {
    let (ports, stop) = in_process(fleet, Duration::from_millis(400)).await;
    let (proxy, url) = Proxy::start(ports).await;
    let client = connect(&url, TestClient::new(true, Answer::Approve), Era::Modern).await;
    (proxy, client, stop)
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn repl_2_an_approval_that_expired_on_one_replica_is_refused_on_the_other() {
    let fleet = fleet("APPROVALS").await;
    let (proxy, client, stop) = expiring_pair(&fleet).await;
    let state = first_round(&client, json!({"target": "x"})).await;
    let asked = proxy.last_call();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let out = answer(&client, json!({"target": "x"}), &state, true).await;
    assert_ne!(proxy.last_call(), asked);
    assert_denied(&out, "nobody answered");
    assert!(fleet.ran().is_empty());
    stop.cancel();
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn repl_5_a_record_nobody_answered_is_purged_from_the_bucket_when_its_replica_next_opens_one() {
    let fleet = fleet("APPROVALS").await;
    let (proxy, client, stop) = expiring_pair(&fleet).await;
    let kv = async_nats::jetstream::new(async_nats::connect(fleet.server.url()).await.unwrap());
    let kv = kv.get_key_value("APPROVALS").await.unwrap();
    let stale = first_round(&client, json!({"target": "x"})).await;
    let opener = proxy.last_call();
    assert!(kv.get(format!("mcp.{stale}")).await.unwrap().is_some(), "the record is in the bucket");
    tokio::time::sleep(Duration::from_millis(800)).await;
    // Nobody answered it and it expired; it stays until the replica that opened it opens another.
    assert!(kv.get(format!("mcp.{stale}")).await.unwrap().is_some());
    let mut fresh = Vec::new();
    loop {
        fresh.push(first_round(&client, json!({"target": "y"})).await);
        if proxy.last_call() == opener {
            break;
        }
        assert!(fresh.len() < 4, "round-robin never came back to the replica that opened the record");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while kv.get(format!("mcp.{stale}")).await.unwrap().is_some() {
        assert!(std::time::Instant::now() < deadline, "the expired record was never purged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Only what expired goes: the round just opened is still there to be answered.
    let newest = fresh.last().unwrap();
    assert!(kv.get(format!("mcp.{newest}")).await.unwrap().is_some(), "a live record was purged");
    assert!(fleet.ran().is_empty());
    client.cancel().await.unwrap();
    stop.cancel();
}
