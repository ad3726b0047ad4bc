//! What a long run needs settled before it starts: the model's price and the money budget (COST-1..6), and the
//! compaction plan with the model's context window (COMP-1..9). Resolved once per agent, so a run pays nothing for
//! them but a comparison per turn.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::llm::{Cost, ModelProvider, PriceTable, Pricing};

/// The built-in instructions of the summarising request (`harness.compaction.prompt` replaces them).
pub const DEFAULT_COMPACTION_PROMPT: &str = "You are compacting the early part of an agent's conversation so that \
    it can continue within its context window. Write a faithful summary of the transcript you are given, for the \
    agent to continue from. Keep: the user's requests and constraints, word for word where they matter; every \
    decision taken and why; the facts the tools established (names, identifiers, paths, numbers, states, errors); \
    what was changed and what remains to do. Leave out pleasantries and reasoning that led nowhere. Do not invent \
    anything. Answer with the summary only.";

/// How compaction runs for this agent (COMP-1).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CompactionPlan {
    /// The model's context window, in tokens.
    pub(crate) window: u64,
    /// The estimated request size, in tokens, at or above which older turns are summarised.
    pub(crate) threshold: u64,
    /// Model turns kept verbatim.
    pub(crate) keep_recent_turns: usize,
    /// The summarising request's system prompt.
    pub(crate) prompt: String,
}

/// The agent's resolved price, money budget and compaction plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LongRun {
    pub(crate) pricing: Option<Pricing>,
    pub(crate) max_cost: Option<Cost>,
    pub(crate) compaction: Option<CompactionPlan>,
}

/// Resolve the price (`llm.pricing`, then the host's table, then the built-in one), the money budget, and the
/// compaction plan. Fails closed, naming the key: a money budget over a model whose price is unknown or incomplete,
/// or compaction without a known context window, cannot be enforced.
pub(crate) fn resolve(
    config: &Config,
    provider: &dyn ModelProvider,
    model: &str,
    prices: Option<&PriceTable>,
) -> Result<LongRun> {
    let pricing = match &config.llm.pricing {
        Some(settings) => Some(configured(settings).map_err(|e| config.locate(rekey(e, "llm.pricing")))?),
        None => prices.and_then(|t| t.lookup(model)).or_else(|| PriceTable::anthropic().lookup(model)),
    };
    let max_cost = match config.llm.budget.max_cost {
        None => None,
        Some(usd) => {
            let key = "llm.budget.max_cost";
            let cost = Cost::from_usd(usd).map_err(|e| config.locate(rekey(e, key)))?;
            if !pricing.is_some_and(|p| p.is_complete()) {
                let why = match pricing {
                    None => format!("the price of model {model} is unknown"),
                    Some(_) => format!("the price of model {model} has no cache_read or cache_write price"),
                };
                return Err(config.locate(Error::config_key(
                    key,
                    format!("{key}: cannot be enforced: {why}; give every price in llm.pricing"),
                )));
            }
            Some(cost)
        }
    };
    let compaction = config.harness.compaction.as_ref().map(|c| plan(config, c, provider, model)).transpose()?;
    Ok(LongRun { pricing, max_cost, compaction })
}

fn plan(
    config: &Config,
    c: &crate::config::Compaction,
    provider: &dyn ModelProvider,
    model: &str,
) -> Result<CompactionPlan> {
    let window = c.context_window.filter(|w| *w > 0).or_else(|| provider.context_window(model)).ok_or_else(|| {
        let key = "harness.compaction";
        config.locate(Error::config_key(
            key,
            format!(
                "{key}: the context window of model {model} is unknown to provider {}; set \
                 harness.compaction.context_window",
                provider.capabilities().provider
            ),
        ))
    })?;
    // Rounded down: the trigger is a ceiling the request must stay under.
    let threshold = ((window as f64) * c.trigger).floor() as u64;
    Ok(CompactionPlan {
        window,
        threshold: threshold.max(1),
        keep_recent_turns: usize::try_from(c.keep_recent_turns).unwrap_or(usize::MAX).max(1),
        prompt: c.prompt.clone().unwrap_or_else(|| DEFAULT_COMPACTION_PROMPT.to_owned()),
    })
}

/// `llm.pricing` as a [`Pricing`] (its numbers were checked when the file was read; a value set in code is checked
/// here).
fn configured(s: &crate::config::PricingSettings) -> Result<Pricing> {
    Pricing::per_million(s.input, s.output)?.with_cache_read(s.cache_read)?.with_cache_write(s.cache_write)
}

/// A price error from [`Pricing`] or [`Cost`], re-issued against the configuration key it came from.
fn rekey(e: Error, key: &str) -> Error {
    Error::config_key(key, format!("{key}: {e}"))
}
