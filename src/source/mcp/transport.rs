//! The stdio server's transport: our bounded line reader over its stdout and its stdin, in place of rmcp's
//! async-rw transport. Two things differ from rmcp's:
//!
//! - A reply to `tools/list` is read by the connection's [`Ledger`] (MCPI-6, MCPI-13): tool by tool, tolerantly,
//!   within the listing's memory bound.
//! - A message that cannot be parsed (not JSON, nested too deep, a reply that is not a JSON-RPC message) ends the
//!   connection at once, the reason kept for the error (MCPI-14). rmcp drops such a line and leaves its request to
//!   wait out the whole timeout, reported as silence. A request or notification from the server that cannot be
//!   read is skipped, as rmcp does: no request of ours waits for it.

use super::lines::BoundedLines;
use super::listing::Ledger;
use super::malformed::unparsable;
use super::stdio::StdinClosed;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout};

/// UTF-8's byte-order mark, which some servers write before a message.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One stdio server's messages, both ways.
pub(crate) struct StdioTransport {
    lines: BoundedLines<ChildStdout>,
    /// Shared with the send futures, which rmcp runs on their own; `None` once closed.
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    ledger: Ledger,
    /// `tools/list` requests sent and not answered yet.
    listing: Vec<RequestId>,
    ended: bool,
    /// Set once stdin is closed (or the transport is gone): the server's grace to exit starts then (MCPI-17).
    closed: StdinClosed,
}

/// What one line of the server's stdout is.
#[expect(clippy::large_enum_variant, reason = "one short-lived value per message, moved once, never stored")]
enum Decoded {
    Message(ServerJsonRpcMessage),
    Skip,
    /// It cannot be read and a request may be waiting for it: end the connection, for this reason.
    Fatal(String),
}

impl StdioTransport {
    pub(crate) fn new(
        lines: BoundedLines<ChildStdout>,
        stdin: ChildStdin,
        closed: StdinClosed,
        ledger: Ledger,
    ) -> Self {
        let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
        StdioTransport { lines, stdin, ledger, listing: Vec::new(), ended: false, closed }
    }

    fn end(&mut self, why: String) {
        tracing::debug!(target: "fisk_ai::source::mcp", reason = %why, "ending the connection");
        self.ledger.set_fault(why);
        self.ended = true;
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && matches!(request.request, ClientRequest::ListToolsRequest(_))
        {
            self.listing.push(request.id.clone());
        }
        let line = serde_json::to_vec(&item);
        let stdin = Arc::clone(&self.stdin);
        async move {
            let mut line = line.map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            let stdin = stdin
                .as_mut()
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotConnected, "the server's stdin is closed"))?;
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    /// Cancellation-safe (rmcp polls it in a `select!`): a line stays in the reader until it is decoded, and
    /// decoding does not wait.
    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        while !self.ended {
            match std::future::poll_fn(|cx| self.lines.poll_line(cx)).await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.end(format!("its output cannot be read: {e}"));
                    return None;
                }
            }
            let decoded = decode(self.lines.line(), &self.ledger, &mut self.listing);
            self.lines.consume();
            match decoded {
                Decoded::Message(message) => return Some(message),
                Decoded::Skip => {}
                Decoded::Fatal(why) => self.end(why),
            }
        }
        None
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.stdin.lock().await.take();
        self.closed.mark();
        Ok(())
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // Gone without `close` (its task was dropped): our end of stdin goes with it, unless a send still holds it.
        self.closed.mark();
    }
}

/// One line, parsed once: a listing page through the ledger, anything else as rmcp's message.
fn decode(line: &[u8], ledger: &Ledger, listing: &mut Vec<RequestId>) -> Decoded {
    let line = line.strip_prefix(BOM).unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Skip;
    }
    if !listing.is_empty()
        && let Some(page) = ledger.reply(line, listing)
    {
        return Decoded::Message(page);
    }
    match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
        Ok(message) => Decoded::Message(message),
        Err(e) if e.is_data() && asks(line) => {
            tracing::debug!(target: "fisk_ai::source::mcp", error = %e, "skipping a server message that cannot be read");
            Decoded::Skip
        }
        Err(e) => Decoded::Fatal(unparsable(&e)),
    }
}

/// Whether `line` (valid JSON) is a request or notification: it has a `method`.
fn asks(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        method: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(line).is_ok_and(|p| p.method.is_some())
}
