//! What tokens cost (COST-1..6): a model's [`Pricing`], the money a run's [`Usage`] comes to as a [`Cost`], and a
//! [`PriceTable`] of models, with a small built-in table of current Anthropic models.
//!
//! Money is counted in integers, never in floating point: a price of $0.30 per million tokens is held as 300,000,000
//! nanodollars per million tokens and a cost in femtodollars, so costs add up exactly and a budget compares exactly.
//!
//! ```
//! use fisk_ai::llm::{Cost, PriceTable, Pricing, Usage};
//!
//! let table = PriceTable::anthropic().with("my-local-model", Pricing::per_million(0.10, 0.40)?);
//! let sonnet = table.lookup("claude-sonnet-4-6-20260217").expect("built in, snapshots included");
//! let usage = Usage { input_tokens: 1_000, output_tokens: 500, cache_read_tokens: 2_000, cache_creation_tokens: 100 };
//! assert_eq!(sonnet.cost(&usage).unwrap().to_string(), "$0.011475");
//! assert!(table.lookup("gpt-5").is_none(), "unknown, never zero");
//! # Ok::<(), fisk_ai::Error>(())
//! ```

use super::message::Usage;
use crate::error::{Error, Result};
use std::fmt;

/// Femtodollars per nanodollar-per-million-tokens rate unit: a rate in nanodollars per million tokens times a token
/// count is a cost in femtodollars (1e-9 / 1e6 = 1e-15).
const FEMTO_PER_USD: u128 = 1_000_000_000_000_000;

/// A price per million tokens, in nanodollars (exact for any price written with up to nine decimals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Rate(u64);

impl Rate {
    /// From dollars per million tokens; refused when negative, not finite or absurdly large.
    fn from_usd(what: &str, usd: f64) -> Result<Rate> {
        if !usd.is_finite() || usd < 0.0 {
            return Err(Error::config(format!("the {what} price must be a non-negative number of dollars, got {usd}")));
        }
        let nano = (usd * 1e9).round();
        // 1.8e10 dollars per million tokens: far above any real price, far below overflow in `cost`.
        if nano > 1.8e19 {
            return Err(Error::config(format!("the {what} price of ${usd} per million tokens is not a real price")));
        }
        Ok(Rate(nano as u64))
    }

    fn times(self, tokens: u64) -> u128 {
        u128::from(self.0) * u128::from(tokens)
    }
}

/// A model's prices, in dollars per million tokens of each kind (`llm.pricing`). Cache prices are optional: a
/// model without them is priced as long as no call reports cached tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pricing {
    input: Rate,
    output: Rate,
    cache_read: Option<Rate>,
    cache_write: Option<Rate>,
}

impl Pricing {
    /// Input and output prices in dollars per million tokens, with no cache prices.
    ///
    /// # Errors
    ///
    /// A configuration error for a negative, infinite or NaN price.
    pub fn per_million(input: f64, output: f64) -> Result<Pricing> {
        Ok(Pricing {
            input: Rate::from_usd("input", input)?,
            output: Rate::from_usd("output", output)?,
            cache_read: None,
            cache_write: None,
        })
    }

    /// Add the prices of cache reads and cache writes (five-minute writes; this crate does not ask for longer).
    ///
    /// # Errors
    ///
    /// A configuration error for a negative, infinite or NaN price.
    pub fn with_cache(mut self, read: f64, write: f64) -> Result<Pricing> {
        self.cache_read = Some(Rate::from_usd("cache_read", read)?);
        self.cache_write = Some(Rate::from_usd("cache_write", write)?);
        Ok(self)
    }

    /// Set or clear the cache-read price alone.
    ///
    /// # Errors
    ///
    /// A configuration error for a negative, infinite or NaN price.
    pub fn with_cache_read(mut self, read: Option<f64>) -> Result<Pricing> {
        self.cache_read = read.map(|r| Rate::from_usd("cache_read", r)).transpose()?;
        Ok(self)
    }

