//! An in-process fake of the Anthropic Messages API for end-to-end tests: a real HTTP server on `127.0.0.1:0` that
//! answers from a queue of scripted replies and logs every request it receives.
//!
//! ```ignore
//! mod fake_anthropic;
//! use fake_anthropic::{FakeAnthropic, Reply};
//!
//! let server = FakeAnthropic::start().await;
//! server.push(Reply::fixture("02_tool_use_custom.json"));       // status + headers from manifest.json
//! server.push(Reply::fixture("stream_tool_use.sse"));           // SSE, one chunk per event
//! server.push(Reply::error(529, "overloaded_error", "Overloaded"));
//! let provider = AnthropicProvider::new("test-key").with_base_url(server.url())?;
//! // ... drive the provider or an agent ...
//! let seen = server.requests();                                  // headers, raw body bytes, parsed JSON
//! assert_eq!(seen[0].header("x-api-key"), Some("test-key"));
//! ```
//!
//! Replies are served in order, one per request, whatever the path. With the queue empty the server answers the
//! [fallback](FakeAnthropic::set_fallback) reply, or by default a 400 naming the problem (a 400 so a provider does
//! not retry it). Fixture files live in `tests/fixtures/anthropic/` (copied from `../shared/fixtures/anthropic`).
#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// The directory of the Anthropic fixtures.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/anthropic")
}

