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
