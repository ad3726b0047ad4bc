//! `ClapSource` and the example clap CLI end to end (CLAP-4, CLAP-6).
//!
//! - CLAP-4: a `ClapSource` loads from the `Command` value without starting the binary, gives the same tools as
//!   wrapping the binary's `--fisk-introspect`, and runs calls through the hardened runner.
//! - CLAP-6: examples/clap_app.rs answers `--fisk-introspect`; an agent over it lists its tools (the denied one
//!   stripped, the confirmed one gated), runs a call, and declines the gated call without a terminal: in process,
//!   and as an operator runs it, `cli info` and `cli run` over the built binary.
#![cfg(feature = "clap")]

#[path = "../examples/clap_app.rs"]
#[allow(dead_code)]
mod clap_app;
mod common;

use common::turns::{call_with, done, result_of, turn};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::clap::{ClapSource, Tags};
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::source::{LoadContext, Loaded, ToolSource};
use fisk_ai::{CallContext, Config, FiskApp, ToolInput};

fn names(loaded: &Loaded) -> Vec<&str> {
    loaded.tools.iter().map(|t| t.spec().name()).collect()
}

fn source(binary: impl Into<std::path::PathBuf>) -> ClapSource {
    ClapSource::new(clap_app::command(), binary).with_tags(clap_app::tags()).with_global_flags(["verbose"])
}

#[tokio::test]
async fn clap_4_a_clap_source_loads_without_starting_the_binary() {
    // No such binary: loading must not need it.
    let loaded = source("/nonexistent/notes").load(&LoadContext::default()).await.unwrap();
    assert_eq!(names(&loaded), ["note_add", "note_list", "note_rm", "wipe"]);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let rm = &loaded.tools[2];
    assert_eq!(rm.spec().tags().iter().collect::<Vec<_>>(), ["ai:confirm"]);
    assert_eq!(rm.spec().command_path(), ["note", "rm"]);
    let schema = rm.spec().input_schema();
    assert_eq!(schema["properties"]["verbose"]["type"], "boolean", "the allowed root global is offered: {schema}");
}

#[tokio::test]
async fn clap_4_a_tag_table_naming_no_command_fails_the_load_naming_the_path() {
    let bad = ClapSource::new(clap_app::command(), "/nonexistent/notes")
        .with_tags(Tags::new().tag("note delete", ["ai:deny"]));
    let err = bad.load(&LoadContext::default()).await.unwrap_err();
    assert!(err.to_string().contains("\"note delete\""), "{err}");
}

#[tokio::test]
async fn clap_4_clap_6_the_source_and_the_binary_introspected_give_the_same_tools() {
    let binary = common::example("clap_app");
    let out = std::process::Command::new(&binary).arg("--fisk-introspect").output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim_end(), source(&binary).document().unwrap());

    let spawned = FiskApp::new(&binary).with_global_flags(["verbose"]).load().await.unwrap();
    let in_process = source(&binary).tools().unwrap();
    assert_eq!(names(&spawned), names(&in_process));
    for (a, b) in spawned.tools.iter().zip(&in_process.tools) {
        assert_eq!(a.spec().description(), b.spec().description());
        assert_eq!(a.spec().input_schema(), b.spec().input_schema());
        assert_eq!(a.spec().tags(), b.spec().tags());
    }
}

