//! Accumulating a streamed reply (`"stream": true`, wire doc §13) into a complete message.
//!
//! Every block is kept as the JSON object its `content_block_start` carried, with deltas applied on top, so the
//! accumulation is exactly what a non-streaming call would have returned minus fields the start events omit. Tool
//! inputs are additionally kept as the model's own text, so numbers reach tools unchanged.

use super::wire::{ErrorDetail, WireUsage, decode_error, stop_reason};
use crate::llm::http::SseEvents;
use crate::llm::{Block, Delta, DeltaSink, ProviderError, ProviderErrorKind, Response, StopReason};
use crate::tool::ToolInput;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Content-block indexes may skip ahead only this far (the API sends them densely; this bounds a hostile one).
const MAX_INDEX_GAP: usize = 1024;

#[derive(Debug, Default)]
struct BlockAcc {
    obj: Map<String, Value>,
    partial: String,
    input: Option<Box<RawValue>>,
    bad_input: bool,
    stopped: bool,
}

impl BlockAcc {
    fn kind(&self) -> &str {
        self.obj.get("type").and_then(Value::as_str).unwrap_or("")
    }

    fn append(&mut self, field: &str, text: &str) {
        match self.obj.get_mut(field) {
            Some(Value::String(s)) => s.push_str(text),
            _ => {
                self.obj.insert(field.to_owned(), Value::from(text));
            }
        }
    }

    /// `content_block_stop`: parse the concatenated input once (no chunks means the start's input, else `{}`).
    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let calls_tool = self.kind().ends_with("tool_use");
        if self.partial.trim().is_empty() {
            if calls_tool && !matches!(self.obj.get("input"), Some(Value::Object(_))) {
                self.obj.insert("input".to_owned(), Value::Object(Map::new()));
            }
            return;
        }
        let text = std::mem::take(&mut self.partial);
        match RawValue::from_string(text) {
            Ok(raw) => {
                self.obj.insert("input".to_owned(), serde_json::from_str(raw.get()).unwrap_or(Value::Null));
                self.input = Some(raw);
            }
            // Cut mid-input (max_tokens): kept apart so only a truncated turn tolerates it.
            Err(_) => {
                self.bad_input = true;
                self.obj.insert("input".to_owned(), Value::Object(Map::new()));
            }
        }
    }
}

/// The state of one streamed reply.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    message: Map<String, Value>,
    usage: Map<String, Value>,
    blocks: Vec<Option<BlockAcc>>,
    done: bool,
}

#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    message: Map<String, Value>,
}

#[derive(Deserialize)]
struct BlockStart {
    index: usize,
    content_block: Map<String, Value>,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: usize,
    delta: Map<String, Value>,
}

#[derive(Deserialize)]
struct BlockStop {
    index: usize,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    delta: Map<String, Value>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    #[serde(default)]
    error: ErrorDetail,
}

fn bad(event: &str, e: impl std::fmt::Display) -> ProviderError {
    decode_error(format!("stream event {event}: {e}"))
}

