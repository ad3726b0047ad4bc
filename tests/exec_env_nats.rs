//! EXEC-18 (issue 24 item 7): the NATS credential variables (the names the NATS tools read) reach no child: not a
//! command tool, not introspection, not a stdio MCP server. Alone in its own test binary because it sets variables
//! in this process's environment before any other thread exists.
//!
//! The names are written out here from the issue on purpose: checking the library's constant against itself could
//! not notice a dropped name.
#![cfg(all(feature = "nats", feature = "mcp"))]
// Setting this process's environment (before any other thread exists) is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;

use common::turns::{call_with, done, result_of, turn};
use common::*;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::ScriptedProvider;
use std::sync::Arc;

const NATS: [&str; 5] = ["NATS_PASSWORD", "NATS_TOKEN", "NATS_NKEY", "NATS_CREDS", "NATS_USER"];

fn assert_clean(env: &str, what: &str) {
    assert!(env.contains("PATH="), "{what}: the environment passes through: {env}");
    for name in NATS {
        assert!(!env.lines().any(|l| l.starts_with(&format!("{name}="))), "{name} reached {what}");
        assert!(!env.contains(&format!("secret-{name}")), "the value of {name} reached {what}");
    }
}

#[test]
fn exec_18_nats_credentials_reach_no_command_introspection_or_stdio_mcp_server() {
    // SAFETY: this test binary holds one test, and no other thread runs yet.
    unsafe {
        for name in NATS {
            std::env::set_var(name, format!("secret-{name}"));
        }
    }
    for name in NATS {
        assert!(fisk_ai::exec::ChildEnv::new().scrubbed().any(|n| n == name), "{name} is in the floor");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let app = fake_app(dir.path(), "envdump");
        let server = common::example("mcp_fixture_server");
        let yaml = format!(
            "identity: e\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\nmcp_servers:\n  - name: files\n    \
             command: [{}]\n",
            app.display(),
            server.display()
        );
        let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
        let provider = Arc::new(ScriptedProvider::new([
            turn(vec![call_with("1", "env", "{}"), call_with("2", "dump", "{}")]),
            done(),
        ]));
        let agent = Agent::builder()
            .pin_store(common::pin_store())
            .config(config)
            .provider_arc(provider)
            .build()
            .await
            .unwrap();
        let outcome = agent.run("x", RunOptions::default()).await;
        assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
        let (env, is_error) = result_of(&outcome.messages, "1");
        assert!(!is_error, "{env}");
        assert_clean(&env, "the stdio MCP server");
        assert_clean(&std::fs::read_to_string(dir.path().join("introspect.env")).unwrap(), "introspection");
        assert_clean(&std::fs::read_to_string(dir.path().join("command.env")).unwrap(), "the command tool");
    });
}
