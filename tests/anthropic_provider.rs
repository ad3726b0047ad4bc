//! The Anthropic provider end to end over loopback HTTP (PROV-5..17, SEARCH-1..8, BUDGET-4): the real
//! `AnthropicProvider` against the in-process fake server, multi-turn sequences built from the fixtures, and
//! assertions on every request the server received.
#![cfg(feature = "anthropic")]
#![cfg(feature = "anthropic")]

mod common;
mod fake_anthropic;

use fake_anthropic::{FakeAnthropic, Received, Reply, fixture_bytes, fixture_json};
use fisk_ai::async_trait;
use fisk_ai::exec::PROVIDER_CREDENTIALS;
use fisk_ai::llm::anthropic::{AnthropicProvider, WireError, WireObserver, WireRequest, WireResponse, WireRetry};
use fisk_ai::llm::{
    Block, CacheMode, Message, ModelProvider, ProviderErrorKind, Request, Response, Role, StopReason, ToolPlan,
};
use fisk_ai::select::Selection;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::{CallContext, Origin, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KEY: &str = "sk-ant-test-key-0123456789";

// ------------------------------------------------------------------------------------------------------------------
// Helpers

struct FakeTool(ToolSpec);

#[async_trait]
impl Tool for FakeTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        ToolOutput::success("ok")
    }
}

fn tool(spec: ToolSpec) -> Arc<dyn Tool> {
    Arc::new(FakeTool(spec))
}

/// The 12 tools of `requests/req_03a_initial.json`, as command tools (selection keeps their order); the two the
/// fixture sends directly opt out of deferral.
fn fixture_tools() -> Vec<Arc<dyn Tool>> {
    let req = fixture_json("requests/req_03a_initial.json");
    req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == "custom")
        .map(|t| {
            let spec = ToolSpec::new(t["name"].as_str().unwrap(), ToolKind::Command, t["input_schema"].clone())
                .with_description(t["description"].as_str().unwrap())
                .with_no_defer(t["defer_loading"] == false);
            tool(spec)
        })
        .collect()
}

fn plan_of(tools: Vec<Arc<dyn Tool>>, search_allowed: bool) -> ToolPlan {
    ToolPlan::new(Selection::new().apply(tools).unwrap(), search_allowed)
}

fn fixture_plan() -> ToolPlan {
    plan_of(fixture_tools(), true)
}

fn fisk_tools(fixture: &str) -> Vec<Arc<dyn Tool>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fisk").join(fixture);
    let model = AppModel::from_slice(&std::fs::read(path).unwrap()).unwrap();
    FiskApp::new("x").tools_from_model(model).unwrap().tools
}

fn system() -> Vec<String> {
    let req = fixture_json("requests/req_03a_initial.json");
    req["system"].as_array().unwrap().iter().map(|b| b["text"].as_str().unwrap().to_owned()).collect()
}

fn provider(server: &FakeAnthropic) -> AnthropicProvider {
    AnthropicProvider::new(KEY)
        .with_base_url(server.url())
        .unwrap()
        .with_streaming(false)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(5))
}

/// A conversation driven like the agent loop does it.
struct Convo {
    model: &'static str,
    system: Vec<String>,
    messages: Vec<Message>,
    plan: ToolPlan,
    thinking: bool,
    cache: CacheMode,
}

impl Convo {
    fn new(prompt: &str, plan: ToolPlan) -> Self {
        Convo {
            model: "claude-sonnet-4-6",
            system: system(),
            messages: vec![Message::user(prompt)],
            plan,
            thinking: false,
            cache: CacheMode::Default,
        }
    }

    fn request(&self) -> Request<'_> {
        Request::new(self.model, &self.system, &self.messages, &self.plan)
            .with_thinking(self.thinking)
            .with_cache(self.cache)
    }

    /// One call; the reply's content becomes the next assistant message, as received.
    async fn turn(&mut self, p: &AnthropicProvider) -> Response {
        let reply = p.call(&self.request()).await.unwrap();
        self.messages.push(Message::assistant(reply.content.clone()));
        reply
    }

    /// Answer every tool call of the last turn in one user message, in call order.
    fn answer_tools(&mut self, result: impl Fn(&str) -> (String, bool)) {
        let results = self.messages.last().unwrap().tool_uses().map(|(id, name, _)| {
            let (content, is_error) = result(name);
            Block::tool_result(id, content, is_error)
        });
        let content: Vec<Block> = results.collect();
        assert!(!content.is_empty(), "the last turn called no tool");
        self.messages.push(Message { role: Role::User, content });
    }
}

/// The fixture response's content blocks as their exact bytes.
fn fixture_blocks(name: &str) -> Vec<Box<RawValue>> {
    #[derive(serde::Deserialize)]
    struct M {
        content: Vec<Box<RawValue>>,
    }
    serde_json::from_slice::<M>(&fixture_bytes(name)).unwrap().content
}

/// A fixture block as the neutral model echoes it: text and tool use go through neutral blocks (PROV-14), which
/// carry neither the response-only `citations: null` nor the default `caller: {"type": "direct"}`.
fn as_echoed(block: &Value) -> Value {
    let mut b = block.clone();
    let o = b.as_object_mut().unwrap();
    match o["type"].as_str().unwrap() {
        "text" if o.get("citations") == Some(&Value::Null) => {
            o.remove("citations");
        }
        "tool_use" if o.get("caller") == Some(&json!({"type": "direct"})) => {
            o.remove("caller");
        }
        _ => {}
    }
    b
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Everything before `"messages"`: the part of the body that must not change from turn to turn.
fn prefix(body: &[u8]) -> &[u8] {
    let at = body.windows(12).position(|w| w == br#","messages":"#).expect("a messages key");
    &body[..at]
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).filter(|w| *w == needle).count()
}

fn assert_headers(r: &Received) {
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers_named("x-api-key"), [KEY]);
    assert_eq!(r.headers_named("anthropic-version"), ["2023-06-01"]);
    assert_eq!(r.headers_named("content-type"), ["application/json"]);
    assert!(r.header("anthropic-beta").is_none(), "tool search needs no beta header");
    assert!(r.header("authorization").is_none());
}

