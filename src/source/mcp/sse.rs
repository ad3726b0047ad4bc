//! The SSE parser under the HTTP import (WHATWG event-stream rules), with each event's data a bounded
//! [`Message`]: held whole up to [`LINE_LIMIT`](super::lines::LINE_LIMIT), reduced while it streams past it, so an event of any size is read
//! in bounded memory.

use super::lines::Message;
use super::malformed::{refusal, unparsable, well_formed};
use futures::stream::{BoxStream, StreamExt};
use rmcp::model::RequestId;
use rmcp::transport::streamable_http_client::SseError;
use sse_stream::Sse;

/// The SSE parser (WHATWG event-stream rules), with each event's data a [`Message`].
#[derive(Default)]
pub(crate) struct Events {
    /// The current line, when it is not data (field names and short values only).
    line: Vec<u8>,
    /// Whether the current line is a `data` line whose value goes straight into `data`.
    in_data: Option<bool>,
    /// A `\r` ended the last chunk: a `\n` first in the next one belongs to it.
    after_cr: bool,
    /// A data line's value has not started yet, so a leading space is still to be dropped.
    strip_space: bool,
    /// Whether the stream's first bytes (a possible byte-order mark) are behind us.
    started: bool,
    /// The first bytes, while too few to tell a byte-order mark.
    head: Vec<u8>,
    data: Message,
    has_data: bool,
    event: Option<String>,
    id: Option<String>,
    retry: Option<u64>,
}

/// UTF-8's byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The longest non-data line kept (field name, event name, id, retry); longer ones are ignored.
const SHORT_LINE: usize = 4096;

impl Events {
    /// Parse `chunk`, pushing completed events onto `out`.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut Vec<Sse>) {
        if self.started {
            return self.feed_lines(chunk, out);
        }
        // A byte-order mark may open the stream; it is not part of the first line.
        if self.head.is_empty() && chunk.len() >= BOM.len() {
            self.started = true;
            return self.feed_lines(chunk.strip_prefix(BOM).unwrap_or(chunk), out);
        }
        self.head.extend_from_slice(chunk);
        if self.head.len() < BOM.len() && BOM.starts_with(&self.head) {
            return; // too few bytes yet to tell
        }
        self.started = true;
        let head = std::mem::take(&mut self.head);
        self.feed_lines(head.strip_prefix(BOM).unwrap_or(&head), out);
    }

    fn feed_lines(&mut self, mut chunk: &[u8], out: &mut Vec<Sse>) {
        if chunk.is_empty() {
            return;
        }
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        while !chunk.is_empty() {
            let end = memchr::memchr2(b'\n', b'\r', chunk);
            let (part, rest) = match end {
                Some(i) => (&chunk[..i], Some(i)),
                None => (chunk, None),
            };
            self.take(part);
            let Some(i) = rest else { break };
            if chunk[i] == b'\r' {
                if chunk.get(i + 1) == Some(&b'\n') {
                    chunk = &chunk[i + 2..];
                } else {
                    self.after_cr = i + 1 == chunk.len();
                    chunk = &chunk[i + 1..];
                }
            } else {
                chunk = &chunk[i + 1..];
            }
            self.end_line(out);
        }
    }

    /// Part of the current line.
    fn take(&mut self, mut part: &[u8]) {
        if self.in_data.is_none() {
            // Five bytes tell a data line (`data:`) from any other; only those are held before deciding.
            let need = 5usize.saturating_sub(self.line.len()).min(part.len());
            self.line.extend_from_slice(&part[..need]);
            part = &part[need..];
            if self.line.starts_with(b"data:") {
                self.in_data = Some(true);
                if self.has_data {
                    self.data.feed(b"\n");
                }
                self.has_data = true;
                self.line.clear();
                self.strip_space = true;
            } else if self.line.len() >= 5 || self.line.contains(&b':') {
                self.in_data = Some(false);
            }
        }
        if self.in_data == Some(true) {
            // One space after the colon is not part of the value.
            if self.strip_space && !part.is_empty() {
                part = part.strip_prefix(b" ").unwrap_or(part);
                self.strip_space = false;
            }
            return self.data.feed(part);
        }
        let room = SHORT_LINE.saturating_sub(self.line.len()).min(part.len());
        self.line.extend_from_slice(&part[..room]);
    }

    fn end_line(&mut self, out: &mut Vec<Sse>) {
        let line = std::mem::take(&mut self.line);
        self.strip_space = false;
        if self.in_data.take() == Some(true) {
            return;
        }
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line == b"data" {
            // A data line with no colon adds an empty line.
            if self.has_data {
                self.data.feed(b"\n");
            }
            self.has_data = true;
            return;
        }
        let (field, value) = match memchr::memchr(b':', &line) {
            Some(0) => return, // a comment
            Some(i) => (&line[..i], line[i + 1..].strip_prefix(b" ").unwrap_or(&line[i + 1..])),
            None => (&line[..], &b""[..]),
        };
        let value = String::from_utf8_lossy(value).into_owned();
        match field {
            b"event" => self.event = Some(value),
            b"id" if !value.contains('\0') => self.id = Some(value),
            b"retry" => self.retry = value.parse().ok(),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Sse>) {
        let data = std::mem::take(&mut self.data);
        let has_data = std::mem::take(&mut self.has_data);
        let (event, id, retry) = (self.event.take(), self.id.take(), self.retry.take());
        if !has_data && data.is_empty() && event.is_none() && id.is_none() && retry.is_none() {
            return;
        }
        let data = has_data.then(|| String::from_utf8_lossy(&data.finish()).into_owned());
        out.push(Sse { event, data, id, retry });
    }
}

