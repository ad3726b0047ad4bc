//! Serving one client over a byte stream pair (stdin and stdout, a pipe, a socket): newline-delimited JSON-RPC, as
//! the MCP stdio transport defines it (STDIO-1..6).
//!
//! rmcp's async-rw transport drops an over-long line with a log line and nothing else, and ignores a line that is
//! not JSON, so a client that sent either waits out its own timeout. Here every line that cannot become a message
//! gets a JSON-RPC error the client can see, and reading goes on:
//!
//! - a line over the limit: `-32600 Invalid Request`, its bytes discarded as they arrive (never held);
//! - a line that is not JSON: `-32700 Parse error`;
//! - JSON that is not a client message: `-32600`, with the request's id when it has one. A notification nobody
//!   knows is ignored, as JSON-RPC asks.
//!
//! The end of the input is signalled at once (the server stops its calls then), rather than after rmcp's drain.
//!
//! The requirements, by ID: STDIO-1 any byte-stream pair, with the HTTP server's dispatch and exposure; STDIO-2
//! elicitation-gated approval in both protocol eras; STDIO-3 oversize and malformed lines answered, reading goes on;
//! STDIO-4 on EOF, SIGINT or SIGTERM every running call's process group is killed and nothing outlives the server;
//! STDIO-5 nothing but the protocol on stdout; STDIO-6 `max_concurrent_tools` and `tool_timeout` as over HTTP.

use super::handler::{Handler, Shared};
use crate::error::{Error, ErrorKind, Result};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, NumberOrString, RequestId, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Serve one client over `read` and `write` until the input ends, the client goes away or `shutdown` resolves;
/// then stop every call still running at once (their process groups are killed: no one is left to read a result)
/// and return once they are gone (STDIO-4).
pub(crate) async fn serve<R, W>(
    shared: Arc<Shared>,
    read: R,
    write: W,
    limit: usize,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let ended = CancellationToken::new();
    let transport = LineTransport::new(read, write, limit, ended.clone());
    let service_ct = CancellationToken::new();
    let handler = Handler(shared.clone());
    let serving = async {
        match rmcp::ServiceExt::serve_with_ct(handler, transport, service_ct.clone()).await {
            Ok(running) => running.waiting().await.map(|_| ()).map_err(|e| e.to_string()),
            // The client left before it said hello: nothing was served, nothing failed.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    };
    let mut serving = std::pin::pin!(serving);
    // `serving` is awaited again below only when it has not finished here: a finished future must not be polled.
    let (finished, failed) = tokio::select! {
        r = &mut serving => (true, r.err()),
        () = ended.cancelled() => (false, None),
        () = shutdown => (false, None),
    };
    shared.calls_cancel.cancel();
    service_ct.cancel();
    // The calls were stopped above; each returns as soon as its process group is killed.
    let _ = tokio::time::timeout(Duration::from_secs(5), shared.in_flight.wait_idle()).await;
    if !finished {
        let _ = tokio::time::timeout(Duration::from_secs(1), serving).await;
    }
    // A killed call's grandchildren are reparented here as their parents die and reaped from a background thread;
    // the process usually exits right after this returns, which would hand them, unreaped, to whoever adopts them.
    let _ = tokio::task::spawn_blocking(|| crate::exec::settle(Duration::from_secs(5))).await;
    match failed {
        Some(why) => Err(Error::new(ErrorKind::Io, format!("the MCP stdio session failed: {why}"))),
        None => Ok(()),
    }
}

/// This process's stdin for async reads. A pipe or a socket (what MCP clients start servers with; Node's child
/// processes get sockets) is read through the reactor: tokio's own `stdin()` reads on a blocking thread that
/// nothing can stop, so a server whose client kept the pipe open could not exit after SIGTERM.
pub(crate) fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let reactor = || -> std::io::Result<Option<Box<dyn AsyncRead + Send + Unpin>>> {
        let file = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
        let kind = file.metadata()?.file_type();
        if kind.is_fifo() {
            return Ok(Some(Box::new(tokio::net::unix::pipe::Receiver::from_file(file)?)));
        }
        if kind.is_socket() {
            let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
            socket.set_nonblocking(true)?;
            return Ok(Some(Box::new(tokio::net::UnixStream::from_std(socket)?)));
        }
        Ok(None)
    };
    match reactor() {
        Ok(Some(read)) => read,
        Ok(None) => Box::new(tokio::io::stdin()),
        Err(e) => {
            tracing::debug!(target: "fisk_ai::serve::mcp", error = %e, "stdin is read on a blocking thread");
            Box::new(tokio::io::stdin())
        }
    }
}

/// This process's stdout for async writes, through the reactor when it is a pipe or socket, as [`stdin`] reads:
/// tokio's own `stdout()` hands every write to a blocking thread, two thread hops per message.
pub(crate) fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let reactor = || -> std::io::Result<Option<Box<dyn AsyncWrite + Send + Unpin>>> {
        let file = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
        let kind = file.metadata()?.file_type();
        if kind.is_fifo() {
            return Ok(Some(Box::new(tokio::net::unix::pipe::Sender::from_file(file)?)));
        }
        if kind.is_socket() {
            let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
            socket.set_nonblocking(true)?;
            return Ok(Some(Box::new(tokio::net::UnixStream::from_std(socket)?)));
        }
        Ok(None)
    };
    match reactor() {
        Ok(Some(write)) => write,
        Ok(None) => Box::new(tokio::io::stdout()),
        Err(e) => {
            tracing::debug!(target: "fisk_ai::serve::mcp", error = %e, "stdout is written on a blocking thread");
            Box::new(tokio::io::stdout())
        }
    }
}