fn tools_of(body: &Value) -> &Vec<Value> {
    body["tools"].as_array().expect("a tools array")
}

// ------------------------------------------------------------------------------------------------------------------
// Request shape

#[tokio::test]
async fn prov_8_9_12_first_request_has_the_documented_headers_system_blocks_and_tools() {
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let p = provider(&server);
    let mut convo = Convo::new("Do the tests of the core crate pass?", fixture_plan());
    let reply = convo.turn(&p).await;
    assert_eq!(reply.stop_reason, StopReason::EndTurn);

    let r = &server.requests()[0];
    assert_headers(r);
    let body = r.body_json();
    let expected = fixture_json("requests/req_03a_initial.json");
    for key in ["model", "max_tokens", "system", "cache_control", "messages"] {
        assert_eq!(body[key], expected[key], "{key}");
    }
    assert!(body.get("thinking").is_none() && body.get("stream").is_none() && body.get("tool_choice").is_none());

    // PROV-12: same tools, order and deferral as the fixture; the search tool (undated alias) last.
    let tools = tools_of(body);
    let want = expected["tools"].as_array().unwrap();
    assert_eq!(tools.len(), want.len());
    for (got, want) in tools.iter().zip(want).take(want.len() - 1) {
        assert_eq!(got["type"], "custom");
        assert_eq!((&got["name"], &got["description"]), (&want["name"], &want["description"]));
        assert_eq!(got["defer_loading"], want["defer_loading"], "{}", got["name"]);
        assert!(got["defer_loading"].is_boolean() && got.get("strict").is_none() && got.get("cache_control").is_none());
        assert_eq!(got["input_schema"]["required"], want["input_schema"]["required"]);
        assert_eq!(got["input_schema"]["additionalProperties"], false);
    }
    assert_eq!(tools.last().unwrap(), &json!({"type": "tool_search_tool_bm25", "name": "tool_search_tool_bm25"}));
    assert!(!contains(&r.body, b"strict"), "SEARCH-7: never strict");
}

#[tokio::test]
async fn prov_13_non_required_properties_are_annotated_on_a_copy_and_never_for_imported_tools() {
    let schema = json!({
        "type": "object",
        "properties": {
            "stream": {"type": "string", "description": "The stream"},
            "count": {"type": "integer", "description": "How many"},
            "force": {"type": "boolean"}
        },
        "required": ["stream"],
        "additionalProperties": false,
        "$comment": "forwarded"
    });
    let local = ToolSpec::new("stream_info", ToolKind::Command, schema.clone()).with_description("Info");
    let imported = ToolSpec::new("remote_info", ToolKind::Imported, schema.clone()).with_origin(Origin::remote("hub"));
    let tools = vec![tool(local), tool(imported)];
    let specs: Vec<Arc<dyn Tool>> = tools.clone();
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let mut convo = Convo::new("hi", plan_of(tools, true));
    convo.turn(&provider(&server)).await;

    let body = server.requests()[0].body_json().clone();
    let local = &tools_of(&body)[0]["input_schema"];
    assert_eq!(local["type"], "object");
    assert_eq!(local["properties"]["stream"]["description"], "The stream");
    assert_eq!(local["properties"]["count"]["description"], "How many (optional)");
    assert_eq!(local["properties"]["force"]["description"], "Optional.");
    assert_eq!((&local["additionalProperties"], &local["$comment"]), (&json!(false), &json!("forwarded")));
    assert_eq!(local["required"], json!(["stream"]));
    // MCP and a2a schemas go as they are.
    let remote = &tools_of(&body)[1]["input_schema"];
    assert_eq!(remote, &schema);
    // The tools' own schemas are untouched.
    assert!(specs.iter().all(|t| t.spec().input_schema() == &schema));
}

