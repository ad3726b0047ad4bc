//! Invariant 4 for MCP import (MCPI-3, MCPI-4, EXEC-8): a stdio server dumping its environment holds no
//! credential (every provider's, and every entry's `bearer_token_env`) and no `LLMFORMAT`; the bearer variable is
//! scrubbed from the wrapped application's introspection too (by the agent, by `McpServer`, which never imports,
//! and by `cli info`), and reaches the HTTP server only as the header.
//! Alone in its own test binary because it sets variables in this process's environment before any thread exists.
#![cfg(feature = "mcp")]
// Setting this process's environment (before any other thread exists) is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;
#[path = "../examples/mcp_fixture_server.rs"]
#[allow(dead_code)]
mod fixture;

use common::turns::{call_with, done, result_of, turn};
use common::*;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::ScriptedProvider;
use std::sync::Arc;

const BEARER: &str = "FISK_AI_TEST_GH_TOKEN";

#[test]
fn invariant_4_mcpi_3_4_no_imported_server_or_child_sees_a_credential() {
    // SAFETY: this test binary holds one test, and no other thread runs yet.
    unsafe {
        for name in SPEC_PROV_16.iter().chain(&[BEARER]) {
            std::env::set_var(name, format!("secret-{name}"));
        }
        std::env::set_var("LLMFORMAT", "1");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(async move { fixture::serve_http(fixture::Fixture::from_args(&[]), listener).await.unwrap() });
        let dir = tempfile::tempdir().unwrap();
        let app = fake_app(dir.path(), "envdump");
        let server = common::example("mcp_fixture_server");
        let yaml = format!(
            "identity: e\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\nmcp_servers:\n  - name: files\n    \
             command: [{}]\n  - name: web\n    url: {url}\n    bearer_token_env: {BEARER}\n",
            app.display(),
            server.display()
        );
        let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
        // `env` and `auth` are on both servers: IMPORT-5 prefixes them with each alias.
        let provider = Arc::new(ScriptedProvider::new([
            turn(vec![call_with("1", "files_env", "{}"), call_with("2", "web_auth", "{}")]),
            done(),
        ]));
        let agent = Agent::builder()
            .pin_store(common::pin_store())
            .config(config)
            .provider_arc(provider)
            .build()
            .await
            .unwrap();
        let introspected = std::fs::read_to_string(dir.path().join("introspect.env")).unwrap();
        assert!(!introspected.contains(BEARER), "the bearer variable reached introspection");
        let outcome = agent.run("x", RunOptions::default()).await;
        assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);

        let (env, is_error) = result_of(&outcome.messages, "1");
        assert!(!is_error, "{env}");
        assert!(env.contains("PATH="), "the environment passes through: {env}");
        for name in SPEC_PROV_16.iter().chain(&[BEARER]) {
            assert!(!env.contains(&format!("{name}=")), "{name} reached the stdio server");
            assert!(!env.contains(&format!("secret-{name}")), "the value of {name} reached the stdio server");
        }
        assert!(!env.lines().any(|l| l.starts_with("LLMFORMAT=")), "MCPI-3: no LLMFORMAT for the server");
        let (auth, _) = result_of(&outcome.messages, "2");
        assert_eq!(auth, format!("Bearer secret-{BEARER}"));
        assert_eq!(outcome.stats.remote_tool_calls, 2, "MCPI-9: counted as remote");

        // The MCP server never imports, yet scrubs the bearer variable from its children (introspection here).
        std::fs::remove_file(dir.path().join("introspect.env")).unwrap();
        let mut served = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
        served.expose.agent.mcp.get_or_insert_with(Default::default);
        fisk_ai::serve::mcp::McpServer::builder().config(served).build().await.unwrap();
        let introspected = std::fs::read_to_string(dir.path().join("introspect.env")).unwrap();
        assert!(!introspected.contains(BEARER), "the bearer variable reached the MCP server's introspection");

        // `cli info` neither: it introspects and imports like a run.
        #[cfg(all(feature = "anthropic", feature = "nats", feature = "terminal"))]
        {
            std::fs::remove_file(dir.path().join("introspect.env")).unwrap();
            std::fs::write(dir.path().join("agent.yaml"), &yaml).unwrap();
            let out = std::process::Command::new(example("cli"))
                .args(["info", "--config", "agent.yaml"])
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let introspected = std::fs::read_to_string(dir.path().join("introspect.env")).unwrap();
            assert!(!introspected.contains(BEARER), "the bearer variable reached info's introspection");
        }
    });
}