/// A line buffer grown past this is freed once its line is parsed, so one big request is not held for the session.
const KEEP_CAPACITY: usize = 1 << 20;
/// UTF-8's byte-order mark, which some clients write before a message.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One outcome of reading a line.
enum Read {
    Line,
    Oversize,
    Eof,
}

/// The server's side of a newline-delimited JSON-RPC stream.
pub(crate) struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    limit: usize,
    /// An over-long line is being skipped until its newline; kept here because `receive` is polled in a `select!`.
    discarding: bool,
    write: Arc<Mutex<Option<W>>>,
    /// Cancelled when the input ends, so the server can stop its calls at once.
    ended: CancellationToken,
    /// Error answers being written. A client that floods bad lines and never reads its stdout would otherwise grow
    /// one blocked task per line; with every permit taken, reading stops until an answer has gone out.
    answering: Arc<Semaphore>,
    /// The server's messages being written (rmcp writes each from a task of its own). A client that sends
    /// requests and never reads its stdout would otherwise have the server hold every reply, a 10,000-tool
    /// listing being megabytes; at [`WRITING`] reading stops until one has gone out.
    writing: Arc<Counter>,
    /// The calls read and not yet ended: each `tools/call` carries a count in its extensions, which rmcp hands to
    /// the handler's context, so it ends when the call's handler (or its task) is dropped. Past [`CALLS`] a
    /// `tools/call` is refused.
    calls: Arc<Counter>,
}

/// The most error answers written at once (see `LineTransport::answering`).
const ANSWERING: usize = 16;
/// The most server messages waiting to be written before reading stops (see `LineTransport::writing`).
const WRITING: usize = 64;
/// The most calls in progress (running, or waiting for a slot or an approval) for one stdio client. Past it a
/// `tools/call` is answered with an error at once rather than read and held; reading goes on, so the running
/// calls' cancellations and approvals still arrive.
const CALLS: usize = 256;

/// A count of things in progress, and a wake-up when one ends.
#[derive(Default)]
struct Counter {
    count: std::sync::atomic::AtomicUsize,
    done: tokio::sync::Notify,
}

impl Counter {
    /// Count one until the guard drops (a message written, failed, or its task dropped unpolled; a call ended).
    fn enter(self: &Arc<Self>) -> Counted {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Counted(self.clone())
    }

