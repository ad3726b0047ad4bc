//! What fisk-ai actually sends over NATS validates against the Go reference's schemas (A2A-6..10): every kind of
//! reply the server writes, captured off a real `nats-server`, and every request the importer writes. Needs both
//! the server and `FISK_AI_WIRE_SCHEMAS`; `.ci/run` provides them.
#![cfg(feature = "nats")]

mod common;

use common::nats::NatsServer;
use common::wire::assert_reference_valid;
use fisk_ai::Config;
use fisk_ai::nats::NatsConnection;
use fisk_ai::nats::wire::MessageKind;
use fisk_ai::serve::a2a::A2aServer;
use serde_json::json;

#[tokio::test]
#[ignore = "needs nats-server and FISK_AI_WIRE_SCHEMAS; .ci/run provides both"]
async fn a2a_6_every_reply_the_server_sends_validates_against_the_reference() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "mcp-app");
    let yaml = format!(
        "identity: farm\napplication_path: {}\nnats_context: t\nexpose: {{agent: {{agent_to_agent: true}}}}\n",
        app.display()
    );
    let conn = NatsConnection::borrowed(async_nats::connect(nats.url()).await.unwrap(), "t");
    let server = A2aServer::builder().config(Config::from_yaml_str(&yaml).unwrap()).nats(conn).build().await;
    let running = server.unwrap().start().await.unwrap();
    let client = async_nats::connect(nats.url()).await.unwrap();

    let discovery = common::a2a::discovery_request("farm");
    let card = common::a2a::send_json(&client, "choria.fisk-ai.discovery.farm", &discovery).await;
    assert_reference_valid(MessageKind::DiscoveryReply, &card.body);
    let replies = [
        ("echo", Some(json!({"words": ["a"]}))), // ran, exit 0: exec without exit_code
        ("fail", None),                          // ran, exit 7
        ("echo", Some(json!({"words": "not-an-array"}))), // a harness failure
        ("nope", Some(json!({}))),               // unknown
        ("purge", Some(json!({"target": "x"}))), // gated: never served
    ];
    for (name, input) in replies {
        let reply = common::a2a::call(&client, "farm", name, input).await;
        assert_reference_valid(MessageKind::ToolReply, &reply);
    }
    running.shutdown().await;
}

#[tokio::test]
#[ignore = "needs nats-server and FISK_AI_WIRE_SCHEMAS; .ci/run provides both"]
async fn a2a_6_every_request_the_importer_sends_validates_against_the_reference() {
    use common::a2a_peer::{A2aPeer, Reply, client, descriptor, tool_reply};
    use fisk_ai::source::remote::RemoteAgent;
    use fisk_ai::tool::{CallContext, ToolInput};
    let nats = NatsServer::start();
    let peer = A2aPeer::serving(client(&nats.url()).await, "cow", vec![descriptor("say", "Say it")], |req| {
        Reply::Json(tool_reply(req, "cow", json!({"output": "moo"})))
    })
    .await;
    let conn = NatsConnection::borrowed(client(&nats.url()).await, "t");
    let tools = RemoteAgent::new(conn, "caller", "cow").unwrap().load().await.unwrap().tools;
    for input in ["{}", "null", r#"{"text":"hi","n":[1,{"deep":true}]}"#] {
        let out = tools[0].call(&ToolInput::from_json(input).unwrap(), &CallContext::new()).await;
        assert!(!out.is_error(), "{input}: {}", out.content());
    }
    let discovery = peer.requests("choria.fisk-ai.discovery.cow");
    assert_eq!(discovery.len(), 1);
    assert_reference_valid(MessageKind::DiscoveryRequest, &discovery[0]);
    let calls = peer.requests("choria.fisk-ai.tool.cow");
    assert_eq!(calls.len(), 3);
    for request in &calls {
        assert_reference_valid(MessageKind::ToolRequest, request);
    }
    // An empty or null input is left out, never sent as `null` or `{}`.
    assert!(calls[0].get("input").is_none() && calls[1].get("input").is_none(), "{calls:?}");
}
