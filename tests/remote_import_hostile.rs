//! Hostile and broken peers (A2A-10, IMPORT-7, IMPORT-9; docs/nats-wire.md §2): a reply over 768 KiB, one that is
//! not JSON, one against the schema, one of the wrong protocol, the services framework's error reply, a peer too
//! slow for the timeout, no peer at all, a peer dying mid-call, and a cancelled call. At discovery each fails the
//! host with an error naming the host and the NATS context; on a call each becomes an error result naming the
//! tool and the host. Nothing panics. A card's text carrying terminal sequences, controls and invisible characters
//! reaches the model cleaned (IMPORT-13).
#![cfg(feature = "nats")]

mod common;

use common::a2a_peer::{A2aPeer, ESCAPES_CLEANED, Reply, card, client, descriptor, escaping_descriptor, tool_reply};
use common::nats::NatsServer;
use fisk_ai::agent::Agent;
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::nats::NatsConnection;
use fisk_ai::source::LoadContext;
use fisk_ai::source::remote::RemoteAgent;
use fisk_ai::tool::{CallContext, CancellationToken, ToolInput};
use fisk_ai::{Config, ErrorKind};
use serde_json::{Value, json};
use std::time::Duration;

/// Short enough that the slow cases end quickly; the slow peer waits far longer.
const TIMEOUT: Duration = Duration::from_millis(400);

async fn setup() -> (NatsServer, NatsConnection, async_nats::Client) {
    let server = NatsServer::start();
    let caller = NatsConnection::borrowed(client(&server.url()).await, "hostile-ctx");
    let peers = client(&server.url()).await;
    (server, caller, peers)
}

/// How a hostile peer answers a request.
type Answer = Box<dyn Fn(&Value) -> Reply + Send + Sync>;

/// The hostile replies, each with the error kind it must give at discovery and the text the error must carry.
fn cases(ok: fn(&Value) -> Value) -> Vec<(&'static str, Answer, ErrorKind, &'static str)> {
    vec![
        (
            "oversize",
            Box::new(move |req| {
                // Valid JSON padded past the limit: refused for its size alone.
                let mut body = serde_json::to_vec(&ok(req)).unwrap();
                body.extend(std::iter::repeat_n(b' ', 786_432));
                Reply::Raw(body)
            }),
            ErrorKind::Source,
            "over the 786432-byte limit",
        ),
        (
            "invalid JSON",
            Box::new(|_| Reply::Raw(b"{\"protocol\": ".to_vec())),
            ErrorKind::Source,
            "sent an invalid reply",
        ),
        (
            "schema-invalid",
            Box::new(move |req| {
                let mut v = ok(req);
                v["priority"] = json!(1);
                Reply::Json(v)
            }),
            ErrorKind::Source,
            "sent an invalid reply",
        ),
        (
            "wrong protocol",
            Box::new(move |req| {
                let mut v = ok(req);
                v["protocol"] = json!("io.choria.fisk-ai.v1.other");
                Reply::Json(v)
            }),
            ErrorKind::Source,
            "wrong protocol: got \"io.choria.fisk-ai.v1.other\"",
        ),
        (
            "service error",
            Box::new(|_| Reply::ServiceError(400, "invalid request: /sender: missing".into())),
            ErrorKind::Source,
            "refused the request: error 400: invalid request: /sender: missing",
        ),
        (
            "slow",
            Box::new(move |req| Reply::After(Duration::from_secs(30), Box::new(Reply::Json(ok(req))))),
            ErrorKind::Nats,
            "unavailable: no reply on choria.fisk-ai.",
        ),
    ]
}

fn good_card(req: &Value) -> Value {
    card(req, "bad", vec![descriptor("t", "T")])
}

fn good_reply(req: &Value) -> Value {
    tool_reply(req, "bad", json!({"output": "fine"}))
}

/// A2A-10, IMPORT-7: each hostile discovery reply fails the host import, naming host and context.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_10_import_7_hostile_discovery_replies_fail_the_host() {
    let (_server, caller, peers) = setup().await;
    for (case, reply, kind, text) in cases(good_card) {
        let peer = A2aPeer::start(peers.clone(), "bad", reply, |_| Reply::Silent).await;
        let agent = RemoteAgent::new(caller.clone(), "ops", "bad").unwrap().with_timeout(TIMEOUT);
        let err = agent.discover(&LoadContext::default()).await.expect_err(case);
        let said = err.to_string();
        assert_eq!(err.kind(), kind, "{case}: {said}");
        assert!(said.starts_with("remote_tools host \"bad\" (NATS context hostile-ctx): "), "{case}: {said}");
        assert!(said.contains(text), "{case}: {said}");
        assert!(said.len() < 4096, "{case}: a peer's text is capped: {} bytes", said.len());
        drop(peer);
    }
}

