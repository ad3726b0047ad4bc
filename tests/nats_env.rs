//! Invariant 4 for the NATS surfaces (EXEC-8): the credentials a NATS context carries (password, token) reach the
//! NATS server only, never a child process: neither the a2a server's introspection of its application nor an
//! importing agent's.
#![cfg(feature = "nats")]

mod common;

use common::nats::{NatsServer, context_dir};
use fisk_ai::Config;
use fisk_ai::nats::{NatsConnection, NatsContext};
use serde_json::json;

const PASSWORD: &str = "pa55-w0rd-f0r-nats";
const TOKEN: &str = "t0ken-f0r-nats";

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn invariant_4_context_credentials_never_reach_a_child() {
    let nats = NatsServer::start_with(&format!("authorization {{ user: agent, password: \"{PASSWORD}\" }}"));
    let contexts =
        context_dir("secret", json!({"url": nats.url(), "user": "agent", "password": PASSWORD, "token": TOKEN}), false);
    let context = NatsContext::load_from(contexts.path(), Some("secret")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "envdump");
    let introspected = || std::fs::read_to_string(dir.path().join("introspect.env")).unwrap();

    // The a2a server: the application's only command has no description, so nothing is served, but its
    // introspection ran over the authenticated connection first.
    let yaml = format!(
        "identity: srv\napplication_path: {}\nnats_context: secret\nexpose: {{agent: {{agent_to_agent: true}}}}\n",
        app.display()
    );
    let conn = NatsConnection::connect(&context, "srv").await.unwrap();
    let built = fisk_ai::serve::a2a::A2aServer::builder()
        .config(Config::from_yaml_str(&yaml).unwrap())
        .nats(conn)
        .build()
        .await;
    assert!(built.is_err(), "no servable command");
    let env = introspected();
    assert!(env.contains("PATH="), "the dump is real: {env}");
    assert!(!env.contains(PASSWORD) && !env.contains(TOKEN), "a NATS credential reached a child:\n{env}");

    // An importing agent whose host is not there: it connects with the same context, introspects, then fails.
    std::fs::remove_file(dir.path().join("introspect.env")).unwrap();
    let yaml = format!(
        "identity: imp\napplication_path: {}\nsystem_prompt: s\nnats_context: secret\nllm: {{model: m}}\n\
         remote_tools: [{{name: nobody}}]\n",
        app.display()
    );
    let conn = NatsConnection::connect(&context, "imp").await.unwrap();
    let agent = fisk_ai::Agent::builder()
        .pin_store(common::pin_store())
        .config(Config::from_yaml_str(&yaml).unwrap())
        .provider(fisk_ai::llm::ScriptedProvider::new([]))
        .nats(conn)
        .build()
        .await;
    assert!(agent.is_err(), "the host is unreachable");
    let env = introspected();
    assert!(!env.contains(PASSWORD) && !env.contains(TOKEN), "a NATS credential reached a child:\n{env}");
}
