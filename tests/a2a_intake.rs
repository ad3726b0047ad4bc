//! a2a intake under pressure and from hostile peers (issue 24 items 4 and 5), against a real `nats-server`:
//! A2A-14 (a request that cannot be queued is answered busy at once, never dropped) and A2A-15 (replies only to
//! inboxes).
#![cfg(feature = "nats")]

mod common;

use common::a2a::{self, Reply};
use common::nats::NatsServer;
use fisk_ai::nats::NatsConnection;
use fisk_ai::serve::a2a::{A2aEvent, A2aServer, Running};
use fisk_ai::{Config, ErrorKind};
use futures::StreamExt;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The fake `mcp-app` served as `farm`, with `extra` appended under `expose.agent`.
fn config(dir: &Path, extra: &str) -> Config {
    let app = common::fake_app(dir, "mcp-app");
    let yaml = format!(
        "identity: farm\napplication_path: {}\nnats_context: test\nexpose:\n  agent:\n    agent_to_agent: true\n{extra}",
        app.display()
    );
    Config::from_yaml_str(&yaml).unwrap()
}

/// Every event the server emitted, as text.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

async fn start(nats: &NatsServer, config: Config, log: &Log) -> Running {
    let conn = NatsConnection::borrowed(async_nats::connect(nats.url()).await.unwrap(), "test");
    let lines = log.0.clone();
    let sink = move |e: &A2aEvent<'_>| {
        let line = match e {
            A2aEvent::ToolCall { display, .. } => format!("call {display}"),
            A2aEvent::Rejected { code, description, .. } => format!("rejected {code} {description}"),
            A2aEvent::ReplyRefused { endpoint, reply_subject } => format!("reply refused {endpoint} {reply_subject}"),
            other => format!("{other:?}"),
        };
        lines.lock().unwrap().push(line);
    };
    let server = A2aServer::builder().config(config).nats(conn).events(sink).build().await.unwrap();
    server.start().await.unwrap()
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_14_a_request_that_cannot_be_queued_is_answered_busy_at_once_never_dropped() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    // With an audit trail, which records each busy refusal (AUD-1).
    let trail = dir.path().join("trail.jsonl");
    let extra = format!(
        "    a2a:\n      max_concurrent_tools: 2\n      queue: 3\nharness:\n  audit:\n    file: {}\n",
        trail.display()
    );
    let running = start(&nats, config(dir.path(), &extra), &log).await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    let slow = dir.path().join("slow.log");
    let request = a2a::tool_request("farm", "slow", Some(json!({"log": slow.display().to_string()})));
    // 40 callers at once; `send` panics on a timeout, so every one of them must get an answer.
    let replies: Vec<Reply> =
        a2a::flood(&client, "choria.fisk-ai.tool.farm", &request, 40, Duration::from_secs(60)).await;
    let ran = replies.iter().filter(|r| r.error.is_none() && r.body["output"] == "slept\n").count();
    let busy: Vec<&(String, String)> = replies.iter().filter_map(|r| r.error.as_ref()).collect();
    assert_eq!(ran + busy.len(), 40, "every caller got a result or the busy error");
    assert!(ran >= 5, "the two slots and three queue places were used: {ran} ran");
    assert!(!busy.is_empty(), "40 at once cannot all fit in 2 slots and 3 places");
    for (code, text) in &busy {
        assert_eq!(code, "503");
        assert!(text.starts_with("busy, retry") && text.contains("\"slow\""), "{text}");
    }
    let rejected = log.lines().iter().filter(|l| l.starts_with("rejected 503 busy, retry")).count();
    assert_eq!(rejected, busy.len(), "each busy answer is an event");
    // Each is recorded too, off the intake loop: read until all are there (bounded).
    let refused = || {
        let text = std::fs::read_to_string(&trail).unwrap_or_default();
        let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let busy = |r: &&serde_json::Value| {
            r["event"] == "refused" && r["reason"].as_str().unwrap().starts_with("busy, retry")
        };
        records.iter().filter(busy).count()
    };
    for _ in 0..100 {
        if refused() >= busy.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(refused(), busy.len(), "each busy answer is recorded");
    running.shutdown().await;
}

/// Send `echo` to farm's tool subject with `reply` as the reply subject (what a hostile peer forges).
async fn forged(client: &async_nats::Client, reply: &str, words: &str) {
    let message = a2a::tool_request("farm", "echo", Some(json!({"words": [words]})));
    a2a::forged(client, "choria.fisk-ai.tool.farm", reply, &message).await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_15_a_reply_subject_outside_the_inbox_prefix_is_refused_and_never_runs() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let running = start(&nats, config(dir.path(), ""), &log).await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    // Another agent's tool subject: a reply published there would be a request forged in this server's name.
    let mut victim = client.subscribe("choria.fisk-ai.tool.victim").await.unwrap();
    forged(&client, "choria.fisk-ai.tool.victim", "forged").await;
    // A request sent after it on the same connection is handled after it.
    let reply = a2a::call(&client, "farm", "echo", Some(json!({"words": ["asked"]}))).await;
    assert_eq!(reply["output"], "echo: asked\n");
    let calls: Vec<String> = log.lines().into_iter().filter(|l| l.starts_with("call ")).collect();
    assert_eq!(calls, ["call echo -- asked"], "the forged request never ran");
    assert!(log.lines().contains(&"reply refused tool choria.fisk-ai.tool.victim".to_owned()), "{:?}", log.lines());
    let published = tokio::time::timeout(Duration::from_millis(300), victim.next()).await;
    assert!(published.is_err(), "nothing was published onto the victim's subject: {published:?}");
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_15_any_reply_subject_true_answers_on_any_subject() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let running = start(&nats, config(dir.path(), "    a2a:\n      any_reply_subject: true\n"), &log).await;
    let client = async_nats::connect(nats.url()).await.unwrap();
    let mut elsewhere = client.subscribe("replies.for.me").await.unwrap();
    forged(&client, "replies.for.me", "allowed").await;
    let message = tokio::time::timeout(Duration::from_secs(20), elsewhere.next()).await.unwrap().unwrap();
    let body: serde_json::Value = serde_json::from_slice(&message.payload).unwrap();
    assert_eq!(body["output"], "echo: allowed\n", "{body}");
    running.shutdown().await;
}

#[test]
fn a2a_14_the_queue_size_is_bounded_and_refused_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "mcp-app");
    let yaml = format!(
        "identity: farm\napplication_path: {}\nexpose:\n  agent:\n    agent_to_agent: true\n    a2a:\n      \
         queue: 5000\n",
        app.display()
    );
    let err = Config::from_yaml_str(&yaml).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert_eq!(err.key(), Some("expose.agent.a2a.queue"), "{err}");
    assert!(err.to_string().contains("line 7") && err.to_string().contains("1024"), "{err}");
    let ok = config(dir.path(), "    a2a:\n      queue: 7\n");
    assert_eq!(ok.expose.agent.a2a.queue(), 7);
    assert_eq!(config(dir.path(), "").expose.agent.a2a.queue(), fisk_ai::config::DEFAULT_A2A_QUEUE);
}
