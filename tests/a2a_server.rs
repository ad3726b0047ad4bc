//! a2a serving (SPEC section 16.1, A2A-1..12) against a real `nats-server`, driven by a raw client that builds the
//! v1 messages by hand, so every test sees exactly what a Go or Rust peer would.
#![cfg(feature = "nats")]

mod common;

use common::a2a::{self, Reply};
use common::nats::NatsServer;
use fisk_ai::nats::NatsConnection;
use fisk_ai::nats::wire::MessageKind;
use fisk_ai::serve::a2a::{A2aEvent, A2aServer, Running};
use fisk_ai::{Config, ErrorKind, Warning};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A configuration serving the fake `mcp-app` (echo, purge, farm feed, slow, hang, fail, odd, wipe, dot.ted) as
/// `farm`, with `extra` appended under `expose.agent`.
fn config(dir: &Path, extra: &str) -> Config {
    let app = common::fake_app(dir, "mcp-app");
    let yaml = format!(
        "identity: farm\napplication_path: {}\nnats_context: test\nharness:\n  confirm_tags: [impact:rw]\n\
         expose:\n  agent:\n    agent_to_agent: true\n{extra}",
        app.display()
    );
    Config::from_yaml_str(&yaml).unwrap()
}

async fn client(server: &NatsServer) -> async_nats::Client {
    async_nats::connect(server.url()).await.unwrap()
}

/// Every event the server emitted, as text.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn sink(&self) -> impl Fn(&A2aEvent<'_>) + Send + Sync + 'static {
        let log = self.0.clone();
        move |e: &A2aEvent<'_>| {
            let line = match e {
                A2aEvent::ToolCall { display, caller, .. } => format!("call {display} for {caller}"),
                A2aEvent::Rejected { endpoint, code, description } => {
                    format!("rejected {endpoint} {code} {description}")
                }
                other => format!("{other:?}"),
            };
            log.lock().unwrap().push(line);
        }
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

async fn start(nats: &NatsServer, config: Config, log: &Log) -> Running {
    let conn = NatsConnection::borrowed(client(nats).await, "test");
    let server = A2aServer::builder().config(config).nats(conn).events(log.sink()).build().await.unwrap();
    server.start().await.unwrap()
}

/// One test's world: a `nats-server`, a directory holding the fake application, a server started on it with
/// `extra` under `expose.agent`, the server's event log, and a client. Bind `nats` and `dir` (as `_nats`, `_dir`
/// when unused): dropping them stops the server and removes the application.
struct Served {
    nats: NatsServer,
    dir: tempfile::TempDir,
    log: Log,
    running: Running,
    client: async_nats::Client,
}

async fn served(extra: &str) -> Served {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let running = start(&nats, config(dir.path(), extra), &log).await;
    let client = client(&nats).await;
    Served { nats, dir, log, running, client }
}

