//! The neutral conversation: messages, blocks, stop reasons and token counts (PROV-1, PROV-2).

use crate::tool::ToolInput;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::fmt;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The operator's prompt and tool results.
    User,
    /// The model.
    Assistant,
}

/// One content block. Serialized as an object with exactly one key naming the kind (SESS-12).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Model reasoning with its opaque signature, echoed back unchanged (PROV-15).
    Thinking {
        /// The (possibly summarized, possibly empty) reasoning text.
        text: String,
        /// The provider's opaque signature, verbatim.
        signature: String,
    },
    /// A call of one of our tools.
    ToolUse {
        /// The provider's call id.
        id: String,
        /// The tool's final name.
        name: String,
        /// The input exactly as the model wrote it.
        input: ToolInput,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the call this answers.
        tool_use_id: String,
        /// The result text.
        content: String,
        /// Whether it is an error result.
        is_error: bool,
    },
    /// A block the neutral model does not name, kept as the provider's raw JSON.
    Provider {
        /// The provider's block type, e.g. `server_tool_use`.
        kind: String,
        /// The block's JSON, byte for byte.
        raw: Box<RawValue>,
    },
}

impl PartialEq for Block {
    fn eq(&self, other: &Self) -> bool {
        use Block::*;
        match (self, other) {
            (Text { text: a }, Text { text: b }) => a == b,
            (Thinking { text: a, signature: s }, Thinking { text: b, signature: t }) => a == b && s == t,
            (ToolUse { id: a, name: n, input: i }, ToolUse { id: b, name: m, input: j }) => a == b && n == m && i == j,
            (
                ToolResult { tool_use_id: a, content: c, is_error: e },
                ToolResult { tool_use_id: b, content: d, is_error: f },
            ) => a == b && c == d && e == f,
            (Provider { kind: a, raw: r }, Provider { kind: b, raw: s }) => a == b && r.get() == s.get(),
            _ => false,
        }
    }
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text { text: text.into() }
    }

    /// A tool result block.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Block::ToolResult { tool_use_id: tool_use_id.into(), content: content.into(), is_error }
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its blocks, in order.
    pub content: Vec<Block>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Message { role: Role::User, content: vec![Block::text(text)] }
    }

    /// An assistant message.
    pub fn assistant(content: Vec<Block>) -> Self {
        Message { role: Role::Assistant, content }
    }

    /// The text blocks joined by blank lines.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        parts.join("\n\n")
    }

    /// The tool calls, in order: `(id, name, input)`.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &ToolInput)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// Why the model stopped (PROV-2); unknown reasons are kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// A natural end.
    EndTurn,
    /// The output cap was hit; the turn is truncated.
    MaxTokens,
    /// The model called tools.
    ToolUse,
    /// The server paused a long server-side turn; send it back to continue.
    PauseTurn,
    /// The model declined to answer.
    Refusal,
    /// A stop sequence matched.
    StopSequence,
    /// The context window filled up.
    ContextWindowExceeded,
    /// A reason this crate does not know.
    Other(String),
}

impl StopReason {
    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::ToolUse => "tool_use",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ContextWindowExceeded => "model_context_window_exceeded",
            StopReason::Other(s) => s,
        }
    }

    /// Whether a turn that stopped for this reason has its tool calls run (LOOP-6, LOOP-7): not a truncated,
    /// refused or overflowing one. The loop and the journal fold both ask this.
    pub fn runs_tools(&self) -> bool {
        !matches!(self, StopReason::MaxTokens | StopReason::Refusal | StopReason::ContextWindowExceeded)
    }

    /// From the wire name.
    pub fn parse(s: &str) -> Self {
        match s {
            "end_turn" => StopReason::EndTurn,
            "max_tokens" => StopReason::MaxTokens,
            "tool_use" => StopReason::ToolUse,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            "stop_sequence" => StopReason::StopSequence,
            "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
            other => StopReason::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(StopReason::parse(&String::deserialize(d)?))
    }
}

/// Token counts of one call (PROV-2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_tokens: u64,
}

impl Usage {
    /// Every token counted against the budget (BUDGET-2).
    pub fn total(&self) -> u64 {
        // Saturating: counts may come from a journal or a provider, and must never overflow into a panic.
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_creation_tokens)
    }
}

impl Usage {
    /// What `self` counts beyond `earlier` (one turn's share of a conversation's totals), never below zero.
    #[must_use]
    pub fn saturating_sub(self, earlier: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_tokens: self.cache_read_tokens.saturating_sub(earlier.cache_read_tokens),
            cache_creation_tokens: self.cache_creation_tokens.saturating_sub(earlier.cache_creation_tokens),
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(o.cache_read_tokens);
        self.cache_creation_tokens = self.cache_creation_tokens.saturating_add(o.cache_creation_tokens);
    }
}
