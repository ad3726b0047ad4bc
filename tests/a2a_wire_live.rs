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