#[tokio::test]
async fn search_3_4_5_tools_are_deferred_and_the_search_tool_sent_exactly_when_due() {
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::fixture("01_end_turn_text.json"));
    let p = provider(&server);
    let builtin = || tool(ToolSpec::new("read_file", ToolKind::Builtin, json!({"type": "object"})));
    let cases: Vec<(&str, ToolPlan, bool)> = vec![
        // >= 10 real command tools: every command deferred (unless ai:no_defer), built-ins never; search last.
        ("natscli", plan_of([fisk_tools("natscli.json"), vec![builtin()]].concat(), true), true),
        // < 10 tools (one of them tagged ai:no_defer): nothing deferred, no search tool.
        ("cowsay", plan_of(fisk_tools("cowsay.json"), true), false),
        // >= 10 but the provider may not defer (no_tool_search): everything direct.
        ("natscli no search", plan_of(fisk_tools("natscli.json"), false), false),
        // >= 10 but every tool opted out: no search tool (SEARCH-4).
        (
            "all no_defer",
            plan_of(
                (0..12)
                    .map(|i| tool(ToolSpec::new(format!("t{i:02}"), ToolKind::Custom, json!({})).with_no_defer(true)))
                    .collect(),
                true,
            ),
            false,
        ),
    ];
    for (i, (name, plan, search)) in cases.iter().enumerate() {
        let mut convo = Convo::new("hi", plan.clone());
        convo.turn(&p).await;
        let body = server.requests()[i].body_json().clone();
        let tools = tools_of(&body);
        let custom = if *search { &tools[..tools.len() - 1] } else { &tools[..] };
        assert_eq!(custom.len(), plan.len(), "{name}");
        for ((got, (selected, deferred)), n) in custom.iter().zip(plan.iter()).zip(0..) {
            assert_eq!(got["name"], selected.spec().name(), "{name}: order at {n}");
            assert_eq!(got["defer_loading"], json!(deferred), "{name}: {}", got["name"]);
            assert_eq!(got["type"], "custom");
        }
        let has_search = tools.iter().any(|t| t["name"] == "tool_search_tool_bm25");
        assert_eq!(has_search, *search, "{name}");
        assert_eq!(plan.search(), *search, "{name}");
        if *search {
            assert_eq!(tools.last().unwrap()["type"], "tool_search_tool_bm25");
            assert!(custom.iter().any(|t| t["defer_loading"] == true));
            assert!(custom.iter().any(|t| t["defer_loading"] == false), "never defer everything");
        } else {
            assert!(custom.iter().all(|t| t["defer_loading"] == false), "{name}");
        }
    }
    // Built-ins are never deferred; command tools tagged ai:no_defer neither.
    let body = server.requests()[0].body_json().clone();
    assert_eq!(tools_of(&body).iter().find(|t| t["name"] == "read_file").unwrap()["defer_loading"], false);
    // SEARCH-8: descriptions are the model descriptions, Tags line included, so tag words are searchable.
    let (plan, body) = (&cases[0].1, server.requests()[0].body_json().clone());
    for (got, (selected, _)) in tools_of(&body).iter().zip(plan.iter()) {
        assert_eq!(got["description"].as_str().unwrap_or(""), selected.spec().description());
    }
    assert!(tools_of(&body).iter().any(|t| t["description"].as_str().unwrap_or("").contains("\n\nTags: ")));
}

