//! An in-process fake of OpenAI's Chat Completions API for end-to-end tests: a real HTTP server on `127.0.0.1:0`
//! that answers from a queue of scripted replies shaped like the live API's, and logs every request it receives.
//!
//! ```ignore
//! #[path = "common/openai.rs"]
//! mod fake_openai;
//! use fake_openai::{FakeOpenAi, Reply, completion, streamed};
//!
//! let server = FakeOpenAi::start().await;
//! server.push(completion(json!({"role": "assistant", "content": "hi"}), "stop").reply());
//! server.push(streamed("hi", &[("call_1", "echo", r#"{"n":1}"#)], "tool_calls").reply());
//! server.push(Reply::error(429, "rate_limit_exceeded", "Slow down").with_header("retry-after", "0"));
//! let provider = OpenAiProvider::new("test-key").with_base_url(server.url())?;
//! ```
//!
//! Replies are served in order, one per request. With the queue empty the server answers a 400 naming the problem
//! (a 400 so a provider does not retry it). Every request body received and every reply body served is also kept
//! in a process-wide [`recorded`] log, which the contract test validates against OpenAI's OpenAPI description.
#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// One piece of a streamed body.
#[derive(Debug, Clone)]
pub enum Part {
    /// Bytes sent as one chunk.
    Data(Bytes),
    /// A pause before the next part.
    Delay(Duration),
    /// Break the connection off mid-body.
    Abort,
}

/// What a served body is, for the contract test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A `chat.completion` object, valid against `CreateChatCompletionResponse`.
    Completion,
    /// `data:` chunks, each valid against `CreateChatCompletionStreamResponse`, then `[DONE]`.
    Chunks,
    /// An error body, or a deliberate departure from the API (a local server's quirk): not checked.
    Quirk,
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// A pause before the response head is sent (to trip a client timeout).
    pub delay: Duration,
    pub parts: Vec<Part>,
    pub shape: Shape,
}

impl Reply {
    /// A reply with `status`, a `content-type`, and `body` sent whole.
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Bytes>, shape: Shape) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            delay: Duration::ZERO,
            parts: vec![Part::Data(body.into())],
            shape,
        }
    }

    /// A JSON reply that is not a completion (an error body, a quirk).
    pub fn json(status: u16, body: &Value) -> Self {
        Self::bytes(status, "application/json", serde_json::to_vec(body).unwrap(), Shape::Quirk)
    }

    /// The documented error shape: `{"error":{"message":…,"type":…,"param":null,"code":…}}`, with an
    /// `x-request-id`.
    pub fn error(status: u16, kind: &str, message: &str) -> Self {
        Self::json(status, &json!({"error": {"message": message, "type": kind, "param": null, "code": kind}}))
            .with_header("x-request-id", &format!("req_fake_{status}"))
    }

    /// A 200 `text/event-stream` reply from raw SSE text, one chunk per event.
    pub fn sse_text(text: &str, shape: Shape) -> Self {
        let parts = split_events(text).into_iter().map(|e| Part::Data(Bytes::from(e))).collect();
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream; charset=utf-8".into())],
            delay: Duration::ZERO,
            parts,
            shape,
        }
    }

    /// A stream of `chunks` (`data: <json>` each), then `data: [DONE]` when `done`.
    pub fn chunks(chunks: &[Value], done: bool, shape: Shape) -> Self {
        let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        if done {
            text.push_str("data: [DONE]\n\n");
        }
        Self::sse_text(&text, shape)
    }

    /// Set (replace) a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Wait `delay` before sending the response head.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Re-chunk the body into pieces of at most `size` bytes (splitting lines and UTF-8 characters anywhere).
    pub fn rechunk(mut self, size: usize) -> Self {
        let mut all = Vec::new();
        for p in &self.parts {
            if let Part::Data(b) = p {
                all.extend_from_slice(b);
            }
        }
        self.parts = all.chunks(size).map(|c| Part::Data(Bytes::copy_from_slice(c))).collect();
        self
    }

    /// Pause `delay` between consecutive chunks.
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        let parts = std::mem::take(&mut self.parts);
        for (i, p) in parts.into_iter().enumerate() {
            if i > 0 {
                self.parts.push(Part::Delay(delay));
            }
            self.parts.push(p);
        }
        self
    }

    /// Break the connection off after the body sent so far.
    pub fn then_abort(mut self) -> Self {
        self.parts.push(Part::Abort);
        self
    }

    /// Mark the reply as a deliberate departure from the API (not contract-checked).
    pub fn quirk(mut self) -> Self {
        self.shape = Shape::Quirk;
        self
    }

    fn body_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.parts {
            if let Part::Data(b) = p {
                out.extend_from_slice(b);
            }
        }
        out
    }
}

/// Split SSE text into events, each keeping its terminating blank line.
pub fn split_events(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.split_inclusive('\n') {
        cur.push_str(line);
        if line == "\n" || line == "\r\n" {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A usage object as the API reports it.
pub fn usage(prompt: u64, completion: u64, cached: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}})
}

/// A `chat.completion` body in the live API's shape.
pub struct Completion(pub Value);

impl Completion {
    /// The reply serving it (200, JSON).
    pub fn reply(&self) -> Reply {
        Reply::bytes(200, "application/json", serde_json::to_vec(&self.0).unwrap(), Shape::Completion)
    }
}

