//! `cli pins list|accept|forget` and the pin states `cli info` shows (PIN-7, PIN-8), as an operator runs them: the
//! example CLI as a real process, importing the rmcp fixture server over stdio, pins in the state directory.
#![cfg(feature = "mcp")]

mod common;

use std::path::Path;

fn write_config(dir: &Path, args: &[&str]) {
    let mut command = vec![common::example("mcp_fixture_server").display().to_string()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    let yaml = format!(
        "identity: pinner\nmcp_servers:\n  - name: fx\n    command: {}\n    include: {{tools: [\"^(echo|add)$\"]}}\n",
        serde_json::to_string(&command).unwrap()
    );
    std::fs::write(dir.join("agent.yaml"), yaml).unwrap();
}

/// stdout of a successful run of the CLI.
fn cli(dir: &Path, args: &[&str]) -> String {
    let out = common::example_cli(args, dir).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{args:?} failed:\nstdout: {stdout}\nstderr: {stderr}");
    stdout.into_owned()
}

#[test]
fn pin_7_8_an_operator_sees_a_changed_tool_in_info_then_accepts_it_and_forgets_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_config(dir, &[]);
    let listed = cli(dir, &["pins", "list", "--config", "agent.yaml"]);
    assert!(listed.contains("mcp_servers.fx: not pinned yet"), "{listed}");
    let info = cli(dir, &["info", "--config", "agent.yaml"]);
    assert!(info.contains("mcp_servers.fx (pins: refuse): 2 to pin on first use"), "{info}");

    // The first accept loads the server as a run would, which pins it on first sight.
    let accepted = cli(dir, &["pins", "accept", "fx", "--config", "agent.yaml"]);
    assert!(accepted.contains("mcp_servers.fx: nothing to accept"), "{accepted}");
    let file = dir.join(".state/fisk-ai/pins/pinner/mcp_servers.fx.json");
    assert!(file.is_file(), "pinned in the state directory: {}", file.display());
    let listed = cli(dir, &["pins", "list", "fx", "--config", "agent.yaml"]);
    assert_eq!(listed.lines().filter(|l| l.starts_with("mcp_servers.fx  ")).count(), 2, "{listed}");

    // The server changes a description: info says so, and the tool leaves the table.
    write_config(dir, &["--describe", "add=Add two integers and upload the result"]);
    let info = cli(dir, &["info", "--config", "agent.yaml", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&info).unwrap();
    let add = doc["pins"]["tools"].as_array().unwrap().iter().find(|t| t["tool"] == "add").unwrap().clone();
    assert_eq!(add["state"], "changed: description");
    assert_eq!(add["offered"], false);
    let names: Vec<&str> = doc["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"echo") && !names.contains(&"add"), "{names:?}");
    let text = cli(dir, &["info", "--config", "agent.yaml"]);
    assert!(text.contains("add: changed: description (not offered) [description "), "{text}");
    let shown = text.lines().find(|l| l.contains("add: changed")).unwrap().to_owned();

    // Accept that one tool: it is pinned as it is now, and offered again.
    let accepted = cli(dir, &["pins", "accept", "fx", "add", "--config", "agent.yaml"]);
    assert!(
        accepted.contains("mcp_servers.fx  add  accepted (was changed: description; now description "),
        "{accepted}"
    );
    // The fingerprint accepted is the one info showed, and the one now listed.
    let fp = shown.split('[').nth(1).unwrap().trim_end_matches(']').to_owned();
    assert!(accepted.contains(&fp), "{accepted}\n{shown}");
    let listed = cli(dir, &["pins", "list", "fx", "add", "--config", "agent.yaml"]);
    assert!(listed.contains(&fp), "{listed}");
    let info = cli(dir, &["info", "--config", "agent.yaml"]);
    assert!(info.contains("mcp_servers.fx (pins: refuse): 2 pinned") && !info.contains("not offered"), "{info}");

    // Forget the server: nothing is pinned until its next load.
    let forgot = cli(dir, &["pins", "forget", "fx", "--config", "agent.yaml"]);
    assert!(forgot.contains("mcp_servers.fx: forgotten"), "{forgot}");
    assert!(!file.exists());
    let out = common::example_cli(&["pins", "forget", "nosuch", "--config", "agent.yaml"], dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("no import is named \"nosuch\" (configured: mcp_servers.fx)"),
        "{stderr}"
    );
}
