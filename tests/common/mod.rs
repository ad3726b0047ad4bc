//! Shared helpers for the integration tests: fake applications and fixtures.
#![allow(dead_code)]

#[cfg(feature = "nats")]
pub mod a2a;
#[cfg(feature = "nats")]
pub mod a2a_peer;
pub mod cli;
pub mod dispatch;
pub mod embed;
pub mod fs;
pub mod gate;
#[cfg(feature = "mcp")]
pub mod jwt;
#[cfg(feature = "nats")]
pub mod kv;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memory;
pub mod nats;
pub mod net;
pub mod otlp;
pub mod procs;
pub mod python;
pub mod secrets;
pub mod tools;
pub mod trace;
pub mod turns;
#[cfg(feature = "nats")]
pub mod wire;

use fisk_ai::source::fisk::AppModel;
use std::path::{Path, PathBuf};

/// The credential variables SPEC PROV-16 lists, written out here so a name dropped from the library's own list
/// fails the tests that compare with it (EXEC-8, invariant 4).
pub const SPEC_PROV_16: [&str; 5] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_WEBHOOK_SIGNING_KEY",
    "ANTHROPIC_CUSTOM_HEADERS",
];

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture file's path.
pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/fisk").join(name)
}

/// A fixture decoded as an application model.
pub fn model(name: &str) -> AppModel {
    AppModel::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

/// A fake application named `behaviour` inside `dir`: a symlink to tests/fixtures/bin/fake-app, whose name picks
/// what it does. Symlinks (not copied scripts) avoid ETXTBSY races with concurrent spawns.
pub fn fake_app(dir: &Path, behaviour: &str) -> PathBuf {
    let link = dir.join(behaviour);
    if !link.exists() {
        std::os::unix::fs::symlink(root().join("tests/fixtures/bin/fake-app"), &link).unwrap();
    }
    link
}

/// Split the NUL-separated argv printed by the `echo-args` behaviour.
pub fn split_args(output: &str) -> Vec<String> {
    let mut v: Vec<String> = output.split('\0').map(str::to_owned).collect();
    assert_eq!(v.pop().as_deref(), Some(""), "echo-args output ends with NUL");
    v
}

/// The `output` field of an EXEC-13 result.
pub fn exec_output(content: &str) -> (String, i64, bool) {
    let v: serde_json::Value = serde_json::from_str(content).unwrap();
    (
        v["output"].as_str().unwrap().to_owned(),
        v["exit_code"].as_i64().unwrap(),
        v.get("truncated").and_then(|t| t.as_bool()).unwrap_or(false),
    )
}

/// Tool input from JSON text.
pub fn raw(s: &str) -> fisk_ai::ToolInput {
    fisk_ai::ToolInput::from_json(s).unwrap()
}

/// The example CLI as a one-shot child in `dir`: a test API key, no colour, none of the
/// developer's trace or output settings, stdin closed.
pub fn example_cli(args: &[&str], dir: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(example("cli"));
    cmd.args(args)
        .current_dir(dir)
        .env("ANTHROPIC_API_KEY", "test-key")
        // Sessions and pins under the test's directory, never the user's state directory.
        .env("XDG_STATE_HOME", dir.join(".state"))
        .env("NO_COLOR", "1")
        .env_remove("FISK_AI_VERBOSE")
        .env_remove("FISK_AI_TOOL_OUTPUT")
        .stdin(std::process::Stdio::null());
    cmd
}

/// `cli run --config <config> --base-url <base_url> <args>` in `dir`, as an operator runs it against a (fake)
/// Anthropic server: a test key, default colours, no verbosity or debug variables from the test's environment.
pub fn cli_run_against(base_url: &str, config: &Path, dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(example("cli"));
    cmd.arg("run")
        .arg("--config")
        .arg(config)
        .arg("--base-url")
        .arg(base_url)
        .args(args)
        .current_dir(dir)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env_remove("NO_COLOR")
        .env_remove("FISK_AI_VERBOSE")
        .env_remove("FISK_AI_TOOL_OUTPUT")
        .env_remove("FISK_AI_HTTP_DEBUG")
        .stdin(std::process::Stdio::null());
    cmd
}

/// The example binary `name`, as `cargo test` built it before running any test binary: no test starts a cargo
/// build of its own (a nested build of the whole example set took minutes, silently, inside one test).
///
/// With `cargo test --test X` cargo builds no examples, so a binary that is missing, or older than any source file
/// its dep-info (`examples/<name>.d`, which cargo writes beside it) lists, fails the test with the command that
/// builds it.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let examples = exe.parent().and_then(Path::parent).unwrap().join("examples");
    let path = examples.join(name);
    let build = "cargo test --all-features builds it before the tests; after `cargo test --test ...`, run \
                 `cargo build --all-features --examples` first";
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified());
    let built =
        modified(&path).unwrap_or_else(|e| panic!("examples/{name} is not built ({}: {e}): {build}", path.display()));
    let deps = std::fs::read_to_string(examples.join(format!("{name}.d")))
        .unwrap_or_else(|e| panic!("examples/{name}.d, cargo's list of its sources, is missing ({e}): {build}"));
    // `<binary>: <source> <source> ...`, a space inside a path escaped with a backslash.
    let sources = deps.lines().next().and_then(|l| l.split_once(": ")).map_or("", |(_, s)| s).replace("\\ ", "\0");
    if let Some(newer) = sources
        .split_whitespace()
        .map(|s| PathBuf::from(s.replace('\0', " ")))
        .find(|s| modified(s).is_ok_and(|m| m > built))
    {
        panic!("examples/{name} is older than {}, so it may not hold the change under test: {build}", newer.display());
    }
    path
}

/// A pin store of its own in a fresh directory under the test target's tmp dir, so a harness that imports tools
/// never pins them in the user's state directory and two tests that name a server alike never share pins.
pub fn pin_store() -> std::sync::Arc<dyn fisk_ai::source::pins::PinStore> {
    std::sync::Arc::new(fisk_ai::source::pins::FilePinStore::new(fresh_dir("pins")))
}

/// A new, empty directory under `CARGO_TARGET_TMPDIR` that outlives the test (its contents help a failure's
/// post-mortem; `cargo clean` removes them).
pub fn fresh_dir(what: &str) -> PathBuf {
    let dir = tempfile::Builder::new().prefix(what).tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    dir.keep()
}

/// The names of the imported tools in `toolset`, sorted.
pub fn imported_names(toolset: &fisk_ai::select::Toolset) -> Vec<String> {
    let mut names: Vec<String> = (toolset.iter())
        .filter(|t| t.spec().kind() == fisk_ai::tool::ToolKind::Imported)
        .map(|t| t.spec().name().to_owned())
        .collect();
    names.sort();
    names
}