/// A completion of one choice: `message` (`content` and `refusal` default to `null`) and `finish_reason`, with
/// usage 100 in, 20 out, 40 of the input cached.
pub fn completion(message: Value, finish_reason: &str) -> Completion {
    let mut message = message;
    for key in ["content", "refusal"] {
        if message.get(key).is_none() {
            message[key] = Value::Null;
        }
    }
    message["role"] = json!("assistant");
    Completion(json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_760_000_000, "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": usage(100, 20, 40), "service_tier": "default", "system_fingerprint": "fp_fake"
    }))
}

/// A text completion.
pub fn text(content: &str, finish_reason: &str) -> Completion {
    completion(json!({"content": content}), finish_reason)
}

/// A completion calling `calls` (`(id, name, arguments)`) in parallel.
pub fn calls(calls: &[(&str, &str, &str)]) -> Completion {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    completion(json!({"tool_calls": calls}), "tool_calls")
}

/// One chunk. The live API also sends `"logprobs": null` in each choice and `"usage": null` on every chunk but the
/// usage one; both are left out here because the OpenAPI description types them in 3.0 style (`nullable: true`,
/// which JSON Schema ignores), so a null cannot validate, and both fields are optional. The provider reads either
/// form (the quirk scenarios send nulls).
fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_760_000_000,
        "model": "gpt-4.1-2025-04-14", "system_fingerprint": "fp_fake", "service_tier": "default",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})
}

/// The chunks the live API streams for `text` (in pieces of 8 characters) and tool `calls` (each announced with
/// its id and name, then its arguments in pieces of 10), `finish_reason`, and the usage chunk (empty `choices`).
pub fn stream_chunks(text: &str, calls: &[(&str, &str, &str)], finish_reason: &str) -> Vec<Value> {
    let mut out = vec![chunk(json!({"role": "assistant", "content": "", "refusal": null}), None)];
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(8) {
        out.push(chunk(json!({"content": piece.iter().collect::<String>()}), None));
    }
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let head = json!({"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}});
        out.push(chunk(json!({"tool_calls": [head]}), None));
        let chars: Vec<char> = args.chars().collect();
        for piece in chars.chunks(10) {
            let part = json!({"index": i, "function": {"arguments": piece.iter().collect::<String>()}});
            out.push(chunk(json!({"tool_calls": [part]}), None));
        }
    }
    out.push(chunk(json!({}), Some(finish_reason)));
    let mut last = chunk(json!({}), None);
    last["choices"] = json!([]);
    last["usage"] = usage(100, 20, 40);
    out.push(last);
    out
}

/// A streamed reply of [`stream_chunks`], ending in `[DONE]`.
pub fn streamed(text: &str, calls: &[(&str, &str, &str)], finish_reason: &str) -> Reply {
    Reply::chunks(&stream_chunks(text, calls, finish_reason), true, Shape::Chunks)
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    pub json: Option<Value>,
}

impl Received {
    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The parsed JSON body; panics when the body was not JSON.
    pub fn body_json(&self) -> &Value {
        self.json.as_ref().expect("request body is JSON")
    }
}

/// What the server saw and served, process-wide, for the contract test.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// Every request body, in arrival order.
    pub requests: Vec<Bytes>,
    /// Every reply body served, with its shape.
    pub replies: Vec<(Shape, Vec<u8>)>,
}

static RECORDED: Mutex<Option<Recorded>> = Mutex::new(None);

/// Everything recorded so far in this process.
pub fn recorded() -> Recorded {
    RECORDED.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_default()
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    log: Mutex<Vec<Received>>,
}

/// The running fake server. Stops when dropped.
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FakeOpenAi {
    /// Start on a free loopback port.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeOpenAi { addr, shared, task }
    }

    /// Start with `replies` queued.
    pub async fn with_replies(replies: impl IntoIterator<Item = Reply>) -> Self {
        let server = Self::start().await;
        server.shared.replies.lock().unwrap().extend(replies);
        server
    }

    /// The base URL (`http://127.0.0.1:PORT/v1`), for `with_base_url` and `llm.base_url`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queue a reply.
    pub fn push(&self, reply: Reply) -> &Self {
        self.shared.replies.lock().unwrap().push_back(reply);
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Received> {
        self.shared.log.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn request_count(&self) -> usize {
        self.shared.log.lock().unwrap().len()
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let received = Received {
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        json: serde_json::from_slice(&body).ok(),
        body: body.clone(),
    };
    let reply = shared.replies.lock().unwrap().pop_front();
    shared.log.lock().unwrap().push(received);
    let reply = reply.unwrap_or_else(|| {
        Reply::error(400, "invalid_request_error", "fake_openai: no scripted reply left for this request")
    });
    {
        let mut rec = RECORDED.lock().unwrap_or_else(|e| e.into_inner());
        let rec = rec.get_or_insert_with(Recorded::default);
        rec.requests.push(body);
        rec.replies.push((reply.shape, reply.body_bytes()));
    }
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut builder = Response::builder().status(StatusCode::from_u16(reply.status).expect("a valid status"));
    for (k, v) in &reply.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let parts: VecDeque<Part> = reply.parts.into();
    let body = Body::from_stream(futures::stream::unfold(parts, |mut q| async move {
        loop {
            match q.pop_front()? {
                Part::Delay(d) => tokio::time::sleep(d).await,
                Part::Data(b) => return Some((Ok(b), q)),
                Part::Abort => {
                    q.clear();
                    return Some((Err(io::Error::other("fake_openai: connection aborted")), q));
                }
            }
        }
    }));
    builder.body(body).expect("a valid response")
}