#[tokio::test]
async fn prov_9_cache_breakpoints_stay_within_four_and_the_prefix_is_identical_across_turns() {
    for (cache, marker) in [
        (CacheMode::Default, Some(json!({"type": "ephemeral"}))),
        (CacheMode::OneHour, Some(json!({"type": "ephemeral", "ttl": "1h"}))),
        (CacheMode::Off, None),
    ] {
        let server = FakeAnthropic::with_replies([
            Reply::fixture("03_tool_search_then_deferred_tool_use.json"),
            Reply::fixture("07_end_turn_after_tool_result.json"),
        ])
        .await;
        let p = provider(&server);
        let mut convo = Convo::new("Do the tests of the core crate pass?", fixture_plan());
        convo.cache = cache;
        convo.turn(&p).await;
        convo.answer_tools(|_| ("41 passed; 1 failed".into(), false));
        convo.turn(&p).await;

        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        for r in &reqs {
            let breakpoints = count(&r.body, br#""cache_control""#);
            assert!(breakpoints <= 4, "{cache:?}: {breakpoints} breakpoints");
            let body = r.body_json();
            match &marker {
                Some(m) => {
                    assert_eq!(breakpoints, 2, "{cache:?}");
                    assert_eq!(&body["cache_control"], m);
                    let system = body["system"].as_array().unwrap();
                    assert_eq!(&system.last().unwrap()["cache_control"], m, "last system block");
                    assert!(system[..system.len() - 1].iter().all(|b| b.get("cache_control").is_none()));
                }
                None => assert_eq!(breakpoints, 0, "no cache markers when caching is off"),
            }
        }
        assert_eq!(prefix(&reqs[0].body), prefix(&reqs[1].body), "{cache:?}: tools+system prefix moved");
    }
}

#[test]
fn prov_9_tools_and_system_prefix_is_byte_identical_over_50_turns_with_300_tools() {
    let tools: Vec<Arc<dyn Tool>> = (0..300)
        .map(|i| {
            let schema = json!({"type": "object", "additionalProperties": false, "required": ["subject"],
                "properties": {"subject": {"type": "string", "description": "What"}, "limit": {"type": "integer"}}});
            tool(ToolSpec::new(format!("tool_{i:03}"), ToolKind::Command, schema).with_description(format!("Tool {i}")))
        })
        .collect();
    let plan = plan_of(tools, true);
    let p = AnthropicProvider::new(KEY);
    let system = system();
    let mut messages = vec![Message::user("start")];
    let mut first: Option<Vec<u8>> = None;
    let mut tools_raw: Option<String> = None;
    for turn in 0..50 {
        let req = Request::new("claude-sonnet-4-6", &system, &messages, &plan);
        let body = p.request_body(&req);
        assert_eq!(body, p.request_body(&req), "deterministic");
        let this_prefix = prefix(&body).to_vec();
        match &first {
            None => first = Some(this_prefix),
            Some(f) => assert_eq!(f, &this_prefix, "turn {turn}: the tools+system prefix changed"),
        }
        #[derive(serde::Deserialize)]
        struct B<'a> {
            #[serde(borrow)]
            tools: &'a RawValue,
        }
        let raw = serde_json::from_slice::<B<'_>>(&body).unwrap().tools.get().to_owned();
        assert_eq!(tools_raw.get_or_insert_with(|| raw.clone()), &raw);
        let id = format!("toolu_{turn:04}");
        let input = ToolInput::from_json(format!(r#"{{"subject": "s{turn}", "limit": 1.50}}"#)).unwrap();
        messages.push(Message::assistant(vec![
            Block::text(format!("Calling tool {turn}")),
            Block::ToolUse { id: id.clone(), name: format!("tool_{:03}", turn % 300), input },
        ]));
        messages.push(Message {
            role: Role::User,
            content: vec![Block::tool_result(id, "result line\n".repeat(5), false)],
        });
    }
    // The model's own number forms reach the wire unchanged.
    let body = p.request_body(&Request::new("claude-sonnet-4-6", &system, &messages, &plan));
    assert!(contains(&body, br#"{"subject": "s49", "limit": 1.50}"#));
}

// ------------------------------------------------------------------------------------------------------------------
// Echo (PROV-14, PROV-15) and the conversation shapes

#[tokio::test]
async fn prov_15_transcript_03_is_echoed_block_for_block_with_server_blocks_byte_identical() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("03_tool_search_then_deferred_tool_use.json"),
        Reply::fixture("07_end_turn_after_tool_result.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo = Convo::new("Do the tests of the core crate pass?", fixture_plan());
    let first = convo.turn(&p).await;
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let kinds: Vec<&str> = first
        .content
        .iter()
        .map(|b| match b {
            Block::Text { .. } => "text",
            Block::ToolUse { .. } => "tool_use",
            Block::Provider { kind, .. } => kind.as_str(),
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["text", "server_tool_use", "tool_search_tool_result", "text", "tool_use"]);
    // Only the client tool is ours to run (the search already ran server-side).
    assert_eq!(convo.messages.last().unwrap().tool_uses().map(|(_, n, _)| n).collect::<Vec<_>>(), ["cargo_test"]);
    convo.answer_tools(|_| ("running 42 tests\ntest result: FAILED. 41 passed; 1 failed; 0 ignored".into(), false));
    let last = convo.turn(&p).await;
    assert_eq!(last.stop_reason, StopReason::EndTurn);

    let reqs = server.requests();
    assert_headers(&reqs[1]);
    let body = reqs[1].body_json();
    let expected = fixture_json("requests/req_03b_after_tool_search.json");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0], expected["messages"][0]);
    // The assistant message is the fixture's content, block for block.
    let fixture = fixture_json("03_tool_search_then_deferred_tool_use.json");
    let want: Vec<Value> = fixture["content"].as_array().unwrap().iter().map(as_echoed).collect();
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"].as_array().unwrap(), &want);
    // Server blocks are the received bytes themselves, whitespace included.
    for raw in fixture_blocks("03_tool_search_then_deferred_tool_use.json") {
        if raw.get().contains("\"server_tool_use\"") || raw.get().contains("\"tool_search_tool_result\"") {
            assert!(contains(&reqs[1].body, raw.get().as_bytes()), "not verbatim: {}", raw.get());
        }
    }
    // One user message answering the one client tool call; nothing for the srvtoolu id.
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01LImbKdVF6ekXITxtaDEsCR",
            "content": "running 42 tests\ntest result: FAILED. 41 passed; 1 failed; 0 ignored"}]})
    );
    assert!(!contains(&reqs[1].body, br#""tool_use_id":"srvtoolu"#));
}

#[tokio::test]
async fn prov_15_thinking_signature_round_trips_byte_for_byte_and_tool_results_come_first() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("04_thinking_tool_use.json"),
        Reply::fixture("07_end_turn_after_tool_result.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo =
        Convo::new("cargo build fails in CI with an openssl-sys error but works on my laptop. Why?", fixture_plan());
    convo.model = "claude-opus-4-8";
    convo.thinking = true;
    let reply = convo.turn(&p).await;
    let fixture = fixture_json("04_thinking_tool_use.json");
    let signature = fixture["content"][0]["signature"].as_str().unwrap();
    match &reply.content[0] {
        Block::Thinking { text, signature: s } => {
            assert_eq!(s.as_bytes(), signature.as_bytes());
            assert_eq!(text, fixture["content"][0]["thinking"].as_str().unwrap());
        }
        other => panic!("expected thinking, got {other:?}"),
    }
    // The loop's user message, written text-first on purpose: results must still lead on the wire.
    let (id, _, _) = convo.messages.last().unwrap().tool_uses().next().unwrap();
    let id = id.to_owned();
    convo.messages.push(Message {
        role: Role::User,
        content: vec![
            Block::text("Keep the answer short."),
            Block::tool_result(id, "build:\n  image: rust:1-slim\n  script:\n    - cargo build --locked", false),
        ],
    });
    convo.turn(&p).await;

    let reqs = server.requests();
    let expected = fixture_json("requests/req_04b_thinking_tool_result.json");
    let body = reqs[1].body_json();
    assert_eq!(body["thinking"], json!({"type": "adaptive", "display": "summarized"}));
    assert_eq!(body["thinking"], expected["thinking"]);
    assert_eq!(body["max_tokens"], 16384, "PROV-11: thinking raises the default cap");
    let want: Vec<Value> = expected["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Some(blocks) = m["content"].as_array() {
                m["content"] = Value::Array(blocks.iter().map(as_echoed).collect());
            }
            m
        })
        .collect();
    assert_eq!(body["messages"].as_array().unwrap(), &want);
    // The signature's exact bytes, as a JSON string, are in the body.
    assert!(contains(&reqs[1].body, serde_json::to_string(signature).unwrap().as_bytes()));
}

