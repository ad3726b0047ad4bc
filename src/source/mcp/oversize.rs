//! A JSON-RPC message too long to hold (over [`LINE_LIMIT`](super::lines::LINE_LIMIT)), read as it streams.
//!
//! A `tools/call` result is reduced, in bounded memory, to what MCPI-8 keeps of it: the text items joined with
//! `\n` (a non-text item as `[<type> content omitted]`), or the structured content when there is no text, each
//! through the EXEC-12 head/tail buffer, plus `isError` and the request id. The message handed on is a small
//! result holding that already-capped text, marked so the content builder does not cap it twice. Any other
//! oversized message with an id gets an error response, so its request fails at once instead of timing out.

use crate::exec::{HeadTail, into_text};

/// The `_meta` key marking text this module already capped. Random per process, so a server cannot forge it and
/// have a reply over the cap passed on uncapped.
pub(crate) fn capped_meta() -> &'static str {
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        // RandomState is seeded from the operating system's randomness.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        format!("fisk-ai/capped-{:016x}", h.finish())
    })
}
/// Longest id, key or content type kept.
const SMALL: usize = 128;
/// Containers tracked; deeper ones are only counted (nothing MCPI-8 keeps is that deep), so memory stays bounded
/// whatever the nesting.
const MAX_DEPTH: usize = 16;

/// Where in the message the scanner is, as far as MCPI-8 cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// `id` at the top level.
    Id,
    /// `result.isError`.
    IsError,
    /// `result.content[i].type`.
    ItemType,
    /// `result.content[i].text`.
    ItemText,
    /// `result.structuredContent` (or anything inside it).
    Structured,
    /// `result.content[i]` itself (an object whose end completes the item).
    Item,
    /// `method` at the top level: the message is a request or notification, not a response.
    Method,
    /// Somewhere else.
    Other,
}

#[derive(Debug)]
enum Frame {
    /// An object; `key` is the member being read, once its name is known.
    Object { key: Option<Vec<u8>>, place: Place },
    /// An array.
    Array { place: Place },
}

/// The streaming reducer.
pub(crate) struct Oversize {
    stack: Vec<Frame>,
    /// Containers open beyond [`MAX_DEPTH`].
    deeper: u64,
    has_method: bool,
    /// Inside a string: `Some(escape state)`.
    string: Option<Escape>,
    /// The string being read is a key.
    reading_key: bool,
    key_buf: Vec<u8>,
    /// A number, literal or small string being read at a place we keep.
    small: Vec<u8>,
    id: Option<Vec<u8>>,
    is_error: bool,
    item_type: Vec<u8>,
    text: HeadTail,
    text_items: usize,
    items: usize,
    structured: HeadTail,
    has_structured: bool,
    total: u64,
}

#[derive(Debug, Clone, Copy)]
enum Escape {
    None,
    Backslash,
    Unicode { digits: u8, value: u32 },
}

impl Oversize {
    pub(crate) fn new() -> Self {
        Oversize {
            stack: Vec::new(),
            deeper: 0,
            has_method: false,
            string: None,
            reading_key: false,
            key_buf: Vec::new(),
            small: Vec::new(),
            id: None,
            is_error: false,
            item_type: Vec::new(),
            text: HeadTail::new(),
            text_items: 0,
            items: 0,
            structured: HeadTail::new(),
            has_structured: false,
            total: 0,
        }
    }

    /// The place of a value starting now, from the enclosing frames. Frames inside the structured content carry
    /// that place, so only the innermost is looked at for it.
    fn value_place(&self) -> Place {
        let key = |i: usize| match self.stack.get(i) {
            Some(Frame::Object { key, .. }) => key.as_deref(),
            _ => None,
        };
        if self.in_structured_frame() {
            return Place::Structured;
        }
        if self.deeper > 0 {
            return Place::Other;
        }
        let in_content = || key(0) == Some(b"result") && key(1) == Some(b"content");
        match self.stack.len() {
            1 if key(0) == Some(b"id") => Place::Id,
            1 if key(0) == Some(b"method") => Place::Method,
            2 if key(0) == Some(b"result") => match key(1) {
                Some(b"isError") => Place::IsError,
                Some(b"structuredContent") => Place::Structured,
                _ => Place::Other,
            },
            3 if in_content() && matches!(self.stack[2], Frame::Array { .. }) => Place::Item,
            4 if in_content() && matches!(self.stack[2], Frame::Array { .. }) => match key(3) {
                Some(b"type") => Place::ItemType,
                Some(b"text") => Place::ItemText,
                _ => Place::Other,
            },
            _ => Place::Other,
        }
    }

