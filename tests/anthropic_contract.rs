//! Contract test: every request body the provider renders in the tested scenarios is valid against the Messages
//! API's OpenAPI description, as judged by a Stoplight Prism mock of `../shared/fixtures/anthropic-openapi`
//! (200 for a valid body, 422 with the violation in its log otherwise).
//!
//! `FISK_AI_PRISM` names the prism binary (`.ci/prism.sh` installs it) and `FISK_AI_ANTHROPIC_OPENAPI` the spec.
//! The test is `#[ignore]`d (a plain `cargo test` reports it as ignored); run with `--ignored`, it fails without them.
#![cfg(feature = "anthropic")]
#![cfg(feature = "anthropic")]

mod fake_anthropic;

mod common;

use fake_anthropic::{FakeAnthropic, Reply, fixture_bytes, fixture_json};
use fisk_ai::llm::anthropic::AnthropicProvider;
use fisk_ai::llm::{Block, CacheMode, Message, ModelProvider, OutputSchema, Request, Role, StopReason, ToolPlan};
use fisk_ai::select::Selection;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::Tool;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::tools::FakeTool;

/// The fixture's 12 tools: 10 deferred behind tool search, 2 sent directly.
fn deferred_plan() -> ToolPlan {
    let tools: Vec<Arc<dyn Tool>> =
        fake_anthropic::fixture_specs().into_iter().map(|spec| Arc::new(FakeTool(spec)) as Arc<dyn Tool>).collect();
    let plan = ToolPlan::new(Selection::new().apply(tools).unwrap(), true);
    assert!(plan.search());
    plan
}

/// A real fisk application's tools, under the search threshold: every tool sent directly.
fn direct_plan() -> ToolPlan {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fisk/cowsay.json");
    let model = AppModel::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let tools = FiskApp::new("x").tools_from_model(model).unwrap().tools;
    let plan = ToolPlan::new(Selection::new().apply(tools).unwrap(), true);
    assert!(!plan.search() && !plan.is_empty());
    plan
}

fn system() -> Vec<String> {
    let req = fixture_json("requests/req_03a_initial.json");
    req["system"].as_array().unwrap().iter().map(|b| b["text"].as_str().unwrap().to_owned()).collect()
}

fn reply(name: &str) -> Vec<Block> {
    AnthropicProvider::decode_response(&fixture_bytes(name)).unwrap().content
}

fn results_for(turn: &[Block], content: &str, is_error: bool) -> Message {
    let content = turn
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(Block::tool_result(id.clone(), content, is_error)),
            _ => None,
        })
        .collect();
    Message { role: Role::User, content }
}

/// One rendered body to check.
struct Case {
    name: &'static str,
    body: Vec<u8>,
}

