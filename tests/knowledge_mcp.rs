//! `knowledge_search` over MCP (KNOW-12): `expose.agent.mcp.builtins` lists exactly the built-ins served, an
//! agent-only one is refused with its location, and the Python SDK client searches over stdio.
#![cfg(all(feature = "mcp", feature = "knowledge"))]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use fisk_ai::Config;
use fisk_ai::knowledge::{IndexOptions, KnowledgeBase};
use fisk_ai::serve::mcp::McpServer;
use mcp_support::*;
use serde_json::{Value, json};
use std::path::Path;

/// The MCP test configuration (`<dir>/agent.yaml`) with knowledge over the test corpus, indexed into `<dir>/idx`.
async fn knowledge_config(dir: &Path, mcp: &[&str]) -> Config {
    let config = write_config(dir, mcp);
    let config = Config::load(&config).unwrap();
    let report = KnowledgeBase::from_config(&config, None).unwrap().index(IndexOptions::new(), &()).await.unwrap();
    assert_eq!(report.indexed, 3);
    config
}

/// `<dir>/agent.yaml`: the MCP test configuration, knowledge over the test corpus (cited from the fixtures'
/// directory, as `corpus/...`), indexed into `<dir>/idx`.
fn write_config(dir: &Path, mcp: &[&str]) -> std::path::PathBuf {
    let corpus = common::root().join("tests/fixtures/knowledge/corpus");
    let extra = format!("  knowledge:\n    enabled: true\n    paths: [{}]\n    directory: idx\n", corpus.display());
    let file = dir.join("agent.yaml");
    std::fs::write(&file, config_yaml(dir, mcp, &extra)).unwrap();
    file
}

async fn names(served: &Served) -> Vec<String> {
    let client = connect(&served.url, TestClient::new(false, Answer::Decline), Era::Modern).await;
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn know_12_builtins_lists_exactly_the_built_ins_mcp_serves_and_knowledge_search_answers() {
    let dir = tempfile::tempdir().unwrap();
    let config = knowledge_config(dir.path(), &["builtins: [knowledge_search]"]).await;
    let served = serve_config(dir, config, |b| b).await;
    let served_names = names(&served).await;
    assert!(served_names.contains(&"knowledge_search".to_owned()), "{served_names:?}");
    assert!(served_names.contains(&"echo".to_owned()), "commands are unaffected: {served_names:?}");
    assert!(!served_names.iter().any(|n| n == "base64_encode" || n == "read_file"), "only the listed built-ins");
    let client = connect(&served.url, TestClient::new(false, Answer::Decline), Era::Modern).await;
    let out = call(&client, "knowledge_search", json!({"query": "how do I restore a backup", "top_k": 2})).await;
    assert_ne!(out.is_error, Some(true), "{out:?}");
    let body: Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(body["results"][0]["citation"], "corpus/runbook.md#4", "{body}");
    assert!(body["note"].as_str().unwrap().contains("untrusted"), "{body}");
    let bad = call(&client, "knowledge_search", json!({"query": "x", "top_k": 21})).await;
    assert_eq!(bad.is_error, Some(true), "top_k over 20 is refused by the schema: {bad:?}");
    served.stop().await.unwrap();
}

#[tokio::test]
async fn know_12_without_builtins_knowledge_stays_with_the_agent_and_harness_tools_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let config = knowledge_config(dir.path(), &[]).await;
    let served = serve_config(dir, config, |b| b).await;
    let served_names = names(&served).await;
    assert!(!served_names.contains(&"knowledge_search".to_owned()), "{served_names:?}");
    assert!(served_names.contains(&"base64_encode".to_owned()) && served_names.contains(&"read_file".to_owned()));
    served.stop().await.unwrap();
}

#[tokio::test]
async fn know_12_an_agent_only_or_missing_built_in_in_builtins_is_refused_with_its_location() {
    for (listed, why) in [
        ("[knowledge_search, memory_read]", "memory_read is an agent-only built-in"),
        ("[ask_human_confirm]", "ask_human_confirm is an agent-only built-in"),
        ("[knowledge_search, nope]", "no built-in named nope is enabled"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agent.yaml");
        let corpus = common::root().join("tests/fixtures/knowledge/corpus");
        let extra = format!("  knowledge:\n    enabled: true\n    paths: [{}]\n", corpus.display());
        std::fs::write(&file, config_yaml(dir.path(), &[&format!("builtins: {listed}")], &extra)).unwrap();
        let config = Config::load(&file).unwrap();
        let e = McpServer::builder().config(config).build().await.map(drop).unwrap_err();
        assert!(e.to_string().contains(why), "{listed}: {e}");
        assert!(e.key().is_some_and(|k| k.starts_with("expose.agent.mcp.builtins[")), "{listed}: {:?}", e.key());
        let at = e.location().unwrap_or_else(|| panic!("{listed}: no location: {e}"));
        assert_eq!(at.file.as_deref(), Some(file.as_path()));
        let line = std::fs::read_to_string(&file).unwrap().lines().nth(at.line - 1).unwrap().to_owned();
        assert!(line.contains("builtins:"), "{listed}: located at {at}: {line}");
    }
}

/// KNOW-12 with a client we did not write: the Python SDK starts `cli mcp --stdio`, lists the tools and searches.
#[tokio::test]
#[ignore = "needs the Python MCP client (FISK_AI_PYTHON); .ci/run provides it"]
async fn know_12_the_python_sdk_client_searches_knowledge_over_stdio() {
    let python = common::python::interpreter();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["builtins: [knowledge_search]"]);
    let cli = common::example("cli");
    let script = common::root().join("tests/fixtures/python/mcp_knowledge_client.py");
    let run = |query: &'static str| {
        let (python, script, cli, config) = (python.clone(), script.clone(), cli.clone(), config.clone());
        async move {
            let out = tokio::process::Command::new(&python)
                .arg(&script)
                .arg(&cli)
                .arg(&config)
                .arg(query)
                .output()
                .await
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "{stdout}\n{stderr}");
            serde_json::from_str::<Value>(stdout.lines().last().unwrap()).unwrap()
        }
    };
    // Before the index is built: a soft result telling the operator what to run.
    let out = run("restart the server").await;
    assert!(out["tools"].as_array().unwrap().contains(&"knowledge_search".into()), "{out}");
    let body: Value = serde_json::from_str(out["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["status"], "index_not_built", "{out}");
    let indexed =
        std::process::Command::new(&cli).args(["knowledge", "index", "--config"]).arg(&config).output().unwrap();
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    let out = run("restart the server").await;
    assert_ne!(out["result"]["isError"], true, "{out}");
    let body: Value = serde_json::from_str(out["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["results"][0]["citation"], "corpus/runbook.md#2", "{body}");
    assert_eq!(body["results"][0]["lines"], "5-13", "{body}");
}