    fn count(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolve once fewer than `limit` are counted.
    async fn below(&self, limit: usize) {
        loop {
            let done = self.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.count() < limit {
                return;
            }
            done.await;
        }
    }
}

/// One counted, until dropped.
struct Counted(Arc<Counter>);

/// A call's count, carried in its request's extensions, which must be `Clone`: clones share the one count, which
/// ends when the last of them drops. Only held, never read.
#[derive(Clone)]
struct CallCounted(#[allow(dead_code)] Arc<Counted>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.done.notify_waiters();
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W, limit: usize, ended: CancellationToken) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            limit,
            discarding: false,
            write: Arc::new(Mutex::new(Some(write))),
            ended,
            answering: Arc::new(Semaphore::new(ANSWERING)),
            writing: Arc::default(),
            calls: Arc::default(),
        }
    }

    /// Read one line into `self.line`, never holding more than `limit` bytes of it. Cancellation-safe: a partial
    /// line stays in `self.line` (or the skip state in `self.discarding`) for the next call.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::Eof);
            }
            let (chunk, complete) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], true),
                None => (available, false),
            };
            let used = chunk.len() + usize::from(complete);
            let mut over = false;
            if !self.discarding {
                if self.line.len() + chunk.len() > self.limit {
                    // Skip the rest only if the line goes on past this chunk; if it ended here, nothing is left.
                    self.discarding = !complete;
                    self.line.clear();
                    over = true;
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            self.read.consume(used);
            if over {
                // Answered as soon as the limit is crossed, not when the line finally ends.
                return Ok(Read::Oversize);
            }
            if complete {
                if std::mem::take(&mut self.discarding) {
                    continue;
                }
                return Ok(Read::Line);
            }
        }
    }

    /// Answer a line that could not become a message; the write runs on its own so a cancelled `receive` never
    /// leaves half an error on the stream.
    fn answer(&self, permit: OwnedSemaphorePermit, error: ErrorData, id: Option<RequestId>) {
        let message = ServerJsonRpcMessage::error(error, id);
        let write = self.write.clone();
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = send_line(&write, &message).await {
                tracing::debug!(target: "fisk_ai::serve::mcp", error = %e, "cannot answer an unreadable line");
            }
        });
    }

    /// The message in `self.line`, or `None` after answering why there is none.
    fn decode(&mut self, permit: OwnedSemaphorePermit) -> Option<ClientJsonRpcMessage> {
        let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        let line = line.strip_prefix(BOM).unwrap_or(line);
        // A blank line is no message and no error.
        let decoded = if line.iter().all(u8::is_ascii_whitespace) {
            Err(None)
        } else if let Some(call) = super::call_line::tools_call(line) {
            // A call in its usual shape, without repeated keys: read in one pass.
            Ok(call)
        } else {
            serde_json::from_slice::<ClientJsonRpcMessage>(line).map_err(|e| unreadable(line, &e)).map(|mut message| {
                if let ClientJsonRpcMessage::Request(r) = &mut message {
                    super::arguments::mark(&mut r.request, line);
                }
                message
            })
        };
        let full = self.calls.count() >= CALLS;
        if self.line.capacity() > KEEP_CAPACITY {
            self.line = Vec::new();
        } else {
            self.line.clear();
        }
        match decoded {
            Ok(ClientJsonRpcMessage::Request(mut r)) if matches!(r.request, ClientRequest::CallToolRequest(_)) => {
                if full {
                    let text = format!("{CALLS} calls are already in progress for this client; retry when one ends");
                    self.answer(permit, ErrorData::internal_error(text, None), Some(r.id));
                    return None;
                }
                if let ClientRequest::CallToolRequest(call) = &mut r.request {
                    call.extensions.insert(CallCounted(Arc::new(self.calls.enter())));
                }
                Some(ClientJsonRpcMessage::Request(r))
            }
            Ok(message) => Some(message),
            Err(Some((error, id))) => {
                self.answer(permit, error, id);
                None
            }
            Err(None) => None,
        }
    }
}

/// Why a line is not a client message, with the id to answer to; `None` for a notification nobody knows, which is
/// ignored (JSON-RPC never answers a notification).
fn unreadable(line: &[u8], parse: &serde_json::Error) -> Option<(ErrorData, Option<RequestId>)> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
        return Some((ErrorData::parse_error(format!("the line is not JSON: {parse}"), None), None));
    };
    let id = value.get("id").and_then(|id| match id {
        serde_json::Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        serde_json::Value::String(s) => Some(NumberOrString::String(s.as_str().into())),
        _ => None,
    });
    if id.is_none() && value.get("method").is_some_and(serde_json::Value::is_string) {
        tracing::debug!(target: "fisk_ai::serve::mcp", "ignoring a notification that cannot be read: {parse}");
        return None;
    }
    Some((ErrorData::invalid_request(format!("not a JSON-RPC request this server reads: {parse}"), None), id))
}

