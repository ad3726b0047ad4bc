//! Accumulating a streamed reply (`"stream": true`): `chat.completion.chunk` events until `data: [DONE]`.
//!
//! Text, reasoning and refusal deltas are concatenated; tool-call deltas are merged by their `index` (or, from
//! servers that send none, by their id) and their argument fragments joined, then parsed once at the end. Every
//! chunk field is optional and read loosely: a server that sends a field with the wrong type fails the reply with a
//! decode error, never a panic.

use super::wire::{Call, Reply, WireFunction, WireUsage, arguments_text, body_error, content_text, decode_error};
use crate::llm::DeltaSink;
use crate::llm::http::SseEvents;
use crate::llm::{ProviderError, ProviderErrorKind};
use serde::Deserialize;
use serde_json::{Value, json};

/// Tool-call indexes may skip ahead only this far (servers send them densely; this bounds a hostile one).
const MAX_INDEX_GAP: usize = 1024;

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

/// The state of one streamed reply.
#[derive(Debug, Default)]
pub(crate) struct Accumulator {
    reply: Reply,
    /// Slots by tool-call index; `None` for an index skipped so far.
    calls: Vec<Option<Call>>,
    model: String,
    done: bool,
}

impl Accumulator {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Whether `[DONE]` arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Whether a `finish_reason` arrived (the reply is whole even if `[DONE]` never does).
    pub(crate) fn finished(&self) -> bool {
        self.reply.finish_reason.is_some()
    }

    /// Apply one event's data. `[DONE]` ends the reply; an `error` object fails it.
    /// Apply one event's data, telling `deltas` the text and reasoning it adds (CONV-5). `[DONE]` ends the reply;
    /// an `error` object fails it.
    pub(crate) fn event(
        &mut self,
        name: Option<&str>,
        data: &str,
        deltas: Option<&dyn DeltaSink>,
    ) -> Result<(), ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        if name == Some("error") {
            // Its data may be an `{"error": …}` object, the error itself, or plain text.
            let value: Value = serde_json::from_str(data).unwrap_or_else(|_| Value::from(data));
            return Err(body_error(value.get("error").unwrap_or(&value)));
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| decode_error(format!("stream chunk: {e}")))?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(body_error(&error));
        }
        if let Some(model) = chunk.model.filter(|m| self.model.is_empty() && !m.is_empty()) {
            self.model = model;
        }
        if let Some(id) = chunk.id.filter(|i| self.reply.id.is_none() && !i.is_empty()) {
            self.reply.id = Some(id);
        }
        if let Some(usage) = chunk.usage {
            self.reply.usage = Some(usage.neutral());
        }
        // Only the first choice is read: the request never asks for more than one (`n` is not sent).
        for choice in chunk.choices.unwrap_or_default().into_iter().filter(|c| c.index.unwrap_or(0) == 0) {
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.reply.finish_reason = Some(reason);
            }
            if let Some(delta) = choice.delta {
                self.delta(delta, deltas)?;
            }
        }
        Ok(())
    }

    fn delta(&mut self, delta: Delta, deltas: Option<&dyn DeltaSink>) -> Result<(), ProviderError> {
        let tell = |d: crate::llm::Delta<'_>| crate::llm::delta::tell(deltas, d);
        if let Some(text) = delta.reasoning_content.or(delta.reasoning).filter(|t| !t.is_empty()) {
            tell(crate::llm::Delta::Thinking(&text));
            self.reply.reasoning.push_str(&text);
        }
        let text = content_text(delta.content);
        if !text.is_empty() {
            tell(crate::llm::Delta::Text(&text));
            self.reply.text.push_str(&text);
        }
        if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
            tell(crate::llm::Delta::Text(&text));
            self.reply.refusal.push_str(&text);
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.call_delta(call)?;
        }
        Ok(())
    }

    fn call_delta(&mut self, delta: CallDelta) -> Result<(), ProviderError> {
        let id = delta.id.filter(|id| !id.is_empty());
        let index = match delta.index {
            Some(index) => index,
            // No index: a new id starts a new call, anything else continues the last one.
            None => {
                let last = self.calls.iter().rposition(Option::is_some);
                let same =
                    |i: usize| self.calls[i].as_ref().is_some_and(|c| id.is_none() || id.as_ref() == Some(&c.id));
                match last {
                    Some(i) if same(i) => i,
                    _ => self.calls.len(),
                }
            }
        };
        if index >= self.calls.len() {
            if index - self.calls.len() > MAX_INDEX_GAP {
                return Err(decode_error(format!("stream chunk: tool call index {index} out of range")));
            }
            self.calls.resize_with(index + 1, || None);
        }
        let call = self.calls[index].get_or_insert_with(Call::default);
        if let Some(id) = id.filter(|_| call.id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = delta.function {
            // Some servers repeat the name on every fragment: it is set once, never appended.
            if let Some(name) = function.name.filter(|n| !n.is_empty() && call.name.is_empty()) {
                call.name = name;
            }
            call.arguments.push_str(&arguments_text(function.arguments));
        }
        Ok(())
    }

    /// The accumulated reply as the `chat.completion` object a non-streaming call would have returned, for logs
    /// and traces.
    pub(crate) fn completion_json(&self) -> Vec<u8> {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .flatten()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        let r = &self.reply;
        let mut message = json!({"role": "assistant", "content": (!r.text.is_empty()).then_some(&r.text)});
        if !r.reasoning.is_empty() {
            message["reasoning_content"] = Value::from(r.reasoning.as_str());
        }
        if !r.refusal.is_empty() {
            message["refusal"] = Value::from(r.refusal.as_str());
        }
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        let usage = r.usage.map(|u| {
            json!({"prompt_tokens": u.input_tokens.saturating_add(u.cache_read_tokens), "completion_tokens": u.output_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens}})
        });
        let body = json!({"object": "chat.completion", "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": r.finish_reason}], "usage": usage});
        serde_json::to_vec(&body).unwrap_or_default()
    }

    /// The decoded reply. A stream cut before any `finish_reason` is an error, never a partial reply.
    pub(crate) fn finish(mut self) -> Result<Reply, ProviderError> {
        if !self.done && !self.finished() {
            return Err(ProviderError::new(ProviderErrorKind::Stream, "openai: the stream ended before [DONE]"));
        }
        self.reply.calls = self.calls.into_iter().flatten().collect();
        self.reply.model = Some(self.model).filter(|m| !m.is_empty());
        Ok(self.reply)
    }
}

