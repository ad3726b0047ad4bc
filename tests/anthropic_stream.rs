//! Streamed replies (wire doc §13): SSE accumulation into the same neutral reply a non-streaming call gives, chunk
//! boundaries anywhere, and streams that fail after the 200.
#![cfg(feature = "anthropic")]
#![cfg(feature = "anthropic")]

mod fake_anthropic;

use fake_anthropic::{FakeAnthropic, Reply, fixture_bytes, fixture_json, split_events};
use fisk_ai::llm::anthropic::{AnthropicProvider, WireObserver, WireResponse};
use fisk_ai::llm::{Block, Message, ModelProvider, ProviderError, ProviderErrorKind, Request, Response, StopReason};
use fisk_ai::llm::{ToolPlan, Usage};
use fisk_ai::select::Selection;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn provider(server: &FakeAnthropic) -> AnthropicProvider {
    AnthropicProvider::new("sk-ant-test")
        .with_base_url(server.url())
        .unwrap()
        .with_backoff(Duration::from_millis(1), Duration::from_millis(5))
}

async fn call(p: &AnthropicProvider) -> Result<Response, ProviderError> {
    let plan = ToolPlan::new(Selection::new().apply(Vec::new()).unwrap(), true);
    let messages = [Message::user("Is staging healthy?")];
    p.call(&Request::new("claude-opus-4-8", &[], &messages, &plan).with_thinking(true)).await
}

/// Provider blocks and tool inputs compared by their JSON value: the fixture files are pretty-printed while the
/// stream's input chunks are compact, and a stream's server blocks are the accumulated object re-serialized.
fn normalized(blocks: &[Block]) -> Vec<(String, Value)> {
    blocks
        .iter()
        .map(|b| match b {
            Block::Provider { kind, raw } => (kind.clone(), serde_json::from_str(raw.get()).unwrap()),
            Block::ToolUse { id, name, input } => (format!("tool_use {id} {name}"), input.to_value().unwrap()),
            other => ("neutral".to_owned(), json!(format!("{other:?}"))),
        })
        .collect()
}

fn usage_of(final_json: &Value) -> Usage {
    let u = &final_json["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_read_tokens: n("cache_read_input_tokens"),
        cache_creation_tokens: n("cache_creation_input_tokens"),
    }
}

#[derive(Default)]
struct Bodies(Mutex<Vec<(bool, Vec<u8>)>>);

impl WireObserver for Bodies {
    fn on_response(&self, r: &WireResponse<'_>) {
        self.0.lock().unwrap().push((r.streamed, r.body.to_vec()));
    }
}

#[tokio::test]
async fn stream_fixtures_accumulate_to_their_final_json() {
    for name in ["stream_tool_use", "stream_thinking_tool_search"] {
        let server = FakeAnthropic::with_replies([Reply::fixture(&format!("{name}.sse"))]).await;
        let bodies = Arc::new(Bodies::default());
        let streamed = call(&provider(&server).with_observer(bodies.clone())).await.unwrap();
        assert_eq!(server.requests()[0].body_json()["stream"], true, "{name}: streaming is the default");

        // The same message read whole gives the same neutral reply.
        let final_json = fixture_json(&format!("{name}.final.json"));
        let whole = AnthropicProvider::decode_response(&fixture_bytes(&format!("{name}.final.json"))).unwrap();
        assert_eq!(streamed.stop_reason, whole.stop_reason, "{name}");
        assert_eq!(streamed.stop_reason, StopReason::ToolUse);
        assert_eq!(streamed.usage, whole.usage, "{name}");
        assert_eq!(streamed.usage, usage_of(&final_json), "{name}: message_delta usage over message_start's");
        assert_eq!(normalized(&streamed.content), normalized(&whole.content), "{name}");
        // Observers see the accumulated message: exactly the fixture's accumulation.
        let seen = bodies.0.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].0, "streamed");
        assert_eq!(serde_json::from_slice::<Value>(&seen[0].1).unwrap(), final_json, "{name}");
    }
}

#[tokio::test]
async fn stream_thinking_keeps_the_signature_and_the_deferred_tool_input_as_sent() {
    let server = FakeAnthropic::with_replies([Reply::fixture("stream_thinking_tool_search.sse")]).await;
    let r = call(&provider(&server)).await.unwrap();
    let final_json = fixture_json("stream_thinking_tool_search.final.json");
    match &r.content[0] {
        Block::Thinking { text, signature } => {
            assert_eq!(text, final_json["content"][0]["thinking"].as_str().unwrap());
            assert_eq!(signature, final_json["content"][0]["signature"].as_str().unwrap());
        }
        other => panic!("{other:?}"),
    }
    let kinds: Vec<&str> = r
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Provider { kind, .. } => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["server_tool_use", "tool_search_tool_result"]);
    match &r.content[3] {
        // The concatenated partial_json, as the model wrote it.
        Block::ToolUse { id, name, input } => {
            assert_eq!((id.as_str(), name.as_str()), ("toolu_01fr7VwLQ4E4QYXwhCMFgsil", "kube_rollout_status"));
            assert_eq!(input.as_str(), r#"{"deployment": "api", "namespace": "staging"}"#);
        }
        other => panic!("{other:?}"),
    }
}

