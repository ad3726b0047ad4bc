//! The Chat Completions body: request rendering and response decoding, shared by the streaming path.
//!
//! Requests are written by hand into one buffer, as for Anthropic: the tools array is rendered once per
//! [`ToolPlan`] and spliced in as bytes, tool arguments are copied verbatim, and the key order is fixed, so the same
//! conversation always yields the same bytes and every turn shares the tools + system prefix that OpenAI's
//! automatic prompt cache keys on.

use crate::llm::Usage;
use crate::llm::schema::input_schema;
use crate::llm::{Block, Message, ProviderError, ProviderErrorKind, Request, Response, Role, StopReason, ToolPlan};
use crate::tool::{ToolInput, ToolKind};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;

/// Prefixed to the content of an error tool result: Chat Completions has no error flag on a `tool` message, and
/// the model must still be able to tell a failure from output.
pub(crate) const ERROR_RESULT_PREFIX: &str = "[tool error] ";

/// Whether `model` is a reasoning model, which takes `max_completion_tokens` (it refuses `max_tokens`) and
/// `reasoning_effort`: the o-series (`o1`, `o3`, `o4-mini`, …) and the GPT-5 family, also behind a router prefix
/// such as `openai/`.
pub(crate) fn is_reasoning_model(model: &str) -> bool {
    let id = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    let o_series = id.strip_prefix('o').is_some_and(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && matches!(rest.as_bytes().get(digits), None | Some(b'-'))
    });
    o_series || id.starts_with("gpt-5")
}

