//! The README's first command (DEMO-1..4): the offline demo, exactly as the README writes it, run as the built
//! example binary (no nested cargo), without a terminal; and the `scripted` provider's configuration refused where
//! it is wrong.
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;

use std::process::Stdio;

/// The first `sh` block of the README's "Set up" section.
fn readme_demo_command() -> String {
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    let setup = &readme[readme.find("## Set up").expect("a Set up section")..];
    let block = &setup[setup.find("```sh\n").expect("a sh block") + 6..];
    block[..block.find("```").unwrap()].trim().to_owned()
}

/// Split a command line on spaces, honouring double quotes (all the README's command uses).
fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => out.extend((!word.is_empty()).then(|| std::mem::take(&mut word))),
            c => word.push(c),
        }
    }
    out.extend((!word.is_empty()).then_some(word));
    out
}

#[test]
fn demo_1_4_the_readme_first_command_runs_the_whole_loop_offline() {
    let command = readme_demo_command();
    let words = words(&command);
    let dashes = words.iter().position(|w| w == "--").expect("cargo run ... -- <args>");
    assert_eq!(words[..dashes], ["cargo", "run", "--example", "cli"], "{command}");
    assert!(command.contains("examples/cowsay/demo.yaml"), "{command}");
    let out = std::process::Command::new(common::example("cli"))
        .args(&words[dashes + 1..])
        .current_dir(common::root())
        // No key and no terminal: the demo needs neither, and declines the gated call.
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("FISK_AI_VERBOSE")
        .env_remove("FISK_AI_TOOL_OUTPUT")
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", tempfile::tempdir().unwrap().path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "Why did the farmer give Daisy a bell? Because her horns don't work.\n");
    for needle in [
        "Here's one about Daisy. First she sets it up.",
        "-> cow say --name=daisy -- 'Why did the farmer give Daisy a bell?'",
        "x cow_think declined: no operator is available to approve this command, so it was not run",
        "Run summary: model=demo llm_calls=3 tool_calls=2 ",
    ] {
        assert!(stderr.contains(needle), "{needle:?} in:\n{stderr}");
    }
    assert!(!stderr.contains("-> cow think"), "the declined call did not run:\n{stderr}");
}

fn run_with(llm: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.yaml");
    let yaml = format!(
        "identity: demo\napplication_path: {}\nsystem_prompt: x\nllm:\n  model: m\n{llm}",
        common::root().join("examples/cowsay/cowsay").display()
    );
    std::fs::write(&config, yaml).unwrap();
    let out = common::example_cli(&["run", "--config", config.to_str().unwrap(), "hi"], dir.path()).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn demo_1_3_a_script_without_the_scripted_provider_or_the_provider_without_a_script_is_refused() {
    let (ok, err) = run_with("  script: turns.yaml\n");
    assert!(!ok);
    assert!(err.contains("agent.yaml:6:") && err.contains("only the scripted provider reads a script"), "{err}");
    let (ok, err) = run_with("  provider: scripted\n");
    assert!(!ok);
    assert!(err.contains("llm.script") && err.contains("not set"), "{err}");
    let (ok, err) = run_with("  provider: scripted\n  script: missing.yaml\n");
    assert!(!ok);
    assert!(err.contains("llm.script: cannot read missing.yaml"), "{err}");
}