fn text_stream(text: &str) -> String {
    let delta = serde_json::to_string(&json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": text}}))
    .unwrap();
    format!(
        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\"type\":\"message\",\
         \"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"usage\":{{\"input_tokens\":5,\"output_tokens\":1}}}}}}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
         : a comment line, ignored\n\n\
         event: content_block_delta\ndata: {delta}\n\n\
         event: brand_new_event\ndata: {{\"type\":\"brand_new_event\",\"x\":[1]}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"future_delta\",\"q\":1}}}}\n\n\
         event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
         event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":9,\"input_tokens\":null}}}}\n\n\
         event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    )
}

#[tokio::test]
async fn a_utf8_character_split_across_chunks_and_unknown_events_are_handled() {
    let text = "café — 日本語 🎉 done";
    // One byte per chunk: every multi-byte character and every line is split.
    let server = FakeAnthropic::with_replies([Reply::sse(&text_stream(text)).rechunk(1)]).await;
    let r = call(&provider(&server)).await.unwrap();
    assert_eq!(r.content, vec![Block::text(text)]);
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (5, 9), "null in message_delta keeps the start value");
}

#[tokio::test]
async fn crlf_line_endings_are_accepted() {
    let sse = String::from_utf8(fixture_bytes("stream_tool_use.sse")).unwrap().replace('\n', "\r\n");
    // Chunks of 7 bytes put some CR and LF of one line end in different chunks.
    let server =
        FakeAnthropic::with_replies([Reply::sse(&sse).rechunk(7).with_chunk_delay(Duration::from_millis(1))]).await;
    let r = call(&provider(&server)).await.unwrap();
    assert_eq!(r.content[0], Block::text("I'll run the linter on `core` to see the warnings."));
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    match &r.content[1] {
        Block::ToolUse { input, .. } => assert_eq!(input.as_str(), r#"{"package": "core"}"#),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_mid_stream_error_event_is_retried_and_then_succeeds() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("stream_error_overloaded.sse"),
        Reply::fixture("stream_tool_use.sse"),
    ])
    .await;
    let r = call(&provider(&server)).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    assert_eq!(server.request_count(), 2);
    let reqs = server.requests();
    assert_eq!(reqs[0].body, reqs[1].body);
}

#[tokio::test]
async fn a_mid_stream_error_event_that_persists_is_a_retryable_stream_error_never_a_partial_message() {
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::fixture("stream_error_overloaded.sse"));
    let err = call(&provider(&server).with_max_retries(1)).await.unwrap_err();
    assert_eq!(server.request_count(), 2);
    assert_eq!(err.kind(), ProviderErrorKind::Stream);
    assert!(err.is_retryable());
    let msg = err.to_string();
    assert!(msg.contains("overloaded_error") && msg.contains("Overloaded"), "{msg}");
    assert!(msg.contains("req_01183RZJzzzzgEOzdmenCkhv"), "the request id is named: {msg}");
}

#[tokio::test]
async fn a_stream_cut_without_message_stop_fails() {
    let events = split_events(&String::from_utf8(fixture_bytes("stream_tool_use.sse")).unwrap());
    let cut: String = events.iter().filter(|e| !e.contains("message_stop")).cloned().collect();
    assert_eq!(cut.matches("event: ").count(), events.len() - 1);
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::sse(&cut));
    let err = call(&provider(&server).with_max_retries(1)).await.unwrap_err();
    assert_eq!(server.request_count(), 2, "retried once");
    assert_eq!(err.kind(), ProviderErrorKind::Stream);
    assert!(err.to_string().contains("message_stop"), "{err}");

    // Broken off mid-body: a transport error, also retried.
    let half: String = events[..4].concat();
    let server =
        FakeAnthropic::with_replies([Reply::sse(&half).then_abort(), Reply::fixture("stream_tool_use.sse")]).await;
    assert_eq!(call(&provider(&server)).await.unwrap().stop_reason, StopReason::ToolUse);
    assert_eq!(server.request_count(), 2);
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::sse(&half).then_abort());
    let err = call(&provider(&server).with_max_retries(0)).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Transport, "{err}");
}

