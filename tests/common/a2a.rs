//! A raw a2a client for the serving tests: builds v1 requests by hand and reads replies, service-error headers
//! included, so the tests see exactly what a peer would.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::time::Duration;

/// One reply off the wire.
#[derive(Debug)]
pub struct Reply {
    /// `Nats-Service-Error-Code` and `Nats-Service-Error`, when the reply is a transport error.
    pub error: Option<(String, String)>,
    /// The body (`Null` when empty).
    pub body: Value,
}

/// A request header from `sender` to `target`, with `id` as id, request and conversation.
pub fn header(protocol: &str, id: &str, sender: &str, target: &str) -> Value {
    json!({
        "protocol": protocol, "id": id, "request": id, "conversation": id, "sequence": 0,
        "time": "2026-12-01T10:00:00Z", "sender": {"name": sender}, "recipient": {"name": target},
    })
}

/// A fresh KSUID-shaped id (27 characters, unique per call).
pub fn id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{:0>27}", format!("T{}", N.fetch_add(1, Ordering::Relaxed)))
}

/// A tool request for `name` with `input` (left out when `None`).
pub fn tool_request(target: &str, name: &str, input: Option<Value>) -> Value {
    let mut m = header("io.choria.fisk-ai.v1.tool.request", &id(), "tester", target);
    m["name"] = json!(name);
    if let Some(input) = input {
        m["input"] = input;
    }
    m
}

/// A discovery request.
pub fn discovery_request(target: &str) -> Value {
    header("io.choria.fisk-ai.v1.discovery.request", &id(), "tester", target)
}

/// Send `body` to `subject` and wait up to `timeout` for the reply.
pub async fn send(client: &async_nats::Client, subject: &str, body: Vec<u8>, timeout: Duration) -> Reply {
    let request = async_nats::client::Request::new().payload(body.into()).timeout(Some(timeout));
    let msg = client.send_request(subject.to_owned(), request).await.unwrap_or_else(|e| panic!("{subject}: {e}"));
    let error = msg.headers.as_ref().and_then(|h| {
        let code = h.get("Nats-Service-Error-Code")?.as_str().to_owned();
        let text = h.get("Nats-Service-Error").map(|v| v.as_str().to_owned()).unwrap_or_default();
        Some((code, text))
    });
    let body = if msg.payload.is_empty() { Value::Null } else { serde_json::from_slice(&msg.payload).unwrap() };
    Reply { error, body }
}

/// Send a JSON message.
pub async fn send_json(client: &async_nats::Client, subject: &str, message: &Value) -> Reply {
    send(client, subject, serde_json::to_vec(message).unwrap(), Duration::from_secs(20)).await
}

/// Call `name` on `identity` and return the reply body (panics on a transport error).
pub async fn call(client: &async_nats::Client, identity: &str, name: &str, input: Option<Value>) -> Value {
    let reply =
        send_json(client, &format!("choria.fisk-ai.tool.{identity}"), &tool_request(identity, name, input)).await;
    assert_eq!(reply.error, None, "transport error calling {name}");
    reply.body
}

/// A hostile peer's request (A2A-15): `message` sent to `subject` with `reply` as its reply subject, which may be
/// another agent's tool subject rather than an inbox. Nothing waits for an answer.
pub async fn forged(client: &async_nats::Client, subject: &str, reply: &str, message: &Value) {
    let body = serde_json::to_vec(message).unwrap();
    client.publish_with_reply(subject.to_owned(), reply.to_owned(), body.into()).await.unwrap();
    client.flush().await.unwrap();
}

/// A flood (A2A-14): `callers` requests of `message` to `subject` at once, each waiting up to `timeout` for its
/// reply; [`send`] panics on a timeout, so every caller must be answered.
pub async fn flood(
    client: &async_nats::Client,
    subject: &str,
    message: &Value,
    callers: usize,
    timeout: Duration,
) -> Vec<Reply> {
    let body = serde_json::to_vec(message).unwrap();
    futures::future::join_all((0..callers).map(|_| send(client, subject, body.clone(), timeout))).await
}
