//! Interop with the official Python MCP SDK client (`pip install mcp`): list the tools and call a gated tool,
//! answering its elicitation, in the client's default mode (the 2026-07-28 lifecycle, approval through
//! `InputRequiredResult`) and in its legacy mode (`initialize`, `elicitation/create`); over HTTP, and over stdio with
//! the client starting `cli mcp --stdio` itself.
//!
//! The interpreter comes from `FISK_AI_PYTHON` (a venv with `mcp` installed; `.ci/run` creates it). The test is
//! `#[ignore]`d, so a plain `cargo test` reports it as ignored; run with `--ignored`, a missing or unusable
//! interpreter fails it.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use mcp_support::*;
use serde_json::Value;
use std::path::PathBuf;

fn python() -> PathBuf {
    common::python::interpreter()
}

async fn run_client(python: &PathBuf, url: &str, mode: &str) -> Value {
    let script = common::root().join("tests/fixtures/python/mcp_client.py");
    let out = tokio::process::Command::new(python).arg(&script).args([url, mode]).output().await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python client ({mode}) failed:\n{stdout}\n{stderr}");
    // The session DELETE answers 204, which the SDK accepts; a 202 made it log a failed termination.
    assert!(!stderr.contains("Session termination failed"), "{mode}: {stderr}");
    let line = stdout.lines().last().unwrap_or_else(|| panic!("no output; stderr:\n{stderr}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}\n{stderr}"))
}

#[tokio::test]
#[ignore = "needs the Python MCP client (FISK_AI_PYTHON); .ci/run provides it"]
async fn python_sdk_client_lists_tools_and_approves_a_gated_call_in_default_and_legacy_modes() {
    let python = python();
    let served = serve(&["instructions: from python"]).await;
    for (mode, protocol) in [("default", "2026-07-28"), ("legacy", "2025-11-25")] {
        let out = run_client(&python, &served.url, mode).await;
        assert_eq!(out["protocol"], protocol, "{mode}: {out}");
        assert_eq!(out["server"], "testsrv");
        let names: Vec<&str> = out["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["echo", "purge", "farm_feed", "slow", "hang", "fail", "odd", "base64_encode", "read_file"]);
        let purge = out["tools"].as_array().unwrap().iter().find(|t| t["name"] == "purge").unwrap();
        assert_eq!(purge["annotations"]["destructiveHint"], true, "{purge}");
        assert_eq!(purge["annotations"]["title"], "purge");

        let asked = out["asked"].as_array().unwrap();
        assert_eq!(asked.len(), 1, "{mode}: asked once: {out}");
        assert!(asked[0]["message"].as_str().unwrap().contains(&format!("purge -- py-{mode}")));
        assert_eq!(asked[0]["schema"]["required"][0], "approve");

        let result = &out["result"];
        assert_ne!(result["isError"], true, "{mode}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        let exec: Value = serde_json::from_str(text).unwrap();
        assert_eq!(exec["output"], format!("purged py-{mode}\n"));

        // Bad arguments are an isError result, not a protocol error, and nothing is asked.
        assert_eq!(out["bad_args"]["isError"], true, "{}", out["bad_args"]);
    }
    assert_eq!(served.ran(), ["purge py-default", "purge py-legacy"]);
    served.stop().await.unwrap();
}

/// STDIO-1, STDIO-2: the Python SDK client starts `cli mcp --stdio` itself, as an assistant does, in both protocol
/// eras: it lists the tools and calls one, and a gated call runs only when its approval request is accepted (not on
/// decline or cancel, and not for a client that cannot be asked).
#[tokio::test]
#[ignore = "needs the Python MCP client (FISK_AI_PYTHON); .ci/run provides it"]
async fn python_sdk_client_over_stdio_lists_calls_and_answers_approvals_in_both_eras() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.yaml");
    std::fs::write(&config, config_yaml(dir.path(), &[], "")).unwrap();
    let script = common::root().join("tests/fixtures/python/mcp_stdio_client.py");
    let cli = common::example("cli");
    for (mode, protocol) in [("default", "2026-07-28"), ("legacy", "2025-11-25")] {
        for answer in ["accept", "decline", "cancel", "none"] {
            let out = tokio::process::Command::new(&python)
                .arg(&script)
                .args([cli.as_os_str(), config.as_os_str()])
                .args([mode, answer])
                .output()
                .await
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "{mode}/{answer}: {stdout}\n{stderr}");
            let out: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
            assert_eq!(out["protocol"], protocol, "{mode}/{answer}: {out}");
            assert!(out["tools"].as_array().unwrap().contains(&"purge".into()), "{out}");
            let echo: Value = serde_json::from_str(out["echo"]["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(echo["output"], "echo: from python\n", "{mode}/{answer}");
            assert_eq!(out["echo"]["structuredContent"]["exit_code"], 0, "{mode}/{answer}: typed result");
            let asked = out["asked"].as_array().unwrap().len();
            assert_eq!(asked, usize::from(answer != "none"), "{mode}/{answer}: {out}");
            assert_eq!(out["purge"]["isError"] != true, answer == "accept", "{mode}/{answer}: {}", out["purge"]);
        }
    }
    let ran = std::fs::read_to_string(dir.path().join("ran")).unwrap_or_default();
    assert_eq!(ran.lines().collect::<Vec<_>>(), ["purge py-default-accept", "purge py-legacy-accept"]);
}