fn names(card: &Value) -> Vec<&str> {
    card["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_2_4_8_the_card_lists_served_commands_only() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let conn = NatsConnection::borrowed(client(&nats).await, "test");
    let server = A2aServer::builder().config(config(dir.path(), "")).nats(conn).version("1.2.3").build().await.unwrap();
    // A2A-4: gated (purge: ai:confirm; farm feed: impact:rw) and invalid-name (dot.ted) commands are skipped,
    // each with a warning; ai:deny (wipe) never got this far.
    let warned: Vec<String> = server.warnings().iter().map(ToString::to_string).collect();
    assert!(warned.iter().any(|w| w.contains("\"purge\" is not served over a2a") && w.contains("ai:confirm")));
    assert!(warned.iter().any(|w| w.contains("\"farm_feed\" is not served over a2a") && w.contains("impact:rw")));
    assert!(server.warnings().iter().any(|w| matches!(w, Warning::InvalidToolName { .. })), "{warned:?}");
    let running = server.start().await.unwrap();

    let client = client(&nats).await;
    let reply = a2a::send_json(&client, "choria.fisk-ai.discovery.farm", &a2a::discovery_request("farm")).await;
    assert_eq!(reply.error, None);
    let card = reply.body;
    assert!(MessageKind::DiscoveryReply.validate(&card).is_ok(), "{card}");
    assert_eq!(card["protocol"], "io.choria.fisk-ai.v1.discovery.reply");
    assert_eq!((card["name"].as_str(), card["version"].as_str()), (Some("farm"), Some("1.2.3")));
    assert_eq!(card["protocols"], json!(["io.choria.fisk-ai.v1"]));
    assert_eq!(names(&card), ["echo", "slow", "hang", "fail", "odd"]);
    let echo = &card["tools"][0];
    assert_eq!(echo["description"], "Print the words back\n\nTags: ai:read_only, ai:idempotent");
    assert_eq!(echo["input_schema"]["type"], "object");
    assert!(echo["input_schema"]["properties"]["words"].is_object(), "{echo}");
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_6_replies_echo_the_request_and_address_its_sender() {
    let Served { nats: _nats, dir: _dir, running, client, .. } = served("").await;
    let request = a2a::tool_request("farm", "echo", Some(json!({"words": ["a", "-b c"]})));
    let reply = a2a::send_json(&client, "choria.fisk-ai.tool.farm", &request).await.body;
    assert!(MessageKind::ToolReply.validate(&reply).is_ok(), "{reply}");
    assert_eq!(reply["protocol"], "io.choria.fisk-ai.v1.tool.reply");
    assert_eq!(reply["request"], request["id"]);
    assert_eq!(reply["conversation"], request["conversation"]);
    assert_ne!(reply["id"], request["id"]);
    assert_eq!(reply["id"].as_str().unwrap().len(), 27, "a KSUID");
    assert_eq!(
        (reply["sequence"].as_u64(), &reply["sender"], &reply["recipient"]),
        (Some(0), &json!({"name": "farm"}), &json!({"name": "tester"}))
    );
    running.shutdown().await;
}

/// Milliseconds since the epoch of a `YYYY-MM-DDTHH:MM:SS.mmmZ` time, as the server writes it.
fn epoch_ms(text: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| text[r].parse::<i64>().unwrap();
    let (m, d) = (n(5..7), n(8..10));
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { n(0..4) - 1 } else { n(0..4) };
    let (era, yoe) = (y.div_euclid(400), y.rem_euclid(400));
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + doe - 719_468;
    (days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)) * 1000 + n(20..23)
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_6_a_tool_reply_is_stamped_when_it_is_written_not_when_its_command_started() {
    let Served { nats: _nats, dir, running, client, .. } = served("").await;
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let before = i64::try_from(since.as_millis()).unwrap();
    // `slow` sleeps 0.3 s. A server may prepare a reply while its command runs, but the time says when it was written.
    let log = dir.path().join("slow.log");
    let reply = a2a::call(&client, "farm", "slow", Some(json!({"log": log.display().to_string()}))).await;
    assert_eq!(reply["output"], "slept\n", "{reply}");
    // The reader itself, on dates either side of the March shift in days_from_civil.
    assert_eq!(epoch_ms("2024-02-29T23:59:59.999Z"), 1_709_251_199_999);
    assert_eq!(epoch_ms("2026-12-01T10:00:00.123Z"), 1_796_119_200_123);
    let stamped = epoch_ms(reply["time"].as_str().unwrap());
    assert!(stamped >= before + 300, "reply time {} is before the command ended (sent at {before} ms)", reply["time"]);
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_9_tool_replies_carry_output_and_what_ran() {
    let Served { nats: _nats, dir: _dir, log, running, client } = served("").await;

    let echo = a2a::call(&client, "farm", "echo", Some(json!({"words": ["a", "-b c"]}))).await;
    assert_eq!(echo["output"], "echo: a -b c\n");
    // Zero exit codes and false flags are left out, never written as 0/false/null.
    assert_eq!(echo["exec"], json!({"command": "echo -- a -b c"}));
    assert!(echo.get("is_error").is_none(), "{echo}");

    // A non-zero exit is not an error.
    let fail = a2a::call(&client, "farm", "fail", None).await;
    assert_eq!((&fail["output"], &fail["exec"]), (&json!("partial\n"), &json!({"command": "fail", "exit_code": 7})));
    assert!(fail.get("is_error").is_none());

    // Input failing the command's schema is a harness failure, in band, naming the property.
    let bad = a2a::call(&client, "farm", "echo", Some(json!({"words": "not-an-array"}))).await;
    assert_eq!(bad["is_error"], true);
    assert!(bad["output"].as_str().unwrap().contains("words"), "{bad}");
    assert!(bad.get("exec").is_none());

    // A key twice inside input is refused, naming it, as on every other surface; not merged, last wins.
    let once = serde_json::to_string(&a2a::tool_request("farm", "echo", Some(json!({"words": ["a"]})))).unwrap();
    let twice = once.replace(r#"{"words":["a"]}"#, r#"{"words":["a"],"words":["rm"]}"#);
    let wait = std::time::Duration::from_secs(20);
    let reply = a2a::send(&client, "choria.fisk-ai.tool.farm", twice.into_bytes(), wait).await.body;
    assert_eq!(reply["is_error"], true, "{reply}");
    assert!(reply["output"].as_str().unwrap().contains(r#"duplicate property "words""#), "{reply}");
    assert!(reply.get("exec").is_none(), "{reply}");

    let lines = log.lines();
    assert_eq!(lines.iter().filter(|l| l.starts_with("call ")).count(), 2, "only echo and fail ran: {lines:?}");
    assert!(log.lines().contains(&"call echo -- a '-b c' for tester".to_owned()), "{:?}", log.lines());
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_9_unknown_and_gated_tools_get_an_in_band_error() {
    let Served { nats: _nats, dir, running, client, .. } = served("").await;
    for name in ["nope", "purge", "farm_feed", "wipe"] {
        let reply = a2a::call(&client, "farm", name, Some(json!({"target": "x"}))).await;
        assert_eq!(reply["is_error"], true, "{name}");
        assert_eq!(reply["output"], format!("tool \"{name}\" is not available"));
    }
    // Nothing gated ran.
    assert!(!dir.path().join("ran").exists());
    running.shutdown().await;
}

fn rejected(reply: Reply) -> (String, String) {
    assert_eq!(reply.body, Value::Null, "the error reply has an empty body");
    reply.error.expect("a transport error")
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_10_oversize_invalid_and_wrong_protocol_bodies_get_400() {
    let Served { nats: _nats, dir: _dir, log, running, client } = served("").await;
    let tool = "choria.fisk-ai.tool.farm";
    let long = std::time::Duration::from_secs(20);

    let mut big = a2a::tool_request("farm", "echo", Some(json!({"words": ["x"]})));
    big["input"]["words"][0] = json!("x".repeat(786_432));
    let reply = a2a::send(&client, tool, serde_json::to_vec(&big).unwrap(), long).await;
    assert_eq!(rejected(reply), ("400".to_owned(), "request exceeds 786432 bytes".to_owned()));

    let reply = a2a::send(&client, tool, b"{not json".to_vec(), long).await;
    let (code, text) = rejected(reply);
    assert!(code == "400" && text.starts_with("invalid request: "), "{text}");

    let mut extra = a2a::tool_request("farm", "echo", None);
    extra["priority"] = json!(1);
    let (code, text) = rejected(a2a::send_json(&client, tool, &extra).await);
    assert!(code == "400" && text.starts_with("invalid request: ") && text.contains("priority"), "{text}");

    // serde_json's private key, which its `Value` would read as the JSON in the string: refused, never unwrapped.
    let wrapped = a2a::tool_request("farm", "echo", Some(json!({"$serde_json::private::RawValue": "{\"words\":[]}"})));
    let (code, text) = rejected(a2a::send_json(&client, tool, &wrapped).await);
    assert!(code == "400" && text.contains(r#"reserved property "$serde_json::private::RawValue""#), "{text}");

    let mut nulls = a2a::tool_request("farm", "echo", None);
    nulls["input"] = Value::Null;
    let (code, text) = rejected(a2a::send_json(&client, tool, &nulls).await);
    assert!(code == "400" && text.starts_with("invalid request: "), "{text}");

    let (code, text) = rejected(a2a::send_json(&client, tool, &a2a::discovery_request("farm")).await);
    assert_eq!(code, "400");
    assert_eq!(
        text,
        r#"unexpected message protocol: got "io.choria.fisk-ai.v1.discovery.request", want "io.choria.fisk-ai.v1.tool.request""#
    );
    let wrong = a2a::tool_request("farm", "echo", None);
    let on_discovery = a2a::send_json(&client, "choria.fisk-ai.discovery.farm", &wrong);
    let (code, text) = rejected(on_discovery.await);
    assert_eq!(code, "400");
    assert!(text.starts_with(r#"unexpected message protocol: got "io.choria.fisk-ai.v1.tool.request""#), "{text}");

    let lines = log.lines();
    assert!(lines.iter().any(|l| l == "rejected tool 400 request exceeds 786432 bytes"), "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("call ")), "nothing ran: {lines:?}");
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_10_a_replayed_id_is_answered_again_under_a_fresh_reply_id() {
    let Served { nats: _nats, dir: _dir, log, running, client } = served("").await;
    let request = a2a::tool_request("farm", "echo", Some(json!({"words": ["again"]})));
    let first = a2a::send_json(&client, "choria.fisk-ai.tool.farm", &request).await.body;
    let second = a2a::send_json(&client, "choria.fisk-ai.tool.farm", &request).await.body;
    // Like the reference, the server keeps no replay cache: each delivery is a call, answered under its own id.
    for reply in [&first, &second] {
        assert_eq!(reply["request"], request["id"]);
        assert_eq!(reply["output"], "echo: again\n");
    }
    assert_ne!(first["id"], second["id"]);
    assert_eq!(log.lines().iter().filter(|l| l.starts_with("call echo")).count(), 2);
    running.shutdown().await;
}

/// The largest number of `start`/`end` intervals in `log` open at once.
fn peak_overlap(log: &str) -> usize {
    let (mut open, mut peak) = (0usize, 0usize);
    for line in log.lines() {
        if line.starts_with("start") {
            open += 1;
            peak = peak.max(open);
        } else if line.starts_with("end") {
            open -= 1;
        }
    }
    peak
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_11_at_most_max_concurrent_tools_run_at_once() {
    let Served { nats: _nats, dir, running, client, .. } = served("    a2a:\n      max_concurrent_tools: 2\n").await;
    let log = dir.path().join("slow.log");
    let calls = (0..6).map(|_| a2a::call(&client, "farm", "slow", Some(json!({"log": log.display().to_string()}))));
    for reply in futures::future::join_all(calls).await {
        assert_eq!(reply["output"], "slept\n", "{reply}");
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 12, "{text}");
    // Never more than two at once, and the bound was actually reached.
    assert_eq!(peak_overlap(&text), 2, "{text}");
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_11_tool_timeout_stops_the_command_and_says_so() {
    let Served { nats: _nats, dir, running, client, .. } = served("    a2a:\n      tool_timeout: 1s\n").await;
    let pids = dir.path().join("pids");
    let reply = a2a::call(&client, "farm", "hang", Some(json!({"pidfile": pids.display().to_string()}))).await;
    assert_eq!(reply["is_error"], true, "{reply}");
    assert!(reply["output"].as_str().unwrap().contains("1s"), "{reply}");
    // The background sleepers were in the command's process group, which was killed.
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let pid: i32 = pid.trim().parse().unwrap();
        let gone = (0..100).any(|_| {
            let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
            if alive {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            !alive
        });
        assert!(gone, "pid {pid} outlived the timeout");
    }
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_12_shutdown_lets_a_call_in_progress_finish() {
    let Served { nats: _nats, dir, running, client, .. } = served("").await;
    let log = dir.path().join("slow.log");
    let input = json!({"log": log.display().to_string()});
    let call = tokio::spawn({
        let client = client.clone();
        async move { a2a::call(&client, "farm", "slow", Some(input)).await }
    });
    while !log.exists() {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    running.shutdown().await;
    assert_eq!(call.await.unwrap()["output"], "slept\n");
    // Unsubscribed: nobody answers any more.
    let request = async_nats::client::Request::new()
        .payload(serde_json::to_vec(&a2a::tool_request("farm", "echo", None)).unwrap().into())
        .timeout(Some(std::time::Duration::from_secs(5)));
    let err = client.send_request("choria.fisk-ai.tool.farm", request).await.unwrap_err();
    assert_eq!(err.kind(), async_nats::client::RequestErrorKind::NoResponders, "{err}");
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_3_the_services_framework_lists_the_agent() {
    let Served { nats: _nats, dir: _dir, running, client, .. } = served("").await;
    let info = client.request("$SRV.INFO.farm", "".into()).await.unwrap();
    let info: Value = serde_json::from_slice(&info.payload).unwrap();
    assert_eq!((info["name"].as_str(), info["version"].as_str()), (Some("farm"), Some("0.0.0")));
    assert_eq!(info["description"], "fisk-ai a2a tool server");
    // The framework keeps endpoints in a map: its INFO order is its own.
    let mut endpoints: Vec<(&str, &str, &str)> = info["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["subject"].as_str().unwrap(), e["queue_group"].as_str().unwrap()))
        .collect();
    endpoints.sort();
    assert_eq!(
        endpoints,
        [("discovery", "choria.fisk-ai.discovery.farm", "farm"), ("tool", "choria.fisk-ai.tool.farm", "farm")]
    );
    let ping = client.request("$SRV.PING.farm", "".into()).await.unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&ping.payload).unwrap()["name"], "farm");
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_3_agents_sharing_an_identity_share_the_work() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (Log::default(), Log::default());
    let a = start(&nats, config(dir.path(), ""), &one).await;
    let b = start(&nats, config(dir.path(), ""), &two).await;
    let client = client(&nats).await;
    for i in 0..40 {
        let reply = a2a::call(&client, "farm", "echo", Some(json!({"words": [format!("w{i}")]}))).await;
        assert_eq!(reply["output"], format!("echo: w{i}\n"));
    }
    let count = |l: &Log| l.lines().iter().filter(|l| l.starts_with("call ")).count();
    assert_eq!(count(&one) + count(&two), 40);
    // Queue delivery is random: 40 calls all landing on one member has odds of 2^-39.
    assert!(count(&one) > 0 && count(&two) > 0, "{} / {}", count(&one), count(&two));
    a.shutdown().await;
    // The survivor takes everything from now on.
    for _ in 0..5 {
        assert_eq!(a2a::call(&client, "farm", "echo", Some(json!({"words": ["s"]}))).await["output"], "echo: s\n");
    }
    b.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_reconnect_the_server_resumes_serving_after_nats_restarts() {
    let mut nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let context = common::nats::context_dir("test", json!({"url": nats.url()}), false);
    let ctx = fisk_ai::nats::NatsContext::load_from(context.path(), Some("test")).unwrap();
    let conn = NatsConnection::connect(&ctx, "farm").await.unwrap();
    let log = Log::default();
    let server =
        A2aServer::builder().config(config(dir.path(), "")).nats(conn).events(log.sink()).build().await.unwrap();
    let running = server.start().await.unwrap();
    nats.restart();
    let client = client(&nats).await;
    // The client library resubscribes after reconnecting; retry until the server is back, then it must answer.
    let mut answered = None;
    for _ in 0..100 {
        let message = serde_json::to_vec(&a2a::tool_request("farm", "echo", Some(json!({"words": ["back"]})))).unwrap();
        let request =
            async_nats::client::Request::new().payload(message.into()).timeout(Some(std::time::Duration::from_secs(2)));
        if let Ok(msg) = client.send_request("choria.fisk-ai.tool.farm", request).await {
            answered = Some(serde_json::from_slice::<Value>(&msg.payload).unwrap());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(answered.expect("served again after the restart")["output"], "echo: back\n");
    let lines = log.lines();
    assert!(lines.iter().any(|l| l.contains("Disconnected")), "{lines:?}");
    running.shutdown().await;
}

#[tokio::test]
async fn a2a_1_serving_must_be_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "mcp-app");
    let yaml = format!("identity: farm\napplication_path: {}\nnats_context: test\n", app.display());
    let err = A2aServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("expose.agent.agent_to_agent"), "{err}");

    let yaml = format!("application_path: {}\nexpose: {{agent: {{agent_to_agent: true}}}}\n", app.display());
    let err = A2aServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap_err();
    assert!(err.to_string().contains("nats_context"), "{err}");

    let yaml = "nats_context: x\nexpose: {agent: {agent_to_agent: true}}\n";
    let err = A2aServer::builder().config(Config::from_yaml_str(yaml).unwrap()).build().await.unwrap_err();
    assert!(err.to_string().contains("application_path"), "{err}");
}

#[tokio::test]
async fn a2a_5_zero_served_tools_is_a_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "    tools:\n      include: {tools: [\"^purge$\", \"^farm_feed$\"]}\n");
    let err = A2aServer::builder().config(config).build().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Selection, "{err}");
    assert!(err.to_string().contains("no tools can be served over a2a"), "{err}");
}

/// The issue's restart case, from both sides: calls while the NATS server is down come back as clear error results
/// within the importer's timeout (never a hang), and once it is back the server resumes and calls succeed again.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_restart_calls_in_the_gap_are_clear_errors_then_serving_resumes() {
    use fisk_ai::source::remote::RemoteAgent;
    use fisk_ai::tool::{CallContext, ToolInput};
    let mut nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let contexts = common::nats::context_dir("test", json!({"url": nats.url()}), false);
    let ctx = fisk_ai::nats::NatsContext::load_from(contexts.path(), Some("test")).unwrap();
    let serving = NatsConnection::connect(&ctx, "farm").await.unwrap();
    let server = A2aServer::builder().config(config(dir.path(), "")).nats(serving).build().await.unwrap();
    let running = server.start().await.unwrap();
    let importing = NatsConnection::connect(&ctx, "caller").await.unwrap();
    let timeout = std::time::Duration::from_secs(2);
    let remote = RemoteAgent::new(importing, "caller", "farm").unwrap().with_timeout(timeout);
    let tools = remote.load().await.unwrap().tools;
    let echo = tools.iter().find(|t| t.spec().name() == "echo").unwrap();
    let input = ToolInput::from_json(r#"{"words":["hi"]}"#).unwrap();
    assert!(!echo.call(&input, &CallContext::new()).await.is_error());

    nats.kill();
    // A hang detector, not a timing assertion: the importer's own 2 s timeout must end the call long before.
    let call_ctx = CallContext::new();
    let gap = tokio::time::timeout(std::time::Duration::from_secs(60), echo.call(&input, &call_ctx));
    let out = gap.await.expect("a call while NATS is down ends on its own");
    assert!(out.is_error(), "{out:?}");
    assert!(out.content().starts_with("calling tool \"echo\" on agent \"farm\": "), "{}", out.content());

    nats.restart();
    let mut back = None;
    for _ in 0..100 {
        let out = echo.call(&input, &CallContext::new()).await;
        if !out.is_error() {
            back = Some(out);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let out = back.expect("calls succeed again once NATS is back");
    assert!(out.content().contains("echo: hi"), "{}", out.content());
    running.shutdown().await;
}

/// A key a peer chose, with a newline and an escape in it, reaches the `Nats-Service-Error` header only sanitized
/// (a raw newline would make the client library panic and kill the endpoint); the endpoint keeps serving.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_10_a_hostile_key_in_a_rejected_request_leaves_the_endpoint_serving() {
    let Served { nats: _nats, dir: _dir, log, running, client } = served("").await;
    for subject in ["choria.fisk-ai.tool.farm", "choria.fisk-ai.discovery.farm"] {
        let mut hostile = if subject.contains("tool") {
            a2a::tool_request("farm", "echo", None)
        } else {
            a2a::discovery_request("farm")
        };
        hostile["a\nb\r\u{1b}[31mc"] = json!(1);
        hostile[format!("long{}", "k".repeat(100_000))] = json!(2);
        let (code, text) = rejected(a2a::send_json(&client, subject, &hostile).await);
        assert_eq!(code, "400");
        assert!(text.starts_with("invalid request: ") && !text.contains(['\n', '\r', '\u{1b}']), "{text:?}");
        assert!(text.len() < 4 * 1024, "capped: {} bytes", text.len());
    }
    let reply = a2a::call(&client, "farm", "echo", Some(json!({"words": ["alive"]}))).await;
    assert_eq!(reply["output"], "echo: alive\n");
    let card = a2a::send_json(&client, "choria.fisk-ai.discovery.farm", &a2a::discovery_request("farm")).await;
    assert_eq!(card.body["name"], "farm");
    assert!(log.lines().iter().all(|l| !l.contains('\n') && !l.contains('\u{1b}')), "{:?}", log.lines());
    running.shutdown().await;
}

/// A plain publish (no reply subject) never runs a command: nobody could read its result.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_9_a_request_without_a_reply_subject_runs_nothing() {
    let Served { nats: _nats, dir: _dir, log, running, client } = served("").await;
    let published = serde_json::to_vec(&a2a::tool_request("farm", "echo", Some(json!({"words": ["fire"]})))).unwrap();
    client.publish("choria.fisk-ai.tool.farm", published.into()).await.unwrap();
    // A request sent after it is answered after it (one connection, one subscription, in order).
    let reply = a2a::call(&client, "farm", "echo", Some(json!({"words": ["asked"]}))).await;
    assert_eq!(reply["output"], "echo: asked\n");
    let calls: Vec<String> = log.lines().into_iter().filter(|l| l.starts_with("call ")).collect();
    assert_eq!(calls, ["call echo -- asked for tester"]);
    running.shutdown().await;
}

/// A reply that would exceed what peers accept (a huge resolved command line) is an error reply saying so.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_10_a_reply_over_the_limit_becomes_an_error_reply() {
    let Served { nats: _nats, dir: _dir, running, client, .. } = served("").await;
    // Ten words of 74,000 bytes (one argument may not pass 128 KiB): a 740 KB command line, then its output.
    let words: Vec<String> = (0..10).map(|_| "x".repeat(74_000)).collect();
    let reply = a2a::call(&client, "farm", "echo", Some(json!({"words": words}))).await;
    let output = reply["output"].as_str().unwrap();
    assert_eq!(reply["is_error"], true, "{}", &output[..output.len().min(300)]);
    assert!(output.contains("over the 786432 bytes peers accept"), "{}", &output[..output.len().min(300)]);
    running.shutdown().await;
}

/// POL-1 over a2a: the configured command hook is consulted before and after a peer's call, with the a2a surface
/// and the peer's claimed name as the caller, and its deny is the reply the peer reads; the denied call never runs,
/// so the hook never sees it after.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn pol_1_the_a2a_surface_consults_the_command_hook_with_the_peer_as_caller() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "mcp-app");
    let hook = common::root().join("tests/fixtures/bin/policy-hook");
    let seen = dir.path().join("policy.log");
    let yaml = format!(
        "identity: farm\napplication_path: {}\nnats_context: test\nharness:\n  policy:\n    command: [{:?}, {:?}]\n\
         expose:\n  agent:\n    agent_to_agent: true\n",
        app.display(),
        hook.display().to_string(),
        seen.display().to_string()
    );
    let log = Log::default();
    let running = start(&nats, Config::from_yaml_str(&yaml).unwrap(), &log).await;
    let peer = client(&nats).await;
    let ok = a2a::call(&peer, "farm", "echo", Some(json!({"words": ["hi"]}))).await;
    assert_eq!(ok["output"], "echo: hi\n", "{ok}");
    let denied = a2a::call(&peer, "farm", "echo", Some(json!({"words": ["deny me"]}))).await;
    assert!(denied["output"].as_str().unwrap().contains("no moo on Fridays"), "{denied}");
    running.shutdown().await;
    let calls: Vec<Value> =
        std::fs::read_to_string(&seen).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let phases: Vec<&str> = calls.iter().map(|c| c["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["before", "after", "before"], "{calls:#?}");
    assert!(calls.iter().all(|c| c["surface"] == "a2a" && c["caller"] == "tester"), "{calls:#?}");
}