#[tokio::test]
async fn clap_4_a_call_runs_the_binary_with_the_mapped_argv() {
    let loaded = source(common::example("clap_app")).tools().unwrap();
    let add = loaded.tools.iter().find(|t| t.spec().name() == "note_add").unwrap();
    let input = ToolInput::from_json(r#"{"title": "-rf", "body": ["milk", "--eggs"], "priority": 1, "verbose": true}"#)
        .unwrap();
    let out = add.call(&input, &CallContext::new()).await;
    let exec = out.exec_report().unwrap();
    assert_eq!(exec.command, "note add --verbose --priority=1 -- -rf milk --eggs");
    assert_eq!(exec.exit_code, 0, "{}", out.content());
    assert_eq!(out.exec_output().unwrap().trim(), r#"added note "-rf" (2 words, tags [], priority 1) (verbose)"#);
}

#[tokio::test]
async fn clap_6_an_agent_over_the_example_lists_runs_and_declines_the_gated_call_without_a_terminal() {
    let provider = ScriptedProvider::new([
        turn(vec![
            call_with(
                "1",
                "note_add",
                r#"{"title": "groceries", "body": ["milk", "eggs"], "tag": ["home"], "priority": 2}"#,
            ),
            call_with("2", "note_rm", r#"{"title": "groceries", "force": true}"#),
        ]),
        done(),
    ]);
    let config = Config::from_yaml_str("identity: notes\nsystem_prompt: Be brief.\nllm:\n  model: scripted\n").unwrap();
    // No gate and no terminal: nobody can approve the gated call.
    let agent = Agent::builder()
        .config(config)
        .provider(provider)
        .source(source(common::example("clap_app")))
        .build()
        .await
        .unwrap();

    // What `info` shows: the tools, and which are gated; `wipe` (ai:deny) is not a tool at all.
    let listed: Vec<(&str, bool)> = agent.toolset().iter().map(|t| (t.spec().name(), t.is_gated())).collect();
    assert_eq!(listed, [("note_add", false), ("note_list", false), ("note_rm", true)]);

    let out = agent.run("add my groceries, then remove them", RunOptions::new()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    let (added, is_error) = result_of(&out.messages, "1");
    assert!(
        !is_error && added.contains(r#"added note \"groceries\" (2 words, tags [\"home\"], priority 2)"#),
        "{added}"
    );
    let (declined, _) = result_of(&out.messages, "2");
    assert!(declined.contains("no operator"), "{declined}");
    assert!(!declined.contains("removed note"), "the gated command never ran: {declined}");
}

/// CLAP-6 through the example CLI, as an operator wraps a clap binary: `cli info` and `cli run` with a
/// configuration whose `application_path` is the built example, the model replayed by the scripted provider.
#[cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal", feature = "knowledge"))]
#[test]
fn clap_6_the_cli_wraps_the_example_binary_lists_runs_and_declines_the_gated_call() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.yaml");
    std::fs::write(
        &config,
        format!(
            "identity: notes\napplication_path: {}\nglobal_flags: [verbose]\nsystem_prompt: Keep notes.\n\
             llm:\n  provider: scripted\n  script: turns.yaml\n  model: scripted\n",
            common::example("clap_app").display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("turns.yaml"),
        "turns:\n  - calls:\n      - tool: note_add\n        input: {title: groceries, body: [milk, -x], priority: 2, \
         verbose: true}\n  - calls:\n      - tool: note_rm\n        input: {title: groceries, force: true}\n  - text: \
         Done.\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();

    let info = common::example_cli(&["info", "--config", config], dir.path()).output().unwrap();
    let listing = String::from_utf8_lossy(&info.stdout);
    assert!(info.status.success(), "{}", String::from_utf8_lossy(&info.stderr));
    let row = |tool: &str| listing.lines().find(|l| l.contains(&format!(" {tool} "))).map(str::to_owned);
    assert!(row("note_add").is_some_and(|r| !r.contains("Yes")), "{listing}");
    assert!(row("note_list").is_some(), "{listing}");
    assert!(row("note_rm").is_some_and(|r| r.contains("Yes") && r.contains("ai:confirm")), "{listing}");
    assert!(row("wipe").is_none(), "the ai:deny command is no tool:\n{listing}");
    assert!(listing.contains("--verbose"), "the exposed global:\n{listing}");

    let run = common::example_cli(&["run", "--config", config, "add my groceries, then remove them"], dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "{stderr}");
    assert_eq!(stdout, "Done.\n");
    for needle in [
        "-> note add --verbose --priority=2 -- groceries milk -x",
        "x note_rm declined: no operator is available to approve this command, so it was not run",
        "Run summary: model=scripted llm_calls=3 tool_calls=2 ",
    ] {
        assert!(stderr.contains(needle), "{needle:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("-> note rm"), "the declined call did not run:\n{stderr}");
}