    fn in_structured_frame(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Object { place: Place::Structured, .. } | Frame::Array { place: Place::Structured })
        )
    }

    /// Read the next bytes of the message.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        while let Some(&first) = bytes.first() {
            if let Some(Escape::None) = self.string {
                // The common case, a long run of plain string bytes, in one step.
                let run = memchr::memchr2(b'"', b'\\', bytes).unwrap_or(bytes.len());
                if run > 0 {
                    self.string_run(&bytes[..run]);
                    bytes = &bytes[run..];
                    continue;
                }
            }
            self.byte(first);
            bytes = &bytes[1..];
        }
    }

    fn string_run(&mut self, run: &[u8]) {
        let place = if self.reading_key { Place::Other } else { self.value_place() };
        if self.in_structured_frame() || place == Place::Structured {
            self.structured.push(run);
        }
        if place == Place::Id {
            keep(&mut self.small, run);
        }
        self.string_content(place, run);
    }

    fn byte(&mut self, b: u8) {
        if let Some(esc) = self.string {
            let place = if self.reading_key { Place::Other } else { self.value_place() };
            if self.in_structured_frame() || place == Place::Structured {
                self.structured.push(&[b]);
            }
            // An id is kept as written, escapes and all, so it is answered with exactly the same id.
            if place == Place::Id && !(matches!(esc, Escape::None) && b == b'"') {
                keep(&mut self.small, &[b]);
            }
            self.string_byte(place, esc, b);
            return;
        }
        let place = self.value_place();
        match b {
            b',' | b'}' | b']' | b':' if self.in_structured_frame() => self.structured.push(&[b]),
            b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if place == Place::Structured => {
                self.has_structured = true;
                self.structured.push(&[b]);
            }
            _ if place == Place::Method => self.has_method = true,
            _ => {}
        }
        match b {
            b'"' => {
                self.flush_small();
                self.reading_key =
                    self.deeper == 0 && matches!(self.stack.last(), Some(Frame::Object { key: None, .. }));
                self.key_buf.clear();
                self.string = Some(Escape::None);
                if !self.reading_key && place == Place::ItemText {
                    self.start_text();
                }
            }
            b'{' | b'[' if self.deeper > 0 || self.stack.len() >= MAX_DEPTH => {
                // Too deep to matter; inside the structured content its bytes are still kept (bounded).
                self.deeper += 1;
            }
            b'{' => {
                self.stack.push(Frame::Object { key: None, place });
                if place == Place::Item {
                    self.item_type.clear();
                }
            }
            b'[' => self.stack.push(Frame::Array { place }),
            b'}' | b']' if self.deeper > 0 => self.deeper -= 1,
            b'}' | b']' => {
                self.flush_small();
                if let Some(Frame::Object { place: Place::Item, .. }) = self.stack.pop() {
                    self.end_item();
                }
                self.after_value();
            }
            b',' => {
                self.flush_small();
                self.after_value();
            }
            b':' | b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => {
                if self.small.len() < SMALL {
                    self.small.push(b);
                }
            }
        }
    }

    /// A value ended: the enclosing object expects its next key.
    fn after_value(&mut self) {
        if self.deeper > 0 {
            return;
        }
        if let Some(Frame::Object { key, .. }) = self.stack.last_mut()
            && key.is_some()
        {
            *key = None;
        }
    }

    /// A number or literal ended.
    fn flush_small(&mut self) {
        if self.small.is_empty() {
            return;
        }
        match self.value_place() {
            Place::Id => self.id = Some(std::mem::take(&mut self.small)),
            Place::Method => self.has_method = true,
            Place::IsError => self.is_error = self.small == b"true",
            _ => {}
        }
        self.small.clear();
    }

    fn string_byte(&mut self, place: Place, esc: Escape, b: u8) {
        let mut out = [0u8; 4];
        let decoded: &[u8] = match (esc, b) {
            (Escape::None, b'"') => {
                self.end_string(place);
                return;
            }
            (Escape::None, b'\\') => {
                self.string = Some(Escape::Backslash);
                return;
            }
            (Escape::None, _) => std::slice::from_ref(&b),
            (Escape::Backslash, b'u') => {
                self.string = Some(Escape::Unicode { digits: 0, value: 0 });
                return;
            }
            (Escape::Backslash, _) => {
                self.string = Some(Escape::None);
                let c = match b {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'b' => 8,
                    b'f' => 12,
                    other => other,
                };
                out[0] = c;
                &out[..1]
            }
            (Escape::Unicode { digits, value }, _) => {
                let value = (value << 4) | char::from(b).to_digit(16).unwrap_or(0);
                if digits < 3 {
                    self.string = Some(Escape::Unicode { digits: digits + 1, value });
                    return;
                }
                self.string = Some(Escape::None);
                // Surrogate halves are not joined here: each becomes U+FFFD, like any invalid UTF-8.
                char::from_u32(value).unwrap_or('\u{fffd}').encode_utf8(&mut out).as_bytes()
            }
        };
        self.string_content(place, decoded);
    }

    /// Decoded string bytes (an id is kept raw, in [`string_run`](Self::string_run) and `string_byte`).
    fn string_content(&mut self, place: Place, bytes: &[u8]) {
        if self.reading_key {
            keep(&mut self.key_buf, bytes);
            return;
        }
        match place {
            Place::ItemText => self.text.push(bytes),
            Place::ItemType => keep(&mut self.small, bytes),
            _ => {}
        }
    }

    fn end_string(&mut self, place: Place) {
        self.string = None;
        if self.reading_key {
            self.reading_key = false;
            if let Some(Frame::Object { key, .. }) = self.stack.last_mut() {
                *key = Some(std::mem::take(&mut self.key_buf));
            }
            return;
        }
        match place {
            Place::ItemType => self.item_type = std::mem::take(&mut self.small),
            Place::Id => {
                let mut id = b"\"".to_vec();
                id.extend_from_slice(&std::mem::take(&mut self.small));
                id.push(b'"');
                self.id = Some(id);
            }
            _ => {}
        }
        self.small.clear();
    }

    /// A text item's text begins: separate it from the previous item.
    fn start_text(&mut self) {
        if self.items > 0 {
            self.text.push(b"\n");
        }
        self.items += 1;
        self.text_items += 1;
    }

    /// A content item ended; a non-text one gets its placeholder.
    fn end_item(&mut self) {
        if self.item_type == b"text" {
            return;
        }
        if self.items > 0 {
            self.text.push(b"\n");
        }
        self.items += 1;
        let kind = String::from_utf8_lossy(&self.item_type).into_owned();
        self.text.push(format!("[{} content omitted]", if kind.is_empty() { "unknown" } else { &kind }).as_bytes());
    }

    /// The message to hand on, as one JSON line.
    pub(crate) fn finish(self) -> String {
        let id = self.id.as_deref().and_then(|i| serde_json::from_slice::<serde_json::Value>(i).ok());
        // A request or notification from the server is not answered here: its id is not one of ours.
        let Some(id) = id.filter(|_| !self.has_method) else {
            // No request to answer: a notification the protocol layer would have ignored anyway.
            return r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":"oversized message dropped"}}"#.to_owned();
        };
        if self.items == 0 && !self.has_structured() {
            let message = format!(
                "the server's reply of {} bytes exceeds the {} MiB limit and holds no tool result",
                self.total,
                super::lines::LINE_LIMIT >> 20
            );
            let error = serde_json::json!({"code": -32603, "message": message});
            return serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string();
        }
        let use_structured = self.text_items == 0 && self.has_structured();
        let (bytes, _) = if use_structured { self.structured.finish() } else { self.text.finish() };
        let text = into_text(bytes);
        let mut meta = serde_json::Map::new();
        meta.insert(capped_meta().to_owned(), serde_json::Value::Bool(true));
        let item = serde_json::json!({"type": "text", "text": text, "_meta": meta});
        let result = serde_json::json!({"content": [item], "isError": self.is_error});
        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
    }

    fn has_structured(&self) -> bool {
        self.has_structured
    }
}

