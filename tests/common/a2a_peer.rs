//! A fake a2a v1 agent on a real NATS server (docs/nats-wire.md §2), for remote import tests: it answers the
//! discovery and tool subjects of one identity with whatever its handlers say, well-formed or hostile, and keeps
//! every request it received.
#![allow(dead_code)]

use async_nats::HeaderMap;
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the peer does with one request.
pub enum Reply {
    /// Send this JSON as the body.
    Json(Value),
    /// Send these bytes as the body.
    Raw(Vec<u8>),
    /// The services framework's error reply: empty body, `Nats-Service-Error-Code` and `Nats-Service-Error`.
    ServiceError(u16, String),
    /// Wait, then do the inner thing.
    After(Duration, Box<Reply>),
    /// Never answer.
    Silent,
    /// Stop serving both subjects for good, without answering: a peer dying mid-call.
    Die,
}

type Handler = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

/// A running fake peer; stops when dropped.
pub struct A2aPeer {
    /// Every request received, in order: `(subject, body as JSON or Null)`.
    pub received: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for A2aPeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl A2aPeer {
    /// Serve `identity` over `client` with the two handlers. Subscribed (and flushed) before it returns.
    pub async fn start(
        client: async_nats::Client,
        identity: &str,
        discovery: impl Fn(&Value) -> Reply + Send + Sync + 'static,
        tool: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> A2aPeer {
        let d = client.subscribe(format!("choria.fisk-ai.discovery.{identity}")).await.unwrap();
        let t = client.subscribe(format!("choria.fisk-ai.tool.{identity}")).await.unwrap();
        settle(&client).await;
        let received = Arc::new(Mutex::new(Vec::new()));
        let (discovery, tool): (Handler, Handler) = (Arc::new(discovery), Arc::new(tool));
        let log = Arc::clone(&received);
        let task = tokio::spawn(async move {
            let mut both = futures::stream::select(d.map(|m| (true, m)), t.map(|m| (false, m)));
            while let Some((is_discovery, msg)) = both.next().await {
                let body: Value = serde_json::from_slice(&msg.payload).unwrap_or(Value::Null);
                log.lock().unwrap().push((msg.subject.to_string(), body.clone()));
                let reply = if is_discovery { discovery(&body) } else { tool(&body) };
                let Some(to) = msg.reply else { continue };
                if !answer(&client, to.to_string(), reply).await {
                    return;
                }
            }
        });
        A2aPeer { received, task }
    }

    /// A well-behaved peer: the card lists `tools`; each tool request is answered by `tool`.
    pub async fn serving(
        client: async_nats::Client,
        identity: &str,
        tools: Vec<Value>,
        tool: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> A2aPeer {
        let name = identity.to_owned();
        Self::start(client, identity, move |req| Reply::Json(card(req, &name, tools.clone())), tool).await
    }

    /// The requests received on `subject`.
    pub fn requests(&self, subject: &str) -> Vec<Value> {
        self.received.lock().unwrap().iter().filter(|(s, _)| s == subject).map(|(_, b)| b.clone()).collect()
    }
}

/// Wait until the server has processed this connection's subscriptions: it handles one connection's commands in
/// order, so once a message to a probe subscribed after them comes back, they are in place for every client.
/// (`flush` only empties the socket buffer.)
pub async fn settle(client: &async_nats::Client) {
    let probe = client.new_inbox();
    let mut sub = client.subscribe(probe.clone()).await.unwrap();
    client.publish(probe, "".into()).await.unwrap();
    client.flush().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), sub.next()).await.expect("the probe came back");
}

/// Do `reply`; false when the peer is to stop.
async fn answer(client: &async_nats::Client, to: String, reply: Reply) -> bool {
    match reply {
        Reply::Json(value) => client.publish(to, serde_json::to_vec(&value).unwrap().into()).await.unwrap(),
        Reply::Raw(bytes) => client.publish(to, bytes.into()).await.unwrap(),
        Reply::ServiceError(code, text) => {
            let mut headers = HeaderMap::new();
            headers.insert("Nats-Service-Error-Code", code.to_string().as_str());
            headers.insert("Nats-Service-Error", text.as_str());
            client.publish_with_headers(to, headers, Vec::new().into()).await.unwrap();
        }
        Reply::After(wait, inner) => {
            tokio::time::sleep(wait).await;
            return Box::pin(answer(client, to, *inner)).await;
        }
        Reply::Silent => {}
        Reply::Die => return false,
    }
    let _ = client.flush().await;
    true
}

/// The header fields of a reply of `protocol` to `request` (docs/nats-wire.md §2), from `sender`.
pub fn reply_header(request: &Value, protocol: &str, sender: &str) -> serde_json::Map<String, Value> {
    let mut header = json!({
        "protocol": protocol,
        "id": "2GbBFMYjIqJX0zFXuSpWpENKc4g",
        "request": request["request"].as_str().unwrap_or("x"),
        "conversation": request["conversation"].as_str().unwrap_or("x"),
        "sequence": 0,
        "time": "2026-12-01T10:00:00Z",
        "sender": {"name": sender},
    });
    if let Some(name) = request["sender"]["name"].as_str() {
        header["recipient"] = json!({"name": name});
    }
    header.as_object().unwrap().clone()
}

/// An agent card listing `tools` (A2A-8), answering `request`.
pub fn card(request: &Value, identity: &str, tools: Vec<Value>) -> Value {
    let mut card = reply_header(request, "io.choria.fisk-ai.v1.discovery.reply", identity);
    card.insert("name".into(), json!(identity));
    card.insert("version".into(), json!("1.2.3"));
    card.insert("protocols".into(), json!(["io.choria.fisk-ai.v1"]));
    if !tools.is_empty() {
        card.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(card)
}

/// A tool reply with `body`'s fields (`is_error`, `output`, `exec`), answering `request`.
pub fn tool_reply(request: &Value, identity: &str, body: Value) -> Value {
    let mut reply = reply_header(request, "io.choria.fisk-ai.v1.tool.reply", identity);
    reply.extend(body.as_object().unwrap().clone());
    Value::Object(reply)
}

/// A card descriptor.
pub fn descriptor(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "input_schema": {
        "type": "object", "properties": {"text": {"type": "string"}}
    }})
}

