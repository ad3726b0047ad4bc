//! The Messages API body: request rendering (PROV-8..13, SEARCH-7) and response decoding (PROV-14).
//!
//! Requests are written by hand into one buffer rather than through a serde model: the tools array is rendered once
//! per [`ToolPlan`] and spliced in as bytes, provider blocks and tool inputs are copied verbatim, and the key order is
//! fixed, so the same conversation always yields the same bytes and every turn shares the tools+system prefix.

use crate::llm::schema::input_schema;
use crate::llm::{Block, CacheMode, Message, ProviderError, ProviderErrorKind, Request, Response, Role, StopReason};
use crate::llm::{ToolPlan, Usage};
use crate::tool::{ToolInput, ToolKind};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The server-side search tool, appended last when something is deferred (PROV-12: the undated alias).
const SEARCH_TOOL: &[u8] = br#"{"type":"tool_search_tool_bm25","name":"tool_search_tool_bm25"}"#;

/// Default output cap without thinking (PROV-11).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;
/// Default output cap with thinking (PROV-11).
pub(crate) const DEFAULT_MAX_TOKENS_THINKING: u32 = 16384;
/// The smallest `budget_tokens` the API accepts for manual thinking.
pub(crate) const MIN_THINKING_BUDGET: u32 = 1024;

/// How a model takes the `thinking` field (wire doc §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThinkingShape {
    /// `{"type":"adaptive","display":"summarized"}`: Opus/Sonnet 4.6 and later, the 5 family, unknown new models.
    Adaptive,
    /// `{"type":"enabled","budget_tokens":N,"display":"summarized"}`: 4.5 and older, which reject adaptive.
    Budget,
}

/// The thinking shape `model` needs. Ids are read loosely (`claude-<family>-<major>[-<minor>][-<date>]`, the
/// legacy `claude-<major>-<minor>-<family>`, and prefixed platform ids such as `us.anthropic.claude-…`); anything
/// unrecognized is assumed new, hence adaptive.
pub(crate) fn thinking_shape(model: &str) -> ThinkingShape {
    let lower = model.to_ascii_lowercase();
    let Some(pos) = lower.rfind("claude-") else { return ThinkingShape::Adaptive };
    let mut parts = lower[pos + "claude-".len()..].split(['-', '.', '@', ':']);
    let number = |s: Option<&str>| s.filter(|s| (1..=2).contains(&s.len())).and_then(|s| s.parse::<u32>().ok());
    let first = parts.next();
    let (major, minor) = match number(first) {
        // Legacy naming: claude-3-7-sonnet, claude-3-haiku, claude-2.
        Some(major) => (major, number(parts.next()).unwrap_or(0)),
        None if first == Some("instant") => return ThinkingShape::Budget,
        None => match number(parts.next()) {
            Some(major) => (major, number(parts.next()).unwrap_or(0)),
            None => return ThinkingShape::Adaptive,
        },
    };
    if major < 4 || (major == 4 && minor < 6) { ThinkingShape::Budget } else { ThinkingShape::Adaptive }
}

/// `max_tokens` for a request (PROV-11).
pub(crate) fn max_tokens(req: &Request<'_>) -> u32 {
    match req.max_output_tokens {
        Some(n) if n > 0 => n,
        _ if req.thinking => DEFAULT_MAX_TOKENS_THINKING,
        _ => DEFAULT_MAX_TOKENS,
    }
}

/// `budget_tokens` for manual thinking: three quarters of the cap, at least the API minimum, below the cap when
/// the cap allows it at all.
pub(crate) fn thinking_budget(max_tokens: u32) -> u32 {
    let budget = (u64::from(max_tokens) * 3 / 4) as u32;
    budget.max(MIN_THINKING_BUDGET)
}

