//! One scrub set for every surface (issue 25 item 2, EXEC-8, PROV-16): a host provider factory declaring `ACME_KEY`
//! is registered with one harness, the variable is set in this process, and no child of an agent run, of MCP serving
//! or of a2a serving (introspection included) carries it.
//!
//! Alone in its own test binary because it sets a variable in this process's environment. Each test sets the same
//! value once, before it starts a runtime; the plain run executes only the first test and `--ignored` only the
//! second, so no two threads ever race on the environment.
#![cfg(all(feature = "mcp", feature = "nats"))]
// Setting this process's environment is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::turns::{call, done, turn};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::harness::Harness;
use fisk_ai::llm::{Caps, ModelProvider, ProviderFactory, ProviderSettings, ScriptedProvider};
use fisk_ai::{Config, McpServer};
use std::path::Path;
use std::sync::{Arc, Once};

const ACME_KEY: &str = "ACME_KEY";
const SECRET: &str = "acme-secret-that-must-not-leak";

fn set_key() {
    static ONCE: Once = Once::new();
    // SAFETY: see the module docs: one test per run, called before its runtime starts any thread.
    ONCE.call_once(|| unsafe { std::env::set_var(ACME_KEY, SECRET) });
}

/// A host provider for another API, registered but never run: its credential must still be scrubbed.
struct Acme;

impl ProviderFactory for Acme {
    fn name(&self) -> &str {
        "acme"
    }
    fn credentials(&self) -> Vec<String> {
        vec![ACME_KEY.to_owned()]
    }
    fn capabilities(&self) -> Caps {
        Caps::new("acme").with_credentials([ACME_KEY])
    }
    fn build(&self, _: &ProviderSettings<'_>) -> fisk_ai::Result<Arc<dyn ModelProvider>> {
        Err(fisk_ai::Error::config("the acme provider is not run in this test"))
    }
}

/// The environment a child wrote to `file` in `dir`, one `NAME=value` a line; the file is taken away, so the next
/// check reads a fresh dump.
fn take_dump(dir: &Path, file: &str) -> String {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("no {file}: {e}"));
    std::fs::remove_file(&path).unwrap();
    assert!(text.contains("PATH="), "the dump is real: {text}");
    text
}

fn assert_clean(env: &str, what: &str) {
    assert!(!env.contains(SECRET) && !env.lines().any(|l| l.starts_with("ACME_KEY=")), "ACME_KEY reached {what}");
}

fn config(app: &Path, extra: &str) -> Config {
    Config::from_yaml_str(&format!(
        "identity: scrub\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\n{extra}",
        app.display()
    ))
    .unwrap()
}

#[test]
fn harness_2_a_host_providers_credential_reaches_no_child_of_a_run_or_of_mcp_serving() {
    set_key();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let app = common::fake_app(dir.path(), "envserve");
        let config = config(&app, "expose:\n  agent:\n    mcp: {}\n");
        let harness = Arc::new(Harness::builder().config(config).provider_factory(Acme).build().await.unwrap());
        assert!(harness.child_env().scrubbed().any(|n| n == ACME_KEY));
        assert_clean(&take_dump(dir.path(), "introspect.env"), "introspection");

        // An agent run on the harness.
        let provider = Arc::new(ScriptedProvider::new([turn(vec![call("1", "dump")]), done()]));
        let agent = Agent::builder().harness(harness.clone()).provider_arc(provider).build().await.unwrap();
        let outcome = agent.run("x", RunOptions::default()).await;
        assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
        assert_clean(&take_dump(dir.path(), "command.env"), "an agent's command");

        // MCP serving from the same harness, called by the official rmcp client.
        let served = mcp_support::serve_config(tempfile::tempdir().unwrap(), harness.config().clone(), |_| {
            McpServer::builder().harness(harness.clone())
        })
        .await;
        let client = mcp_support::connect(
            &served.url,
            mcp_support::TestClient::new(false, mcp_support::Answer::Decline),
            mcp_support::Era::Legacy,
        )
        .await;
        let out = mcp_support::call(&client, "dump", serde_json::json!({})).await;
        assert!(!mcp_support::is_error(&out), "{out:?}");
        assert_clean(&take_dump(dir.path(), "command.env"), "an MCP client's command");
        client.cancel().await.unwrap();
        served.stop().await.unwrap();
    });
}

#[test]
#[ignore = "needs nats-server; .ci/run installs it"]
fn harness_2_a_host_providers_credential_reaches_no_child_of_a2a_serving() {
    set_key();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let nats = common::nats::NatsServer::start();
        let dir = tempfile::tempdir().unwrap();
        let app = common::fake_app(dir.path(), "envserve");
        let config = config(&app, "nats_context: test\nexpose:\n  agent:\n    agent_to_agent: true\n");
        let harness = Harness::builder().config(config).provider_factory(Acme).for_agent(false).build().await.unwrap();
        assert_clean(&take_dump(dir.path(), "introspect.env"), "a2a introspection");
        let conn = fisk_ai::nats::NatsConnection::borrowed(async_nats::connect(nats.url()).await.unwrap(), "test");
        let server = fisk_ai::A2aServer::builder().harness(Arc::new(harness)).nats(conn).build().await.unwrap();
        let running = server.start().await.unwrap();
        let client = async_nats::connect(nats.url()).await.unwrap();
        let reply = common::a2a::call(&client, "scrub", "dump", Some(serde_json::json!({}))).await;
        assert_ne!(reply["is_error"], true, "{reply}");
        assert_clean(&take_dump(dir.path(), "command.env"), "an a2a peer's command");
        running.shutdown().await;
    });
}