#[tokio::test]
async fn a_tool_input_cut_by_max_tokens_is_tolerated_only_for_a_truncated_turn() {
    let stream = |stop: &str| {
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"content\":[],\"usage\":{{}}}}}}\n\n\
             event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"t\",\"input\":{{}}}}}}\n\n\
             event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{{\\\"a\\\": \\\"unfin\"}}}}\n\n\
             event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
             event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{stop}\"}},\"usage\":{{\"output_tokens\":64}}}}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        )
    };
    let server =
        FakeAnthropic::with_replies([Reply::sse(&stream("max_tokens")), Reply::sse(&stream("tool_use"))]).await;
    let p = provider(&server).with_max_retries(0);
    let r = call(&p).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::MaxTokens);
    assert!(matches!(&r.content[0], Block::ToolUse { input, .. } if input.as_str() == "{}"));
    let err = call(&p).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Decode, "{err}");
}

#[tokio::test]
async fn a_json_reply_to_a_streaming_request_is_read_whole() {
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let r = call(&provider(&server)).await.unwrap();
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert_eq!(server.requests()[0].body_json()["stream"], true);
}

#[tokio::test]
async fn an_error_status_on_a_streaming_request_is_reported_like_any_other() {
    let server = FakeAnthropic::with_replies([Reply::fixture("error_401_authentication.json")]).await;
    let err = call(&provider(&server)).await.unwrap_err();
    assert_eq!(err.http_status(), Some(401));
    assert!(err.to_string().contains("authentication_error"));
    assert_eq!(server.request_count(), 1);
}

/// What a request's delta sink heard: the text and thinking since the last restart, how many pieces, restarts.
#[derive(Default)]
struct Heard {
    text: Mutex<String>,
    thinking: Mutex<String>,
    pieces: Mutex<usize>,
    restarts: Mutex<usize>,
}

impl fisk_ai::llm::DeltaSink for Heard {
    fn delta(&self, d: fisk_ai::llm::Delta<'_>) {
        use fisk_ai::llm::Delta;
        *self.pieces.lock().unwrap() += 1;
        match d {
            Delta::Text(t) => self.text.lock().unwrap().push_str(t),
            Delta::Thinking(t) => self.thinking.lock().unwrap().push_str(t),
            Delta::Restart => {
                *self.restarts.lock().unwrap() += 1;
                self.text.lock().unwrap().clear();
                self.thinking.lock().unwrap().clear();
            }
            _ => {}
        }
    }
}

fn joined(blocks: &[Block], thinking: bool) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } if !thinking => Some(text.as_str()),
            Block::Thinking { text, .. } if thinking => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

async fn call_hearing(p: &AnthropicProvider, heard: &Heard) -> Result<Response, ProviderError> {
    let plan = ToolPlan::new(Selection::new().apply(Vec::new()).unwrap(), true);
    let messages = [Message::user("Is staging healthy?")];
    p.call(&Request::new("claude-opus-4-8", &[], &messages, &plan).with_thinking(true).with_deltas(heard)).await
}

/// CONV-5: the deltas of a recorded stream, cut into small chunks, concatenate to the final text and thinking,
/// which are unchanged.
#[tokio::test]
async fn conv_5_streamed_deltas_concatenate_to_the_final_text_and_thinking() {
    let mut seen = (0, 0);
    for name in ["stream_tool_use", "stream_thinking_tool_search"] {
        let server = FakeAnthropic::with_replies([Reply::fixture(&format!("{name}.sse")).rechunk(7)]).await;
        let heard = Heard::default();
        let streamed = call_hearing(&provider(&server), &heard).await.unwrap();
        let plain = FakeAnthropic::with_replies([Reply::fixture(&format!("{name}.sse"))]).await;
        assert_eq!(streamed, call(&provider(&plain)).await.unwrap(), "{name}: the reply is unchanged");
        assert_eq!(*heard.text.lock().unwrap(), joined(&streamed.content, false), "{name}");
        assert_eq!(*heard.thinking.lock().unwrap(), joined(&streamed.content, true), "{name}");
        seen.0 += joined(&streamed.content, false).len();
        seen.1 += joined(&streamed.content, true).len();
        assert!(*heard.pieces.lock().unwrap() > 1, "{name}: heard as it streamed, not whole");
    }
    assert!(seen.0 > 0 && seen.1 > 0, "the fixtures stream both text and thinking");
}

/// CONV-5: an attempt that fails mid-stream is retried; the sink is told to restart, and what follows is the reply.
#[tokio::test]
async fn conv_5_a_retried_stream_restarts_its_deltas() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("stream_thinking_tool_search.sse").then_abort(),
        Reply::fixture("stream_thinking_tool_search.sse"),
    ])
    .await;
    let heard = Heard::default();
    let r = call_hearing(&provider(&server), &heard).await.unwrap();
    assert_eq!(*heard.restarts.lock().unwrap(), 1);
    assert_eq!(*heard.thinking.lock().unwrap(), joined(&r.content, true));
    assert_eq!(*heard.text.lock().unwrap(), joined(&r.content, false));
}