/// Render the tools array of `plan` (PROV-12, PROV-13, SEARCH-7): every tool a custom tool with an explicit
/// `defer_loading` and no `strict`, then the search tool when the plan asks for it. Empty when there is nothing.
pub(crate) fn render_tools(plan: &ToolPlan) -> Vec<u8> {
    if plan.is_empty() && !plan.search() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(plan.len() * 512 + SEARCH_TOOL.len() + 2);
    out.push(b'[');
    for (i, (tool, deferred)) in plan.iter().enumerate() {
        let spec = tool.spec();
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"type":"custom","name":"#);
        write_json(&mut out, spec.name());
        if !spec.description().is_empty() {
            out.extend_from_slice(br#","description":"#);
            write_json(&mut out, spec.description());
        }
        out.extend_from_slice(br#","input_schema":"#);
        write_json(&mut out, &input_schema(spec.input_schema(), spec.kind() != ToolKind::Imported));
        out.extend_from_slice(if deferred { br#","defer_loading":true}"# } else { br#","defer_loading":false}"# });
    }
    if plan.search() {
        if !plan.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(SEARCH_TOOL);
    }
    out.push(b']');
    out
}

/// The `cache_control` marker for `cache`, or `None` when caching is off (PROV-9).
fn cache_control(cache: CacheMode) -> Option<&'static [u8]> {
    match cache {
        CacheMode::Off => None,
        CacheMode::Default => Some(br#"{"type":"ephemeral"}"#),
        CacheMode::OneHour => Some(br#"{"type":"ephemeral","ttl":"1h"}"#),
    }
}

/// Render a whole request body. `tools` is the plan's cached rendering ([`render_tools`]).
///
/// Key order is fixed: `model`, `max_tokens`, `system`, `tools`, `tool_choice` (with an output schema and no
/// thinking, OUT-4), `cache_control`, `thinking`, `stream`, `messages`. Everything before `messages` depends only
/// on the run's settings, so it is byte-identical on every turn and the prompt cache's tools → system prefix never
/// moves.
pub(crate) fn render_request(req: &Request<'_>, tools: &[u8], stream: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(estimate(req, tools.len()));
    let cache = cache_control(req.cache);
    let max = max_tokens(req);

    out.extend_from_slice(br#"{"model":"#);
    write_json(&mut out, req.model);
    out.extend_from_slice(br#","max_tokens":"#);
    write_json(&mut out, &max);

    // PROV-8: one text block per segment, in order; empty segments are skipped (the API rejects empty text).
    let mut segments = req.system.iter().filter(|s| !s.is_empty()).peekable();
    if segments.peek().is_some() {
        out.extend_from_slice(br#","system":["#);
        let mut first = true;
        while let Some(text) = segments.next() {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(br#"{"type":"text","text":"#);
            write_json(&mut out, text);
            // PROV-9: the breakpoint on the last system block caches tools + system.
            if let (None, Some(cc)) = (segments.peek(), cache) {
                out.extend_from_slice(br#","cache_control":"#);
                out.extend_from_slice(cc);
            }
            out.push(b'}');
        }
        out.push(b']');
    }
    // OUT-4: the final tool last, then (thinking off; the API refuses it with thinking) a forced tool choice, so
    // the model ends through the final tool. Both depend only on the run's settings: the prefix stays stable.
    match req.output() {
        Some(schema) => {
            out.extend_from_slice(br#","tools":"#);
            super::final_answer::write_tools(&mut out, tools, super::final_answer::tool(schema));
            if !req.thinking {
                out.extend_from_slice(br#","tool_choice":{"type":"any"}"#);
            }
        }
        None if !tools.is_empty() => {
            out.extend_from_slice(br#","tools":"#);
            out.extend_from_slice(tools);
        }
        None => {}
    }
    if let Some(cc) = cache {
        // Automatic caching of the conversation tail: the second and last breakpoint we use (of 4 allowed).
        out.extend_from_slice(br#","cache_control":"#);
        out.extend_from_slice(cc);
    }
    if req.thinking {
        match thinking_shape(req.model) {
            ThinkingShape::Adaptive => {
                out.extend_from_slice(br#","thinking":{"type":"adaptive","display":"summarized"}"#)
            }
            ThinkingShape::Budget => {
                out.extend_from_slice(br#","thinking":{"type":"enabled","budget_tokens":"#);
                write_json(&mut out, &thinking_budget(max));
                out.extend_from_slice(br#","display":"summarized"}"#);
            }
        }
    }
    if stream {
        out.extend_from_slice(br#","stream":true"#);
    }
    out.extend_from_slice(br#","messages":["#);
    let mut first = true;
    for message in req.messages {
        if write_message(&mut out, message, first) {
            first = false;
        }
    }
    out.extend_from_slice(b"]}");
    out
}

/// Whether a block goes on the wire: empty text is refused by the API (a response may carry one, e.g. a stream cut
/// right after a block started), and server tool calls already have their result in the assistant turn.
fn sendable(block: &Block) -> bool {
    match block {
        Block::Text { text } => !text.is_empty(),
        Block::ToolResult { tool_use_id, .. } => !tool_use_id.starts_with("srvtoolu_"),
        _ => true,
    }
}

/// Write one message (with a leading comma unless `first`); returns false when nothing was sendable.
fn write_message(out: &mut Vec<u8>, message: &Message, first: bool) -> bool {
    let count = message.content.iter().filter(|b| sendable(b)).count();
    if count == 0 {
        return false;
    }
    if !first {
        out.push(b',');
    }
    out.extend_from_slice(match message.role {
        Role::User => br#"{"role":"user","content":"#,
        Role::Assistant => br#"{"role":"assistant","content":"#,
    });
    let mut blocks = message.content.iter().filter(|b| sendable(b));
    match (message.role, count, blocks.next()) {
        // A lone user text goes as a plain string, the form of the API's own examples.
        (Role::User, 1, Some(Block::Text { text })) => write_json(out, text),
        _ => {
            out.push(b'[');
            let mut n = 0;
            let mut put = |out: &mut Vec<u8>, b: &Block| {
                if n > 0 {
                    out.push(b',');
                }
                n += 1;
                write_block(out, b);
            };
            if message.role == Role::User {
                // Tool results must open the user message (wire doc §6.2); keep their order, then the rest.
                let on_wire = || message.content.iter().filter(|b| sendable(b));
                on_wire().filter(|b| matches!(b, Block::ToolResult { .. })).for_each(|b| put(out, b));
                on_wire().filter(|b| !matches!(b, Block::ToolResult { .. })).for_each(|b| put(out, b));
            } else {
                message.content.iter().filter(|b| sendable(b)).for_each(|b| put(out, b));
            }
            out.push(b']');
        }
    }
    out.push(b'}');
    true
}

fn write_block(out: &mut Vec<u8>, block: &Block) {
    match block {
        Block::Text { text } => {
            out.extend_from_slice(br#"{"type":"text","text":"#);
            write_json(out, text);
            out.push(b'}');
        }
        Block::Thinking { text, signature } => {
            out.extend_from_slice(br#"{"type":"thinking","thinking":"#);
            write_json(out, text);
            out.extend_from_slice(br#","signature":"#);
            write_json(out, signature);
            out.push(b'}');
        }
        Block::ToolUse { id, name, input } => {
            out.extend_from_slice(br#"{"type":"tool_use","id":"#);
            write_json(out, id);
            out.extend_from_slice(br#","name":"#);
            write_json(out, name);
            out.extend_from_slice(br#","input":"#);
            // The model's own bytes; `null` (EXEC-5 treats it as no arguments) would be refused as an input.
            out.extend_from_slice(if input.is_null() { b"{}" } else { input.as_str().as_bytes() });
            out.push(b'}');
        }
        Block::ToolResult { tool_use_id, content, is_error } => {
            out.extend_from_slice(br#"{"type":"tool_result","tool_use_id":"#);
            write_json(out, tool_use_id);
            if !content.is_empty() {
                out.extend_from_slice(br#","content":"#);
                write_json(out, content);
            }
            if *is_error {
                out.extend_from_slice(br#","is_error":true"#);
            }
            out.push(b'}');
        }
        Block::Provider { raw, .. } => out.extend_from_slice(raw.get().as_bytes()),
    }
}

/// An upper estimate of the body size, so the buffer is allocated once.
fn estimate(req: &Request<'_>, tools: usize) -> usize {
    let system: usize = req.system.iter().map(|s| s.len() + 64).sum();
    let messages: usize = req
        .messages
        .iter()
        .map(|m| {
            48 + m
                .content
                .iter()
                .map(|b| match b {
                    Block::Text { text } => text.len() + 32,
                    Block::Thinking { text, signature } => text.len() + signature.len() + 64,
                    Block::ToolUse { id, name, input } => id.len() + name.len() + input.as_str().len() + 64,
                    Block::ToolResult { tool_use_id, content, .. } => tool_use_id.len() + content.len() + 80,
                    Block::Provider { raw, .. } => raw.get().len() + 1,
                })
                .sum::<usize>()
        })
        .sum();
    let text = system + messages + req.model.len() + req.output().map_or(0, |o| o.json().len() + 512);
    // Escapes (newlines, quotes) grow text; 1/8 covers ordinary prose and code.
    256 + tools + text + text / 8
}

/// Write `value` as JSON. Writing into a `Vec` cannot fail, and every value here serializes.
fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}

// ---------------------------------------------------------------------------------------------------------------
// Responses

/// Token counts as the API reports them; every field may be absent or `null` (wire doc §7).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    pub(crate) fn neutral(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: self.cache_read_input_tokens.unwrap_or(0),
            cache_creation_tokens: self.cache_creation_input_tokens.unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(borrow)]
    content: Vec<&'a RawValue>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// A stop reason from its wire form; absent or `null` (never seen outside `message_start`) is kept as `null`.
pub(crate) fn stop_reason(s: Option<&str>) -> StopReason {
    StopReason::parse(s.unwrap_or("null"))
}

/// Decode a non-streaming response body (PROV-14).
pub(crate) fn decode_message(body: &[u8]) -> Result<Response, ProviderError> {
    let msg: WireMessage<'_> = serde_json::from_slice(body).map_err(|e| decode_error(format!("response body: {e}")))?;
    let content = msg
        .content
        .into_iter()
        .enumerate()
        .map(|(i, raw)| decode_block(raw).map_err(|e| decode_error(format!("content block {i}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let response =
        Response::new(content, stop_reason(msg.stop_reason.as_deref()), msg.usage.unwrap_or_default().neutral());
    Ok(response.with_origin(msg.model, msg.id))
}

pub(crate) fn decode_error(message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Decode, format!("anthropic: cannot decode the reply: {message}"))
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TextBlock {
    text: String,
}

#[derive(Deserialize)]
struct ThinkingBlock {
    #[serde(default)]
    thinking: String,
    #[serde(default)]
    signature: String,
}

#[derive(Deserialize)]
struct ToolUseBlock {
    id: String,
    name: String,
    #[serde(default)]
    input: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct ToolResultBlock<'a> {
    tool_use_id: String,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    is_error: Option<bool>,
}

/// One response block: text, thinking, tool use and single-text tool results become neutral blocks; anything
/// else is kept as its exact bytes (PROV-14, PROV-15).
pub(crate) fn decode_block(raw: &RawValue) -> Result<Block, String> {
    let json = raw.get();
    let head: Head<'_> = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let Some(kind) = head.kind else { return Err("a block without a type".to_owned()) };
    let block = match kind.as_ref() {
        "text" => {
            let b: TextBlock = serde_json::from_str(json).map_err(|e| e.to_string())?;
            Block::Text { text: b.text }
        }
        "thinking" => {
            let b: ThinkingBlock = serde_json::from_str(json).map_err(|e| e.to_string())?;
            Block::Thinking { text: b.thinking, signature: b.signature }
        }
        "tool_use" => {
            let b: ToolUseBlock = serde_json::from_str(json).map_err(|e| e.to_string())?;
            let input = b.input.map(ToolInput::from).unwrap_or_else(ToolInput::empty);
            Block::ToolUse { id: b.id, name: b.name, input }
        }
        "tool_result" => match single_text_result(json) {
            Some(block) => block,
            None => Block::Provider { kind: kind.into_owned(), raw: raw.to_owned() },
        },
        _ => Block::Provider { kind: kind.into_owned(), raw: raw.to_owned() },
    };
    Ok(block)
}

fn single_text_result(json: &str) -> Option<Block> {
    let b: ToolResultBlock<'_> = serde_json::from_str(json).ok()?;
    let content = match b.content {
        None => String::new(),
        Some(c) => match serde_json::from_str::<Value>(c.get()).ok()? {
            Value::String(s) => s,
            Value::Array(mut a) if a.len() == 1 => {
                let Value::Object(mut o) = a.pop()? else { return None };
                if o.get("type").and_then(Value::as_str) != Some("text") || o.len() != 2 {
                    return None;
                }
                match o.remove("text")? {
                    Value::String(s) => s,
                    _ => return None,
                }
            }
            _ => return None,
        },
    };
    Some(Block::ToolResult { tool_use_id: b.tool_use_id, content, is_error: b.is_error.unwrap_or(false) })
}

// ---------------------------------------------------------------------------------------------------------------
// Errors

#[derive(Deserialize, Default)]
pub(crate) struct ErrorDetail {
    #[serde(rename = "type", default)]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) message: Option<String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorDetail>,
    #[serde(default)]
    request_id: Option<String>,
}

/// The message of an HTTP error: status, `error.type`, `error.message` and the request id. A body that is not the
/// documented JSON (a proxy's HTML page, a 413 from the CDN) is quoted, shortened and cleaned instead.
pub(crate) fn status_message(status: u16, header_request_id: Option<&str>, body: &[u8]) -> String {
    let mut msg = format!("anthropic API error: HTTP {status}");
    let parsed: Option<ErrorBody> = serde_json::from_slice(body).ok();
    let mut request_id = header_request_id.map(str::to_owned);
    match parsed {
        Some(ErrorBody { error: Some(detail), request_id: body_id }) => {
            if let Some(kind) = detail.kind.filter(|k| !k.is_empty()) {
                msg.push(' ');
                msg.push_str(&kind);
            }
            if let Some(text) = detail.message.filter(|m| !m.is_empty()) {
                msg.push_str(": ");
                msg.push_str(&text);
            }
            request_id = request_id.or(body_id);
        }
        _ => {
            let text = snippet(body);
            if !text.is_empty() {
                msg.push_str(": ");
                msg.push_str(&text);
            }
        }
    }
    if let Some(id) = request_id.filter(|i| !i.is_empty()) {
        msg.push_str(" (request id ");
        msg.push_str(&id);
        msg.push(')');
    }
    msg
}

/// At most 200 characters of a body, control characters replaced, for an error message.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String =
        text.trim().chars().take(200).map(|c| if c.is_control() { ' ' } else { c }).collect::<String>();
    if text.trim().chars().count() > 200 {
        out.push('…');
    }
    out
}
