//! The example CLI (issue 16, CLI-2, CLI-16): one name, taken from how it was started, in its usage, `--version`
//! and hints; configuration errors come before a missing API key.
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The example binary, reachable as `dir/name`. A symlink, not a copy: the name is what argv[0] carries, and a
/// freshly written executable could hit ETXTBSY while other tests spawn.
fn renamed(dir: &Path, name: &str) -> PathBuf {
    let link = dir.join(name);
    std::os::unix::fs::symlink(common::example("cli"), &link).unwrap();
    link
}

fn run(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(common::root())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("NO_COLOR")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_cli_uses_the_name_it_was_started_as_in_version_usage_and_hints() {
    let dir = tempfile::tempdir().unwrap();
    let bin = renamed(dir.path(), "agentctl");

    let version = run(&bin, &["--version"]);
    assert!(version.status.success());
    assert_eq!(text(&version.stdout).trim(), format!("agentctl {}", env!("CARGO_PKG_VERSION")));

    let help = run(&bin, &["--help"]);
    assert!(text(&help.stdout).contains("Usage: agentctl [OPTIONS] <COMMAND>"), "{}", text(&help.stdout));

    let wrong = run(&bin, &["run", "--no-such-flag"]);
    assert!(!wrong.status.success());
    assert!(text(&wrong.stderr).contains("Usage: agentctl run"), "{}", text(&wrong.stderr));

    let info = run(&bin, &["info", "--no-color", "--config", "examples/cowsay/agent.yaml"]);
    assert!(info.status.success(), "{}", text(&info.stderr));
    let out = text(&info.stdout);
    assert!(
        out.trim_end().ends_with("Serve these tools over MCP: agentctl mcp --config examples/cowsay/agent.yaml"),
        "{out}"
    );
    for other in ["fisk ", "cli "] {
        assert!(!out.contains(&format!("{other}mcp")), "no other name: {out}");
    }
}

#[test]
fn cli_2_no_tui_is_accepted_by_every_command_and_info_json_has_a_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let bin = renamed(dir.path(), "fisk");
    let plain = run(&bin, &["info", "--json", "--config", "examples/cowsay/agent.yaml"]);
    let quiet = run(&bin, &["info", "--json", "--no-tui", "--config", "examples/cowsay/agent.yaml"]);
    assert!(plain.status.success() && quiet.status.success(), "{}", text(&quiet.stderr));
    assert_eq!(plain.stdout, quiet.stdout, "--no-tui changes nothing");
    let doc: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(doc["schema_version"], 2);
    let env = Command::new(&bin)
        .args(["info", "--json", "--config", "examples/cowsay/agent.yaml"])
        .current_dir(common::root())
        .env("FISK_AI_NO_TUI", "1")
        .output()
        .unwrap();
    // Nothing changes but the list of variable names children get, which now holds FISK_AI_NO_TUI too.
    let mut with: serde_json::Value = serde_json::from_slice(&env.stdout).unwrap();
    let mut without = doc.clone();
    let names = |doc: &mut serde_json::Value| doc["children"]["environment"].take();
    let (added, before) = (names(&mut with), names(&mut without));
    assert_eq!(with, without, "FISK_AI_NO_TUI is read and changes nothing");
    let mut expected = before.as_array().unwrap().clone();
    expected.push("FISK_AI_NO_TUI".into());
    expected.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    assert_eq!(added.as_array().unwrap(), &expected);
}

#[test]
fn cli_16_run_reports_a_configuration_error_before_a_missing_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let bin = renamed(dir.path(), "fisk");
    let config = dir.path().join("agent.yaml");
    // No llm.model: an agent run needs one (CFG-2).
    std::fs::write(&config, "identity: x\nsystem_prompt: hi\n").unwrap();
    let out = run(&bin, &["run", "--config", config.to_str().unwrap(), "hello"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("{}: llm.model is required", config.display())), "names the file: {err}");
    assert!(!err.to_lowercase().contains("api key") && !err.contains("ANTHROPIC_API_KEY"), "{err}");

    // A missing application is a configuration error naming the key and the file, before any key is needed.
    std::fs::write(&config, "identity: x\napplication_path: ./nowhere/app\nsystem_prompt: hi\nllm:\n  model: m\n")
        .unwrap();
    let out = run(&bin, &["run", "--config", config.to_str().unwrap(), "hello"]);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{}:2:19: application_path: ./nowhere/app does not exist", config.display())),
        "{err}"
    );
    assert!(!err.contains("ANTHROPIC_API_KEY"), "{err}");
}