async fn send_line<W: AsyncWrite + Unpin>(
    write: &Mutex<Option<W>>,
    message: &ServerJsonRpcMessage,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let mut write = write.lock().await;
    let out = write
        .as_mut()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotConnected, "the output stream is closed"))?;
    out.write_all(&bytes).await?;
    out.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        // Counted now, not when rmcp's task first runs, so `receive` sees it at once.
        let writing = self.writing.enter();
        async move {
            let _writing = writing;
            send_line(&write, &item).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // Nothing is read while the client leaves the server's messages unread.
            self.writing.below(WRITING).await;
            // Taken before a line is consumed, so a `receive` cancelled while waiting for it loses nothing.
            let Ok(permit) = self.answering.clone().acquire_owned().await else { break };
            match self.read_line().await {
                Ok(Read::Line) => {
                    if let Some(message) = self.decode(permit) {
                        return Some(message);
                    }
                }
                Ok(Read::Oversize) => {
                    let text = format!("the message is longer than {} bytes", self.limit);
                    self.answer(permit, ErrorData::invalid_request(text, None), None);
                }
                Ok(Read::Eof) => break,
                Err(e) => {
                    tracing::debug!(target: "fisk_ai::serve::mcp", error = %e, "reading the client's stream failed");
                    break;
                }
            }
        }
        self.ended.cancel();
        None
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut out) = self.write.lock().await.take() {
            out.shutdown().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn received(input: &[u8], limit: usize) -> (Vec<ClientJsonRpcMessage>, String) {
        let (out_tx, mut out_rx) = tokio::io::duplex(1 << 16);
        let ended = CancellationToken::new();
        let input = std::io::Cursor::new(input.to_vec());
        let mut t = LineTransport::new(input, out_tx, limit, ended.clone());
        let mut got = Vec::new();
        while let Some(m) = t.receive().await {
            got.push(m);
        }
        assert!(ended.is_cancelled(), "the end of input is signalled");
        // Let the spawned error writes finish, then close the writer so the reader sees the end.
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        t.close().await.unwrap();
        let mut answers = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_rx, &mut answers).await.unwrap();
        (got, answers)
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;

    /// Hostile: a client that floods bad lines and never reads its stdout holds at most [`ANSWERING`] answers in
    /// flight; reading stops there, and once the client reads, every answer arrives and the next message is read.
    #[tokio::test]
    async fn stdio_3_a_flood_of_bad_lines_from_a_client_that_never_reads_is_bounded_and_loses_nothing() {
        let lines = 1000;
        let input = format!("{}{PING}\n", "not json\n".repeat(lines));
        let (out_tx, mut out_rx) = tokio::io::duplex(64);
        let mut t =
            LineTransport::new(std::io::Cursor::new(input.into_bytes()), out_tx, 1024, CancellationToken::new());
        let stalled = tokio::time::timeout(std::time::Duration::from_millis(300), t.receive()).await;
        assert!(stalled.is_err(), "reading stops while the answers cannot be written");
        assert_eq!(t.answering.available_permits(), 0, "at most {ANSWERING} answers in flight");
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            let mut buf = [0u8; 4096];
            while all.iter().filter(|&&b| b == b'\n').count() < lines {
                let n = tokio::io::AsyncReadExt::read(&mut out_rx, &mut buf).await.unwrap();
                assert!(n > 0, "the output ended early");
                all.extend_from_slice(&buf[..n]);
            }
            all
        });
        let ping =
            tokio::time::timeout(std::time::Duration::from_secs(20), t.receive()).await.expect("reading resumes");
        assert!(ping.is_some(), "the message after the flood is read");
        let answers = tokio::time::timeout(std::time::Duration::from_secs(20), reader).await.unwrap().unwrap();
        assert_eq!(String::from_utf8(answers).unwrap().matches("-32700").count(), lines, "every line was answered");
    }

    #[tokio::test]
    async fn stdio_3_an_oversize_line_is_answered_and_the_next_line_is_read() {
        let input = format!("{}\n{PING}\n", "x".repeat(5000));
        let (got, answers) = received(input.as_bytes(), 1024).await;
        assert_eq!(got.len(), 1, "the ping after the oversize line is read: {answers}");
        let answer: serde_json::Value = serde_json::from_str(answers.trim()).unwrap();
        assert_eq!(answer["error"]["code"], -32600);
        assert!(answer["error"]["message"].as_str().unwrap().contains("longer than 1024 bytes"), "{answer}");
        assert!(answer["id"].is_null(), "{answer}");
    }

    #[tokio::test]
    async fn stdio_3_malformed_lines_are_answered_and_unknown_notifications_ignored() {
        let input = format!(
            "not json\n{{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":42}}\n\
             {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":\"bad\"}}\n\r\n\u{feff}{PING}\r\n"
        );
        let (got, answers) = received(input.as_bytes(), 1024).await;
        assert_eq!(got.len(), 1, "the BOM- and CR-framed ping is read");
        let answers: Vec<serde_json::Value> = answers.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let codes: Vec<(i64, serde_json::Value)> =
            answers.iter().map(|a| (a["error"]["code"].as_i64().unwrap(), a["id"].clone())).collect();
        assert!(codes.contains(&(-32700, serde_json::Value::Null)), "{answers:?}");
        assert!(codes.contains(&(-32600, serde_json::json!("a"))), "{answers:?}");
        assert_eq!(answers.len(), 2, "the unknown notification gets no answer: {answers:?}");
    }
}