#[tokio::test]
async fn loop_8_pause_turn_is_continued_by_resending_the_paused_content_as_the_last_message() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("06_pause_turn.json"),
        Reply::fixture("07_end_turn_after_tool_result.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo = Convo::new("Is the api deployment healthy in the staging namespace?", fixture_plan());
    let paused = convo.turn(&p).await;
    assert_eq!(paused.stop_reason, StopReason::PauseTurn);
    assert_eq!(convo.messages.last().unwrap().tool_uses().count(), 0);
    // No tool results and no new user message: the same request again with the paused turn appended.
    convo.turn(&p).await;

    let body = server.requests()[1].body_json().clone();
    let expected = fixture_json("requests/req_06b_continue_after_pause.json");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages.last().unwrap()["role"], "assistant");
    let want: Vec<Value> = expected["messages"][1]["content"].as_array().unwrap().iter().map(as_echoed).collect();
    assert_eq!(messages[1]["content"].as_array().unwrap(), &want);
    assert_eq!(messages[0], expected["messages"][0]);
    for key in ["model", "max_tokens", "system", "cache_control"] {
        assert_eq!(body[key], expected[key], "{key}");
    }
    let reqs = server.requests();
    for raw in fixture_blocks("06_pause_turn.json").iter().filter(|r| !r.get().contains("\"type\": \"text\"")) {
        assert!(contains(&reqs[1].body, raw.get().as_bytes()));
    }
}

#[tokio::test]
async fn prov_14_a_failed_tool_search_is_kept_and_echoed_with_its_error_fields_intact() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("09_tool_search_error_result.json"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo = Convo::new("Is the rollout done?", fixture_plan());
    convo.turn(&p).await;
    convo.messages.push(Message::user("The staging cluster."));
    convo.turn(&p).await;
    let reqs = server.requests();
    for raw in fixture_blocks("09_tool_search_error_result.json").iter().take(2) {
        assert!(contains(&reqs[1].body, raw.get().as_bytes()), "{}", raw.get());
    }
    let body = reqs[1].body_json();
    assert_eq!(body["messages"][1]["content"][1]["content"]["error_code"], "invalid_tool_input");
    assert!(body["messages"][1]["content"][1]["content"].as_object().unwrap().contains_key("error_message"));
}

#[tokio::test]
async fn prov_14_unknown_and_redacted_blocks_become_provider_blocks_holding_their_exact_bytes() {
    let reply = r#"{"id":"msg_x","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[
        {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"},
        {"type" : "web_fetch_tool_result", "tool_use_id":"srvtoolu_01", "content": {"n": 1.50, "s": "caf\u00e9"}},
        {"type":"text","text":"","citations":null},
        {"type":"text","text":"done"}],
        "stop_reason":"end_turn","brand_new_field":{"x":1},"usage":{"input_tokens":null,"output_tokens":7}}"#;
    let server = FakeAnthropic::with_replies([
        Reply::bytes(200, "application/json", reply.to_owned()),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo = Convo::new("hi", fixture_plan());
    let r = convo.turn(&p).await;
    assert_eq!(r.usage.output_tokens, 7);
    assert_eq!(r.usage.input_tokens, 0, "null counts as zero");
    let raws: Vec<(&str, &str)> = r
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Provider { kind, raw } => Some((kind.as_str(), raw.get())),
            _ => None,
        })
        .collect();
    assert_eq!(
        raws,
        [
            ("redacted_thinking", r#"{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}"#),
            (
                "web_fetch_tool_result",
                r#"{"type" : "web_fetch_tool_result", "tool_use_id":"srvtoolu_01", "content": {"n": 1.50, "s": "caf\u00e9"}}"#
            ),
        ]
    );
    assert_eq!(r.content[2], Block::text(""));
    convo.messages.push(Message::user("more"));
    convo.turn(&p).await;
    let sent = &server.requests()[1];
    for (_, raw) in raws {
        assert!(contains(&sent.body, raw.as_bytes()));
    }
    // The empty text block is dropped on the way back (the API refuses empty text); the rest stays in order.
    let assistant = &sent.body_json()["messages"][1]["content"];
    assert_eq!(assistant.as_array().unwrap().len(), 3);
    assert_eq!(assistant[2], json!({"type": "text", "text": "done"}));
}

#[tokio::test]
async fn prov_14_tool_results_open_the_user_message_in_call_order_and_server_ids_get_none() {
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let p = provider(&server);
    let input = ToolInput::from_json(r#"{"path": "a"}"#).unwrap();
    let mut convo = Convo::new("read two files", fixture_plan());
    convo.messages.push(Message::assistant(vec![
        Block::ToolUse { id: "toolu_a".into(), name: "read_file".into(), input: input.clone() },
        Block::ToolUse { id: "toolu_b".into(), name: "read_file".into(), input },
    ]));
    convo.messages.push(Message {
        role: Role::User,
        content: vec![
            Block::text("note"),
            Block::tool_result("toolu_a", "A", false),
            Block::tool_result("srvtoolu_x", "never sent", false),
            Block::tool_result("toolu_b", "", true),
        ],
    });
    convo.turn(&p).await;
    let body = server.requests()[0].body_json().clone();
    assert_eq!(
        body["messages"][2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true},
            {"type": "text", "text": "note"}
        ])
    );
}

