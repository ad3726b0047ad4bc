//! Keys this version parses but does not act on yet are refused with their location before any process starts,
//! by the agent and by the MCP server (issue 11: no silently ignored key; a `bearer_token_env` that was ignored
//! reached every child).

mod common;

use common::*;
use fisk_ai::Config;
use fisk_ai::agent::Agent;
use fisk_ai::llm::ScriptedProvider;

/// Each key with a snippet that uses it, and the line of the file the key is on (the snippet starts at line 6).
/// `mcp_servers` is built with the `mcp` feature (tests/mcp_import.rs), `remote_tools` (tests/remote_import.rs) and
/// `expose.agent.agent_to_agent` (tests/a2a_server.rs) and the jetstream memory and session backends
/// (tests/memory_jetstream.rs, tests/session_jetstream.rs) with the `nats` feature; each is refused only without it.
const UNBUILT: [(&str, &str, usize); 5] = [
    ("mcp_servers", "mcp_servers:\n  - name: gh\n    url: https://mcp.example\n    bearer_token_env: GH_TOKEN\n", 6),
    ("remote_tools", "nats_context: prod\nremote_tools:\n  - name: other\n", 7),
    ("expose.agent.agent_to_agent", "expose:\n  agent:\n    agent_to_agent: true\n    mcp: {}\n", 8),
    (
        "harness.memory.backend",
        "harness:\n  memory:\n    enabled: true\n    backend: jetstream\n    options: {bucket: B}\n",
        9,
    ),
    ("harness.sessions.backend", "harness:\n  sessions:\n    backend: jetstream\n    options: {stream: S}\n", 8),
];

fn yaml(dir: &std::path::Path, snippet: &str) -> String {
    let app = fake_app(dir, "envdump");
    format!("identity: x\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\n{snippet}", app.display())
}

#[tokio::test]
async fn every_unbuilt_key_is_refused_with_its_location_before_any_process_starts() {
    let built = |key: &str| {
        (key == "mcp_servers" && cfg!(feature = "mcp"))
            || (matches!(
                key,
                "remote_tools" | "expose.agent.agent_to_agent" | "harness.memory.backend" | "harness.sessions.backend"
            ) && cfg!(feature = "nats"))
    };
    for (key, snippet, line) in UNBUILT.into_iter().filter(|(k, ..)| !built(k)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.yaml");
        std::fs::write(&path, yaml(dir.path(), snippet)).unwrap();
        let config =
            Config::load(&path).unwrap_or_else(|e| panic!("{key}: a later version's configuration parses: {e}"));

        let err = config.check_supported().unwrap_err();
        assert_eq!(err.key(), Some(key));
        assert!(err.to_string().contains("not supported by this version"), "{key}: {err}");
        let at = err.location().unwrap_or_else(|| panic!("{key}: no location in {err:?}"));
        assert_eq!(at.file.as_deref(), Some(path.as_path()), "{key}");
        // The key, or where its value starts when that is a block on the next line.
        assert!(at.line == line || at.line == line + 1, "{key}: line {} for the key on line {line}", at.line);

        let agent = Agent::builder()
            .pin_store(common::pin_store())
            .config(config.clone())
            .provider(ScriptedProvider::new([]))
            .build()
            .await;
        assert_eq!(agent.unwrap_err().key(), Some(key), "{key}: the agent refuses it");
        #[cfg(feature = "mcp")]
        {
            let mut config = config.clone();
            config.expose.agent.mcp.get_or_insert_with(Default::default);
            let server = fisk_ai::serve::mcp::McpServer::builder().config(config).build().await;
            assert_eq!(server.unwrap_err().key(), Some(key), "{key}: the MCP server refuses it");
        }
        assert!(!dir.path().join("introspect.env").exists(), "{key}: nothing was started");
    }
}

#[tokio::test]
async fn a_configuration_without_them_still_builds_and_introspects() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::from_yaml_str(&yaml(dir.path(), "")).unwrap();
    config.check_supported().unwrap();
    Agent::builder()
        .pin_store(common::pin_store())
        .config(config)
        .provider(ScriptedProvider::new([]))
        .build()
        .await
        .unwrap();
    assert!(dir.path().join("introspect.env").exists(), "the control case does introspect");
}