impl Accumulator {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether `message_stop` arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Apply one server-sent event. `ping` and unknown events are ignored; an `error` event fails the reply.
    /// Apply one event, telling `deltas` the text and thinking it adds (CONV-5).
    pub(crate) fn event(
        &mut self,
        name: Option<&str>,
        data: &str,
        deltas: Option<&dyn DeltaSink>,
    ) -> Result<(), ProviderError> {
        let kind = match serde_json::from_str::<Head>(data) {
            Ok(Head { kind: Some(kind) }) => kind,
            _ => match name {
                // New event types may carry anything; only ours must parse.
                Some(n) if !KNOWN.contains(&n) => return Ok(()),
                Some(n) => return Err(bad(n, "data is not a JSON object with a type")),
                None => return Ok(()),
            },
        };
        match kind.as_str() {
            "message_start" => {
                let e: MessageStart = serde_json::from_str(data).map_err(|e| bad(&kind, e))?;
                self.message = e.message;
                if let Some(Value::Object(usage)) = self.message.remove("usage") {
                    self.usage = usage;
                }
            }
            "content_block_start" => {
                let e: BlockStart = serde_json::from_str(data).map_err(|e| bad(&kind, e))?;
                let slot = self.slot(e.index)?;
                *slot = Some(BlockAcc { obj: e.content_block, ..BlockAcc::default() });
            }
            "content_block_delta" => {
                let e: BlockDelta = serde_json::from_str(data).map_err(|e| bad(&kind, e))?;
                let Some(Some(block)) = self.blocks.get_mut(e.index) else {
                    return Err(bad(&kind, format!("delta for block {} that never started", e.index)));
                };
                apply_delta(block, e.delta, deltas);
            }
            "content_block_stop" => {
                let e: BlockStop = serde_json::from_str(data).map_err(|e| bad(&kind, e))?;
                if let Some(Some(block)) = self.blocks.get_mut(e.index) {
                    block.stop();
                }
            }
            "message_delta" => {
                let e: MessageDelta = serde_json::from_str(data).map_err(|e| bad(&kind, e))?;
                self.message.extend(e.delta);
                if let Some(usage) = e.usage {
                    merge_non_null(&mut self.usage, usage);
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let e: ErrorEvent = serde_json::from_str(data).unwrap_or(ErrorEvent { error: ErrorDetail::default() });
                let mut msg = "anthropic stream error".to_owned();
                if let Some(k) = e.error.kind.filter(|k| !k.is_empty()) {
                    msg.push_str(": ");
                    msg.push_str(&k);
                }
                if let Some(m) = e.error.message.filter(|m| !m.is_empty()) {
                    msg.push_str(": ");
                    msg.push_str(&m);
                }
                // Retried like the matching status (an overloaded_error like a 529): the whole request again.
                return Err(ProviderError::new(ProviderErrorKind::Stream, msg));
            }
            _ => {}
        }
        Ok(())
    }

    fn slot(&mut self, index: usize) -> Result<&mut Option<BlockAcc>, ProviderError> {
        if index >= self.blocks.len() {
            if index - self.blocks.len() > MAX_INDEX_GAP {
                return Err(bad("content_block_start", format!("block index {index} out of range")));
            }
            self.blocks.resize_with(index + 1, || None);
        }
        Ok(&mut self.blocks[index])
    }

    fn stop_reason(&self) -> StopReason {
        stop_reason(self.message.get("stop_reason").and_then(Value::as_str))
    }

    fn finalize(&mut self) {
        for block in self.blocks.iter_mut().flatten() {
            block.stop();
        }
    }

    /// The accumulated message as the JSON a non-streaming call would have returned, for logs and traces.
    pub(crate) fn message_json(&mut self) -> Vec<u8> {
        self.finalize();
        let mut message = self.message.clone();
        let content = self.blocks.iter().flatten().map(|b| Value::Object(b.obj.clone())).collect();
        message.insert("content".to_owned(), Value::Array(content));
        message.insert("usage".to_owned(), Value::Object(self.usage.clone()));
        serde_json::to_vec(&Value::Object(message)).unwrap_or_default()
    }

    /// The neutral reply. Server blocks hold their accumulated object re-serialized: a stream has no original
    /// bytes to keep, and this is the object the API itself would have sent.
    pub(crate) fn finish(mut self) -> Result<Response, ProviderError> {
        if !self.done {
            return Err(ProviderError::new(
                ProviderErrorKind::Stream,
                "anthropic: the stream ended before message_stop",
            ));
        }
        self.finalize();
        let stop = self.stop_reason();
        let usage: WireUsage = serde_json::from_value(Value::Object(std::mem::take(&mut self.usage)))
            .map_err(|e| decode_error(format!("usage: {e}")))?;
        let mut content = Vec::with_capacity(self.blocks.len());
        for (i, block) in self.blocks.into_iter().enumerate() {
            let Some(mut block) = block else { continue };
            if block.bad_input && stop != StopReason::MaxTokens {
                return Err(decode_error(format!("content block {i}: the streamed input is not valid JSON")));
            }
            content.push(neutral(&mut block).map_err(|e| decode_error(format!("content block {i}: {e}")))?);
        }
        let text = |key: &str| self.message.get(key).and_then(Value::as_str).map(str::to_owned);
        let (model, id) = (text("model"), text("id"));
        Ok(Response::new(content, stop, usage.neutral()).with_origin(model, id))
    }
}

/// Events this module interprets; any other name is a newer event and ignored.
const KNOWN: &[&str] = &[
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "error",
];

fn merge_non_null(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        if !v.is_null() {
            into.insert(k, v);
        }
    }
}

