//! `cli mcp install|uninstall|list` (REG-1..8) as a real process against real files in a temporary HOME and
//! project, for every client: each entry's JSON shape, merging with what is there, a malformed file left untouched,
//! the mode kept, no secret written; and the entry a client would start really serves the tools over stdio.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use rmcp::ServiceExt;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use tempfile::TempDir;

const SECRET: &str = "s3cr3t-token-value-that-must-not-be-written";

/// A temporary HOME, a project directory, and an agent configuration whose imports need `OPS_TOKEN`.
struct Env {
    home: TempDir,
    project: TempDir,
    config: PathBuf,
}

impl Env {
    fn new() -> Env {
        Self::with(
            "mcp_servers:\n  - name: upstream\n    url: https://tools.example.com/mcp\n    bearer_token_env: OPS_TOKEN\n",
        )
    }

    /// With `extra` top-level configuration.
    fn with(extra: &str) -> Env {
        let (home, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let config = project.path().join("agent.yaml");
        std::fs::write(&config, mcp_support::config_yaml(project.path(), &[], extra)).unwrap();
        Env { home, project, config }
    }

    /// Run `cli mcp <args> --config <config>` in the project with HOME here and the secret in the environment.
    fn cli(&self, args: &[&str]) -> Output {
        let mut cmd = std::process::Command::new(common::example("cli"));
        cmd.arg("mcp").args(args).arg("--config").arg(&self.config);
        cmd.current_dir(self.project.path())
            .env("HOME", self.home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env("OPS_TOKEN", SECRET)
            .stdin(std::process::Stdio::null());
        cmd.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "mcp {args:?} failed: {stderr}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// Where each client keeps its file at each scope (the Names of issue 27; Linux locations for user scope).
    fn file(&self, client: &str, scope: &str) -> PathBuf {
        let (home, project) = (self.home.path(), self.project.path());
        match (client, scope) {
            ("claude-desktop", "user") => home.join(".config/Claude/claude_desktop_config.json"),
            ("claude-code", "user") => home.join(".claude.json"),
            ("claude-code", "project") => project.join(".mcp.json"),
            ("vscode", "user") => home.join(".config/Code/User/mcp.json"),
            ("vscode", "project") => project.join(".vscode/mcp.json"),
            ("cursor", "user") => home.join(".cursor/mcp.json"),
            ("cursor", "project") => project.join(".cursor/mcp.json"),
            other => panic!("no file for {other:?}"),
        }
    }
}

const CASES: [(&str, &str); 7] = [
    ("claude-desktop", "user"),
    ("claude-code", "user"),
    ("claude-code", "project"),
    ("vscode", "user"),
    ("vscode", "project"),
    ("cursor", "user"),
    ("cursor", "project"),
];

fn servers_key(client: &str) -> &'static str {
    if client == "vscode" { "servers" } else { "mcpServers" }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// REG-1, REG-2, REG-7: each client's documented shape, at its documented path; the variable the server needs is
/// referenced by name where the client expands it, and listed for the user otherwise; the secret is nowhere.
#[test]
fn reg_1_2_7_each_client_gets_its_own_shape_and_no_secret() {
    let env = Env::new();
    let exe = std::fs::canonicalize(common::example("cli")).unwrap();
    for (client, scope) in CASES {
        let said = env.ok(&["install", client, "--scope", scope]);
        let path = env.file(client, scope);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{client}/{scope}: {e}"));
        assert!(!text.contains(SECRET), "{client}/{scope}: the secret reached {}", path.display());
        let entry = &read_json(&path)[servers_key(client)]["testsrv"];
        let mut expected = json!({
            "command": exe.to_str().unwrap(),
            "args": ["mcp", "--stdio", "--config", env.config.to_str().unwrap()],
        });
        if matches!(client, "claude-code" | "vscode") {
            expected["type"] = json!("stdio");
        }
        let reference = match (client, scope) {
            ("claude-code", "project") => Some("${OPS_TOKEN}"),
            ("vscode" | "cursor", _) => Some("${env:OPS_TOKEN}"),
            _ => None,
        };
        match reference {
            Some(r) => {
                expected["env"] = json!({"OPS_TOKEN": r});
                assert!(!said.contains("needs OPS_TOKEN"), "{client}/{scope}: referenced, not listed: {said}");
            }
            None => assert!(said.contains("the server needs OPS_TOKEN"), "{client}/{scope}: listed: {said}"),
        }
        assert_eq!(entry, &expected, "{client}/{scope}");
        let listed = env.ok(&["list", client, "--scope", scope]);
        assert!(listed.starts_with(&format!("testsrv\t{}", exe.display())), "{client}/{scope}: {listed}");
    }
    let refused = env.cli(&["install", "claude-desktop", "--scope", "project"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("claude-desktop has no project configuration"));
}

/// REG-3, REG-5: other servers and members are kept (members byte for byte, in order); installing again updates
/// the entry; uninstall removes only it; the previous file is backed up and the mode is kept.
#[test]
fn reg_3_5_existing_entries_are_kept_and_the_mode_preserved() {
    let env = Env::new();
    for (client, scope) in CASES {
        let path = env.file(client, scope);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let key = servers_key(client);
        let original = format!(
            "{{\n  \"zeta\": {{\"keep\":  [1, 2,3]}},\n  \"{key}\": {{\n    \"other\": {{\"command\": \"/usr/bin/other\"}}\n  \
             }},\n  \"alpha\": \"last\"\n}}\n"
        );
        std::fs::write(&path, &original).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();

        assert!(env.ok(&["install", client, "--scope", scope]).starts_with("added"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""zeta": {"keep":  [1, 2,3]}"#), "{client}: kept byte for byte: {text}");
        assert!(text.find("zeta") < text.find(key) && text.find(key) < text.find("alpha"), "order kept: {text}");
        let json = read_json(&path);
        assert_eq!(json[key]["other"], json!({"command": "/usr/bin/other"}), "{client}");
        assert!(json[key]["testsrv"]["command"].is_string(), "{client}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640, "{client}: mode");
        let backup = PathBuf::from(format!("{}.bak", path.display()));
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), original, "{client}: backup");

        assert!(env.ok(&["install", client, "--scope", scope]).starts_with("updated"), "{client}");
        assert_eq!(read_json(&path)[key].as_object().unwrap().len(), 2, "{client}: updated, not duplicated");

        assert!(env.ok(&["uninstall", client, "--scope", scope]).starts_with("removed"), "{client}");
        let json = read_json(&path);
        assert_eq!(json[key], json!({"other": {"command": "/usr/bin/other"}}), "{client}");
        assert_eq!(json["zeta"], json!({"keep": [1, 2, 3]}), "{client}");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640, "{client}: mode");
        assert!(env.ok(&["uninstall", client, "--scope", scope]).starts_with("no entry"), "{client}");
    }
}

/// REG-5, hostile: a symlink planted at the backup's name in a shared project directory is replaced, never written
/// through, and the backup of a private file is as private as the file.
#[test]
fn reg_5_a_planted_backup_symlink_is_replaced_and_the_backup_keeps_the_files_mode() {
    let env = Env::new();
    let path = env.file("claude-code", "project");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, r#"{"mcpServers": {}, "token_note": "private"}"#).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let victim = env.home.path().join("victim.txt");
    std::fs::write(&victim, "untouched").unwrap();
    let backup = PathBuf::from(format!("{}.bak", path.display()));
    std::os::unix::fs::symlink(&victim, &backup).unwrap();

    assert!(env.ok(&["install", "claude-code", "--scope", "project"]).starts_with("added"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched", "the planted link was not followed");
    let meta = std::fs::symlink_metadata(&backup).unwrap();
    assert!(meta.file_type().is_file(), "the backup is a file of its own now");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "as private as the file it copies");
    assert!(std::fs::read_to_string(&backup).unwrap().contains("private"));
}

/// REG-3: an entry of the same name that starts something else is never overwritten.
#[test]
fn reg_3_a_foreign_entry_of_the_same_name_is_refused() {
    let env = Env::new();
    let path = env.file("cursor", "user");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let original = r#"{"mcpServers": {"testsrv": {"command": "/opt/someone-else"}}}"#;
    std::fs::write(&path, original).unwrap();
    let out = env.cli(&["install", "cursor"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/opt/someone-else") && stderr.contains(path.to_str().unwrap()), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    assert!(env.ok(&["install", "cursor", "--name", "ops-tools"]).starts_with("added"));
    let json = read_json(&path);
    assert_eq!(json["mcpServers"]["testsrv"], json!({"command": "/opt/someone-else"}));
    assert!(json["mcpServers"]["ops-tools"]["args"].is_array());
    // `list --name` shows that one entry.
    let listed = env.ok(&["list", "cursor", "--name", "ops-tools"]);
    assert!(listed.starts_with("ops-tools\t") && !listed.contains("someone-else"), "{listed}");
    // Uninstall leaves the foreign entry of that name too.
    let out = env.cli(&["uninstall", "cursor"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("/opt/someone-else"), "{stderr}");
    assert_eq!(read_json(&path)["mcpServers"]["testsrv"], json!({"command": "/opt/someone-else"}));
}

/// REG-3: an entry is this configuration's when it serves it (the same `mcp --stdio --config <path>`), whichever
/// executable starts it: after a rebuild or an upgrade moved the executable, `install` updates it and `uninstall`
/// removes it; another configuration of the same name is refused.
#[test]
fn reg_3_an_entry_serving_the_same_config_is_ours_wherever_the_executable_moved() {
    let env = Env::new();
    let path = env.file("claude-code", "project");
    let args = json!(["mcp", "--stdio", "--config", env.config.to_str().unwrap()]);
    let moved = json!({"mcpServers": {"testsrv": {"type": "stdio", "command": "/old/place/cli", "args": args}}});
    std::fs::write(&path, moved.to_string()).unwrap();
    assert!(env.ok(&["install", "claude-code", "--scope", "project"]).starts_with("updated"));
    let entry = &read_json(&path)["mcpServers"]["testsrv"];
    assert_eq!(entry["command"], common::example("cli").to_str().unwrap(), "{entry}");
    std::fs::write(&path, moved.to_string()).unwrap();
    assert!(env.ok(&["uninstall", "claude-code", "--scope", "project"]).starts_with("removed"));
    assert!(read_json(&path)["mcpServers"].as_object().unwrap().is_empty());
    // The same executable serving another configuration of the same name is not replaced.
    let other = json!(["mcp", "--stdio", "--config", "/elsewhere/agent.yaml"]);
    let theirs = json!({"mcpServers": {"testsrv": {"command": common::example("cli"), "args": other}}});
    std::fs::write(&path, theirs.to_string()).unwrap();
    let out = env.cli(&["install", "claude-code", "--scope", "project"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("/elsewhere/agent.yaml"), "{stderr}");
    assert_eq!(read_json(&path), theirs);
}

/// REG-4: a file that is not JSON (here VS Code's comments, and a truncated file) is refused with its path and
/// position and left untouched; no backup or temporary file is left behind.
#[test]
fn reg_4_a_malformed_file_is_refused_with_its_position_and_left_untouched() {
    let env = Env::new();
    let cases = [
        ("vscode", "project", "{\n  // my servers\n  \"servers\": {}\n}\n", ":2:3"),
        ("cursor", "project", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}", ":1:"),
        (
            "claude-code",
            "project",
            "{\"mcpServers\": [\"not\", \"an\", \"object\"]}",
            "\"mcpServers\" is not an object",
        ),
        ("claude-code", "user", "[1, 2]", ":1:"),
        ("claude-desktop", "user", "{\"mcpServers\": {", ":1:"),
        ("cursor", "user", "not json", ":1:"),
        ("vscode", "user", "{\"servers\": 5}", "\"servers\" is not an object"),
    ];
    for (client, scope, text, position) in cases {
        let path = env.file(client, scope);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        for action in ["install", "uninstall", "list"] {
            let out = env.cli(&[action, client, "--scope", scope]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{client} {action}: refused");
            assert!(
                stderr.contains(path.to_str().unwrap()) && stderr.contains(position),
                "{client} {action}: {stderr}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{client} {action}: untouched");
        }
        let name = path.file_name().unwrap().to_str().unwrap();
        let left: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != name && n.contains(name))
            .collect();
        assert!(left.is_empty(), "{client}: no backup or temporary file beside it: {left:?}");
    }
}

/// REG-5: a symlinked file (a dotfiles checkout) is written through to its target, and the link stays.
#[test]
fn reg_5_a_symlinked_file_is_written_through() {
    let env = Env::new();
    let real = env.home.path().join("dotfiles-cursor.json");
    std::fs::write(&real, "{}").unwrap();
    let link = env.file("cursor", "user");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    env.ok(&["install", "cursor"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
    assert!(read_json(&real)["mcpServers"]["testsrv"].is_object());
}

/// REG-1: the entry as written is what a client runs: started from the file's command and arguments, from another
/// directory, it serves the tools over stdio to rmcp's client.
#[tokio::test]
async fn reg_1_the_written_entry_starts_a_working_stdio_server() {
    let env = Env::with("");
    env.ok(&["install", "claude-code", "--scope", "project"]);
    let entry = read_json(&env.file("claude-code", "project"))["mcpServers"]["testsrv"].clone();
    let args: Vec<String> = serde_json::from_value(entry["args"].clone()).unwrap();
    let mut child = tokio::process::Command::new(entry["command"].as_str().unwrap())
        .args(&args)
        .current_dir(env.home.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(io).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    client.cancel().await.unwrap();
    assert!(child.wait().await.unwrap().success(), "the server ends when its stdin closes");
}

/// A client starts the server in a working directory of its own (Claude Desktop: `/`): a relative
/// `application_path` that works from here is reported with its location, an absolute one is not.
#[test]
fn reg_1_a_relative_application_path_is_reported_with_its_location() {
    let env = Env::new();
    let absolute = env.cli(&["install", "claude-code", "--scope", "project"]);
    assert!(absolute.status.success());
    let said = String::from_utf8_lossy(&absolute.stderr);
    assert!(!said.contains("warning"), "{said}");
    assert!(said.contains("this machine's absolute paths"), "a project file is told to hold local paths: {said}");
    let text = std::fs::read_to_string(&env.config).unwrap();
    let app = mcp_support::config_yaml(env.project.path(), &[], "");
    let app = app.lines().find_map(|l| l.strip_prefix("application_path: ")).unwrap().to_owned();
    let name = Path::new(&app).file_name().unwrap().to_str().unwrap().to_owned();
    std::fs::write(&env.config, text.replace(&app, &format!("./{name}"))).unwrap();
    let relative = env.cli(&["install", "cursor", "--scope", "project"]);
    assert!(relative.status.success(), "{relative:?}");
    let stderr = String::from_utf8_lossy(&relative.stderr);
    let line = text.lines().position(|l| l.starts_with("application_path:")).unwrap() + 1;
    let located = format!("{}:{line}:", env.config.display());
    assert!(
        stderr.contains(&located) && stderr.contains(&format!("application_path: ./{name} is relative")),
        "{stderr}"
    );
}

/// Claude Code prefers a local-scope entry (`claude mcp add`'s default, kept in `~/.claude.json` under the project's
/// path) over a user-scope one of the same name: `install` warns about it, and `list` shows it.
#[test]
fn reg_2_a_claude_code_local_entry_that_shadows_the_user_entry_is_reported() {
    let env = Env::new();
    let project = env.project.path().to_str().unwrap().to_owned();
    let local = json!({"type": "http", "url": "http://127.0.0.1:8080/"});
    let file = json!({"projects": {project.clone(): {"allowedTools": [], "mcpServers": {"testsrv": local}}}});
    std::fs::write(env.file("claude-code", "user"), file.to_string()).unwrap();
    let out = env.cli(&["install", "claude-code"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("claude mcp remove testsrv -s local") && stderr.contains(&project), "{stderr}");
    let listed = env.ok(&["list", "claude-code"]);
    let lines: Vec<&str> = listed.lines().filter(|l| l.starts_with("testsrv\t")).collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(lines[1].contains("http://127.0.0.1:8080/") && lines[1].contains("local scope"), "{listed}");
    // The project's own settings are kept.
    assert_eq!(read_json(&env.file("claude-code", "user"))["projects"][&project]["allowedTools"], json!([]));
}

/// REG-1: where a client keeps its user settings under `$XDG_CONFIG_HOME` (Claude Desktop, VS Code), a set
/// `XDG_CONFIG_HOME` is where the entry goes, and `~/.config` is left alone.
#[test]
fn reg_1_user_scope_honours_xdg_config_home_where_the_client_does() {
    let env = Env::new();
    let xdg = tempfile::tempdir().unwrap();
    for (client, file) in [("claude-desktop", "Claude/claude_desktop_config.json"), ("vscode", "Code/User/mcp.json")] {
        let out = std::process::Command::new(common::example("cli"))
            .args(["mcp", "install", client, "--scope", "user", "--config"])
            .arg(&env.config)
            .current_dir(env.project.path())
            .env("HOME", env.home.path())
            .env("XDG_CONFIG_HOME", xdg.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{client}: {}", String::from_utf8_lossy(&out.stderr));
        let written = read_json(&xdg.path().join(file));
        let servers = if client == "vscode" { &written["servers"] } else { &written["mcpServers"] };
        assert!(servers.as_object().is_some_and(|s| !s.is_empty()), "{client}: {written}");
        assert!(!env.file(client, "user").exists(), "{client}: ~/.config was written too");
    }
}