#[tokio::test]
async fn prov_14_stop_reasons_and_usage_map_verbatim() {
    let custom = |reason: &str| {
        Reply::json(
            200,
            &json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "cut"}],
                "stop_reason": reason, "usage": {"input_tokens": 3, "output_tokens": 4,
                "cache_read_input_tokens": 5, "cache_creation_input_tokens": 6, "server_tool_use": null}}),
        )
    };
    let server = FakeAnthropic::with_replies([
        Reply::fixture("05_max_tokens.json"),
        Reply::fixture("08_refusal.json"),
        custom("model_context_window_exceeded"),
        custom("stop_sequence"),
        custom("a_reason_from_the_future"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let p = provider(&server);
    let convo = Convo::new("hi", fixture_plan());
    let mut got = Vec::new();
    for _ in 0..6 {
        got.push(p.call(&convo.request()).await.unwrap());
    }
    assert_eq!(got[0].stop_reason, StopReason::MaxTokens);
    assert_eq!(got[1].stop_reason, StopReason::Refusal);
    assert!(got[1].content.is_empty());
    assert_eq!(got[2].stop_reason, StopReason::ContextWindowExceeded);
    assert_eq!(got[3].stop_reason, StopReason::StopSequence);
    assert_eq!(got[4].stop_reason, StopReason::Other("a_reason_from_the_future".into()));
    assert_eq!((got[2].usage.input_tokens, got[2].usage.output_tokens, got[2].usage.cache_read_tokens), (3, 4, 5));
    assert_eq!(got[2].usage.cache_creation_tokens, 6);
    let u = got[5].usage;
    assert_eq!((u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_creation_tokens), (418, 71, 0, 3104));
}

// ------------------------------------------------------------------------------------------------------------------
// Thinking and the output cap (PROV-10, PROV-11)

#[tokio::test]
async fn prov_10_thinking_shape_follows_the_model_family() {
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::fixture("01_end_turn_text.json"));
    let p = provider(&server);
    let plan = fixture_plan();
    let messages = [Message::user("hi")];
    let adaptive = json!({"type": "adaptive", "display": "summarized"});
    let models = [
        ("claude-opus-4-8", None),
        ("claude-opus-4-7", None),
        ("claude-opus-4-6", None),
        ("claude-sonnet-4-6", None),
        ("claude-sonnet-5", None),
        ("claude-fable-5", None),
        ("claude-mythos-preview", None),
        ("some-future-model", None),
        ("claude-sonnet-4-5", Some(12288)),
        ("claude-sonnet-4-5-20250929", Some(12288)),
        ("claude-haiku-4-5", Some(12288)),
        ("claude-opus-4-5-20251101", Some(12288)),
        ("claude-opus-4-1", Some(12288)),
        ("claude-sonnet-4-20250514", Some(12288)),
        ("claude-3-7-sonnet-latest", Some(12288)),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", Some(12288)),
    ];
    for (i, (model, budget)) in models.iter().enumerate() {
        p.call(&Request::new(model, &[], &messages, &plan).with_thinking(true)).await.unwrap();
        let body = server.requests()[i].body_json().clone();
        assert_eq!(body["max_tokens"], 16384, "{model}");
        match budget {
            None => assert_eq!(body["thinking"], adaptive, "{model}"),
            Some(n) => {
                assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": n, "display": "summarized"}));
                assert!(*n >= 1024 && *n < 16384);
            }
        }
    }
    // An explicit cap: the budget stays at least 1024 and below it.
    for (cap, want) in [(4000u32, 3000u32), (1100, 1024), (100_000, 75_000)] {
        let req = Request::new("claude-haiku-4-5", &[], &messages, &plan).with_thinking(true);
        let body: Value = serde_json::from_slice(&p.request_body(&req.with_max_output_tokens(Some(cap)))).unwrap();
        assert_eq!((body["max_tokens"].clone(), body["thinking"]["budget_tokens"].clone()), (json!(cap), json!(want)));
    }
    // Off: no thinking field at all.
    let body: Value =
        serde_json::from_slice(&p.request_body(&Request::new("claude-haiku-4-5", &[], &messages, &plan))).unwrap();
    assert!(body.get("thinking").is_none());
    // A cap too small for any budget is refused before a call is spent.
    let before = server.request_count();
    let req = Request::new("claude-haiku-4-5", &[], &messages, &plan).with_thinking(true);
    let err = p.call(&req.with_max_output_tokens(Some(1024))).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Config);
    assert!(err.to_string().contains("llm.thinking.enabled"), "{err}");
    assert_eq!(server.request_count(), before);
}

#[tokio::test]
async fn prov_11_max_tokens_is_the_configured_cap_else_8192_or_16384_with_thinking() {
    let p = AnthropicProvider::new(KEY);
    let plan = fixture_plan();
    let messages = [Message::user("hi")];
    let cap = |req: Request<'_>| serde_json::from_slice::<Value>(&p.request_body(&req)).unwrap()["max_tokens"].clone();
    let base = Request::new("claude-sonnet-4-6", &[], &messages, &plan);
    assert_eq!(cap(base), 8192);
    assert_eq!(cap(base.with_thinking(true)), 16384);
    assert_eq!(cap(base.with_max_output_tokens(Some(64))), 64);
    assert_eq!(cap(base.with_thinking(true).with_max_output_tokens(Some(30000))), 30000);
    assert_eq!(cap(base.with_max_output_tokens(Some(0))), 8192, "0 is not positive");
}

#[tokio::test]
async fn prov_10_a_400_on_a_thinking_request_hints_that_thinking_can_be_turned_off() {
    let server = FakeAnthropic::with_replies([
        Reply::error(400, "invalid_request_error", "thinking.type: adaptive is not supported on this model"),
        Reply::error(400, "invalid_request_error", "something else"),
    ])
    .await;
    let p = provider(&server);
    let messages = [Message::user("hi")];
    let plan = fixture_plan();
    let err = p.call(&Request::new("claude-opus-4-8", &[], &messages, &plan).with_thinking(true)).await.unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.http_status(), Some(400));
    assert!(msg.contains("may not support thinking") && msg.contains("llm.thinking.enabled"), "{msg}");
    assert!(msg.contains("invalid_request_error") && msg.contains("req_fake_400"), "{msg}");
    let err = p.call(&Request::new("claude-opus-4-8", &[], &messages, &plan)).await.unwrap_err();
    assert!(!err.to_string().contains("thinking"), "{err}");
}