/// Append at most what fits in [`SMALL`].
fn keep(buf: &mut Vec<u8>, bytes: &[u8]) {
    let room = SMALL.saturating_sub(buf.len());
    buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use super::Oversize;
    use rmcp::model::CallToolResult;
    use serde_json::{Value, json};

    /// What the streaming reducer hands on for `message`, fed in chunks of `chunk` bytes.
    fn reduced(message: &Value, chunk: usize) -> Value {
        let text = message.to_string();
        let mut o = Oversize::new();
        for part in text.as_bytes().chunks(chunk) {
            o.feed(part);
        }
        serde_json::from_str(&o.finish()).unwrap()
    }

    /// The reducer agrees with the content builder on whole results (MCPI-8), whatever the chunking.
    #[test]
    fn the_streamed_reduction_matches_the_content_builder() {
        let results = [
            json!({"content": [{"type": "text", "text": "a\"b\\c\n\u{e9}\u{1F600}"}, {"type": "image", "data": "aGk=", "mimeType": "image/png"}, {"text": "last", "type": "text"}]}),
            json!({"isError": true, "content": [{"type": "text", "text": "boom"}]}),
            json!({"structuredContent": {"z": [1, 2.50, {"k": "v w"}], "a": null}, "content": []}),
            json!({"content": [{"type": "text", "text": "x".repeat(70000)}]}),
        ];
        for (i, result) in results.into_iter().enumerate() {
            let parsed: CallToolResult = serde_json::from_value(result.clone()).unwrap();
            let want = super::super::content::text(&parsed);
            for chunk in [1, 7, 4096] {
                let message = json!({"jsonrpc": "2.0", "id": 7, "result": result});
                let got = reduced(&message, chunk);
                assert_eq!(got["id"], 7, "case {i}");
                let got_result: CallToolResult = serde_json::from_value(got["result"].clone()).unwrap();
                assert_eq!(got_result.is_error, Some(parsed.is_error == Some(true)), "case {i}");
                if parsed.structured_content.is_some() {
                    // Raw JSON as the server wrote it (whitespace dropped), not re-serialized.
                    assert_eq!(super::super::content::text(&got_result), result["structuredContent"].to_string());
                } else {
                    assert_eq!(super::super::content::text(&got_result), want, "case {i}, chunk {chunk}");
                }
            }
        }
    }

    #[test]
    fn other_oversized_messages_get_an_error_for_their_request() {
        let message = json!({"jsonrpc": "2.0", "id": "req-1", "result": {"tools": [{"name": "x".repeat(100)}]}});
        let got = reduced(&message, 13);
        assert_eq!(got["id"], "req-1");
        assert!(got["error"]["message"].as_str().unwrap().contains("exceeds"));
        let note = reduced(&json!({"jsonrpc": "2.0", "method": "notifications/progress"}), 5);
        assert!(note.get("id").is_none());
        // A server request carries an id of its own numbering: never answered as if it were ours.
        let request = reduced(&json!({"id": 3, "method": "sampling/createMessage", "params": {"x": "y"}}), 4);
        assert!(request.get("id").is_none(), "{request}");
        // An id with escapes comes back exactly.
        let escaped = reduced(&json!({"jsonrpc": "2.0", "id": "a\"b\\c", "result": {"content": []}}), 3);
        assert_eq!(escaped["id"], "a\"b\\c");
    }

    /// Memory stays bounded whatever the nesting or key sizes (no frame per level past the cap).
    #[test]
    fn deep_nesting_and_huge_keys_stay_bounded() {
        let mut o = Oversize::new();
        o.feed(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"t\"}],\"x\":");
        for _ in 0..1_000_000 {
            o.feed(b"[");
        }
        assert!(o.stack.len() <= super::MAX_DEPTH);
        for _ in 0..1_000_000 {
            o.feed(b"]");
        }
        let key = vec![b'k'; 1 << 20];
        o.feed(b",\"");
        o.feed(&key);
        o.feed(b"\":1}}");
        assert!(o.key_buf.capacity() <= 1 << 16 && o.stack.is_empty(), "{}", o.stack.len());
        let got: Value = serde_json::from_str(&o.finish()).unwrap();
        assert_eq!((got["id"].as_u64(), got["result"]["content"][0]["text"].as_str()), (Some(9), Some("t")));
    }
}
