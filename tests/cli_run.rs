//! `cli run` end to end (CLI-1..16): the real example binary, the real Anthropic provider over loopback HTTP to the
//! in-process fake Messages API, and the real cowsay demo app. Stdout holds only the answer.
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;
mod fake_anthropic;

use common::*;
use fake_anthropic::{FakeAnthropic, Reply, streamed_usage as streamed};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

fn cli() -> PathBuf {
    example("cli")
}

async fn run_cli(server: &FakeAnthropic, dir: &Path, args: &[&str], config_extra: &str) -> Output {
    let config = dir.join("agent.yaml");
    std::fs::write(
        &config,
        format!(
            "identity: cowsay\napplication_path: {}\nsystem_prompt: Tell cow jokes.\nllm:\n  model: claude-haiku-4-5\n{config_extra}",
            root().join("examples/cowsay/cowsay").display()
        ),
    )
    .unwrap();
    cli_run_against(&server.url(), &config, dir, args).output().await.unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

#[tokio::test]
async fn cli_5_stdout_holds_only_the_answer_and_stderr_the_rest() {
    let server = FakeAnthropic::with_replies([
        streamed(
            &[
                json!({"type": "text", "text": "Let me ask Daisy."}),
                json!({"type": "tool_use", "id": "toolu_1", "name": "cow_say", "input": {"message": "moo", "name": "daisy"}}),
            ],
            "tool_use",
            100,
            20,
        ),
        streamed(&[json!({"type": "text", "text": "Daisy says **moo**."})], "end_turn", 150, 10),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = run_cli(&server, dir.path(), &["--tool-output", "a", "joke"], "").await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Raw markdown when stdout is not a terminal (CLI-11).
    assert_eq!(stdout, "Daisy says **moo**.\n");
    assert!(stderr.contains("\nLet me ask Daisy.\n"), "{stderr}");
    assert!(stderr.contains("-> cow say --name=daisy -- moo\n"), "{stderr}");
    assert!(stderr.contains("<- daisy says:"), "{stderr}");
    assert!(!stderr.contains("Daisy says **moo**"), "the answer is not repeated on stderr");
    let summary = stderr.lines().last().unwrap();
    assert!(
        summary.starts_with(
            "Run summary: model=claude-haiku-4-5 llm_calls=2 tool_calls=1 tokens=250/30 cost=$0.000400 latency="
        ),
        "{summary}"
    );
    // The real provider sent the prompt, then the real tool result.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("x-api-key"), Some("test-key"));
    let first = &reqs[0].body_json()["messages"][0]["content"];
    assert_eq!(first.as_str().or_else(|| first[0]["text"].as_str()), Some("a joke"), "{first}");
    let result = &reqs[1].body_json()["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    let content = result["content"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| result["content"][0]["text"].as_str().unwrap().to_owned());
    let (output, code, _) = exec_output(&content);
    assert_eq!(code, 0);
    assert!(output.contains("< moo >"), "{output}");
}

#[tokio::test]
async fn gate_16_without_a_terminal_gated_commands_are_declined_and_reported() {
    let server = FakeAnthropic::with_replies([
        streamed(
            &[json!({"type": "tool_use", "id": "toolu_1", "name": "cow_think", "input": {"message": "hmm"}})],
            "tool_use",
            10,
            5,
        ),
        streamed(&[json!({"type": "text", "text": "The cow keeps its thoughts."})], "end_turn", 10, 5),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = run_cli(&server, dir.path(), &["--verbose", "think"], "").await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: 1 tool(s) need operator approval but no operator can be asked"), "{stderr}");
    assert!(stderr.contains("confirmation: 1 tool(s) gated by ai:confirm"), "{stderr}");
    assert!(stderr.contains("~> llm: \"think\" (msgs=1, 5B)"), "{stderr}");
    assert!(stderr.contains("~> llm: 1 tool result"), "{stderr}");
    assert!(!stderr.contains("-> cow think"), "a declined call is not traced as run");
    let v = first_tool_result(&server);
    assert_eq!(v["allowed"], false);
}

#[tokio::test]
async fn cli_16_a_refusal_exits_1_with_the_summary_on_stderr() {
    let server = FakeAnthropic::with_replies([Reply::fixture("08_refusal.json")]).await;
    let dir = tempfile::tempdir().unwrap();
    let out = run_cli(&server, dir.path(), &["x"], "").await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(text(&out.stdout), "");
    assert!(stderr.contains("error: model refused to respond"), "{stderr}");
    assert!(stderr.lines().last().unwrap().starts_with("Run summary: "));
}

#[tokio::test]
async fn prov_18_trace_writes_json_lines_and_prov_17_http_debug_is_private() {
    let server =
        FakeAnthropic::with_replies([streamed(&[json!({"type": "text", "text": "Moo."})], "end_turn", 1, 1)]).await;
    let dir = tempfile::tempdir().unwrap();
    let out = run_cli(&server, dir.path(), &["--trace", "trace.jsonl", "--http-debug", "hi"], "").await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<Value> = std::fs::read_to_string(dir.path().join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["session", "request", "response", "summary"]);
    assert_eq!(lines[1]["body"]["model"], "claude-haiku-4-5");
    assert_eq!(lines[3]["reason"], "completed");
    let mode = |p: &str| std::fs::metadata(dir.path().join(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("trace.jsonl"), 0o600);
    assert_eq!(mode("http-debug.log"), 0o600);
    let debug = std::fs::read_to_string(dir.path().join("http-debug.log")).unwrap();
    assert!(debug.contains("POST") && !debug.contains("test-key"));
    assert!(stderr.contains("http-debug.log"), "{stderr}");
    // An existing trace file is never overwritten.
    let out = run_cli(&server, dir.path(), &["--trace", "trace.jsonl", "hi"], "").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("trace.jsonl"));
}

#[tokio::test]
async fn cli_2_3_4_missing_key_bad_base_url_and_chat_are_rejected_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], key: Option<&str>| {
        let mut cmd = std::process::Command::new(cli());
        cmd.arg("run")
            .args(args)
            .current_dir(dir.path())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL");
        if let Some(k) = key {
            cmd.env("ANTHROPIC_API_KEY", k);
        }
        cmd.output().unwrap()
    };
    // Configuration errors come before a missing key (the key belongs to the provider the configuration names).
    let out = run(&["x"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("agent.yaml"), "{}", text(&out.stderr));
    std::fs::write(dir.path().join("agent.yaml"), "identity: x\nsystem_prompt: s\nllm:\n  model: m\n").unwrap();
    let out = run(&["x"], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: ") && stderr.contains("ANTHROPIC_API_KEY"), "{stderr}");
    // CLI-13: the summary closes every exit path, errors included.
    assert!(
        stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("Run summary: model=m llm_calls=0 tool_calls=0 tokens=0/0 cost=unknown latency="),
        "{stderr}"
    );
    // PROV-7: checked before the config is read and before http-debug.log exists.
    std::fs::remove_file(dir.path().join("agent.yaml")).unwrap();
    let out = run(&["--base-url", "http://example.com", "--http-debug", "x"], Some("k"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("http://example.com"), "{}", text(&out.stderr));
    assert!(!dir.path().join("http-debug.log").exists());
    std::fs::write(
        dir.path().join("agent.yaml"),
        "identity: x\nsystem_prompt: s\nllm:\n  model: m\n  provider: nosuch\n",
    )
    .unwrap();
    let out = run(&["x"], Some("k"));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("unknown provider \"nosuch\"; available: anthropic"), "{stderr}");
    assert!(stderr.lines().last().unwrap().starts_with("Run summary: model=m llm_calls=0"), "{stderr}");
    let out = run(&["--chat"], Some("k"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("full-screen"));
}

#[tokio::test]
async fn cli_7_gate_8_the_trace_line_quotes_and_sanitizes_hostile_arguments() {
    let hostile = "it's \u{202e}\u{200b}\u{feff}moo\n\u{1b}[31mred";
    let server = FakeAnthropic::with_replies([
        streamed(
            &[
                json!({"type": "tool_use", "id": "toolu_1", "name": "cow_say", "input": {"name": "x --dry-run", "message": hostile}}),
                json!({"type": "tool_use", "id": "toolu_2", "name": "cow_say", "input": {"name": "", "message": "moo"}}),
            ],
            "tool_use",
            10,
            5,
        ),
        streamed(&[json!({"type": "text", "text": "Done."})], "end_turn", 10, 5),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = run_cli(&server, dir.path(), &["moo"], "").await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(r"-> cow say --name='x --dry-run' -- 'it'\''s \u{202e}\u{200b}\u{feff}moo red'"),
        "a flag inside a value, a quote, bidi and zero-width characters, a newline and a colour: {stderr}"
    );
    assert!(stderr.contains("-> cow say --name='' -- moo\n"), "an empty value is visible: {stderr}");
    for hidden in ['\u{202e}', '\u{200b}', '\u{feff}', '\u{1b}'] {
        assert!(!stderr.contains(hidden), "{hidden:?} reached the terminal: {stderr:?}");
    }
    // EXEC-13: what the model reads keeps the plain join.
    let v = first_tool_result(&server);
    assert_eq!(v["command"], format!("cow say --name=x --dry-run -- {hostile}"));
}

/// The first tool result the model was sent (second request, third message), decoded from its text.
fn first_tool_result(server: &FakeAnthropic) -> Value {
    let reqs = server.requests();
    let result = &reqs[1].body_json()["messages"][2]["content"][0];
    let content = result["content"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| result["content"][0]["text"].as_str().unwrap().to_owned());
    serde_json::from_str(&content).unwrap()
}

#[tokio::test]
async fn comp_5_cost_5_cli_run_notes_a_compaction_and_its_summary_shows_cost_and_compactions() {
    let say = |id: &str| json!({"type": "tool_use", "id": id, "name": "cow_say", "input": {"message": "moo"}});
    let server = FakeAnthropic::with_replies([
        streamed(&[say("toolu_1")], "tool_use", 100, 20),
        streamed(&[say("toolu_2")], "tool_use", 900, 20),
        streamed(&[json!({"type": "text", "text": "The cow said moo twice."})], "end_turn", 300, 30),
        streamed(&[json!({"type": "text", "text": "Done."})], "end_turn", 200, 10),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let extra = "harness:\n  compaction:\n    trigger: 0.5\n    keep_recent_turns: 1\n    context_window: 1000\n";
    let out = run_cli(&server, dir.path(), &["moo twice"], extra).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "Done.\n");
    // 920 tokens counted for the second request and reply, plus the second result's bytes.
    assert!(stderr.contains("notice: compacted the conversation: 3 older messages summarised, ~9"), "{stderr}");
    // claude-haiku-4-5 at $1 in and $5 out per million: 1500 in and 80 out.
    let summary = stderr.lines().last().unwrap();
    assert!(summary.contains("tokens=1500/80 cost=$0.001900 compactions=1 latency="), "{summary}");
}