/// A client of `server` for a fake peer or for the agent.
pub async fn client(url: &str) -> async_nats::Client {
    async_nats::connect(url).await.unwrap()
}

/// What a hostile peer hides in its card's text (IMPORT-13): a terminal hyperlink (OSC 8, BEL-terminated), a
/// screen clear (CSI), a C1 CSI, a carriage return, a NEL, a bidi override and a zero-width space.
pub const ESCAPES: &str = "\u{1b}]8;;http://evil\u{7}click\u{1b}]8;;\u{7}\u{1b}[2J\u{9b}31m\r\u{85}\u{202e}\u{200b}";

/// What [`ESCAPES`] becomes once cleaned: the controls and sequences gone, the invisible characters escaped.
pub const ESCAPES_CLEANED: &str = "click\\u{202e}\\u{200b}";

/// A descriptor whose description and schema prose (title, a property's description, default and examples, an
/// unknown keyword) all carry [`ESCAPES`].
pub fn escaping_descriptor(name: &str) -> Value {
    json!({"name": name, "description": format!("List{ESCAPES} files"), "input_schema": {
        "type": "object",
        "title": format!("Title{ESCAPES}"),
        "x-note": format!("Note{ESCAPES}"),
        "properties": {"path": {
            "type": "string",
            "description": format!("Path{ESCAPES}"),
            "default": format!("/tmp{ESCAPES}"),
            "examples": [format!("/var{ESCAPES}")],
        }},
    }})
}

/// The most a card built by [`huge_card`] takes on the wire: just under the 768 KiB a2a message limit.
pub const HUGE_CARD_BYTES: usize = 786_000;

/// A card of about [`HUGE_CARD_BYTES`] for `request`: one tool `big` whose schema is as dense as JSON gets (an
/// `examples` array of zeros, two bytes a node on the wire, a whole `Value` each once parsed). Legal on the wire;
/// parsed, it takes over ten times its size (IMPORT-12).
pub fn huge_card(request: &Value, identity: &str) -> Vec<u8> {
    let schema = json!({"type": "object", "examples": "ZEROS"});
    let text = card(request, identity, vec![json!({"name": "big", "description": "Big", "input_schema": schema})]);
    let text = text.to_string();
    let zeros = (HUGE_CARD_BYTES.saturating_sub(text.len()) / 2).max(1);
    let mut array = "0,".repeat(zeros);
    array.pop();
    text.replacen("\"ZEROS\"", &format!("[{array}]"), 1).into_bytes()
}
