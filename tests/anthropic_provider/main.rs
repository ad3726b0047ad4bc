//! The Anthropic provider end to end over loopback HTTP (PROV-5..17, SEARCH-1..8, BUDGET-4): the real
//! `AnthropicProvider` against the in-process fake server, multi-turn sequences built from the fixtures, and
//! assertions on every request the server received.
#![cfg(feature = "anthropic")]
#![cfg(feature = "anthropic")]

#[path = "../common/mod.rs"]
mod common;
#[path = "../fake_anthropic/mod.rs"]
mod fake_anthropic;

use fake_anthropic::{FakeAnthropic, Received, Reply, fixture_bytes, fixture_json};
use fisk_ai::exec::PROVIDER_CREDENTIALS;
use fisk_ai::llm::anthropic::{AnthropicProvider, WireError, WireObserver, WireRequest, WireResponse, WireRetry};
use fisk_ai::llm::{
    Block, CacheMode, Message, ModelProvider, ProviderErrorKind, Request, Response, Role, StopReason, ToolPlan,
};
use fisk_ai::select::Selection;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::{Origin, Tool, ToolInput, ToolKind, ToolSpec};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KEY: &str = "sk-ant-test-key-0123456789";

// ---- Helpers ----

use common::tools::fake_tool as tool;

/// The 12 tools of `requests/req_03a_initial.json`, as command tools (selection keeps their order).
fn fixture_tools() -> Vec<Arc<dyn Tool>> {
    fake_anthropic::fixture_specs().into_iter().map(tool).collect()
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

/// Transcript 03's two turns (a tool search then a deferred tool use, then the end turn after its result) served
/// to a provider, with a conversation asking the fixture's question over the fixture's tools.
async fn transcript_03() -> (FakeAnthropic, AnthropicProvider, Convo) {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("03_tool_search_then_deferred_tool_use.json"),
        Reply::fixture("07_end_turn_after_tool_result.json"),
    ])
    .await;
    let p = provider(&server);
    (server, p, Convo::new("Do the tests of the core crate pass?", fixture_plan()))
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

mod conversation;
mod request;
mod retries;
mod settings;