/// docs/nats-wire.md §2: a descriptor whose input_schema is not an object fails the whole host; one whose schema is
/// an object of another type is skipped with a warning (IMPORT-4).
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_4_a_non_object_input_schema() {
    let (_server, caller, peers) = setup().await;
    let tools = vec![descriptor("ok", "Fine"), json!({"name": "str", "description": "S", "input_schema": "string"})];
    let peer = A2aPeer::serving(peers.clone(), "bad", tools, |_| Reply::Silent).await;
    let err =
        RemoteAgent::new(caller.clone(), "ops", "bad").unwrap().discover(&LoadContext::default()).await.unwrap_err();
    assert!(err.to_string().contains("sent an invalid reply") && err.to_string().contains("/tools/1"), "{err}");
    drop(peer);

    let tools =
        vec![descriptor("ok", "Fine"), json!({"name": "str", "description": "S", "input_schema": {"type": "string"}})];
    let _peer = A2aPeer::serving(peers, "bad", tools, |_| Reply::Silent).await;
    let found = RemoteAgent::new(caller, "ops", "bad").unwrap().discover(&LoadContext::default()).await.unwrap();
    assert_eq!(found.loaded.tools.len(), 1);
    assert!(
        found.loaded.warnings.iter().any(|w| w.to_string().contains("not an object schema")),
        "{:?}",
        found.loaded.warnings
    );
}

/// A2A-10, IMPORT-9: each hostile tool reply becomes an error result naming the tool and the host.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_10_import_9_hostile_tool_replies_are_error_results() {
    let (_server, caller, peers) = setup().await;
    for (case, reply, _, text) in cases(good_reply) {
        let peer = A2aPeer::start(peers.clone(), "bad", |req| Reply::Json(good_card(req)), reply).await;
        let agent = RemoteAgent::new(caller.clone(), "ops", "bad").unwrap().with_timeout(TIMEOUT);
        let loaded = fisk_ai::source::ToolSource::load(&agent, &Default::default()).await.unwrap();
        let out = loaded.tools[0].call(&ToolInput::empty(), &CallContext::new()).await;
        assert!(out.is_error(), "{case}");
        assert!(out.content().starts_with("calling tool \"t\" on agent \"bad\": "), "{case}: {}", out.content());
        assert!(out.content().contains(text), "{case}: {}", out.content());
        drop(peer);
    }
}

/// IMPORT-7: nobody serving the host is "unavailable", naming the subject.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_7_no_responders_is_unavailable_naming_the_subject() {
    let (_server, caller, _peers) = setup().await;
    let err = RemoteAgent::new(caller, "ops", "nobody").unwrap().discover(&LoadContext::default()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Nats);
    assert_eq!(
        err.to_string(),
        "remote_tools host \"nobody\" (NATS context hostile-ctx): remote agent \"nobody\" unavailable: no responders \
         on choria.fisk-ai.discovery.nobody"
    );
}

/// IMPORT-9: a peer that dies with a call in flight leaves it to the timeout; the next call finds no responders.
/// The call's own (smaller) timeout wins over the source's.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_9_a_peer_dying_mid_call() {
    let (_server, caller, peers) = setup().await;
    let _peer = A2aPeer::start(peers, "bad", |req| Reply::Json(good_card(req)), |_| Reply::Die).await;
    let agent = RemoteAgent::new(caller, "ops", "bad").unwrap();
    let loaded = fisk_ai::source::ToolSource::load(&agent, &Default::default()).await.unwrap();
    let ctx = CallContext::new().with_timeout(TIMEOUT);
    let out = loaded.tools[0].call(&ToolInput::empty(), &ctx).await;
    assert!(out.is_error());
    assert!(
        out.content().contains("unavailable: no reply on choria.fisk-ai.tool.bad within 400ms"),
        "{}",
        out.content()
    );
    let out = loaded.tools[0].call(&ToolInput::empty(), &ctx).await;
    assert!(out.content().contains("unavailable: no responders on choria.fisk-ai.tool.bad"), "{}", out.content());
}

/// A cancelled call ends at once with an error result, whatever the peer does.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a_cancelled_call_is_an_error_result() {
    let (_server, caller, peers) = setup().await;
    let _peer = A2aPeer::start(peers, "bad", |req| Reply::Json(good_card(req)), |_| Reply::Silent).await;
    let loaded =
        fisk_ai::source::ToolSource::load(&RemoteAgent::new(caller, "ops", "bad").unwrap(), &Default::default())
            .await
            .unwrap();
    let cancel = CancellationToken::new();
    let ctx = CallContext::new().with_cancel(cancel.clone());
    let input = ToolInput::empty();
    let call = loaded.tools[0].call(&input, &ctx);
    cancel.cancel();
    let out = call.await;
    assert!(out.is_error());
    assert!(out.content().ends_with("the call was cancelled"), "{}", out.content());
}

