//! Where a stdio `tools/call` at concurrency 1 spends its time beyond the spawn (issue 27's 0.95x target), in
//! interleaved blocks so drift hits every variant alike:
//!
//! - `spawn`: the command spawned directly (the bench's baseline);
//! - `floor`: the least any stdio server can do: a loop on the server's runtime that reads a request line, spawns
//!   the same command directly and writes a minimal reply line, driven by a minimal client (a line out, a line
//!   in). What it adds to the spawn is the transport: two pipe crossings, each waking a thread;
//! - `server`: `McpServer::serve_io` driven by the same minimal client: the floor plus this crate's server;
//! - `rmcp client`: the same server through rmcp's client, as the criterion group measures it.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe::{Receiver, Sender};

/// A minimal client: one request line out, one reply line in.
pub struct LineClient {
    write: Sender,
    read: BufReader<Receiver>,
    next: u64,
    line: String,
}

impl LineClient {
    /// A client on the given ends; call inside the runtime that polls them.
    pub fn new(write: OwnedFd, read: OwnedFd) -> Self {
        let write = Sender::from_owned_fd(write).unwrap();
        let read = BufReader::new(Receiver::from_owned_fd(read).unwrap());
        LineClient { write, read, next: 0, line: String::new() }
    }

    async fn exchange(&mut self, message: &str) -> &str {
        self.write.write_all(message.as_bytes()).await.unwrap();
        self.line.clear();
        self.read.read_line(&mut self.line).await.unwrap();
        &self.line
    }

    /// The 2025-11-25 handshake.
    pub async fn initialize(&mut self) {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"line","version":"1"}}}"#;
        assert!(self.exchange(&format!("{init}\n")).await.contains("serverInfo"), "{}", self.line);
        let done = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
        self.write.write_all(done.as_bytes()).await.unwrap();
    }

    /// One `tools/call` of `echo hello`.
    pub async fn call(&mut self) {
        self.next += 1;
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"words\":[\"hello\"]}}}}}}\n",
            self.next
        );
        let reply = self.exchange(&request).await;
        assert!(reply.contains("hello") && !reply.contains("\"isError\":true"), "{reply}");
    }
}

/// Two pipes: (the server's read end, the client's write end) and (the client's read end, the server's write end).
pub fn pipes() -> ((OwnedFd, OwnedFd), (OwnedFd, OwnedFd)) {
    let (server_in, to_server) = std::io::pipe().unwrap();
    let (from_server, server_out) = std::io::pipe().unwrap();
    ((server_in.into(), to_server.into()), (from_server.into(), server_out.into()))
}

/// The floor server for `app`, spawned on the current runtime; its client's ends `(write, read)`.
pub fn floor_server(app: PathBuf) -> (OwnedFd, OwnedFd) {
    let ((server_in, to_server), (from_server, server_out)) = pipes();
    tokio::spawn(async move {
        let mut lines = BufReader::new(Receiver::from_owned_fd(server_in).unwrap());
        let mut out = Sender::from_owned_fd(server_out).unwrap();
        let mut line = String::new();
        while lines.read_line(&mut line).await.is_ok_and(|n| n > 0) {
            let request: serde_json::Value = serde_json::from_str(&line).unwrap();
            line.clear();
            if request.get("id").is_none() {
                continue; // a notification: no reply
            }
            let output = match request["method"].as_str() {
                Some("tools/call") => super::echo_app::spawn_directly(&app, 1).await.remove(0).unwrap().stdout,
                _ => b"serverInfo".to_vec(),
            };
            let text = String::from_utf8_lossy(&output);
            let reply = serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": text}]}});
            let mut bytes = serde_json::to_vec(&reply).unwrap();
            bytes.push(b'\n');
            out.write_all(&bytes).await.unwrap();
        }
    });
    (to_server, from_server)
}

/// Print the medians and each one's rate as a ratio to the spawn's (the first variant).
pub fn report(mut times: Vec<(&str, Vec<Duration>)>) {
    for (_, t) in &mut times {
        t.sort();
    }
    let median = |t: &[Duration]| super::stats::percentile(t, 0.5);
    let spawn = median(&times[0].1).as_secs_f64();
    eprintln!(
        "mcp stdio at concurrency 1, where the time goes (medians of {} calls each; rate against the spawn's):",
        times[0].1.len()
    );
    for (name, t) in &times {
        let m = median(t);
        eprintln!("  {name:<12} {:>8.1} us  {:.3}x", m.as_secs_f64() * 1e6, spawn / m.as_secs_f64());
    }
}