// ------------------------------------------------------------------------------------------------------------------
// Configuration (PROV-4, PROV-6, PROV-7, PROV-16)

#[test]
fn prov_4_16_capabilities_declare_tool_search_and_the_credential_variables() {
    let provider = AnthropicProvider::new(KEY);
    let caps = provider.capabilities();
    assert_eq!(caps.provider, "anthropic");
    assert!(caps.tool_search);
    // Written out from SPEC PROV-16 (tests/common): comparing with the library's own constant could not notice a
    // dropped name.
    let spec = common::SPEC_PROV_16;
    assert_eq!(caps.credentials, spec);
    // The union over every provider compiled in: the openai provider adds its key (tests/openai_provider.rs).
    let mut union = spec.to_vec();
    if cfg!(feature = "openai") {
        union.push("OPENAI_API_KEY");
    }
    assert_eq!(PROVIDER_CREDENTIALS, union, "the union scrubbed for every child (EXEC-8)");
}

// The PROV-7 base URL table is in prov_7_base_url.rs, shared with the configuration check.

#[test]
fn prov_6_from_env_requires_the_api_key_and_checks_the_base_url() {
    // Environment changes are process-wide: run the checks in a child process of this test binary.
    if let Ok(case) = std::env::var("FISK_AI_TEST_FROM_ENV") {
        let r = AnthropicProvider::from_env();
        match case.as_str() {
            "no-key" => {
                let err = r.unwrap_err();
                assert!(err.is_config() && err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
            }
            "bad-url" => assert!(r.unwrap_err().to_string().contains("ANTHROPIC_BASE_URL")),
            "ok" => assert_eq!(r.unwrap().endpoint(), "http://127.0.0.1:9/v1/messages"),
            _ => unreachable!(),
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let name = "prov_6_from_env_requires_the_api_key_and_checks_the_base_url";
    for (case, key, url) in [
        ("no-key", None, None),
        ("bad-url", Some("k"), Some("http://example.com")),
        ("ok", Some("k"), Some("http://127.0.0.1:9")),
    ] {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--exact", name, "--test-threads=1"]).env("FISK_AI_TEST_FROM_ENV", case);
        cmd.env_remove("ANTHROPIC_API_KEY").env_remove("ANTHROPIC_BASE_URL");
        if let Some(k) = key {
            cmd.env("ANTHROPIC_API_KEY", k);
        }
        if let Some(u) = url {
            cmd.env("ANTHROPIC_BASE_URL", u);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{case}: {}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"), "{case}: the child ran the check");
    }
}

#[tokio::test]
async fn prov_17_http_debug_file_is_private_replaced_never_through_a_symlink_and_never_holds_the_key() {
    use std::os::unix::fs::{MetadataExt, symlink};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("http-debug.log");
    std::fs::write(&path, "stale content from an earlier run").unwrap();
    let server = FakeAnthropic::with_replies([
        Reply::fixture("02_tool_use_custom.json"),
        Reply::error(500, "api_error", "Internal server error"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let p = provider(&server).with_http_debug(&path).unwrap();
    let mut convo = Convo::new("Which features does the core crate enable?", fixture_plan());
    convo.turn(&p).await;
    convo.answer_tools(|_| ("error: permission denied".into(), true));
    convo.turn(&p).await;

    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.mode() & 0o777, 0o600);
    let log = std::fs::read_to_string(&path).unwrap();
    assert!(!log.contains("stale content"), "the old file was replaced");
    assert!(!log.contains(KEY) && !log.contains("x-api-key"), "no key, no headers");
    assert!(log.contains(&format!("==> POST {}/v1/messages", server.url())));
    assert!(log.contains("\n  \"model\": \"claude-sonnet-4-6\",\n"), "pretty JSON body");
    assert!(log.contains("<== HTTP 200") && log.contains("<== HTTP 500") && log.contains("request-id"));
    assert!(log.contains("\"stop_reason\": \"tool_use\""));
    assert_eq!(log.matches("==> POST").count(), 3, "every attempt, the retried one too");

    // A symlink at the path is removed, never followed.
    let target = dir.path().join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    std::fs::remove_file(&path).unwrap();
    symlink(&target, &path).unwrap();
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let p = provider(&server).with_http_debug(&path).unwrap();
    Convo::new("hi", fixture_plan()).turn(&p).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_file() && !meta.file_type().is_symlink());
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&path).unwrap().contains("<== HTTP 200"));
}

// ------------------------------------------------------------------------------------------------------------------
// Retries (wire doc §9) and the call timeout (PROV-5, BUDGET-4)

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
}

impl WireObserver for Recorder {
    fn on_request(&self, r: &WireRequest<'_>) {
        self.events.lock().unwrap().push(format!("request {}", r.attempt));
    }
    fn on_response(&self, r: &WireResponse<'_>) {
        self.events.lock().unwrap().push(format!("response {} {}", r.attempt, r.status));
    }
    fn on_error(&self, e: &WireError<'_>) {
        self.events.lock().unwrap().push(format!("error {} retry={}", e.attempt, e.will_retry));
    }
    fn on_retry(&self, r: &WireRetry<'_>) {
        self.events.lock().unwrap().push(format!("retry {}", r.attempt));
    }
}

async fn call_once(p: &AnthropicProvider) -> Result<Response, fisk_ai::llm::ProviderError> {
    let plan = plan_of(Vec::new(), true);
    let messages = [Message::user("hi")];
    p.call(&Request::new("claude-sonnet-4-6", &[], &messages, &plan)).await
}

#[tokio::test]
async fn retry_429_waits_as_told_by_retry_after_ms_or_retry_after_then_succeeds() {
    for (name, value) in [("retry-after-ms", "50"), ("retry-after", "1")] {
        let limited =
            Reply::fixture("error_429_rate_limit.json").without_header("retry-after").with_header(name, value);
        let server = FakeAnthropic::with_replies([limited, Reply::fixture("01_end_turn_text.json")]).await;
        let recorder = Arc::new(Recorder::default());
        // A backoff this long would be noticed: the server's wait must be the one used.
        let p = provider(&server)
            .with_backoff(Duration::from_secs(30), Duration::from_secs(30))
            .with_observer(recorder.clone());
        let reply = call_once(&p).await.unwrap();
        assert_eq!(reply.stop_reason, StopReason::EndTurn);
        assert_eq!(server.request_count(), 2, "{name}");
        assert_eq!(server.requests()[0].body, server.requests()[1].body, "the same bytes again");
        assert_eq!(
            *recorder.events.lock().unwrap(),
            ["request 0", "response 0 429", "error 0 retry=true", "retry 1", "request 1", "response 1 200"]
        );
    }
}

#[tokio::test]
async fn retry_529_overloaded_then_200_succeeds() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("error_529_overloaded.json"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let reply = call_once(&provider(&server)).await.unwrap();
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn retry_500_gives_up_after_max_retries_plus_one_attempts_naming_status_type_and_request_id() {
    for retries in [0u32, 2, 3] {
        let server = FakeAnthropic::start().await;
        server.set_fallback(Reply::fixture("error_500_api.json"));
        let err = call_once(&provider(&server).with_max_retries(retries)).await.unwrap_err();
        assert_eq!(server.request_count() as u32, retries + 1);
        assert_eq!((err.kind(), err.http_status()), (ProviderErrorKind::Status, Some(500)));
        assert!(err.is_retryable());
        let msg = err.to_string();
        assert!(msg.contains("500") && msg.contains("api_error") && msg.contains("Internal server error"), "{msg}");
        assert!(msg.contains("req_011uORAPhlkA7OqmqX2tBYwB4"), "{msg}");
        if retries > 0 {
            assert!(msg.contains(&format!("after {} attempts", retries + 1)), "{msg}");
        }
    }
}

#[tokio::test]
async fn retry_never_on_400_401_403_404_413() {
    let cases = [
        Reply::fixture("error_400_all_tools_deferred.json"),
        Reply::fixture("error_401_authentication.json"),
        Reply::error(403, "permission_error", "no access"),
        Reply::error(404, "not_found_error", "model: claude-nope"),
        // A CDN page, not the documented JSON: still reported, never retried.
        Reply::bytes(413, "text/html", "<html><body>413 Request Entity Too Large</body></html>"),
    ];
    for reply in cases {
        let status = reply.status;
        let server = FakeAnthropic::with_replies([reply, Reply::fixture("01_end_turn_text.json")]).await;
        let err = call_once(&provider(&server)).await.unwrap_err();
        assert_eq!(server.request_count(), 1, "{status} must not be retried");
        assert_eq!(err.http_status(), Some(status));
        assert!(!err.is_retryable());
        let msg = err.to_string();
        match status {
            401 => assert!(msg.contains("authentication_error") && msg.contains("invalid x-api-key"), "{msg}"),
            413 => assert!(msg.contains("413 Request Entity Too Large"), "{msg}"),
            _ => assert!(msg.contains(&format!("HTTP {status}")), "{msg}"),
        }
    }
}

#[tokio::test]
async fn retry_x_should_retry_header_overrides_the_status_rule() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("error_500_api.json").with_header("x-should-retry", "false"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    call_once(&provider(&server)).await.unwrap_err();
    assert_eq!(server.request_count(), 1);

    let server = FakeAnthropic::with_replies([
        Reply::error(409, "invalid_request_error", "lock").with_header("x-should-retry", "true"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    call_once(&provider(&server)).await.unwrap();
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn prov_5_call_timeout_bounds_each_attempt_is_retryable_and_then_gives_up() {
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::fixture("01_end_turn_text.json").with_delay(Duration::from_secs(5)));
    let p = provider(&server).with_call_timeout(Duration::from_millis(200)).with_max_retries(1);
    let err = call_once(&p).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Timeout);
    assert!(err.is_retryable());
    assert!(err.to_string().contains("call timeout") && err.to_string().contains("200ms"), "{err}");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_refused_connection_is_a_retryable_transport_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = AnthropicProvider::new(KEY)
        .with_base_url(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .with_max_retries(1)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(1));
    let err = call_once(&p).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Transport);
    assert!(err.is_retryable());
    assert!(!err.to_string().contains(KEY));
}

#[tokio::test]
async fn a_garbled_reply_is_a_decode_error_not_a_panic() {
    for body in ["", "{", "[]", r#"{"content":[{"text":"no type"}]}"#, r#"{"content":[{"type":"tool_use"}]}"#, "\u{0}"]
    {
        let server = FakeAnthropic::with_replies([Reply::bytes(200, "application/json", body.to_owned())]).await;
        let err = call_once(&provider(&server)).await.unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::Decode, "{body:?}: {err}");
        assert_eq!(server.request_count(), 1);
    }
}