    /// Set or clear the cache-write price alone.
    ///
    /// # Errors
    ///
    /// A configuration error for a negative, infinite or NaN price.
    pub fn with_cache_write(mut self, write: Option<f64>) -> Result<Pricing> {
        self.cache_write = write.map(|w| Rate::from_usd("cache_write", w)).transpose()?;
        Ok(self)
    }

    /// Whether every kind of token has a price, so any usage can be priced.
    pub fn is_complete(&self) -> bool {
        self.cache_read.is_some() && self.cache_write.is_some()
    }

    /// What `usage` costs, or `None` when it counts cached tokens of a kind this pricing has no price for: an
    /// unknown cost, never a guess.
    pub fn cost(&self, usage: &Usage) -> Option<Cost> {
        let priced = |rate: Option<Rate>, tokens: u64| match (rate, tokens) {
            (_, 0) => Some(0),
            (Some(rate), n) => Some(rate.times(n)),
            (None, _) => None,
        };
        // Saturating: the counts come from a provider or a journal, and must never overflow into a panic.
        let total = self
            .input
            .times(usage.input_tokens)
            .saturating_add(self.output.times(usage.output_tokens))
            .saturating_add(priced(self.cache_read, usage.cache_read_tokens)?)
            .saturating_add(priced(self.cache_write, usage.cache_creation_tokens)?);
        Some(Cost(total))
    }
}

/// An amount of money, exact to the femtodollar. Shown in dollars rounded to the micro-dollar: `$0.011475`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cost(u128);

impl Cost {
    /// Nothing.
    pub const ZERO: Cost = Cost(0);

    /// An amount given in dollars (`llm.budget.max_cost`), exact to the nanodollar.
    ///
    /// # Errors
    ///
    /// A configuration error for a negative, infinite or NaN amount.
    pub fn from_usd(usd: f64) -> Result<Cost> {
        if !(0.0..=1e15).contains(&usd) {
            return Err(Error::config(format!(
                "an amount of money must be a non-negative number of dollars, got {usd}"
            )));
        }
        // Nanodollars first (what a decimal in a configuration file means), then femtodollars.
        Ok(Cost((usd * 1e9).round() as u128 * 1_000_000))
    }

    /// The amount in dollars, as a float for display or export (counting stays exact in [`Cost`]).
    pub fn usd(self) -> f64 {
        self.0 as f64 / FEMTO_PER_USD as f64
    }

    /// What `self` counts beyond `earlier`, never below zero (one turn's share of a conversation's cost).
    #[must_use]
    pub fn saturating_sub(self, earlier: Cost) -> Cost {
        Cost(self.0.saturating_sub(earlier.0))
    }

    /// The amount in femtodollars (1e-15 dollars), exact.
    pub fn femtodollars(self) -> u128 {
        self.0
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rounded half up to the micro-dollar.
        let micro = self.0.saturating_add(500_000_000) / 1_000_000_000;
        write!(f, "${}.{:06}", micro / 1_000_000, micro % 1_000_000)
    }
}

