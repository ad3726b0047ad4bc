//! The resume fingerprint (SESS-16) and drift between two of them (SESS-18, SESS-19).

use crate::canonical::write_canonical;
use crate::llm::ToolPlan;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;

/// The configuration a session was started with; compared on resume. Holds hashes, never the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct Fingerprint {
    /// The provider's declared id (PROV-4).
    pub provider: String,
    /// The model id.
    pub model: String,
    /// Hex SHA-256 of the JSON array of the fingerprinted system segments (LOOP-2: system prompt, HITL note, memory
    /// note).
    pub system_hash: String,
    /// Hex SHA-256 of the canonical JSON of the tool definitions in request order.
    pub tools_hash: String,
    /// `off` or `summarized`.
    pub thinking_mode: String,
    /// `llm.budget.max_tokens`.
    pub max_tokens: u64,
    /// `llm.budget.max_iterations`.
    pub max_iterations: u64,
}

impl Default for Fingerprint {
    /// Empty fields: what a reference journal that leaves them out decodes to (they then show as drift).
    fn default() -> Self {
        Fingerprint {
            provider: String::new(),
            model: String::new(),
            system_hash: String::new(),
            tools_hash: String::new(),
            thinking_mode: String::new(),
            max_tokens: 0,
            max_iterations: 0,
        }
    }
}

/// The fields a [`Fingerprint`] is computed from.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct FingerprintInput<'a> {
    /// The provider's declared id.
    pub provider: &'a str,
    /// The model id.
    pub model: &'a str,
    /// The fingerprinted system segments, in order.
    pub system: &'a [String],
    /// The tools with their deferral decisions.
    pub tools: &'a ToolPlan,
    /// Whether reasoning is requested.
    pub thinking: bool,
    /// The token budget.
    pub max_tokens: u64,
    /// The iteration cap.
    pub max_iterations: u64,
}

impl Fingerprint {
    /// Compute the fingerprint of a configuration (SESS-16).
    pub fn compute(input: FingerprintInput<'_>) -> Self {
        let mut system = Vec::new();
        write_canonical(&mut system, &Value::from(input.system.to_vec()));
        let mut tools = Vec::with_capacity(256 * input.tools.len());
        tools.push(b'[');
        for (i, (tool, deferred)) in input.tools.iter().enumerate() {
            if i > 0 {
                tools.push(b',');
            }
            let spec = tool.spec();
            // Keys in sorted order: defer_loading, description, input_schema, name.
            tools.extend_from_slice(br#"{"defer_loading":"#);
            tools.extend_from_slice(if deferred { b"true" } else { b"false" });
            tools.extend_from_slice(br#","description":"#);
            write_canonical(&mut tools, &Value::from(spec.description()));
            tools.extend_from_slice(br#","input_schema":"#);
            write_canonical(&mut tools, spec.input_schema());
            tools.extend_from_slice(br#","name":"#);
            write_canonical(&mut tools, &Value::from(spec.name()));
            tools.push(b'}');
        }
        tools.push(b']');
        Fingerprint {
            provider: input.provider.to_owned(),
            model: input.model.to_owned(),
            system_hash: sha256_hex(&system),
            tools_hash: sha256_hex(&tools),
            thinking_mode: if input.thinking { "summarized" } else { "off" }.to_owned(),
            max_tokens: input.max_tokens,
            max_iterations: input.max_iterations,
        }
    }

    /// How `current` differs from `self` (the stored fingerprint), provider aside: one [`Drift`] per changed field,
    /// in SESS-19 order.
    pub fn drift(&self, current: &Fingerprint) -> Vec<Drift> {
        let mut out = Vec::new();
        if self.model != current.model {
            out.push(Drift::Model { was: self.model.clone(), now: current.model.clone() });
        }
        if self.system_hash != current.system_hash {
            out.push(Drift::SystemPrompt);
        }
        if self.tools_hash != current.tools_hash {
            out.push(Drift::ToolSet);
        }
        if self.thinking_mode != current.thinking_mode {
            out.push(Drift::Thinking { was: self.thinking_mode.clone(), now: current.thinking_mode.clone() });
        }
        if self.max_tokens != current.max_tokens {
            out.push(Drift::MaxTokens { was: self.max_tokens, now: current.max_tokens });
        }
        if self.max_iterations != current.max_iterations {
            out.push(Drift::MaxIterations { was: self.max_iterations, now: current.max_iterations });
        }
        out
    }
}

/// One changed fingerprint field; displays as SESS-19's line, e.g. `model: a -> b` or `tool set: changed`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Drift {
    /// The model changed.
    Model {
        /// Stored.
        was: String,
        /// Current.
        now: String,
    },
    /// The fingerprinted system segments changed.
    SystemPrompt,
    /// The tool definitions changed.
    ToolSet,
    /// The thinking mode changed.
    Thinking {
        /// Stored.
        was: String,
        /// Current.
        now: String,
    },
    /// `max_tokens` changed.
    MaxTokens {
        /// Stored.
        was: u64,
        /// Current.
        now: u64,
    },
    /// `max_iterations` changed.
    MaxIterations {
        /// Stored.
        was: u64,
        /// Current.
        now: u64,
    },
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Drift::Model { was, now } => write!(f, "model: {was} -> {now}"),
            Drift::SystemPrompt => f.write_str("system prompt: changed"),
            Drift::ToolSet => f.write_str("tool set: changed"),
            Drift::Thinking { was, now } => write!(f, "thinking: {was} -> {now}"),
            Drift::MaxTokens { was, now } => write!(f, "max_tokens: {was} -> {now}"),
            Drift::MaxIterations { was, now } => write!(f, "max_iterations: {was} -> {now}"),
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    crate::canonical::hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let mut out = Vec::new();
        write_canonical(&mut out, &json!({"b": 1, "a": {"z": [1, {"y": 2, "x": "é"}], "c": null}}));
        assert_eq!(String::from_utf8(out).unwrap(), r#"{"a":{"c":null,"z":[1,{"x":"é","y":2}]},"b":1}"#);
    }
}