/// A fixture file's bytes (`name` relative to the fixtures directory, e.g. `requests/req_03a_initial.json`).
pub fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// A JSON fixture, parsed.
pub fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture_bytes(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// The 12 tools of `requests/req_03a_initial.json` as command tool specs, in order; the two the fixture sends
/// directly opt out of deferral.
pub fn fixture_specs() -> Vec<fisk_ai::tool::ToolSpec> {
    use fisk_ai::tool::{ToolKind, ToolSpec};
    let req = fixture_json("requests/req_03a_initial.json");
    let tools = req["tools"].as_array().expect("the fixture lists tools");
    (tools.iter().filter(|t| t["type"] == "custom"))
        .map(|t| {
            ToolSpec::new(t["name"].as_str().unwrap(), ToolKind::Command, t["input_schema"].clone())
                .with_description(t["description"].as_str().unwrap())
                .with_no_defer(t["defer_loading"] == false)
        })
        .collect()
}

/// One piece of a streamed body.
#[derive(Debug, Clone)]
pub enum Part {
    /// Bytes sent as one chunk.
    Data(Bytes),
    /// A pause before the next part.
    Delay(Duration),
    /// Break the connection off mid-body (the client sees a transport error).
    Abort,
}

/// The body of a scripted reply.
#[derive(Debug, Clone)]
pub enum ReplyBody {
    /// Sent whole.
    Full(Bytes),
    /// Sent as chunks, with optional pauses.
    Parts(Vec<Part>),
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response headers, in order.
    pub headers: Vec<(String, String)>,
    /// A pause before the response head is sent (e.g. to trip a client timeout).
    pub delay: Duration,
    /// The body.
    pub body: ReplyBody,
}

impl Reply {
    /// A reply with `status`, a `content-type`, and `body` sent whole.
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Bytes>) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            delay: Duration::ZERO,
            body: ReplyBody::Full(body.into()),
        }
    }

    /// A JSON reply.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::bytes(status, "application/json", serde_json::to_vec(body).unwrap())
    }

    /// The documented error shape: `{"type":"error","error":{"type":…,"message":…},"request_id":…}`.
    pub fn error(status: u16, kind: &str, message: &str) -> Self {
        let id = format!("req_fake_{status}");
        Self::json(status, &json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": id}))
            .with_header("request-id", &id)
    }

    /// A 200 `text/event-stream` reply, one chunk per event (events split at blank lines).
    pub fn sse(text: &str) -> Self {
        let parts = split_events(text).into_iter().map(|e| Part::Data(Bytes::from(e))).collect();
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream; charset=utf-8".into())],
            delay: Duration::ZERO,
            body: ReplyBody::Parts(parts),
        }
    }

    /// A fixture file with the status and headers `manifest.json` gives it (200 and a content type by extension
    /// when it is not listed); `.sse` files are streamed one event per chunk.
    pub fn fixture(name: &str) -> Self {
        let body = fixture_bytes(name);
        let manifest = fixture_json("manifest.json");
        let entry = manifest["entries"].as_array().and_then(|e| e.iter().find(|e| e["file"] == name)).cloned();
        let mut reply = if name.ends_with(".sse") {
            Self::sse(std::str::from_utf8(&body).expect("SSE fixtures are UTF-8"))
        } else {
            Self::bytes(200, "application/json", body)
        };
        if let Some(entry) = entry {
            reply.status = entry["status"].as_u64().unwrap_or(200) as u16;
            if let Some(headers) = entry["headers"].as_object() {
                reply.headers =
                    headers.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect();
            }
        }
        reply
    }

    /// Set (replace) a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Remove a header.
    pub fn without_header(mut self, name: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self
    }

    /// Wait `delay` before sending the response head.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Re-chunk the body into pieces of at most `size` bytes (splitting UTF-8 characters and lines wherever they
    /// fall), keeping pauses and aborts where they were.
    pub fn rechunk(mut self, size: usize) -> Self {
        assert!(size > 0);
        let parts = match self.body {
            ReplyBody::Full(b) => vec![Part::Data(b)],
            ReplyBody::Parts(p) => p,
        };
        let mut out = Vec::new();
        let mut pending = Vec::new();
        let flush = |pending: &mut Vec<u8>, out: &mut Vec<Part>| {
            for c in pending.chunks(size) {
                out.push(Part::Data(Bytes::copy_from_slice(c)));
            }
            pending.clear();
        };
        for part in parts {
            match part {
                Part::Data(b) => pending.extend_from_slice(&b),
                other => {
                    flush(&mut pending, &mut out);
                    out.push(other);
                }
            }
        }
        flush(&mut pending, &mut out);
        self.body = ReplyBody::Parts(out);
        self
    }

    /// Pause `delay` between consecutive chunks.
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        if let ReplyBody::Parts(parts) = &mut self.body {
            let mut out = Vec::with_capacity(parts.len() * 2);
            for (i, p) in parts.drain(..).enumerate() {
                if i > 0 {
                    out.push(Part::Delay(delay));
                }
                out.push(p);
            }
            *parts = out;
        }
        self
    }

    /// Break the connection off after the body sent so far.
    pub fn then_abort(mut self) -> Self {
        let mut parts = match self.body {
            ReplyBody::Full(b) => vec![Part::Data(b)],
            ReplyBody::Parts(p) => p,
        };
        parts.push(Part::Abort);
        self.body = ReplyBody::Parts(parts);
        self
    }
}

/// Split SSE text into events, each keeping its terminating blank line (LF or CRLF).
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

/// A streamed (SSE) Messages reply carrying `content` blocks (`{"type":"text","text":..}` or
/// `{"type":"tool_use","id":..,"name":..,"input":{..}}`) and `stop_reason`, as the real API streams them.
pub fn streamed(content: &[Value], stop_reason: &str) -> Reply {
    streamed_as("fake", content, stop_reason, (20, 10))
}

/// [`streamed`] from `claude-haiku-4-5`, with the given input and output token counts.
pub fn streamed_usage(content: &[Value], stop_reason: &str, input_tokens: u64, output_tokens: u64) -> Reply {
    streamed_as("claude-haiku-4-5", content, stop_reason, (input_tokens, output_tokens))
}