/// The events of `body`, each bounded. An event whose data is not well-formed JSON (MCPI-14) becomes an error
/// answer to request `answer_to`, saying why: rmcp would fail to parse it and close the whole transport, leaving
/// the request with only "transport closed".
pub(crate) fn sse(
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    answer_to: Option<RequestId>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let state = (body, Events::default(), std::collections::VecDeque::<Sse>::new(), false);
    futures::stream::unfold(state, move |(mut body, mut events, mut ready, mut done)| {
        let answer_to = answer_to.clone();
        async move {
            loop {
                if let Some(event) = ready.pop_front() {
                    let event = checked(event, answer_to.as_ref());
                    return Some((Ok(event), (body, events, ready, done)));
                }
                if done {
                    return None;
                }
                match body.next().await {
                    Some(Ok(chunk)) => {
                        let mut out = Vec::new();
                        events.feed(&chunk, &mut out);
                        ready.extend(out);
                    }
                    Some(Err(e)) => {
                        done = true;
                        return Some((Err(SseError::Body(Box::new(e))), (body, events, ready, done)));
                    }
                    None => done = true,
                }
            }
        }
    })
    .boxed()
}

/// `event`, or the error answer standing in for it when its data cannot be parsed and the request is known.
fn checked(mut event: Sse, answer_to: Option<&RequestId>) -> Sse {
    let (Some(id), Some(data)) = (answer_to, event.data.as_deref()) else { return event };
    if data.trim().is_empty() {
        return event;
    }
    if let Err(e) = well_formed(data) {
        let refused = refusal(id.clone(), unparsable(&e));
        event.data = serde_json::to_string(&refused).ok().or(event.data);
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::mcp::lines::LINE_LIMIT;
    use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage};

    fn parse(chunks: &[&[u8]]) -> Vec<Sse> {
        let mut events = Events::default();
        let mut out = Vec::new();
        for chunk in chunks {
            events.feed(chunk, &mut out);
        }
        out
    }

    #[test]
    fn sse_events_split_anywhere_parse_as_whole_events() {
        let stream = b"event: message\r\nid: 7\ndata: {\"a\":\ndata: 1}\n\n: keep-alive\n\ndata:x\rretry: 5\r\r";
        let whole = parse(&[stream]);
        for split in 0..stream.len() {
            let (a, b) = stream.split_at(split);
            assert_eq!(parse(&[a, b]), whole, "split at {split}");
        }
        assert_eq!(whole.len(), 2, "{whole:?}");
        assert_eq!(whole[0].event.as_deref(), Some("message"));
        assert_eq!(whole[0].id.as_deref(), Some("7"));
        assert_eq!(whole[0].data.as_deref(), Some("{\"a\":\n1}"));
        assert_eq!(whole[1].data.as_deref(), Some("x"));
        assert_eq!(whole[1].retry, Some(5));
    }

    #[test]
    fn a_byte_order_mark_and_empty_chunks_change_nothing() {
        let stream = b"\xEF\xBB\xBFdata: a\r\n\r\n";
        let plain = parse(&[&stream[3..]]);
        assert_eq!(plain.len(), 1);
        for split in 0..stream.len() {
            let (a, b) = stream.split_at(split);
            assert_eq!(parse(&[a, b"", b]), plain, "split at {split}");
        }
        // A CR ending one chunk, then an empty chunk, then the LF: one line break, not two.
        assert_eq!(parse(&[b"data: x\r", b"", b"\ndata: y\n\n"])[0].data.as_deref(), Some("x\ny"));
    }

    #[test]
    fn an_event_over_the_limit_is_reduced_while_it_streams() {
        let text = "y".repeat(LINE_LIMIT + 1000);
        let reply = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":false}}}}"#
        );
        let mut events = Events::default();
        let mut out = Vec::new();
        events.feed(b"event: message\ndata: ", &mut out);
        for piece in reply.as_bytes().chunks(64 * 1024) {
            events.feed(piece, &mut out);
            assert!(events.data.held_len() <= LINE_LIMIT, "held data stays bounded");
        }
        events.feed(b"\n\n", &mut out);
        assert_eq!(out.len(), 1);
        let data = out[0].data.as_deref().unwrap();
        assert!(data.len() < 200 * 1024, "reduced to the EXEC-12 head and tail: {} bytes", data.len());
        let message: ServerJsonRpcMessage = serde_json::from_str(data).unwrap();
        assert!(matches!(message, JsonRpcMessage::Response(_)), "{data:.200}");
    }
}
