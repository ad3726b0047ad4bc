//! A structured final answer (OUT-1..OUT-9) over both HTTP providers and loopback HTTP: the native mechanism on the
//! wire (Anthropic's forced `final_answer` tool, OpenAI's `response_format`), validation, the one repair turn, the
//! failure after it, a stable request prefix, hostile answers, and `cli run --output-schema`.
#![cfg(all(feature = "anthropic", feature = "openai", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;
mod fake_anthropic;
#[path = "common/openai.rs"]
mod fake_openai;
#[path = "common/openai_scenarios.rs"]
mod scenarios;

use common::*;
use fake_anthropic::{FakeAnthropic, Reply as AReply, streamed as a_streamed};
use fake_openai::{FakeOpenAi, calls, streamed as o_streamed, text as o_text};
use fisk_ai::Config;
use fisk_ai::agent::{Agent, RunEvent, RunOptions, RunOutcome, TerminalReason};
use fisk_ai::llm::anthropic::AnthropicProvider;
use fisk_ai::llm::{FINAL_ANSWER_TOOL, OutputSchema};
use fisk_ai::session::{InMemorySessionStore, Payload, SessionId, SessionStore};
use scenarios::Counter;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn count_schema() -> Value {
    json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"],
        "additionalProperties": false})
}

fn schema(value: Value) -> OutputSchema {
    OutputSchema::new(value).unwrap()
}

/// An agent on the fake Messages API with `tool` (a counter by default; an agent needs a tool) and `extra` under
/// `llm`.
async fn anthropic_agent(server: &FakeAnthropic, streaming: bool, tool: Option<Counter>, extra: &str) -> Agent {
    let config = Config::from_yaml_str(&format!(
        "identity: counter\nsystem_prompt: You count things.\nllm:\n  model: claude-haiku-4-5\n{extra}"
    ))
    .unwrap();
    let provider = AnthropicProvider::new("k")
        .with_base_url(server.url())
        .unwrap()
        .with_streaming(streaming)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(5));
    let tool = tool.unwrap_or_else(|| Counter::new("count"));
    Agent::builder().config(config).provider(provider).tool(tool).build().await.unwrap()
}

/// An agent on the fake Chat Completions server (`llm.base_url` on loopback: no key) with `tool` (a counter by
/// default).
async fn openai_agent(server: &FakeOpenAi, tool: Option<Counter>) -> Agent {
    let tool = tool.unwrap_or_else(|| Counter::new("count"));
    Agent::builder().config(scenarios::config(&server.url(), "")).tool(tool).build().await.unwrap()
}

async fn run(agent: &Agent, schema: OutputSchema) -> RunOutcome {
    agent.run("Count the cows.", RunOptions::new().with_output_schema(schema)).await
}

/// [`run`], with the `Assistant` events it emitted: `(text, terminal)`.
async fn run_told(agent: &Agent, schema: OutputSchema) -> (RunOutcome, Vec<(String, bool)>) {
    let told = Arc::new(Mutex::new(Vec::new()));
    let sink = told.clone();
    let options = RunOptions::new().with_output_schema(schema).with_events(move |e: &RunEvent<'_>| {
        if let RunEvent::Assistant { text, terminal } = e {
            sink.lock().unwrap().push(((*text).to_owned(), *terminal));
        }
    });
    let outcome = agent.run("Count the cows.", options).await;
    let told = told.lock().unwrap().clone();
    (outcome, told)
}

/// A Messages reply calling `final_answer` with `input`, streamed or whole.
fn final_call(input: Value, streaming: bool) -> AReply {
    let call = json!({"type": "tool_use", "id": "toolu_final", "name": FINAL_ANSWER_TOOL, "input": input});
    if streaming {
        a_streamed(&[call], "tool_use")
    } else {
        AReply::json(
            200,
            &json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                "content": [call], "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 5}}),
        )
    }
}

