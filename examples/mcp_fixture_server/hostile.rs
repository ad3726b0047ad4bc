//! The fixture's hostile modes: what a server can send that rmcp's own model cannot express (a schema that is not
//! an object, nesting deeper than any parser allows, text that is not JSON), huge listing pages, and text carrying
//! terminal escapes and invisible characters. Later imports (MCP or others) inherit them by starting the fixture
//! with the flag.
//!
//! rmcp serializes only what its model holds, so the fixture writes a placeholder, `{"@@raw":"NAME"}`, where the
//! hostile text goes, and a relay between rmcp and the client replaces it as each message leaves: line by line
//! over stdio ([`relay`]), chunk by chunk over HTTP ([`relay_body`]).

use rmcp::model::Tool;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::Arc;

/// How deep the `deep` placeholder nests: far past serde_json's 128 levels.
pub const DEPTH: usize = 10_000;

const OPEN: &str = "{\"@@raw\":\"";

/// The placeholder the relay replaces with the raw text named `name` ([`raw_text`]).
pub fn raw(name: &str) -> Value {
    json!({"@@raw": name})
}

/// The raw text of each placeholder.
fn raw_text(name: &str) -> String {
    match name {
        "string" => "\"string\"".to_owned(),
        "five" => "5".to_owned(),
        "pair" => "[1,2]".to_owned(),
        "deep" => format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH)),
        // Not JSON at all: the whole message that holds it cannot be parsed.
        "garbage" => "{\"unclosed\": [1, 2".to_owned(),
        other => format!("\"unknown placeholder {other}\""),
    }
}

/// `text` with every placeholder replaced.
pub fn substitute(text: &str) -> Cow<'_, str> {
    if !text.contains(OPEN) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        let Some(end) = after.find("\"}") else {
            out.push_str(&rest[at..]);
            return Cow::Owned(out);
        };
        out.push_str(&raw_text(&after[..end]));
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Copy rmcp's stdio output (`from`) to stdout line by line, placeholders replaced.
pub async fn relay(from: impl tokio::io::AsyncRead + Unpin) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut lines = tokio::io::BufReader::new(from).lines();
    let mut out = tokio::io::stdout();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = substitute(&line);
        if out.write_all(line.as_bytes()).await.is_err() || out.write_all(b"\n").await.is_err() {
            return;
        }
        if out.flush().await.is_err() {
            return;
        }
    }
}

/// An HTTP response with placeholders replaced in its body (rmcp writes each SSE event, and each JSON body, as
/// one chunk).
pub async fn relay_body(response: axum::response::Response) -> axum::response::Response {
    use futures::StreamExt;
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    let replaced = body.into_data_stream().map(|chunk| {
        chunk.map(|bytes| match std::str::from_utf8(&bytes).map(substitute) {
            Ok(Cow::Owned(text)) => bytes::Bytes::from(text),
            _ => bytes,
        })
    });
    axum::response::Response::from_parts(parts, axum::body::Body::from_stream(replaced))
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let schema = match schema {
        Value::Object(map) => map,
        other => [("@@bad".to_owned(), other)].into_iter().collect(),
    };
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
}

/// `--bad-schemas`: one tool per way an input schema can be unusable (MCPI-6), each to be skipped on its own.
pub fn bad_schema_tools() -> Vec<Tool> {
    vec![
        tool("schema_string", "Its schema is the string \"string\"", raw("string")),
        tool("schema_number", "Its schema is the number 5", raw("five")),
        tool("schema_array", "Its schema is the array [1,2]", raw("pair")),
        tool("schema_typed_string", "Its schema has type string", json!({"type": "string"})),
        tool(
            "schema_deep",
            "Its schema nests 10,000 levels",
            json!({"type": "object", "properties": {"x": raw("deep")}}),
        ),
    ]
}

/// `--garbage-list`: a tool whose listing cannot be parsed at all, so neither can the page holding it.
pub fn garbage_tool() -> Tool {
    tool("garbage", "Its listing is not JSON", raw("garbage"))
}

/// `--huge-pages BYTES`: one listing page from `start`, ten tools whose descriptions add up to `bytes`.
pub fn huge_page(start: usize, bytes: usize) -> Vec<Tool> {
    let each = bytes / 10;
    (0..10).map(|i| tool(&format!("huge{start}_{i}"), &"d".repeat(each.max(1)), json!({"type": "object"}))).collect()
}

/// Prose carrying an OSC 8 hyperlink, a CSI clear screen, an 8-bit CSI, a carriage return, a right-to-left
/// override and a zero-width space.
pub const DIRTY: &str =
    "Lists\u{1b}]8;;https://evil.example\u{7} files\u{1b}]8;;\u{7}\u{1b}[2J\u{9b}31m\rnow\u{202e}txt\u{200b}";

/// [`DIRTY`] as the import must hand it to the model (MCPI-15).
pub const CLEANED: &str = "Lists filesnow\\u{202e}txt\\u{200b}";

/// `--hostile`: a tool whose schema prose is dirty at every depth; its enum value (compared by the server) is not.
pub fn dirty_schema_tool() -> Tool {
    let schema = json!({
        "type": "object",
        "title": DIRTY,
        "description": DIRTY,
        "properties": {
            "path": {"type": "string", "description": DIRTY, "default": DIRTY, "examples": [DIRTY]},
            "mode": {"type": "string", "enum": ["a\u{200b}b"], "description": DIRTY},
            "nested": {"type": "object", "properties": {"inner": {"type": "string", "description": DIRTY}}},
        },
    });
    tool("dirty_schema", DIRTY, schema)
}

/// `--hostile`: the server's instructions, dirty too.
pub const DIRTY_INSTRUCTIONS: &str = "Use me\u{1b}]0;pwned\u{7}\u{202e} always";
