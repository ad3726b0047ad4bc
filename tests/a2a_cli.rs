//! `cli a2a` end to end (CLI-18, A2A-3, A2A-12): the real example binary serving the real cowsay demo over a real
//! `nats-server`, called by a raw a2a client; two servers sharing the identity; SIGKILL and SIGTERM.
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;
mod fake_anthropic;

use common::cli::Cli;
use common::nats::NatsServer;
use fake_anthropic::{FakeAnthropic, streamed};
use serde_json::json;

/// `cli a2a` for the cowsay demo, with `home` as `XDG_CONFIG_HOME` (its `fisk-demo` context names the server).
fn serve(home: &std::path::Path) -> Cli {
    let home = home.display().to_string();
    let mut cli = Cli::start("a2a", &["--config", "examples/cowsay/a2a.yaml"], &[], &[("XDG_CONFIG_HOME", &home)]);
    assert!(cli.wait_for("at most 4 call(s) run at once"), "startup:\n{}", cli.stderr());
    cli
}

struct Demo {
    nats: NatsServer,
    _contexts: tempfile::TempDir,
    home: tempfile::TempDir,
}

fn demo() -> Demo {
    demo_with(NatsServer::start())
}

fn demo_with(nats: NatsServer) -> Demo {
    let contexts = common::nats::context_dir("fisk-demo", json!({"url": nats.url()}), false);
    let home = common::nats::xdg_home_for(contexts.path());
    Demo { nats, _contexts: contexts, home }
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn cli_a2a_serves_the_cowsay_demo_and_stops_on_sigterm() {
    let demo = demo();
    let mut cli = serve(demo.home.path());
    let err = cli.stderr();
    // A2A-12: identity, version, context, both subjects and the exposed names; A2A-4: each skipped tool.
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        err.contains(&format!("serving 3 tool(s) as agent cowsay version {version} (NATS context fisk-demo)")),
        "{err}"
    );
    assert!(err.contains("discovery: choria.fisk-ai.discovery.cowsay"), "{err}");
    assert!(err.contains("tools: choria.fisk-ai.tool.cowsay"), "{err}");
    assert!(err.contains("exposed tools: say, cow_say, list"), "{err}");
    assert!(err.contains("warning: tool \"cow_think\" is not served over a2a"), "{err}");
    assert!(err.contains("warning: tool \"feed\" is not served over a2a"), "{err}");

    let client = async_nats::connect(demo.nats.url()).await.unwrap();
    let reply = common::a2a::call(&client, "cowsay", "cow_say", Some(json!({"message": "moo", "name": "daisy"}))).await;
    assert!(reply["output"].as_str().unwrap().contains("moo"), "{reply}");
    assert_eq!(reply["exec"]["command"], "cow say --name=daisy -- moo");
    assert!(cli.wait_for("-> cow say --name=daisy -- moo (for tester)"), "{}", cli.stderr());

    let status = cli.terminate();
    assert!(status.success(), "SIGTERM stops it gracefully: {status:?}\n{}", cli.stderr());
    assert!(cli.stderr().ends_with("stopped"), "{}", cli.stderr());
}

#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn cli_a2a_killing_one_of_two_servers_loses_no_later_request() {
    // Debug logging makes the server log each connection it closes, which the test waits for.
    let demo = demo_with(NatsServer::start_with("debug: true"));
    let mut one = serve(demo.home.path());
    let two = serve(demo.home.path());
    let client = async_nats::connect(demo.nats.url()).await.unwrap();
    for i in 0..10 {
        let out = common::a2a::call(&client, "cowsay", "say", Some(json!({"message": format!("m{i}")}))).await;
        assert!(out["output"].as_str().unwrap().contains(&format!("m{i}")), "{out}");
    }
    // SIGKILL: no goodbye. Once the NATS server has seen the dead connection close it drops its queue
    // subscription, so every later request is taken by the survivor. A request sent before the server noticed can
    // still be routed to the dead subscriber (and lost: that is NATS core's at-most-once), so the test waits for it.
    let closed = |log: String| log.matches("Client connection closed").count();
    let before = closed(demo.nats.log());
    one.child.kill().unwrap();
    one.child.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while closed(demo.nats.log()) == before {
        assert!(std::time::Instant::now() < deadline, "the server never saw the killed connection close");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for i in 0..20 {
        let out = common::a2a::call(&client, "cowsay", "say", Some(json!({"message": format!("after{i}")}))).await;
        assert!(out["output"].as_str().unwrap().contains(&format!("after{i}")), "{out}");
    }
    drop(two);
}

#[tokio::test]
async fn cli_a2a_refuses_a_missing_context_naming_it_and_the_file() {
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(common::example("cli"))
        .args(["a2a", "--config", "examples/cowsay/a2a.yaml"])
        .current_dir(common::root())
        .env("XDG_CONFIG_HOME", home.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let file = home.path().join("nats/context/fisk-demo.json");
    assert!(err.contains(&format!("unknown context \"fisk-demo\": {} does not exist", file.display())), "{err}");
}

/// The end to end: `cli a2a` serves the cowsay demo, and a second agent (`cli run` with
/// examples/cowsay/remote.yaml, no application of its own) imports it over NATS and calls a tool for the model.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn cli_run_imports_the_served_cowsay_demo_and_calls_it_end_to_end() {
    let demo = demo();
    let mut server = serve(demo.home.path());
    let model = FakeAnthropic::with_replies([
        streamed(
            &[json!({"type": "tool_use", "id": "toolu_1", "name": "cow_say", "input": {"message": "moo"}})],
            "tool_use",
        ),
        streamed(&[json!({"type": "text", "text": "The cow said moo."})], "end_turn"),
    ])
    .await;
    let home = demo.home.path().to_owned();
    let url = model.url();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(common::example("cli"))
            .args(["run", "--config", "examples/cowsay/remote.yaml", "--base-url", &url, "joke please"])
            .current_dir(common::root())
            .env("XDG_CONFIG_HOME", &home)
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("NO_COLOR", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "The cow said moo.\n");
    assert!(stderr.contains("-> cow_say (remote cowsay)"), "{stderr}");
    // The model saw the served tools, less the excluded `list` and the never-served gated ones.
    let requests = model.requests();
    let first = requests[0].body_json();
    let offered: Vec<&str> = first["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(offered, ["say", "cow_say"], "{first}");
    // The result is the serving side's EXEC-13 result, rebuilt.
    let result = &requests[1].body_json()["messages"][2]["content"][0];
    let exec: serde_json::Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(exec["command"], "cow say -- moo");
    assert_eq!(exec["exit_code"], 0);
    assert!(exec["output"].as_str().unwrap().contains("moo"), "{exec}");
    assert!(server.wait_for("-> cow say -- moo (for jokester)"), "{}", server.stderr());
}