/// Render the tools array of `plan`: every tool a `function` tool with its normalized schema (PROV-13). Nothing is
/// deferred: Chat Completions has no server-side tool search, so the plan's deferral flags (never set for a
/// provider without it, SEARCH-2) are ignored. Empty when there are no tools.
pub(crate) fn render_tools(plan: &ToolPlan) -> Vec<u8> {
    if plan.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(plan.len() * 512 + 2);
    out.push(b'[');
    for (i, (tool, _deferred)) in plan.iter().enumerate() {
        let spec = tool.spec();
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"type":"function","function":{"name":"#);
        write_json(&mut out, spec.name());
        if !spec.description().is_empty() {
            out.extend_from_slice(br#","description":"#);
            write_json(&mut out, spec.description());
        }
        out.extend_from_slice(br#","parameters":"#);
        write_json(&mut out, &input_schema(spec.input_schema(), spec.kind() != ToolKind::Imported));
        out.extend_from_slice(b"}}");
    }
    out.push(b']');
    out
}

/// Render a whole request body. `tools` is the plan's cached rendering ([`render_tools`]).
///
/// Key order is fixed: `model`, the output cap, `reasoning_effort`, `tools`, `response_format` (with an output
/// schema, OUT-5), `stream`, `stream_options`, then `messages` opening with the system message. Everything up to
/// the end of the system message depends only on the run's settings, so it is byte-identical on every turn.
pub(crate) fn render_request(req: &Request<'_>, tools: &[u8], stream: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(estimate(req, tools.len()));
    let reasoning = is_reasoning_model(req.model);
    out.extend_from_slice(br#"{"model":"#);
    write_json(&mut out, req.model);
    if let Some(cap) = req.max_output_tokens.filter(|n| *n > 0) {
        // Reasoning models refuse `max_tokens`; older local servers know only `max_tokens`.
        out.extend_from_slice(if reasoning { br#","max_completion_tokens":"# } else { br#","max_tokens":"# });
        write_json(&mut out, &cap);
    }
    if req.thinking && reasoning {
        out.extend_from_slice(br#","reasoning_effort":"medium""#);
    }
    if !tools.is_empty() {
        out.extend_from_slice(br#","tools":"#);
        out.extend_from_slice(tools);
    }
    if let Some(schema) = req.output() {
        // OUT-5: the native structured output; not strict, since strict mode accepts only a subset of JSON Schema
        // (every property required, no additional ones) and the answer is validated here anyway.
        out.extend_from_slice(br#","response_format":{"type":"json_schema","json_schema":{"name":"#);
        write_json(&mut out, crate::llm::FINAL_ANSWER_TOOL);
        out.extend_from_slice(br#","schema":"#);
        out.extend_from_slice(schema.json().as_bytes());
        out.extend_from_slice(br#","strict":false}}"#);
    }
    if stream {
        // Without include_usage a stream carries no token counts at all.
        out.extend_from_slice(br#","stream":true,"stream_options":{"include_usage":true}"#);
    }
    out.extend_from_slice(br#","messages":["#);
    let mut first = write_system(&mut out, req.system);
    for message in req.messages {
        match message.role {
            Role::User => write_user(&mut out, message, &mut first),
            Role::Assistant => write_assistant(&mut out, message, &mut first),
        }
    }
    out.extend_from_slice(b"]}");
    out
}

fn comma(out: &mut Vec<u8>, first: &mut bool) {
    if !*first {
        out.push(b',');
    }
    *first = false;
}

/// The system message (PROV-8): one segment as a string, several as one text part each, in order; empty segments
/// are skipped. Returns whether `messages` is still empty.
fn write_system(out: &mut Vec<u8>, system: &[String]) -> bool {
    let segments: Vec<&String> = system.iter().filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [] => return true,
        [one] => {
            out.extend_from_slice(br#"{"role":"system","content":"#);
            write_json(out, one);
        }
        many => {
            out.extend_from_slice(br#"{"role":"system","content":["#);
            for (i, text) in many.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"type":"text","text":"#);
                write_json(out, text);
                out.push(b'}');
            }
            out.push(b']');
        }
    }
    out.push(b'}');
    false
}

/// A user turn: its tool results first, one `tool` message each (they must directly follow the assistant message
/// that made the calls), then its text as one `user` message. Thinking and provider blocks have no form here.
fn write_user(out: &mut Vec<u8>, message: &Message, first: &mut bool) {
    for block in &message.content {
        if let Block::ToolResult { tool_use_id, content, is_error } = block {
            comma(out, first);
            out.extend_from_slice(br#"{"role":"tool","tool_call_id":"#);
            write_json(out, tool_use_id);
            out.extend_from_slice(br#","content":"#);
            if *is_error {
                write_json(out, &format!("{ERROR_RESULT_PREFIX}{content}"));
            } else {
                write_json(out, content);
            }
            out.push(b'}');
        }
    }
    let text = message.text();
    if !text.is_empty() {
        comma(out, first);
        out.extend_from_slice(br#"{"role":"user","content":"#);
        write_json(out, &text);
        out.push(b'}');
    }
}

/// An assistant turn: its text as `content` (`null` beside tool calls, as the API sends it) and its tool calls with
/// the model's own argument text. Thinking is not echoed: Chat Completions has no field for it, and servers that
/// return `reasoning_content` ask clients not to send it back.
fn write_assistant(out: &mut Vec<u8>, message: &Message, first: &mut bool) {
    let text = message.text();
    let calls: Vec<_> = message.tool_uses().collect();
    comma(out, first);
    out.extend_from_slice(br#"{"role":"assistant","content":"#);
    if text.is_empty() && !calls.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        write_json(out, &text);
    }
    if !calls.is_empty() {
        out.extend_from_slice(br#","tool_calls":["#);
        for (i, (id, name, input)) in calls.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(br#"{"id":"#);
            write_json(out, id);
            out.extend_from_slice(br#","type":"function","function":{"name":"#);
            write_json(out, name);
            out.extend_from_slice(br#","arguments":"#);
            write_json(out, if input.is_null() { "{}" } else { input.as_str() });
            out.extend_from_slice(b"}}");
        }
        out.push(b']');
    }
    out.push(b'}');
}

/// An upper estimate of the body size, so the buffer is allocated once.
fn estimate(req: &Request<'_>, tools: usize) -> usize {
    let system: usize = req.system.iter().map(|s| s.len() + 32).sum();
    let messages: usize = req
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            Block::Text { text } => text.len() + 48,
            Block::ToolUse { id, name, input } => id.len() + name.len() + input.as_str().len() * 5 / 4 + 80,
            Block::ToolResult { tool_use_id, content, .. } => tool_use_id.len() + content.len() + 80,
            _ => 0,
        })
        .sum();
    let text = system + messages + req.model.len();
    256 + tools + req.output().map_or(0, |o| o.json().len() + 128) + text + text / 8
}

/// Write `value` as JSON. Writing into a `Vec` cannot fail, and every value here serializes.
pub(crate) fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(out, value);
}

// ---------------------------------------------------------------------------------------------------------------
// Responses

/// Token counts as the API reports them; any field may be absent or `null`, and local servers often send none.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    /// Neutral counts: `prompt_tokens` includes the cached ones, which are counted apart (PROV-2).
    pub(crate) fn neutral(&self) -> Usage {
        let cached = self.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0);
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0).saturating_sub(cached),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached,
            cache_creation_tokens: 0,
        }
    }
}

/// One tool call as received, before ids and arguments are checked.
#[derive(Debug, Clone, Default)]
pub(crate) struct Call {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// A decoded reply, before the usage is settled: `usage` is `None` when the server reported none.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    pub(crate) reasoning: String,
    pub(crate) text: String,
    pub(crate) refusal: String,
    pub(crate) calls: Vec<Call>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) usage: Option<Usage>,
    /// The model that answered and the completion's id, as the server reports them.
    pub(crate) model: Option<String>,
    pub(crate) id: Option<String>,
}

impl Reply {
    /// The neutral response. `turn` (the request's message count) seeds the ids of calls that came without one;
    /// `estimate` is the usage to count when the server reported none.
    pub(crate) fn into_response(mut self, turn: usize, estimate: impl FnOnce(&Reply) -> Usage) -> Response {
        let usage = self.usage.unwrap_or_else(|| estimate(&self));
        let (model, id) = (self.model.take(), self.id.take());
        let stop = stop_reason(self.finish_reason.as_deref(), !self.calls.is_empty(), !self.refusal.is_empty());
        let mut content = Vec::with_capacity(self.calls.len() + 2);
        if !self.reasoning.is_empty() {
            // Chat Completions reasoning is unsigned; the empty signature says so.
            content.push(Block::Thinking { text: self.reasoning, signature: String::new() });
        }
        if !self.text.is_empty() {
            content.push(Block::text(self.text));
        }
        if !self.refusal.is_empty() {
            content.push(Block::text(self.refusal));
        }
        let mut seen = HashSet::new();
        for (i, call) in self.calls.into_iter().enumerate() {
            // Missing, empty or repeated ids would leave results unmatched: give those a stable id of their own.
            let id = if call.id.trim().is_empty() || seen.contains(&call.id) {
                format!("call_fisk_{turn}_{i}")
            } else {
                call.id
            };
            seen.insert(id.clone());
            content.push(Block::ToolUse { id, name: call.name, input: tool_input(&call.arguments) });
        }
        Response::new(content, stop, usage).with_origin(model, id)
    }
}

/// A call's input from its `arguments` text. Valid JSON is kept as written (an object, or anything else, which the
/// tool's input validation then refuses with an error result the model reads). Text that is not JSON at all becomes
/// a JSON string holding it, refused the same way, so a broken call never ends the run. Empty means no arguments.
pub(crate) fn tool_input(arguments: &str) -> ToolInput {
    ToolInput::from_json(arguments.to_owned()).unwrap_or_else(|_| ToolInput::from_value(&Value::from(arguments)))
}

/// The neutral stop reason of a `finish_reason`. `stop` (or none) with tool calls is a tool-use turn: some local
/// servers report `stop` after calling tools, and the calls must still run.
pub(crate) fn stop_reason(finish: Option<&str>, has_calls: bool, refused: bool) -> StopReason {
    match finish {
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some("content_filter" | "refusal") => StopReason::Refusal,
        _ if refused => StopReason::Refusal,
        Some("stop") | Some("") | None if has_calls => StopReason::ToolUse,
        Some("stop") | Some("") | None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: WireFunction,
}

#[derive(Deserialize, Default)]
pub(crate) struct WireFunction {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Option<Value>,
}

/// A message's `content` as text: a string as it is; an array of parts (Mistral's reasoning models, some proxies)
/// as its `text` parts joined. Anything else has no text.
pub(crate) fn content_text(content: Option<Value>) -> String {
    match content {
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str).is_none_or(|t| t == "text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// `arguments` as text: a string as it is, an object some servers send unencoded as its JSON.
pub(crate) fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

/// Decode a non-streaming body (a `chat.completion` object). A 200 whose body is an `error` object fails like the
/// error it reports.
pub(crate) fn decode_completion(body: &[u8]) -> Result<Reply, ProviderError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| decode_error(format!("response body: {e}")))?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        return Err(body_error(error));
    }
    let completion: Completion =
        serde_json::from_value(value).map_err(|e| decode_error(format!("response body: {e}")))?;
    let choice = completion
        .choices
        .into_iter()
        .min_by_key(|c| c.index.unwrap_or(0))
        .ok_or_else(|| decode_error("the reply has no choices".to_owned()))?;
    let message = choice.message;
    let calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .map(|c| Call {
            id: c.id.unwrap_or_default(),
            name: c.function.name.unwrap_or_default(),
            arguments: arguments_text(c.function.arguments),
        })
        .collect();
    Ok(Reply {
        reasoning: message.reasoning_content.or(message.reasoning).unwrap_or_default(),
        text: content_text(message.content),
        refusal: message.refusal.unwrap_or_default(),
        calls,
        finish_reason: choice.finish_reason,
        usage: completion.usage.map(|u| u.neutral()),
        model: completion.model,
        id: completion.id,
    })
}

pub(crate) fn decode_error(message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Decode, format!("openai: cannot decode the reply: {message}"))
}

/// The error an `error` object in a successful response (or in a stream) reports. A numeric `code` that is an
/// HTTP status (proxies such as OpenRouter put the upstream status there) is retried like that status; an invalid
/// request is not retried; anything else is retried like a broken stream.
pub(crate) fn body_error(error: &Value) -> ProviderError {
    let text = |key: &str| error.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let message = text("message").or_else(|| error.as_str()).unwrap_or("no message");
    let kind = text("type").or_else(|| text("code"));
    let mut msg = "openai: the server reported an error".to_owned();
    if let Some(kind) = kind {
        msg.push_str(&format!(": {}", clean(kind)));
    }
    msg.push_str(&format!(": {}", clean(message)));
    let code = error.get("code").and_then(Value::as_u64).filter(|c| (400..600).contains(c));
    match code {
        Some(code) => ProviderError::status(code as u16, msg),
        None if kind.is_some_and(|k| k.contains("invalid_request")) => ProviderError::status(400, msg),
        None => ProviderError::new(ProviderErrorKind::Stream, msg),
    }
}

/// The message for an error status: the error object's type and message when the body has one, else a trimmed
/// excerpt of the body.
pub(crate) fn status_message(status: u16, request_id: Option<&str>, body: &[u8]) -> String {
    let mut msg = format!("openai: HTTP {status}");
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    match parsed.as_ref().and_then(|v| v.get("error")) {
        Some(error) => {
            let text = |key: &str| error.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
            if let Some(kind) = text("type").or_else(|| text("code")) {
                msg.push_str(&format!(": {}", clean(kind)));
            }
            if let Some(m) = text("message").or_else(|| error.as_str()) {
                msg.push_str(&format!(": {}", clean(m)));
            }
        }
        None => {
            let text = clean(&String::from_utf8_lossy(body));
            if !text.is_empty() {
                msg.push_str(&format!(": {text}"));
            }
        }
    }
    if let Some(id) = request_id {
        msg.push_str(&format!(" (request id {id})"));
    }
    msg
}

/// Server text for an error line: control characters blanked, at most 200 characters.
fn clean(text: &str) -> String {
    let text = text.trim();
    let mut out: String = text.chars().take(200).map(|c| if c.is_control() { ' ' } else { c }).collect();
    if text.chars().count() > 200 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_models_are_recognized_by_id() {
        for id in ["o1", "o3-mini", "o4-mini-2025-04-16", "gpt-5", "gpt-5-mini", "openai/o3", "O1-PREVIEW"] {
            assert!(is_reasoning_model(id), "{id}");
        }
        for id in ["gpt-4.1", "gpt-4o", "omni-moderation", "o", "llama3.1:8b", "qwen3:8b", "deepseek-r1"] {
            assert!(!is_reasoning_model(id), "{id}");
        }
    }

    #[test]
    fn arguments_keep_their_text_or_become_a_string_the_validation_refuses() {
        assert_eq!(tool_input(r#"{"n": 1.50}"#).as_str(), r#"{"n": 1.50}"#);
        assert_eq!(tool_input("").as_str(), "{}");
        assert_eq!(tool_input("[1]").as_str(), "[1]");
        assert_eq!(tool_input(r#"{"n": 1"#).as_str(), r#""{\"n\": 1""#);
    }
}
