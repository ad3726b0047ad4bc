//! The `llm` block: model, provider and budgets (sections 8 and 9).

use std::time::Duration;

use serde::Deserialize;

use super::{GoDuration, de};

/// Default `llm.provider` (PROV-3).
pub const DEFAULT_PROVIDER: &str = "anthropic";
/// The `llm.provider` that replays `llm.script` (DEMO-1): no key, no network.
pub const SCRIPTED_PROVIDER: &str = "scripted";
/// Default `llm.budget.max_tokens` (CFG-8).
pub const DEFAULT_MAX_TOKENS: u64 = 200_000;
/// Default `llm.budget.max_iterations` (CFG-8).
pub const DEFAULT_MAX_ITERATIONS: u64 = 50;
/// Default `llm.budget.call_timeout` (CFG-9).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// `llm`: the model and its budgets. An absent block is the same as an empty one (CFG-14).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Llm {
    /// `model`; required in agent mode (CFG-2). Empty is unset.
    #[serde(deserialize_with = "de::opt_string")]
    pub model: Option<String>,
    /// `provider` (PROV-3), `anthropic` when unset or empty. Unknown names fail at run start.
    #[serde(deserialize_with = "de::provider")]
    pub provider: String,
    /// `budget`.
    #[serde(deserialize_with = "de::nullable")]
    pub budget: Budget,
    /// `thinking` (PROV-10).
    #[serde(deserialize_with = "de::nullable")]
    pub thinking: Thinking,
    /// `no_prompt_cache` (PROV-9).
    #[serde(deserialize_with = "de::nullable")]
    pub no_prompt_cache: bool,
    /// `no_tool_search` (SEARCH-2).
    #[serde(deserialize_with = "de::nullable")]
    pub no_tool_search: bool,
    /// `base_url`: where the provider's API is, e.g. `http://127.0.0.1:11434/v1` for a local OpenAI-compatible
    /// server. Empty is unset. Checked when the configuration is read (PROV-7: `https`, or `http` to a loopback
    /// literal, never with user information), so a bad value fails naming `llm.base_url`.
    ///
    /// Each provider reads it as its own base: the `openai` provider appends `/chat/completions` (default
    /// `https://api.openai.com/v1`), the `anthropic` provider `/v1/messages` (default `https://api.anthropic.com`).
    /// A host's `--base-url` and the provider's environment variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) win
    /// over it, in that order.
    #[serde(deserialize_with = "de::base_url")]
    pub base_url: Option<String>,
    /// `pricing` (COST-2): the model's prices in dollars per million tokens, over the host's and the built-in
    /// table's. `input` and `output` are required; a cache price left out is unknown.
    #[serde(deserialize_with = "de::nullable")]
    pub pricing: Option<PricingSettings>,
    /// `script` (DEMO-1): the file of model turns the `scripted` provider replays, relative to the working
    /// directory as `application_path` is. Only that provider reads it; it is refused with any other.
    #[serde(deserialize_with = "de::opt_path")]
    pub script: Option<std::path::PathBuf>,
}

/// `llm.pricing`: dollars per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct PricingSettings {
    /// `input`: uncached input tokens.
    #[serde(deserialize_with = "de::price")]
    pub input: f64,
    /// `output`: output tokens.
    #[serde(deserialize_with = "de::price")]
    pub output: f64,
    /// `cache_read`: input tokens read from the prompt cache.
    #[serde(default, deserialize_with = "de::opt_price")]
    pub cache_read: Option<f64>,
    /// `cache_write`: input tokens written to the prompt cache.
    #[serde(default, deserialize_with = "de::opt_price")]
    pub cache_write: Option<f64>,
}

impl Default for Llm {
    fn default() -> Self {
        Llm {
            model: None,
            provider: DEFAULT_PROVIDER.to_owned(),
            budget: Budget::default(),
            thinking: Thinking::default(),
            no_prompt_cache: false,
            no_tool_search: false,
            base_url: None,
            pricing: None,
            script: None,
        }
    }
}

/// `llm.thinking`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Thinking {
    /// `enabled` (PROV-10).
    #[serde(deserialize_with = "de::nullable")]
    pub enabled: bool,
}

/// `llm.budget` (section 9.3). Fields hold the values as written (0 or `None` meaning unset; negative values are
/// rejected at parse, CFG-8/CFG-9); the accessors apply the defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Budget {
    /// `max_tokens`, 0 meaning unset. Use [`Budget::max_tokens()`].
    #[serde(deserialize_with = "de::non_negative")]
    pub max_tokens: u64,
    /// `max_output_tokens`, 0 meaning the provider's default. Use [`Budget::max_output_tokens()`].
    #[serde(deserialize_with = "de::non_negative")]
    pub max_output_tokens: u64,
    /// `max_iterations`, 0 meaning unset. Use [`Budget::max_iterations()`].
    #[serde(deserialize_with = "de::non_negative")]
    pub max_iterations: u64,
    /// `call_timeout`; always positive after parsing. Use [`Budget::call_timeout()`].
    #[serde(deserialize_with = "de::positive_duration")]
    pub call_timeout: Option<GoDuration>,
    /// `max_cost` (COST-4): the run's money budget in dollars; unset means none. A run whose model has no complete
    /// price cannot enforce it and is refused at build.
    #[serde(deserialize_with = "de::opt_price")]
    pub max_cost: Option<f64>,
}

impl Budget {
    /// The run's total token budget: `max_tokens`, or 200000 when 0/unset.
    pub fn max_tokens(&self) -> u64 {
        if self.max_tokens == 0 { DEFAULT_MAX_TOKENS } else { self.max_tokens }
    }

    /// The per-response output cap, or `None` when 0/unset, meaning the provider's built-in default (PROV-11).
    pub fn max_output_tokens(&self) -> Option<u64> {
        (self.max_output_tokens > 0).then_some(self.max_output_tokens)
    }

    /// The iteration budget: `max_iterations`, or 50 when 0/unset.
    pub fn max_iterations(&self) -> u64 {
        if self.max_iterations == 0 { DEFAULT_MAX_ITERATIONS } else { self.max_iterations }
    }

    /// The per-call timeout: `call_timeout`, or 120s when unset (or, for a value set in code, not positive).
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout.and_then(GoDuration::to_std).filter(|d| !d.is_zero()).unwrap_or(DEFAULT_CALL_TIMEOUT)
    }
}
