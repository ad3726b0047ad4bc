//! MCP import inside the agent (MCPI-7, MCPI-9..11, IMPORT-5/6): configured `mcp_servers` join the one assembly
//! pipeline and the one dispatch path: final naming against command tools, built-ins and other servers in every
//! order, `confirm` gating with the final name and compact JSON, journaling as remote, the session fingerprint,
//! and strictness.
#![cfg(feature = "mcp")]

mod common;

use common::gate::RecordingGate;
use common::turns::{call_with, done, result_of, turn};
use common::*;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::gate::Decision;
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::session::{FileSessionStore, SessionId};
use fisk_ai::{Config, ErrorKind};
use std::path::Path;
use std::sync::Arc;

/// One `mcp_servers` entry running the fixture with `args`, plus `extra` keys (indented as entry keys).
fn server(name: &str, args: &[&str], extra: &str) -> String {
    let mut command = vec![example("mcp_fixture_server").display().to_string()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    let command = serde_json::to_string(&command).unwrap();
    format!("  - name: {name}\n    command: {command}\n{extra}")
}

fn config(dir: &Path, servers: &[String], extra: &str) -> Config {
    let app = fake_app(dir, "cowsay");
    let yaml = format!(
        "identity: t\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\n{extra}mcp_servers:\n{}",
        app.display(),
        servers.concat()
    );
    Config::from_yaml_str(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"))
}

async fn agent(config: Config) -> fisk_ai::Result<Agent> {
    Agent::builder().pin_store(common::pin_store()).config(config).provider(ScriptedProvider::new([])).build().await
}

fn imported_names(agent: &Agent) -> Vec<String> {
    let mut names: Vec<String> = agent
        .toolset()
        .iter()
        .filter(|t| t.spec().kind() == fisk_ai::tool::ToolKind::Imported)
        .map(|t| t.spec().name().to_owned())
        .collect();
    names.sort();
    names
}

/// IMPORT-5 / MCPI-7: a name held by a command tool or a built-in, or exposed by both servers, is prefixed with
/// the alias; a name only one server exposes stays bare; the decision does not depend on the entries' order.
#[tokio::test]
async fn mcpi_7_import_5_final_names_against_commands_builtins_and_each_other_in_every_order() {
    let dir = tempfile::tempdir().unwrap();
    let a = server(
        "alpha",
        &["--extra", "say", "--extra", "base64_encode", "--extra", "only_a", "--extra", "call_tool"],
        "",
    );
    let b = server("beta", &[], "    alias: b\n");
    let builtins = "harness:\n  tools:\n    - name: base64_encode\n";
    let mut seen = Vec::new();
    for servers in [vec![a.clone(), b.clone()], vec![b, a]] {
        let agent = agent(config(dir.path(), &servers, builtins)).await.unwrap();
        let names = imported_names(&agent);
        assert!(names.contains(&"alpha_say".to_owned()), "held by the command tool say: {names:?}");
        assert!(names.contains(&"alpha_base64_encode".to_owned()), "held by the built-in: {names:?}");
        assert!(names.contains(&"alpha_echo".to_owned()) && names.contains(&"b_echo".to_owned()), "{names:?}");
        assert!(names.contains(&"only_a".to_owned()), "exposed once: bare: {names:?}");
        assert!(names.contains(&"alpha_call_tool".to_owned()), "the search meta-tools' names are held: {names:?}");
        assert!(agent.toolset().get("say").is_some_and(|t| t.spec().kind() == fisk_ai::tool::ToolKind::Command));
        // MCPI-10: the operator's line names the tool as the model called it.
        let echo = agent.toolset().get("b_echo").unwrap();
        let input = fisk_ai::tool::ToolInput::from_json(r#"{"text": "x"}"#).unwrap();
        assert_eq!(
            echo.tool().prepare(&input, &input.to_value().unwrap()).unwrap().display(),
            r#"b_echo {"text":"x"}"#
        );
        seen.push(names);
    }
    assert_eq!(seen[0], seen[1], "the same names in either order");
}

/// IMPORT-6: two servers under one alias still collide after prefixing: the build fails naming them.
#[tokio::test]
async fn import_6_colliding_prefixed_names_fail_the_build_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let servers = [server("one", &[], "    alias: same\n"), server("two", &[], "    alias: same\n")];
    let err = agent(config(dir.path(), &servers, "")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Selection);
    assert!(err.to_string().contains("same_echo") && err.to_string().contains("distinct alias"), "{err}");
}

/// MCPI-10: `confirm: true` gates every tool of the server; the operator sees the final name and the compact
/// JSON input, sanitized (GATE-8).
#[tokio::test]
async fn mcpi_10_confirm_gates_every_tool_with_its_final_name_and_compact_json() {
    let dir = tempfile::tempdir().unwrap();
    let servers = [server("guarded", &[], "    confirm: true\n")];
    let (gate, log) = RecordingGate::new(&[Decision::Once, Decision::Decline]);
    let provider = Arc::new(ScriptedProvider::new([
        turn(vec![
            call_with("1", "echo", "{ \"text\" :  \"a\u{202e}b\" }"),
            call_with("2", "add", r#"{"a": 1, "b": 2}"#),
        ]),
        done(),
    ]));
    let agent = Agent::builder()
        .pin_store(common::pin_store())
        .config(config(dir.path(), &servers, ""))
        .provider_arc(provider)
        .gate(gate)
        .build()
        .await
        .unwrap();
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    let asked = log.requests();
    assert_eq!(asked.iter().map(|r| r.tool.as_str()).collect::<Vec<_>>(), ["echo", "add"]);
    assert_eq!(asked[0].command_line, r#"echo {"text":"a\u{202e}b"}"#);
    assert_eq!(asked[1].command_line, r#"add {"a":1,"b":2}"#);
    assert_eq!(result_of(&outcome.messages, "1").0, "a\u{202e}b", "approved: it ran");
    let (denied, _) = result_of(&outcome.messages, "2");
    assert!(denied.contains("declined"), "declined: it did not run: {denied}");
}

/// MCPI-9: journaled with `remote: true`; SESS-16: the server's tool set is part of the fingerprint, so a resume
/// after it changed is refused like any drift.
#[tokio::test]
async fn mcpi_9_journaled_as_remote_and_fingerprinted() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    // No second answer: the run ends with an error after the call, and stays resumable (SESS-33).
    let provider = Arc::new(ScriptedProvider::new([turn(vec![call_with("1", "echo", r#"{"text":"hi"}"#)])]));
    let servers = [server("files", &[], "")];
    let agent = Agent::builder()
        .pin_store(common::pin_store())
        .config(config(dir.path(), &servers, ""))
        .provider_arc(provider)
        .session_store(FileSessionStore::new(&runs))
        .build()
        .await
        .unwrap();
    let sid = SessionId::new("imported").unwrap();
    let outcome = agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(outcome.reason, TerminalReason::Error, "{:?}", outcome.error);
    assert_eq!(outcome.stats.remote_tool_calls, 1);
    let journal = std::fs::read_to_string(FileSessionStore::new(&runs).journal_path(&sid)).unwrap();
    let result = journal.lines().find(|l| l.contains("session.tool_result")).unwrap();
    let result: serde_json::Value = serde_json::from_str(result).unwrap();
    assert_eq!(result["tool_result"]["remote"], true);

    let changed = [server("files", &["--extra", "newtool"], "")];
    let drifted = Agent::builder()
        .pin_store(common::pin_store())
        .config(config(dir.path(), &changed, ""))
        .provider(ScriptedProvider::new([done()]))
        .session_store(FileSessionStore::new(&runs))
        .build()
        .await
        .unwrap();
    assert_ne!(drifted.fingerprint(), agent.fingerprint());
    let err = drifted.resume(&sid, RunOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("changed"), "refused as drift: {err}");
}

/// MCPI-11: a run is strict: a server that cannot start fails the build, naming it.
#[tokio::test]
async fn mcpi_11_an_unreachable_server_fails_the_build_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let servers = ["  - name: missing\n    command: [/nonexistent/server]\n".to_owned()];
    let err = agent(config(dir.path(), &servers, "")).await.unwrap_err();
    assert!(err.to_string().contains("mcp server missing"), "{err}");
}

/// MCPI-5, MCPI-12: `exclude.tags` and a bearer token with a command are errors at parse time; `include.tags`
/// warns.
#[test]
fn mcpi_5_12_configuration_errors_at_parse_time() {
    let base = "mcp_servers:\n  - name: s\n    command: [/bin/x]\n";
    let err = Config::from_yaml_str(&format!("{base}    exclude:\n      tags: [a]\n")).unwrap_err();
    assert!(err.to_string().contains("tags"), "{err}");
    let err = Config::from_yaml_str(&format!("{base}    bearer_token_env: T\n")).unwrap_err();
    assert!(err.to_string().contains("bearer_token_env"), "{err}");
    let config = Config::from_yaml_str(&format!("{base}    include:\n      tags: [a]\n")).unwrap();
    let warnings = config.validate(fisk_ai::config::Mode::Lenient).unwrap();
    assert!(warnings.iter().any(|w| w.kind() == "import_include_tags_ignored"));
}

/// MCPI-9: imported tools are never re-served, so `McpServer` does not connect to `mcp_servers` at all (a server
/// that cannot start does not fail it) and says so.
#[tokio::test]
async fn mcpi_9_the_mcp_server_never_imports() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), &["  - name: missing\n    command: [/nonexistent/server]\n".to_owned()], "");
    config.expose.agent.mcp.get_or_insert_with(Default::default);
    let server = fisk_ai::serve::mcp::McpServer::builder().config(config).build().await.unwrap();
    assert!(server.tools().iter().all(|t| t.spec().kind() == fisk_ai::tool::ToolKind::Command));
    let said = server.warnings().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(said.contains("mcp_servers") && said.contains("no effect over MCP"), "{said}");
}