fn apply_delta(block: &mut BlockAcc, mut delta: Map<String, Value>, deltas: Option<&dyn DeltaSink>) {
    let text = |d: &mut Map<String, Value>, key: &str| match d.remove(key) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let tell = |d: Delta<'_>| crate::llm::delta::tell(deltas, d);
    match delta.get("type").and_then(Value::as_str).unwrap_or("") {
        "text_delta" => {
            let t = text(&mut delta, "text");
            tell(Delta::Text(&t));
            block.append("text", &t);
        }
        "thinking_delta" => {
            let t = text(&mut delta, "thinking");
            tell(Delta::Thinking(&t));
            block.append("thinking", &t);
        }
        "signature_delta" => {
            block.obj.insert("signature".to_owned(), Value::from(text(&mut delta, "signature")));
        }
        "input_json_delta" => block.partial.push_str(&text(&mut delta, "partial_json")),
        "citations_delta" => {
            // Kept for the logged message; the neutral text block has no citations.
            if let Some(citation) = delta.remove("citation") {
                match block.obj.get_mut("citations") {
                    Some(Value::Array(a)) => a.push(citation),
                    _ => {
                        block.obj.insert("citations".to_owned(), Value::Array(vec![citation]));
                    }
                }
            }
        }
        _ => {}
    }
}

fn field(obj: &mut Map<String, Value>, key: &str) -> String {
    match obj.remove(key) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

fn neutral(block: &mut BlockAcc) -> Result<Block, String> {
    let kind = block.kind().to_owned();
    Ok(match kind.as_str() {
        "text" => Block::Text { text: field(&mut block.obj, "text") },
        "thinking" => {
            Block::Thinking { text: field(&mut block.obj, "thinking"), signature: field(&mut block.obj, "signature") }
        }
        "tool_use" => {
            let input = match (block.input.take(), block.bad_input) {
                (Some(raw), _) => ToolInput::from(raw),
                (None, true) => ToolInput::empty(),
                (None, false) => match block.obj.get("input") {
                    Some(v) => ToolInput::from_value(v),
                    None => ToolInput::empty(),
                },
            };
            Block::ToolUse { id: field(&mut block.obj, "id"), name: field(&mut block.obj, "name"), input }
        }
        "" => return Err("a block without a type".to_owned()),
        _ => {
            let raw = serde_json::value::to_raw_value(&block.obj).map_err(|e| e.to_string())?;
            Block::Provider { kind, raw }
        }
    })
}

/// Read a `text/event-stream` body until `message_stop`. A transport failure is retryable; a stream that ends
/// early is an error, never a partial message.
pub(crate) async fn read(events: &mut SseEvents, deltas: Option<&dyn DeltaSink>) -> Result<Accumulator, ProviderError> {
    let mut acc = Accumulator::new();
    while let Some(sse) = events.next().await {
        let sse = sse?;
        acc.event(sse.event.as_deref(), &sse.data, deltas)?;
        if acc.is_done() {
            return Ok(acc);
        }
    }
    Err(ProviderError::new(ProviderErrorKind::Stream, "anthropic: the stream ended before message_stop"))
}