/// Render every scenario the provider tests exercise.
async fn cases() -> Vec<Case> {
    let plain = AnthropicProvider::new("k").with_streaming(false);
    let streaming = AnthropicProvider::new("k");
    let system = system();
    let (deferred, direct) = (deferred_plan(), direct_plan());
    // OUT-4: the final_answer tool, as given (an object schema) and wrapped (any other).
    let object = OutputSchema::new(json!({"type": "object", "properties": {"verdict": {"type": "string"},
        "failures": {"type": "integer", "minimum": 0}}, "required": ["verdict"], "additionalProperties": false}))
    .unwrap();
    let array = OutputSchema::new(json!({"type": "array", "items": {"type": "string"}, "maxItems": 3})).unwrap();
    let mut out = Vec::new();
    let mut add = |name, p: &AnthropicProvider, req: Request<'_>| out.push(Case { name, body: p.request_body(&req) });

    // Tools deferred behind tool search; the same first turn streamed, uncached, and with one-hour caching.
    let first = [Message::user("Do the tests of the core crate pass?")];
    let req = Request::new("claude-sonnet-4-6", &system, &first, &deferred);
    add("03a deferred tools + search tool", &plain, req);
    add("03a streamed", &streaming, req);
    add("03a cache off", &plain, req.with_cache(CacheMode::Off));
    add("03a cache 1h", &plain, req.with_cache(CacheMode::OneHour));
    // Tools sent directly, no system prompt.
    add("tools sent directly", &plain, Request::new("claude-sonnet-4-6", &[], &first, &direct));
    // COMP-1: a compaction's summarising request: its own system prompt, a transcript, no tools, no caching.
    let summariser = [fisk_ai::agent::DEFAULT_COMPACTION_PROMPT.to_owned()];
    let transcript = [Message::user("[user]\nprobe\n\n[tool call c1: probe]\n{}\n\n[tool result c1]\nok\n\n")];
    let no_tools = ToolPlan::new(Selection::new().apply(Vec::new()).unwrap(), false);
    let summary = Request::new("claude-sonnet-4-6", &summariser, &transcript, &no_tools).with_cache(CacheMode::Off);
    add("COMP-1 summarising request", &plain, summary);

    // Echoed server blocks (tool search) and a tool result.
    let turn = reply("03_tool_search_then_deferred_tool_use.json");
    let after_search = [first[0].clone(), Message::assistant(turn.clone()), results_for(&turn, "41 passed", false)];
    add("03b echoed tool search", &plain, Request::new("claude-sonnet-4-6", &system, &after_search, &deferred));

    // A failed tool reported as an error result.
    let turn = reply("02_tool_use_custom.json");
    let failed = [
        Message::user("Which features does the core crate enable?"),
        Message::assistant(turn.clone()),
        results_for(&turn, "error: permission denied", true),
    ];
    add("02b error result", &plain, Request::new("claude-sonnet-4-6", &system, &failed, &deferred));

    // Thinking on: adaptive with an echoed thinking block, and manual thinking with a budget.
    let turn = reply("04_thinking_tool_use.json");
    let mut results = results_for(&turn, "build:\n  image: rust:1-slim", false);
    results.content.push(Block::text("Keep the answer short."));
    let thinking = [Message::user("Why does CI fail?"), Message::assistant(turn), results];
    add(
        "04b adaptive thinking",
        &plain,
        Request::new("claude-opus-4-8", &system, &thinking, &deferred).with_thinking(true),
    );
    add(
        "04b budget thinking",
        &plain,
        Request::new("claude-sonnet-4-5", &system, &thinking, &deferred).with_thinking(true),
    );
    add(
        "budget thinking with a cap",
        &plain,
        Request::new("claude-haiku-4-5", &system, &first, &direct)
            .with_thinking(true)
            .with_max_output_tokens(Some(2048)),
    );

    // OUT-4: a structured final answer: the final tool and a forced tool choice; with thinking, no tool choice.
    add(
        "out-4 output schema",
        &plain,
        Request::new("claude-sonnet-4-6", &system, &first, &direct).with_output(Some(&object)),
    );
    add(
        "out-4 output schema wrapped, deferred tools, streamed",
        &streaming,
        Request::new("claude-sonnet-4-6", &system, &first, &deferred).with_output(Some(&array)),
    );
    add(
        "out-4 output schema with thinking",
        &plain,
        Request::new("claude-opus-4-8", &system, &thinking, &deferred).with_thinking(true).with_output(Some(&object)),
    );
    let answered = [
        first[0].clone(),
        Message::assistant(vec![Block::text(r#"{"verdict": 3}"#)]),
        Message::user(
            "Your final answer is not valid against the required output schema:\n- /verdict: 3 is not of type \"string\"",
        ),
    ];
    add(
        "out-7 repair turn",
        &plain,
        Request::new("claude-sonnet-4-6", &system, &answered, &direct).with_output(Some(&object)),
    );

    // pause_turn continuation: the paused content is the last message.
    let paused = [Message::user("Is the api deployment healthy?"), Message::assistant(reply("06_pause_turn.json"))];
    add("06b pause continuation", &plain, Request::new("claude-sonnet-4-6", &system, &paused, &deferred));

    // Echoed blocks that were accumulated from a stream (re-serialized, without the fields start events omit).
    let server = FakeAnthropic::with_replies([Reply::fixture("stream_thinking_tool_search.sse")]).await;
    let p = AnthropicProvider::new("k").with_base_url(server.url()).unwrap();
    let req = Request::new("claude-opus-4-8", &system, &first, &deferred).with_thinking(true);
    let streamed = p.call(&req).await.unwrap();
    assert_eq!(streamed.stop_reason, StopReason::ToolUse);
    let convo =
        [first[0].clone(), Message::assistant(streamed.content.clone()), results_for(&streamed.content, "ok", false)];
    add(
        "streamed turn echoed",
        &plain,
        Request::new("claude-opus-4-8", &system, &convo, &deferred).with_thinking(true),
    );

    // A failed tool search echoed as received. This spec revision (May 2026) lacks `error_message` on the request
    // form of `tool_search_tool_result_error`, which the live API and current SDKs accept (wire doc §6.1, §15): the
    // provider sends the block verbatim, and only this contract post drops the null field the old spec rejects.
    let turn = reply("09_tool_search_error_result.json");
    let search_failed = [first[0].clone(), Message::assistant(turn), Message::user("The staging cluster.")];
    let body = plain.request_body(&Request::new("claude-sonnet-4-6", &system, &search_failed, &deferred));
    assert!(String::from_utf8_lossy(&body).contains(r#""error_message": null"#), "sent verbatim");
    out.push(Case {
        name: "09 failed tool search (spec gap: null error_message dropped)",
        body: drop_null_error_message(&body),
    });
    out
}

fn drop_null_error_message(body: &[u8]) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(body).unwrap();
    for m in v["messages"].as_array_mut().unwrap() {
        for b in m["content"].as_array_mut().into_iter().flatten() {
            if let Some(c) = b.get_mut("content").and_then(Value::as_object_mut)
                && c.get("type").and_then(Value::as_str) == Some("tool_search_tool_result_error")
                && c.get("error_message") == Some(&Value::Null)
            {
                c.remove("error_message");
            }
        }
    }
    serde_json::to_vec(&v).unwrap()
}

/// The Prism process; killed on drop.
struct Prism {
    child: Child,
    url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Prism {
    fn start(bin: &str, spec: &str) -> Prism {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("prism.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(bin)
            .args(["mock", "-h", "127.0.0.1", "-p", &port.to_string(), spec])
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start prism {bin}: {e}"));
        let mut prism = Prism { child, url: format!("http://127.0.0.1:{port}"), log, _dir: dir };
        // Bounded wait for the port: Prism takes a few seconds to load a 734-schema spec.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if let Some(status) = prism.child.try_wait().unwrap() {
                panic!("prism exited with {status} before listening:\n{}", prism.log_text());
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return prism;
            }
            assert!(Instant::now() < deadline, "prism did not listen within 90s:\n{}", prism.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
#[ignore = "needs Prism and the Anthropic OpenAPI description; .ci/run provides them"]
async fn contract_every_rendered_request_body_is_accepted_by_the_openapi_spec() {
    let (bin, spec) = match (std::env::var("FISK_AI_PRISM"), std::env::var("FISK_AI_ANTHROPIC_OPENAPI")) {
        (Ok(bin), Ok(spec)) if !bin.is_empty() && !spec.is_empty() => (bin, spec),
        _ => panic!(
            "needs FISK_AI_PRISM (the prism binary, see .ci/prism.sh) and FISK_AI_ANTHROPIC_OPENAPI \
             (../shared/fixtures/anthropic-openapi/openapi.yml); .ci/run sets both"
        ),
    };
    assert!(std::path::Path::new(&spec).is_file(), "FISK_AI_ANTHROPIC_OPENAPI={spec} is not a file");
    let prism = Prism::start(&bin, &spec);
    let client = reqwest::Client::new();
    let cases = cases().await;
    assert!(cases.len() >= 12);
    let mut failures = Vec::new();
    for case in &cases {
        let resp = client
            .post(format!("{}/v1/messages", prism.url))
            .header("x-api-key", "k")
            .header("anthropic-version", "2023-06-01")
            .header("content-type", "application/json")
            .body(case.body.clone())
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        if status != 200 {
            failures.push(format!("{}: HTTP {status}: {}", case.name, resp.text().await.unwrap_or_default()));
        }
    }
    assert!(failures.is_empty(), "rejected by the spec:\n{}\n\nprism log:\n{}", failures.join("\n"), prism.log_text());

    // The whole call path too: headers, and a streaming request answered with plain JSON (Prism cannot stream).
    let p = AnthropicProvider::new("k").with_base_url(&prism.url).unwrap().with_max_retries(0);
    let first = [Message::user("hello")];
    let plan = deferred_plan();
    p.call(&Request::new("claude-sonnet-4-6", &system(), &first, &plan))
        .await
        .unwrap_or_else(|e| panic!("{e}\n\nprism log:\n{}", prism.log_text()));
}