fn streamed_as(model: &str, content: &[Value], stop_reason: &str, (input, output): (u64, u64)) -> Reply {
    let mut sse = String::new();
    let mut event = |name: &str, data: Value| sse.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "output_tokens": 1, "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0}}}),
    );
    for (i, block) in content.iter().enumerate() {
        match block["type"].as_str() {
            Some("tool_use") => {
                let start = json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i, "content_block": start}),
                );
                let partial = block["input"].to_string();
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": partial}}),
                );
            }
            _ => {
                event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
                );
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                        "delta": {"type": "text_delta", "text": block["text"]}}),
                );
            }
        }
        event("content_block_stop", json!({"type": "content_block_stop", "index": i}));
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    Reply::sse(&sse)
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Headers, names lowercase, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Bytes,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
}

impl Received {
    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Every value of header `name`.
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
    }

    /// The parsed JSON body; panics when the body was not JSON.
    pub fn body_json(&self) -> &Value {
        self.json.as_ref().expect("request body is JSON")
    }
}

/// Computes a reply from the request (used when the queue is empty, before the fallback).
pub type Responder = Arc<dyn Fn(&Received) -> Reply + Send + Sync>;

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    fallback: Mutex<Option<Reply>>,
    responder: Mutex<Option<Responder>>,
    log: Mutex<Vec<Received>>,
}

/// The running fake server. Stops when dropped.
pub struct FakeAnthropic {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FakeAnthropic {
    /// Start on a free loopback port.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeAnthropic { addr, shared, task }
    }

    /// Start with `replies` queued.
    pub async fn with_replies(replies: impl IntoIterator<Item = Reply>) -> Self {
        let server = Self::start().await;
        server.push_all(replies);
        server
    }

    /// The base URL (`http://127.0.0.1:PORT`), for `with_base_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queue a reply.
    pub fn push(&self, reply: Reply) -> &Self {
        self.shared.replies.lock().unwrap().push_back(reply);
        self
    }

    /// Queue several replies.
    pub fn push_all(&self, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.shared.replies.lock().unwrap().extend(replies);
        self
    }

    /// The reply served whenever the queue is empty (e.g. an endless 500).
    pub fn set_fallback(&self, reply: Reply) -> &Self {
        *self.shared.fallback.lock().unwrap() = Some(reply);
        self
    }

    /// Answer each request from `f` whenever the queue is empty (e.g. a conversation keyed on its length).
    pub fn set_responder(&self, f: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> &Self {
        *self.shared.responder.lock().unwrap() = Some(Arc::new(f));
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

    /// The most recent request.
    pub fn last_request(&self) -> Option<Received> {
        self.shared.log.lock().unwrap().last().cloned()
    }

    /// How many queued replies are left.
    pub fn remaining(&self) -> usize {
        self.shared.replies.lock().unwrap().len()
    }
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = Received {
        method: method.to_string(),
        path: uri.path_and_query().map(|p| p.to_string()).unwrap_or_else(|| uri.path().to_owned()),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        json: serde_json::from_slice(&body).ok(),
        body,
    };
    let responder = shared.responder.lock().unwrap().clone();
    let reply = shared
        .replies
        .lock()
        .unwrap()
        .pop_front()
        .or_else(|| responder.map(|f| f(&received)))
        .or_else(|| shared.fallback.lock().unwrap().clone());
    shared.log.lock().unwrap().push(received);
    let reply = reply.unwrap_or_else(|| {
        Reply::error(400, "invalid_request_error", "fake_anthropic: no scripted reply left for this request")
    });
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut builder = Response::builder().status(StatusCode::from_u16(reply.status).expect("a valid status"));
    for (k, v) in &reply.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let body = match reply.body {
        ReplyBody::Full(b) => Body::from(b),
        ReplyBody::Parts(parts) => {
            let parts: VecDeque<Part> = parts.into();
            Body::from_stream(futures::stream::unfold(parts, |mut q| async move {
                loop {
                    match q.pop_front()? {
                        Part::Delay(d) => tokio::time::sleep(d).await,
                        Part::Data(b) => return Some((Ok(b), q)),
                        Part::Abort => {
                            q.clear();
                            return Some((Err(io::Error::other("fake_anthropic: connection aborted")), q));
                        }
                    }
                }
            }))
        }
    };
    builder.body(body).expect("a valid response")
}