/// Prices by model id. A lookup matches the id exactly, or an id that is a listed one followed by a dated snapshot
/// suffix (`claude-sonnet-4-6-20260217` is priced as `claude-sonnet-4-6`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriceTable {
    entries: Vec<(String, Pricing)>,
}

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        PriceTable::default()
    }

    /// Current Anthropic models at their list prices for requests within the standard 200K-token window (the
    /// crate asks for no longer window), cache writes at the five-minute rate. Models whose price is not listed
    /// here are unknown: supply them with [`PriceTable::with`] or `llm.pricing`.
    pub fn anthropic() -> Self {
        const MODELS: [(&str, f64, f64); 11] = [
            ("claude-opus-4-6", 5.0, 25.0),
            ("claude-opus-4-5", 5.0, 25.0),
            ("claude-opus-4-1", 15.0, 75.0),
            ("claude-opus-4-0", 15.0, 75.0),
            ("claude-opus-4", 15.0, 75.0),
            ("claude-sonnet-4-6", 3.0, 15.0),
            ("claude-sonnet-4-5", 3.0, 15.0),
            ("claude-sonnet-4-0", 3.0, 15.0),
            ("claude-sonnet-4", 3.0, 15.0),
            ("claude-haiku-4-5", 1.0, 5.0),
            ("claude-3-5-haiku", 0.8, 4.0),
        ];
        let entries = MODELS
            .iter()
            .filter_map(|&(model, input, output)| {
                // Anthropic's cache reads cost a tenth of input, five-minute cache writes a quarter more.
                let pricing =
                    Pricing::per_million(input, output).and_then(|p| p.with_cache(input / 10.0, input * 1.25));
                pricing.ok().map(|p| (model.to_owned(), p))
            })
            .collect();
        PriceTable { entries }
    }

    /// Add or replace the price of `model`.
    #[must_use]
    pub fn with(mut self, model: impl Into<String>, pricing: Pricing) -> Self {
        let model = model.into();
        self.entries.retain(|(m, _)| *m != model);
        self.entries.push((model, pricing));
        self
    }

    /// The price of `model`, or `None` when it is unknown.
    pub fn lookup(&self, model: &str) -> Option<Pricing> {
        let exact = self.entries.iter().find(|(m, _)| m == model);
        exact.or_else(|| self.entries.iter().find(|(m, _)| is_snapshot_of(model, m))).map(|(_, p)| *p)
    }
}

/// Whether `model` is `base` followed by `-YYYYMMDD`.
fn is_snapshot_of(model: &str, base: &str) -> bool {
    model
        .strip_prefix(base)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|date| date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_written_with_decimals_are_exact() {
        let p = Pricing::per_million(0.3, 0.1).unwrap().with_cache(0.03, 0.375).unwrap();
        let usage =
            Usage { input_tokens: 1_000_000, output_tokens: 3, cache_read_tokens: 10, cache_creation_tokens: 0 };
        // 0.3 + 3 * 0.1e-6 + 10 * 0.03e-6 dollars.
        assert_eq!(p.cost(&usage), Some(Cost(300_000_000_000_000 + 300_000_000 + 300_000_000)));
    }

    #[test]
    fn display_rounds_to_the_microdollar() {
        assert_eq!(Cost(1_499_999_999).to_string(), "$0.000001");
        assert_eq!(Cost(2_000_000_000_000_000).to_string(), "$2.000000");
        assert_eq!(Cost::from_usd(0.25).unwrap().to_string(), "$0.250000");
    }

    #[test]
    fn snapshots_match_their_model_but_other_suffixes_do_not() {
        let t = PriceTable::anthropic();
        assert!(t.lookup("claude-haiku-4-5-20251001").is_some());
        assert!(t.lookup("claude-haiku-4-5-fast").is_none());
        assert!(t.lookup("claude-opus-4-8").is_none());
    }

    #[test]
    fn cost_1_absurd_counts_saturate_instead_of_overflowing() {
        let p = Pricing::per_million(1.7e10, 1.7e10).unwrap().with_cache(1.7e10, 1.7e10).unwrap();
        let most = Usage {
            input_tokens: u64::MAX,
            output_tokens: u64::MAX,
            cache_read_tokens: u64::MAX,
            cache_creation_tokens: u64::MAX,
        };
        assert_eq!(p.cost(&most), Some(Cost(u128::MAX)));
        assert!(Cost(u128::MAX).to_string().starts_with('$'));
    }

    #[test]
    fn bad_prices_are_refused() {
        assert!(Pricing::per_million(-1.0, 1.0).is_err());
        assert!(Pricing::per_million(f64::NAN, 1.0).is_err());
        assert!(Cost::from_usd(f64::INFINITY).is_err());
    }
}
