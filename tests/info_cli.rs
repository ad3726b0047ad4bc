//! The example CLI's `info` command (INFO-1..13), run as a real process.
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The example binary, built by `cargo test` alongside the tests (built here if a runner skipped it).
fn cli() -> PathBuf {
    example("cli")
}

fn info(args: &[&str], cwd: &Path) -> Output {
    Command::new(cli()).arg("info").args(args).current_dir(cwd).env_remove("NO_COLOR").output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

#[test]
fn info_3_5_10_cowsay_demo_lists_tools_gating_and_globals() {
    let out = info(&["--config", "examples/cowsay/agent.yaml"], &root());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, "", "no warnings for the demo");
    let header = stdout.lines().find(|l| l.contains("TOOL")).unwrap();
    let cols: Vec<&str> = header.split('│').map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cols, ["TOOL", "SOURCE", "CONFIRM", "DESCRIPTION", "TAGS"]);
    let row = |name: &str| stdout.lines().find(|l| l.starts_with(&format!("│ {name} "))).map(str::to_owned);
    assert!(row("cow_think").unwrap().contains("│ Yes "));
    assert!(row("feed").unwrap().contains("│ Yes "), "impact:rw is a confirm tag in the demo");
    assert!(row("say").unwrap().contains("│ local "));
    assert!(row("think").is_none(), "ai:deny never listed");
    assert!(row("moo-debug").is_none(), "hidden never listed");
    assert!(stdout.contains("cow_think (ai:confirm), feed (impact:rw)"));
    assert!(stdout.contains("--context   Named settings profile to use [exposed]"));
    assert!(!stdout.contains("wire-trace"), "hidden global left out");
    assert!(stdout.contains("Model:") && stdout.contains("enabled (used at 10 or more tools)"));
    assert!(stdout.contains("Tell short jokes using cows!"));
    // INFO-2 order.
    let pos = |s: &str| stdout.find(s).unwrap();
    assert!(pos("Model:") < pos("Sessions:") && pos("Sessions:") < pos("TOOL") && pos("TOOL") < pos("Global flags:"));
    assert!(pos("Global flags:") < pos("Prompt:"));
    assert!(
        stdout.trim_end().ends_with("Serve these tools over MCP: cli mcp --config examples/cowsay/agent.yaml"),
        "INFO-2 closing line: {stdout}"
    );
}

#[test]
fn info_json_reports_the_same_facts_for_scripts() {
    let out = info(&["--config", "examples/cowsay/agent.yaml", "--json"], &root());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["say", "cow_say", "cow_think", "feed", "list"]);
    let think = &tools[2];
    assert_eq!(think["gated"], true);
    assert_eq!(think["gate_tag"], "ai:confirm");
    assert_eq!(think["command"], "cow think");
    assert_eq!(think["input_schema"]["properties"]["context"]["enum"], serde_json::json!(["default", "farm", "barn"]));
    assert_eq!(doc["model"]["provider"], "anthropic");
    assert_eq!(doc["identity"], "cowsay");
    let context = doc["global_flags"].as_array().unwrap().iter().find(|g| g["name"] == "context").unwrap();
    assert_eq!(context["exposed"], true);
    assert_eq!(doc["warnings"], serde_json::json!([]));
}

#[test]
fn info_12_warnings_go_to_stderr_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let app = fake_app(dir.path(), "edge-cases");
    std::fs::write(
        dir.path().join("agent.yaml"),
        format!("application_path: {}\nharness:\n  confirm_tags: [impact:rw, impact:typo]\n", app.display()),
    )
    .unwrap();
    // --config defaults to agent.yaml in the working directory.
    let out = info(&[], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.lines().all(|l| l.starts_with("warning: ")), "{stderr}");
    assert!(stderr.contains("\"impact:typo\""), "{stderr}");
    assert!(stderr.contains("grüße"), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("Model:"), "no model section without llm.model");
    assert!(stdout.contains("--account") && stdout.contains("[exposed, required]"));
    assert!(stdout.contains("No system prompt is defined."));
}

#[test]
fn info_13_configuration_and_introspection_errors_fail_naming_the_culprit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.yaml"), "identity: x\nllm:\n  budget:\n    max_token: 5\n").unwrap();
    let out = info(&["--config", "bad.yaml"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("bad.yaml:4:5") && stderr.contains("max_token"),
        "{stderr}"
    );

    let out = info(&["--config", "missing.yaml"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("missing.yaml"));

    let app = fake_app(dir.path(), "garbage");
    std::fs::write(dir.path().join("agent.yaml"), format!("application_path: {}\n", app.display())).unwrap();
    let out = info(&[], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains(&app.display().to_string()));
}

#[test]
fn info_names_a_relative_application_path_against_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.yaml"), "application_path: bin/missing-app\n").unwrap();
    let out = info(&[], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("bin/missing-app") && stderr.contains("resolves against the working directory"),
        "{stderr}"
    );
}

