//! `harness.knowledge`: the local document index the agent searches through `knowledge_search` (KNOW-1..).

use std::path::PathBuf;

use serde::Deserialize;

use super::{GoDuration, de};

/// Default `harness.knowledge.top_k`.
pub const DEFAULT_KNOWLEDGE_TOP_K: u64 = 5;
/// The largest `harness.knowledge.top_k`, and the largest `top_k` a `knowledge_search` call may ask for.
pub const MAX_KNOWLEDGE_TOP_K: u64 = 20;
/// Default `harness.knowledge.max_injected_tokens`.
pub const DEFAULT_MAX_INJECTED_TOKENS: u64 = 6000;
/// Default `harness.knowledge.embeddings.timeout`.
pub const DEFAULT_EMBEDDINGS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// `harness.knowledge`: which files are indexed, where the index lives, and how much a search may return. The keys
/// are the reference implementation's, so one `agent.yaml` works with both.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Knowledge {
    /// `enabled`: give the agent the `knowledge_search` tool.
    #[serde(deserialize_with = "de::nullable")]
    pub enabled: bool,
    /// `paths`: files and directories to index; relative ones are taken from the configuration file's directory.
    #[serde(deserialize_with = "de::nullable")]
    pub paths: Vec<PathBuf>,
    /// `directory`: where the index lives; default `knowledge/<identity>` under the state directory. A relative one
    /// is taken from the configuration file's directory.
    #[serde(deserialize_with = "de::opt_path")]
    pub directory: Option<PathBuf>,
    /// `top_k`: how many passages a search returns when the call does not say (1..=20).
    #[serde(deserialize_with = "de::knowledge_top_k")]
    pub top_k: u64,
    /// `max_injected_tokens`: the most text (in estimated tokens) one search result may carry to the model.
    #[serde(deserialize_with = "de::positive")]
    pub max_injected_tokens: u64,
    /// `embeddings`: an OpenAI-compatible embeddings endpoint for the vector tier; lexical search only when absent.
    #[serde(deserialize_with = "de::nullable")]
    pub embeddings: Option<Embeddings>,
}

impl Default for Knowledge {
    fn default() -> Self {
        Knowledge {
            enabled: false,
            paths: Vec::new(),
            directory: None,
            top_k: DEFAULT_KNOWLEDGE_TOP_K,
            max_injected_tokens: DEFAULT_MAX_INJECTED_TOKENS,
            embeddings: None,
        }
    }
}

/// `harness.knowledge.embeddings`: the endpoint that turns passages and queries into vectors.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Embeddings {
    /// `base_url`: the API root; requests go to `<base_url>/embeddings` (required).
    #[serde(deserialize_with = "de::base_url")]
    pub base_url: Option<String>,
    /// `model`: the embedding model's name (required).
    #[serde(deserialize_with = "de::opt_string")]
    pub model: Option<String>,
    /// `api_key_env`: the environment variable holding the bearer key; no `Authorization` header when unset. The
    /// variable is scrubbed from every child.
    #[serde(deserialize_with = "de::opt_string")]
    pub api_key_env: Option<String>,
    /// `timeout`: per request (default 30s).
    #[serde(deserialize_with = "de::positive_duration")]
    pub timeout: Option<GoDuration>,
    /// `query_prefix`: put before each query (some models want `query: `).
    #[serde(deserialize_with = "de::nullable")]
    pub query_prefix: String,
    /// `document_prefix`: put before each passage; `{title}` is replaced by the passage's heading path.
    #[serde(deserialize_with = "de::nullable")]
    pub document_prefix: String,
    /// `tool_search`: also rank client-side `search_tools` results by these embeddings, fused with the words by
    /// reciprocal rank (off by default: the tools' paths and descriptions, and each search's query, go to the
    /// endpoint). A key of this crate's; the reference implementation has no such tier.
    #[serde(deserialize_with = "de::nullable")]
    pub tool_search: bool,
}

impl Embeddings {
    /// The effective request timeout.
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout.and_then(GoDuration::to_std).unwrap_or(DEFAULT_EMBEDDINGS_TIMEOUT)
    }
}

impl Knowledge {
    /// KNOW-1: an enabled index has paths; an embeddings block names its endpoint and model, and a key variable
    /// that can be a variable name.
    pub(super) fn validate(&self) -> crate::error::Result<()> {
        let err = |key: &str, msg: String| crate::error::Error::config_key(key, format!("{key}: {msg}"));
        if self.enabled && self.paths.is_empty() {
            return Err(err("harness.knowledge.paths", "knowledge is enabled but no paths are listed to index".into()));
        }
        if let Some(i) = self.paths.iter().position(|p| p.as_os_str().is_empty()) {
            return Err(err(&format!("harness.knowledge.paths[{i}]"), "is empty".into()));
        }
        let Some(e) = &self.embeddings else { return Ok(()) };
        if e.base_url.is_none() {
            return Err(err("harness.knowledge.embeddings.base_url", "is required with embeddings".into()));
        }
        if e.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
            return Err(err("harness.knowledge.embeddings.model", "is required with embeddings".into()));
        }
        if let Some(var) = &e.api_key_env
            && (var.is_empty() || var.contains(['=', '\0']))
        {
            return Err(err("harness.knowledge.embeddings.api_key_env", format!("{var:?} is not a variable name")));
        }
        Ok(())
    }
}
