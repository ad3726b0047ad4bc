//! The host example (examples/host.rs) runs: its own built-in, its own gate, the scripted provider, the real
//! cowsay app.

mod common;

use common::*;

#[test]
fn host_example_runs_with_its_own_builtin_and_gate_and_no_api_key() {
    let bin = example("host");
    let out = std::process::Command::new(bin).current_dir(root()).env_remove("ANTHROPIC_API_KEY").output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // GATE-8: a value with spaces is shown quoted, one argument.
    assert!(stdout.contains("-> cow say --name=daisy -- 'hello from the host'"), "{stdout}");
    assert!(stdout.contains("policy: host_uptime {} (ai:confirm) -> Once"), "{stdout}");
    assert!(stdout.contains("-> host_uptime"), "{stdout}");
    assert!(stdout.contains("policy: feed --food=corn -- rosie (impact:rw) -> Decline"), "{stdout}");
    assert!(!stdout.contains("-> feed"), "the declined command never ran");
    assert!(stdout.contains("<- host_uptime: {\"uptime_ms\":"), "{stdout}");
    assert!(stdout.contains("answer: Daisy said hello"), "{stdout}");
    assert!(stdout.contains("Run summary: model=scripted-model llm_calls=2 tool_calls=3 tokens=240/60"), "{stdout}");
}

/// HARNESS-10: the harness example (examples/host_harness.rs) builds one harness from YAML naming a host memory
/// backend and a host provider, runs an agent on it and serves the same tools over MCP.
#[test]
fn harness_10_host_harness_example_runs_an_agent_and_an_mcp_server_from_one_harness() {
    let bin = example("host_harness");
    let out = std::process::Command::new(bin).current_dir(root()).env("REPLAY_API_KEY", "k").output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("notebook: opened shelf barn"), "the host backend got its YAML option: {stdout}");
    assert!(stdout.contains("REPLAY_API_KEY"), "the host provider's credential is scrubbed: {stdout}");
    assert!(stdout.contains("-> cow say --name=daisy -- hello"), "{stdout}");
    assert!(stdout.contains("-> memory_write greeting"), "memory over the host backend: {stdout}");
    assert!(stdout.contains("answer: Daisy said hello; noted."), "{stdout}");
    let served = stdout.lines().find_map(|l| l.strip_prefix("served over MCP: ")).expect(&stdout);
    assert!(served.split(", ").any(|t| t == "cow_say"), "{served}");
    assert!(!served.contains("memory_"), "agent-only tools are not served: {served}");
    assert!(stdout.contains("listening on http://127.0.0.1:"), "{stdout}");
}