#[test]
fn info_3_lists_enabled_built_ins_after_commands_and_warns_on_an_empty_tool_set() {
    let dir = tempfile::tempdir().unwrap();
    let app = fake_app(dir.path(), "cowsay");
    let write = |extra: &str| {
        std::fs::write(
            dir.path().join("agent.yaml"),
            format!(
                "application_path: {}\nharness:\n  tools: [{{name: base64_encode, confirm: true}}]\n{extra}",
                app.display()
            ),
        )
        .unwrap()
    };
    write("");
    let out = info(&["--json"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    let last = tools.last().unwrap();
    assert_eq!(
        (last["name"].as_str(), last["source"].as_str(), last["gated"].as_bool()),
        (Some("base64_encode"), Some("local"), Some(true))
    );
    assert_eq!(last["gate_tag"], "ai:confirm");

    write("exclude: {tools: ['.*']}\n");
    let out = info(&[], dir.path());
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("warning: no tools remain after filtering"), "{stderr}");

    std::fs::write(
        dir.path().join("agent.yaml"),
        format!("application_path: {}\nharness:\n  tools: [{{name: nope}}]\n", app.display()),
    )
    .unwrap();
    let out = info(&[], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("unknown built-in tool \"nope\""), "{}", text(&out.stderr));
}

/// A configuration in `dir` for the cowsay demo application with `harness` lines (indented by two under
/// `harness:`); its path.
fn cowsay_config(dir: &Path, harness: &str) -> PathBuf {
    let app = root().join("examples/cowsay/cowsay");
    let path = dir.join("agent.yaml");
    std::fs::write(&path, format!("application_path: {}\nharness:\n{harness}", app.display())).unwrap();
    path
}

/// ENV-4: `info` names every variable a command tool gets, in the text and the JSON, and never a value; a
/// credential stays out of the list even when it is set.
#[test]
fn info_env_4_names_the_variables_children_get_and_never_their_values() {
    let dir = tempfile::tempdir().unwrap();
    let config = cowsay_config(
        dir.path(),
        "  env:\n    inherit: none\n    include: [FISK_INFO_KEPT]\n    set: {FISK_INFO_SET: s3t-value}\n",
    );
    // `info` with the included variable set (to a value it must not print), and `extra` arguments.
    let run = |config: &Path, extra: &[&str]| {
        Command::new(cli())
            .args(["info", "--config", config.to_str().unwrap()])
            .args(extra)
            .env("FISK_INFO_KEPT", "kept-value")
            .env("ANTHROPIC_API_KEY", "sk-ant-do-not-print")
            .env("FISK_INFO_PLAIN", "plain-value")
            .output()
            .unwrap()
    };
    let out = run(&config, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let row = stdout.lines().find(|l| l.contains("Environment")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("FISK_INFO_KEPT, FISK_INFO_SET, LLMFORMAT"), "{row}");
    assert!(!stdout.contains("s3t-value") && !stdout.contains("kept-value"), "{stdout}");

    let out = run(&config, &["--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["children"]["environment"], serde_json::json!(["FISK_INFO_KEPT", "FISK_INFO_SET", "LLMFORMAT"]));
    assert_eq!(doc["children"]["inherits_all"], false);
    assert!(!text(&out.stdout).contains("s3t-value") && !text(&out.stdout).contains("kept-value"));

    // `inherit: all`: the JSON lists every inherited name but the credentials, which the text names as left out.
    let config = cowsay_config(dir.path(), "  confirm_tags: []\n");
    let out = run(&config, &[]);
    let stdout = text(&out.stdout);
    let row = stdout.lines().find(|l| l.contains("Environment")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("inherited, without the credentials") && row.contains("ANTHROPIC_API_KEY"), "{row}");
    assert!(!stdout.contains("sk-ant-do-not-print") && !stdout.contains("plain-value"), "{stdout}");
    let out = run(&config, &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> =
        doc["children"]["environment"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(names.contains(&"FISK_INFO_PLAIN") && names.contains(&"LLMFORMAT"), "{names:?}");
    assert!(!names.contains(&"ANTHROPIC_API_KEY"), "{names:?}");
    assert_eq!(doc["children"]["inherits_all"], true);
    let all = text(&out.stdout);
    assert!(!all.contains("sk-ant-do-not-print") && !all.contains("plain-value"), "{all}");
}

/// SBX-6: a sandbox the kernel cannot enforce (here a Landlock ABI above any kernel's) fails the build, naming the
/// setting and the file; with `best_effort`, the build goes on and says what is not enforced, as a warning and in
/// the Children section.
#[test]
fn info_sbx_6_an_unenforceable_sandbox_fails_the_build_unless_best_effort() {
    let dir = tempfile::tempdir().unwrap();
    let config = cowsay_config(dir.path(), "  sandbox:\n    network: none\n    landlock_abi: 99\n");
    let out = info(&["--config", config.to_str().unwrap()], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("agent.yaml") && stderr.contains("harness.sandbox.landlock_abi"), "{stderr}");
    assert!(stderr.contains("needs Landlock ABI 99"), "{stderr}");

    let config =
        cowsay_config(dir.path(), "  sandbox:\n    network: none\n    landlock_abi: 99\n    best_effort: true\n");
    let out = info(&["--config", config.to_str().unwrap()], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.lines().any(|l| l.starts_with("warning: ") && l.contains("harness.sandbox.landlock_abi")),
        "{stderr}"
    );
    let stdout = text(&out.stdout);
    let row = stdout.lines().find(|l| l.contains("Unenforced")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("landlock_abi (it needs Landlock ABI 99"), "{row}");
}
