//! The MCP import round trip through the example binary: `cli mcp` serves the cowsay demo, and a second agent
//! (`cli run`, the real Anthropic provider against the in-process fake Messages API) imports it over streamable
//! HTTP and calls a tool; `cli info` lists the imported tools with SOURCE `mcp <server>` and each server's
//! reachability (MCPI-9, MCPI-11).
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;
mod fake_anthropic;

use common::*;
use fake_anthropic::{FakeAnthropic, streamed};
use serde_json::json;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `cli mcp` serving the cowsay demo on a free port; killed on drop.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start() -> Served {
        // A port picked by binding :0 can be taken before the child binds it; the child then exits and is
        // started again on a fresh one.
        for _ in 0..5 {
            if let Some(served) =
                Self::start_on(std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port())
            {
                return served;
            }
        }
        panic!("cli mcp did not start listening on any of five ports");
    }

    fn start_on(port: u16) -> Option<Served> {
        let mut child = Command::new(example("cli"))
            .args(["mcp", "--config", "examples/cowsay/agent.yaml", "--port", &port.to_string()])
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..300 {
            if child.try_wait().unwrap().is_some() {
                return None;
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(Served { child, url: format!("http://127.0.0.1:{port}/") });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("cli mcp did not start listening on {port}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The importing agent's configuration: no application of its own, the served cowsay as `cow`, and `extra`.
fn write_config(dir: &Path, url: &str, extra: &str) -> std::path::PathBuf {
    let path = dir.join("agent.yaml");
    let yaml = format!(
        "identity: importer\nsystem_prompt: Use the cow.\nllm:\n  model: claude-haiku-4-5\nmcp_servers:\n  - name: \
         cow\n    url: {url}\n{extra}"
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

fn cli(args: &[&str], dir: &Path) -> std::process::Output {
    example_cli(args, dir).output().unwrap()
}

#[tokio::test]
async fn mcpi_9_a_second_agent_imports_cli_mcp_and_calls_its_tool() {
    let served = Served::start();
    let server = FakeAnthropic::with_replies([
        streamed(
            &[json!({"type": "tool_use", "id": "toolu_1", "name": "say", "input": {"message": "moo across"}})],
            "tool_use",
        ),
        streamed(&[json!({"type": "text", "text": "The cow spoke."})], "end_turn"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &served.url, "");
    let out = tokio::task::spawn_blocking({
        let (config, url, dir) = (config.clone(), server.url(), dir.path().to_owned());
        move || cli(&["run", "--config", config.to_str().unwrap(), "--base-url", &url, "talk"], &dir)
    })
    .await
    .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "The cow spoke.\n");
    assert!(stderr.contains("-> say (mcp cow)"), "MCPI-9 trace: {stderr}");
    assert!(stderr.contains("remote_tool_calls=1"), "counted as remote: {stderr}");
    // The served tool ran for real: its EXEC-13 result went back to the model.
    let reqs = server.requests();
    let result = &reqs[1].body_json()["messages"][2]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_1");
    let exec: serde_json::Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert!(exec["output"].as_str().unwrap().contains("moo across"), "{exec}");
    // The served side's own gated tools keep their gate: the importer's model sees them, the server decides.
    let tools: Vec<&str> = reqs[0].body_json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    assert!(tools.contains(&"say") && tools.contains(&"cow_say"), "{tools:?}");
}

#[tokio::test]
async fn mcpi_11_info_lists_imported_tools_and_each_servers_reachability() {
    let served = Served::start();
    let dir = tempfile::tempdir().unwrap();
    // The README's example, pointed at this test's server, plus a server that cannot start.
    let example = std::fs::read_to_string(root().join("examples/cowsay/import.yaml")).unwrap();
    assert!(example.contains("http://127.0.0.1:8080/"));
    let yaml = example.replace("http://127.0.0.1:8080/", &served.url)
        + "  - name: gone\n    command: [/nonexistent/mcp-server]\n";
    let config = dir.path().join("agent.yaml");
    std::fs::write(&config, yaml).unwrap();
    let out = tokio::task::spawn_blocking({
        let (config, dir) = (config.clone(), dir.path().to_owned());
        move || cli(&["info", "--config", config.to_str().unwrap()], &dir)
    })
    .await
    .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "info is lenient: {stderr}");
    let say = stdout.lines().find(|l| l.contains(" say ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(say.contains("mcp cow"), "SOURCE column: {say}");
    assert!(stdout.contains("cow (alias cow): reachable, 3 tool(s)"), "the example's include keeps 3: {stdout}");
    assert!(stdout.contains("gone (alias gone): unreachable: mcp server gone"), "{stdout}");

    let json = tokio::task::spawn_blocking({
        let (config, dir) = (config.clone(), dir.path().to_owned());
        move || cli(&["info", "--json", "--config", config.to_str().unwrap()], &dir)
    })
    .await
    .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["mcp_servers"][0]["reachable"], true);
    assert_eq!(doc["mcp_servers"][1]["reachable"], false);
    let say = doc["tools"].as_array().unwrap().iter().find(|t| t["name"] == "say").unwrap();
    assert_eq!(say["source"], "mcp cow");
}

/// Operators see an imported description sanitized (GATE-8): `info` escapes control and bidi characters.
#[tokio::test]
async fn info_shows_hostile_imported_descriptions_sanitized() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = example("mcp_fixture_server");
    let yaml = format!(
        "identity: t\nsystem_prompt: s\nllm:\n  model: m\nmcp_servers:\n  - name: h\n    command: [{}, --hostile]\n",
        fixture.display()
    );
    std::fs::write(dir.path().join("agent.yaml"), yaml).unwrap();
    let out = tokio::task::spawn_blocking({
        let dir = dir.path().to_owned();
        move || cli(&["info", "--config", "agent.yaml"], &dir)
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let sneaky = stdout.lines().find(|l| l.contains("sneaky")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(sneaky.contains(r"\u{202e}"), "bidi override escaped: {sneaky}");
    assert!(!sneaky.contains('\u{202e}') && !sneaky.contains('\u{1b}') && !sneaky.contains('\r'), "{sneaky:?}");
}
