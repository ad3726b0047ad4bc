//! `harness.sandbox` reaches the command tools an agent serves to other agents over NATS (SBX-1, SBX-3), against a
//! real `nats-server`, with its unconfined control.
#![cfg(feature = "nats")]

mod common;

use common::nats::NatsServer;
use fisk_ai::Config;
use fisk_ai::nats::NatsConnection;
use fisk_ai::serve::a2a::A2aServer;
use serde_json::json;

/// Serves the sandbox_app as `sbx`, confined by `sandbox` (lines under `harness.sandbox`) when given; the output of
/// one `tcp` call to `addr`.
async fn tcp_over_a2a(nats: &NatsServer, sandbox: Option<&str>, addr: &str) -> String {
    let harness = sandbox.map(|s| format!("harness:\n  sandbox:\n{s}")).unwrap_or_default();
    let yaml = format!(
        "identity: sbx\napplication_path: {}\nnats_context: test\n{harness}expose:\n  agent:\n    agent_to_agent: true\n",
        common::example("sandbox_app").display()
    );
    let client = async_nats::connect(nats.url()).await.unwrap();
    let conn = NatsConnection::borrowed(client.clone(), "test");
    let config = Config::from_yaml_str(&yaml).unwrap();
    let running = A2aServer::builder().config(config).nats(conn).build().await.unwrap().start().await.unwrap();
    let reply = common::a2a::call(&client, "sbx", "tcp", Some(json!({"target": addr}))).await;
    running.shutdown().await;
    reply["output"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
#[ignore = "needs nats-server (.ci/run installs it), Landlock and seccomp"]
async fn sbx_3_a2a_serves_confined_tools() {
    let nats = NatsServer::start();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let open = tcp_over_a2a(&nats, None, &addr).await;
    assert!(open.contains("ok connected"), "the control connects: {open}");
    let confined = tcp_over_a2a(&nats, Some("    network: none\n"), &addr).await;
    assert!(confined.contains("denied Permission denied"), "{confined}");
}