/// A reply must answer the request sent, from the host asked (a sanity check against a racing subscriber, not
/// authentication).
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_6_a_reply_to_another_request_or_from_another_agent_is_refused() {
    let (_server, caller, peers) = setup().await;
    type Forge = fn(&Value) -> Value;
    let forged: [(&str, Forge); 2] = [
        ("sent a reply to another request", |req| {
            let mut reply = good_reply(req);
            reply["request"] = json!("0000000000000000000000forged");
            reply
        }),
        ("sent a reply from another agent", |req| {
            let mut reply = good_reply(req);
            reply["sender"] = json!({"name": "mallory"});
            reply
        }),
    ];
    for (expected, forge) in forged {
        let answer = move |req: &Value| Reply::Json(forge(req));
        let peer = A2aPeer::start(peers.clone(), "bad", |req| Reply::Json(good_card(req)), answer).await;
        let agent = RemoteAgent::new(caller.clone(), "ops", "bad").unwrap().with_timeout(TIMEOUT);
        let loaded = fisk_ai::source::ToolSource::load(&agent, &Default::default()).await.unwrap();
        let out = loaded.tools[0].call(&ToolInput::empty(), &CallContext::new()).await;
        assert!(out.is_error() && out.content().contains(expected), "{expected}: {}", out.content());
        drop(peer);
    }
}

/// EXEC-12 holds for what the model reads whoever ran the command: a peer's 200 KB output is cut to its head and
/// tail, and flagged truncated.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn exec_12_a_peers_long_output_is_capped_like_a_local_one() {
    let (_server, caller, peers) = setup().await;
    let peer = A2aPeer::start(
        peers.clone(),
        "big",
        |req| Reply::Json(card(req, "big", vec![descriptor("t", "T")])),
        |req| {
            let output = format!("{}{}", "h".repeat(100_000), "t".repeat(100_000));
            Reply::Json(tool_reply(req, "big", json!({"output": output, "exec": {"command": "big"}})))
        },
    )
    .await;
    let agent = RemoteAgent::new(caller, "ops", "big").unwrap().with_timeout(Duration::from_secs(10));
    let loaded = fisk_ai::source::ToolSource::load(&agent, &Default::default()).await.unwrap();
    let out = loaded.tools[0].call(&ToolInput::empty(), &CallContext::new()).await;
    assert!(!out.is_error(), "{}", out.content());
    let exec: Value = serde_json::from_str(out.content()).unwrap();
    let text = exec["output"].as_str().unwrap();
    assert_eq!(text, format!("{}\n...[output truncated]...\n{}", "h".repeat(32_768), "t".repeat(32_768)));
    assert_eq!(exec["truncated"], true);
    drop(peer);
}

/// Every string of `value`, keys included, at any depth.
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(members) => members.iter().flat_map(|(k, v)| [k.clone()].into_iter().chain(strings(v))).collect(),
        _ => Vec::new(),
    }
}

/// IMPORT-13: the description and the schema's prose of a tool imported through an agent's `remote_tools` (what
/// the model is sent) hold no control character but newline and tab, no escape sequence and no raw bidi or
/// zero-width character: those are shown as `\u{...}` escapes.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn import_13_a_cards_escape_sequences_never_reach_the_model() {
    let (_server, caller, peers) = setup().await;
    let _peer = A2aPeer::serving(peers, "bad", vec![escaping_descriptor("ls")], |_| Reply::Silent).await;
    let yaml =
        "identity: ops\nsystem_prompt: s\nnats_context: hostile-ctx\nllm:\n  model: m\nremote_tools:\n  - name: bad\n";
    let agent = Agent::builder()
        .pin_store(common::pin_store())
        .config(Config::from_yaml_str(yaml).unwrap())
        .provider(ScriptedProvider::new([]))
        .nats(caller)
        .build()
        .await
        .unwrap();
    let tool = agent.toolset().iter().find(|t| t.spec().name() == "ls").expect("the tool is imported");
    let spec = tool.spec();
    let schema = spec.input_schema();
    assert_eq!(spec.description(), format!("List{ESCAPES_CLEANED} files"));
    assert_eq!(schema["title"], format!("Title{ESCAPES_CLEANED}"));
    assert_eq!(schema["x-note"], format!("Note{ESCAPES_CLEANED}"));
    let path = &schema["properties"]["path"];
    assert_eq!(path["description"], format!("Path{ESCAPES_CLEANED}"));
    assert_eq!(path["default"], format!("/tmp{ESCAPES_CLEANED}"));
    assert_eq!(path["examples"][0], format!("/var{ESCAPES_CLEANED}"));
    assert_eq!(path["type"], "string", "the schema's meaning is kept");
    let dirty = |c: char| (c.is_control() && c != '\n' && c != '\t') || c == '\u{202e}' || c == '\u{200b}';
    for text in strings(schema).into_iter().chain([spec.description().to_owned()]) {
        assert!(!text.chars().any(dirty), "{text:?}");
    }
}
