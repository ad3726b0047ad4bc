//! The example CLI with `llm.provider: openai` (CLI-1, CLI-5, INFO-1, PROV-3, PROV-7): `run` against the in-process
//! fake Chat Completions server with the real cowsay demo app, and `info` showing the provider and that tool search
//! is not available (every tool sent directly).
#![cfg(all(feature = "anthropic", feature = "openai", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;
#[path = "common/openai.rs"]
mod fake_openai;

use common::*;
use fake_openai::{FakeOpenAi, calls, streamed};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn cli() -> PathBuf {
    example("cli")
}

fn write_config(dir: &Path, llm_extra: &str) -> PathBuf {
    let config = dir.join("agent.yaml");
    std::fs::write(
        &config,
        format!(
            "identity: cowsay\napplication_path: {}\nsystem_prompt: Tell cow jokes.\nllm:\n  model: gpt-4.1\n  \
             provider: openai\n{llm_extra}",
            root().join("examples/cowsay/cowsay").display()
        ),
    )
    .unwrap();
    config
}

async fn run(dir: &Path, config: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(cli())
        .arg("run")
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("HTTP_DEBUG")
        .env_remove("VERBOSE")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test]
async fn cli_run_with_the_openai_provider_calls_a_tool_and_prints_the_answer() {
    let server = FakeOpenAi::with_replies([
        calls(&[("call_1", "cow_think", r#"{"message": "moo"}"#)]).reply(),
        streamed("The cow said moo.", &[], "stop"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    // llm.base_url on loopback: no key needed.
    let config = write_config(dir.path(), &format!("  base_url: {}\n", server.url()));
    let out = run(dir.path(), &config, &["say moo"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&out.stdout).trim(), "The cow said moo.");
    assert_eq!(server.request_count(), 2);
    let second = server.requests()[1].body_json().clone();
    let tool = second["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned().unwrap();
    assert_eq!(tool["tool_call_id"], "call_1");
    assert!(stderr.contains("Run summary: model=gpt-4.1 llm_calls=2"), "{stderr}");
}

#[tokio::test]
async fn cli_run_openai_base_url_and_key_come_from_the_flags() {
    let server = FakeOpenAi::with_replies([streamed("Moo.", &[], "stop")]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "  base_url: https://api.example.invalid/v1\n");
    let out = run(dir.path(), &config, &["--base-url", &server.url(), "--api-key", "sk-flag", "hi"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer sk-flag"));
    // Off loopback a key is required, and the error names the openai variable.
    let out = run(dir.path(), &config, &["hi"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("OPENAI_API_KEY"), "{}", text(&out.stderr));
}

#[tokio::test]
async fn prov_7_a_bad_openai_base_url_variable_fails_before_any_file_exists() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let out = tokio::process::Command::new(cli())
        .args(["run", "--config"])
        .arg(&config)
        .args(["--http-debug", "--trace", "t.jsonl", "--api-key", "k", "hi"])
        .current_dir(dir.path())
        .env("OPENAI_BASE_URL", "http://10.0.0.1/v1")
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("OPENAI_BASE_URL"), "{}", text(&out.stderr));
    assert!(!dir.path().join("http-debug.log").exists() && !dir.path().join("t.jsonl").exists());
}

#[test]
fn info_shows_the_openai_provider_and_client_side_tool_search() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "");
    let info = |extra: &[&str]| {
        std::process::Command::new(cli()).arg("info").arg("--config").arg(&config).args(extra).output().unwrap()
    };
    let out = info(&["--no-color"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("Provider     openai"), "{stdout}");
    // No server-side search: the agent's own applies (issue 15 part 3).
    let want = "Tool search  enabled, client-side (used at 10 or more tools: search_tools and call_tool)";
    assert!(stdout.contains(want), "{stdout}");
    let doc: Value = serde_json::from_slice(&info(&["--json"]).stdout).unwrap();
    assert_eq!(doc["model"]["provider"], "openai");
    assert_eq!(doc["model"]["tool_search_enabled"], true);
    // SEARCHQ-8: the hybrid tier is shown, naming the embedding model the tools and queries go to.
    let plain = std::fs::read_to_string(&config).unwrap();
    let hybrid = "harness:\n  knowledge:\n    embeddings:\n      base_url: http://127.0.0.1:9/v1\n      model: \
                  nomic-embed\n      tool_search: true\n";
    std::fs::write(&config, format!("{plain}{hybrid}")).unwrap();
    let stdout = text(&info(&["--no-color"]).stdout);
    assert!(stdout.contains(&format!("{want}, fused with nomic-embed embeddings")), "{stdout}");
    std::fs::write(&config, plain).unwrap();
    // The Anthropic provider's server-side search, for contrast.
    std::fs::write(
        &config,
        std::fs::read_to_string(&config).unwrap().replace("provider: openai", "provider: anthropic"),
    )
    .unwrap();
    let doc: Value = serde_json::from_slice(&info(&["--json"]).stdout).unwrap();
    assert_eq!(doc["model"]["tool_search_enabled"], true);
    assert!(doc["model"]["tool_search"] == "enabled (used at 10 or more tools)", "{doc}");
}