/// The text of the last user message of a request body, whichever provider's shape it has.
fn last_user_text(body: &Value) -> String {
    let last = body["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap();
    match &last["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Everything before `"messages":`, the part of a body that only the run's settings decide.
fn prefix(body: &[u8]) -> Vec<u8> {
    let at = body.windows(11).position(|w| w == br#""messages":"#).expect("a messages key");
    body[..at].to_vec()
}

fn assert_accepted(outcome: &RunOutcome, answer: &str, output: Value) {
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.answer.as_deref(), Some(answer));
    assert_eq!(outcome.output, Some(output));
    assert!(outcome.error.is_none());
}

fn assert_rejected(outcome: &RunOutcome, problem: &str) {
    assert_eq!(outcome.reason, TerminalReason::Error);
    let error = outcome.error.as_ref().unwrap().to_string();
    assert!(error.contains("the final answer is not valid against the output schema: "), "{error}");
    assert!(error.contains(problem), "{error}");
    assert_eq!(outcome.answer, None);
    assert_eq!(outcome.output, None);
}

// -----------------------------------------------------------------------------------------------------------------
// Anthropic

#[tokio::test]
async fn out_4_6_anthropic_forces_the_final_answer_tool_and_accepts_a_valid_answer() {
    for streaming in [false, true] {
        let server = FakeAnthropic::with_replies([final_call(json!({"count": 3}), streaming)]).await;
        let agent = anthropic_agent(&server, streaming, None, "").await;
        let outcome = run(&agent, schema(count_schema())).await;
        assert_accepted(&outcome, r#"{"count":3}"#, json!({"count": 3}));
        assert_eq!(server.request_count(), 1);
        let body = server.requests()[0].body_json().clone();
        let tool = body["tools"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(tool["name"], FINAL_ANSWER_TOOL);
        assert_eq!(tool["input_schema"], count_schema(), "an object schema is sent as it is");
        assert!(tool["description"].as_str().unwrap().contains("exactly once"));
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
    }
}

#[tokio::test]
async fn out_4_with_thinking_on_the_final_tool_is_offered_without_a_forced_choice() {
    let server =
        FakeAnthropic::with_replies([a_streamed(&[json!({"type": "text", "text": "{\"count\": 2}"})], "end_turn")])
            .await;
    let agent = anthropic_agent(&server, true, None, "  thinking:\n    enabled: true\n").await;
    let outcome = run(&agent, schema(count_schema())).await;
    assert_accepted(&outcome, r#"{"count": 2}"#, json!({"count": 2}));
    let body = server.requests()[0].body_json().clone();
    assert!(body.get("tool_choice").is_none(), "the API refuses a forced tool with thinking: {body}");
    assert_eq!(body["tools"].as_array().unwrap().last().unwrap()["name"], FINAL_ANSWER_TOOL);
}

#[tokio::test]
async fn out_4_anthropic_wraps_a_non_object_schema_and_unwraps_the_answer() {
    let array = json!({"type": "array", "items": {"type": "integer"}});
    let server = FakeAnthropic::with_replies([final_call(json!({"answer": [1, 2]}), true)]).await;
    let agent = anthropic_agent(&server, true, None, "").await;
    let outcome = run(&agent, schema(array.clone())).await;
    assert_accepted(&outcome, "[1,2]", json!([1, 2]));
    let body = server.requests()[0].body_json().clone();
    let tool = body["tools"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        tool["input_schema"],
        json!({"type": "object", "properties": {"answer": array}, "required": ["answer"],
            "additionalProperties": false})
    );
}

#[tokio::test]
async fn out_7_anthropic_an_invalid_answer_is_repaired_once() {
    let server = FakeAnthropic::with_replies([
        final_call(json!({"count": "three"}), true),
        final_call(json!({"count": 3}), true),
    ])
    .await;
    let agent = anthropic_agent(&server, true, None, "").await;
    let outcome = run(&agent, schema(count_schema())).await;
    assert_accepted(&outcome, r#"{"count":3}"#, json!({"count": 3}));
    assert_eq!(outcome.stats.llm_calls, 2);
    let second = server.requests()[1].body_json().clone();
    let repair = last_user_text(&second);
    assert!(repair.contains("not valid against the required output schema") && repair.contains("/count: "), "{repair}");
    assert_eq!(second["tool_choice"], json!({"type": "any"}), "the repair turn asks the same way");
}

#[tokio::test]
async fn out_8_anthropic_two_invalid_answers_fail_the_run_with_the_errors() {
    let server = FakeAnthropic::with_replies([
        final_call(json!({"count": "three"}), false),
        final_call(json!({"count": 3, "cows": true}), false),
    ])
    .await;
    let agent = anthropic_agent(&server, false, None, "").await;
    let outcome = run(&agent, schema(count_schema())).await;
    assert_rejected(&outcome, "cows");
    assert_eq!(server.request_count(), 2, "one repair, no more");
}

#[tokio::test]
async fn out_4_anthropic_the_request_prefix_is_byte_identical_on_every_turn() {
    let counter = Counter::new("count");
    let server = FakeAnthropic::with_replies([
        a_streamed(&[json!({"type": "tool_use", "id": "toolu_1", "name": "count", "input": {"n": 1}})], "tool_use"),
        final_call(json!({"count": "one"}), true),
        final_call(json!({"count": 1}), true),
    ])
    .await;
    let agent = anthropic_agent(&server, true, Some(counter.clone()), "").await;
    let outcome = run(&agent, schema(count_schema())).await;
    assert_accepted(&outcome, r#"{"count":1}"#, json!({"count": 1}));
    assert_eq!(counter.count(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = prefix(&requests[0].body);
    assert!(String::from_utf8_lossy(&first).contains(r#""tool_choice":{"type":"any"}"#));
    for r in &requests[1..] {
        assert_eq!(prefix(&r.body), first);
    }
}

#[tokio::test]
async fn out_2_a_selected_tool_named_final_answer_is_refused_before_any_call() {
    let server = FakeAnthropic::with_replies([final_call(json!({"count": 3}), true)]).await;
    let agent = anthropic_agent(&server, true, Some(Counter::new(FINAL_ANSWER_TOOL)), "").await;
    let outcome = run(&agent, schema(count_schema())).await;
    assert_eq!(outcome.reason, TerminalReason::Error);
    let error = outcome.error.unwrap().to_string();
    assert!(error.contains("\"final_answer\"") && error.contains("output schema"), "{error}");
    assert_eq!(server.request_count(), 0);
    // Without a schema the tool is an ordinary tool, and the run goes to the model.
    agent.run("x", RunOptions::new()).await;
    assert!(server.request_count() >= 1);
}

// -----------------------------------------------------------------------------------------------------------------
// OpenAI-compatible

#[tokio::test]
async fn out_5_6_openai_asks_through_response_format_and_accepts_a_valid_answer() {
    for reply in [o_text(r#"{"count": 3}"#, "stop").reply(), o_streamed(r#"{"count": 3}"#, &[], "stop")] {
        let server = FakeOpenAi::with_replies([reply]).await;
        let agent = openai_agent(&server, None).await;
        let outcome = run(&agent, schema(count_schema())).await;
        assert_accepted(&outcome, r#"{"count": 3}"#, json!({"count": 3}));
        let body = server.requests()[0].body_json().clone();
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": FINAL_ANSWER_TOOL, "schema": count_schema(),
                "strict": false}})
        );
    }
}

#[tokio::test]
async fn out_7_openai_an_invalid_answer_is_repaired_once() {
    let server = FakeOpenAi::with_replies([
        o_text(r#"{"count": "three"}"#, "stop").reply(),
        o_text(r#"{"count": 3}"#, "stop").reply(),
    ])
    .await;
    let agent = openai_agent(&server, None).await;
    let (outcome, told) = run_told(&agent, schema(count_schema())).await;
    assert_accepted(&outcome, r#"{"count": 3}"#, json!({"count": 3}));
    let want = [(r#"{"count": "three"}"#.to_owned(), false), (r#"{"count": 3}"#.to_owned(), true)];
    assert_eq!(told, want, "the rejected answer is narration; only the accepted one is terminal");
    let second = server.requests()[1].body_json().clone();
    let repair = last_user_text(&second);
    assert!(repair.contains("not valid against the required output schema") && repair.contains("/count: "), "{repair}");
    assert!(second["response_format"].is_object());
}

#[tokio::test]
async fn out_7_a_checkpointed_run_journals_the_repair_prompt_as_a_user_record() {
    let server = FakeOpenAi::with_replies([
        o_text(r#"{"count": "three"}"#, "stop").reply(),
        o_text(r#"{"count": 3}"#, "stop").reply(),
    ])
    .await;
    let store = InMemorySessionStore::new();
    let agent = Agent::builder()
        .config(scenarios::config(&server.url(), ""))
        .tool(Counter::new("count"))
        .session_store(store.clone())
        .build()
        .await
        .unwrap();
    let id = SessionId::new("structured").unwrap();
    let options = RunOptions::new().with_output_schema(schema(count_schema())).with_checkpoint(id.clone());
    let outcome = agent.run("Count the cows.", options).await;
    assert_accepted(&outcome, r#"{"count": 3}"#, json!({"count": 3}));
    let users: Vec<String> = store
        .read(&id)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|r| match r.payload {
            Payload::User(u) => Some(u.message.text()),
            _ => None,
        })
        .collect();
    assert_eq!(users.len(), 1, "{users:?}");
    assert!(users[0].contains("not valid against the required output schema") && users[0].contains("/count: "));
}

#[tokio::test]
async fn out_8_openai_two_invalid_answers_fail_the_run_with_the_errors() {
    let server = FakeOpenAi::with_replies([
        o_text("three cows", "stop").reply(),
        o_text(r#"{"count": "three"}"#, "stop").reply(),
    ])
    .await;
    let agent = openai_agent(&server, None).await;
    let (outcome, told) = run_told(&agent, schema(count_schema())).await;
    assert_rejected(&outcome, "/count: ");
    assert_eq!(server.request_count(), 2);
    assert!(told.iter().all(|(_, terminal)| !terminal), "no terminal answer: {told:?}");
}

#[tokio::test]
async fn out_5_openai_the_request_prefix_is_byte_identical_on_every_turn() {
    let counter = Counter::new("count");
    let server = FakeOpenAi::with_replies([
        calls(&[("call_1", "count", r#"{"n": 1}"#)]).reply(),
        o_text("one", "stop").reply(),
        o_text(r#"{"count": 1}"#, "stop").reply(),
    ])
    .await;
    let agent = openai_agent(&server, Some(counter.clone())).await;
    let outcome = run(&agent, schema(count_schema())).await;
    assert_accepted(&outcome, r#"{"count": 1}"#, json!({"count": 1}));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = prefix(&requests[0].body);
    assert!(String::from_utf8_lossy(&first).contains(r#""response_format":"#));
    for r in &requests[1..] {
        assert_eq!(prefix(&r.body), first);
    }
}

#[tokio::test]
async fn out_3_a_deeply_nested_or_huge_answer_is_a_validation_error_not_a_panic() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let huge = format!("{{\"count\": \"{}\"}}", "x".repeat(1 << 20));
    let server = FakeOpenAi::with_replies([o_text(&deep, "stop").reply(), o_text(&huge, "stop").reply()]).await;
    let agent = openai_agent(&server, None).await;
    let outcome = run(&agent, schema(count_schema())).await;
    assert!(!outcome.internal_error);
    assert_rejected(&outcome, "/count: ");
    let error = outcome.error.unwrap().to_string();
    assert!(error.len() < 2_000, "the huge value is not quoted back: {} bytes", error.len());
    let repair = last_user_text(server.requests()[1].body_json());
    assert!(repair.contains("not JSON") && repair.contains("recursion limit"), "{repair}");
}

// -----------------------------------------------------------------------------------------------------------------
// The CLI

async fn cli_run(server: &FakeAnthropic, dir: &Path, args: &[&str]) -> std::process::Output {
    let config = dir.join("agent.yaml");
    let yaml = "identity: counter\nsystem_prompt: Count.\nllm:\n  model: claude-haiku-4-5\nharness:\n  tools: \
                [{name: base64_encode}]\n";
    std::fs::write(&config, yaml).unwrap();
    cli_run_against(&server.url(), &config, dir, args).output().await.unwrap()
}

#[tokio::test]
async fn out_9_cli_run_output_schema_prints_exactly_the_validated_json() {
    let server = FakeAnthropic::with_replies([a_streamed(
        &[
            json!({"type": "text", "text": "Counting **now**."}),
            json!({"type": "tool_use", "id": "toolu_1", "name": FINAL_ANSWER_TOOL, "input": {"count": 7}}),
        ],
        "tool_use",
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("schema.json"), count_schema().to_string()).unwrap();
    let out = cli_run(&server, dir.path(), &["--output-schema", "schema.json", "count"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"count\":7}\n");
    assert!(stderr.contains("Counting **now**.") && stderr.contains("Run summary:"), "{stderr}");
    assert_eq!(server.requests()[0].body_json()["tool_choice"], json!({"type": "any"}));
}

#[tokio::test]
async fn out_9_cli_run_a_bad_schema_file_fails_naming_it_before_any_request() {
    let server = FakeAnthropic::with_replies([final_call(json!({"count": 1}), true)]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.json"), "{\n  \"type\": \"object\",\n  oops\n}").unwrap();
    std::fs::write(dir.path().join("invalid.json"), r#"{"type": "no-such-type"}"#).unwrap();
    let cases = [
        ("missing.json", vec!["missing.json", "cannot read"]),
        ("broken.json", vec!["broken.json", "not JSON", "line 3 column 3"]),
        ("invalid.json", vec!["invalid.json", "not a valid JSON Schema"]),
    ];
    for (file, want) in cases {
        let out = cli_run(&server, dir.path(), &["--output-schema", file, "count"]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        assert!(out.stdout.is_empty());
        for w in want {
            assert!(stderr.contains(w), "{file}: {w:?} missing from {stderr}");
        }
    }
    assert_eq!(server.request_count(), 0);
}