/// Read a `text/event-stream` body until `[DONE]`. A transport failure is retryable; a stream that ends before a
/// `finish_reason` is an error. One that ends after it without `[DONE]` (some local servers never send it) is
/// accepted.
pub(crate) async fn read(events: &mut SseEvents, deltas: Option<&dyn DeltaSink>) -> Result<Accumulator, ProviderError> {
    let mut acc = Accumulator::new();
    while let Some(sse) = events.next().await {
        let sse = sse?;
        acc.event(sse.event.as_deref(), &sse.data, deltas)?;
        if acc.is_done() {
            return Ok(acc);
        }
    }
    if acc.finished() {
        return Ok(acc);
    }
    Err(ProviderError::new(ProviderErrorKind::Stream, "openai: the stream ended before [DONE]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_calls_merge_by_index_and_calls_without_index_by_id() {
        let mut acc = Accumulator::new();
        let chunks = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{\"p\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"y","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c","function":{"name":"z","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        ];
        for c in chunks {
            acc.event(None, c, None).unwrap();
        }
        let reply = acc.finish().unwrap();
        let got: Vec<_> = reply.calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(got, [("a", "x", r#"{"p":1}"#), ("b", "y", "{}"), ("c", "z", "{}")]);
    }

    #[test]
    fn wrong_types_and_huge_indexes_are_errors_not_panics() {
        for bad in [
            r#"{"choices":"x"}"#,
            r#"{"choices":[{"delta":{"tool_calls":"x"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":999999999}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":-1}]}}]}"#,
            r#"[1,2]"#,
            "not json",
        ] {
            assert!(Accumulator::new().event(None, bad, None).is_err(), "{bad}");
        }
    }
}
