//! A run's own budget (WORK-6): limits that may only narrow the configured `llm.budget`, so a caller that
//! submits work (a queued request, a host's per-tenant quota) can spend less than the operator allows, never more.

use super::Inner;
use crate::error::{Error, Result};
use crate::llm::Cost;

/// Per-run limits, each applied only where it is tighter than the configured one (`llm.budget`): a wider value
/// has no effect, so a run can never spend more than the configuration allows.
///
/// ```
/// use fisk_ai::agent::{RunBudget, RunOptions};
///
/// let budget = RunBudget::new().with_max_tokens(20_000).with_max_iterations(5);
/// let options = RunOptions::new().with_budget(budget);
/// assert_eq!(options.budget().max_tokens(), Some(20_000));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunBudget {
    max_tokens: Option<u64>,
    max_iterations: Option<u32>,
    max_cost: Option<Cost>,
}

impl RunBudget {
    /// No narrowing: the configured budget applies as it is.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` tokens over the run (`llm.budget.max_tokens` when that is lower).
    #[must_use]
    pub fn with_max_tokens(mut self, n: u64) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// At most `n` model calls (`llm.budget.max_iterations` when that is lower).
    #[must_use]
    pub fn with_max_iterations(mut self, n: u32) -> Self {
        self.max_iterations = Some(n);
        self
    }

    /// At most `cost` spent (`llm.budget.max_cost` when that is lower). A run whose model has no complete price
    /// cannot enforce it and is refused before it starts, as `llm.budget.max_cost` is (COST-4).
    #[must_use]
    pub fn with_max_cost(mut self, cost: Cost) -> Self {
        self.max_cost = Some(cost);
        self
    }

    /// The token limit set here.
    pub fn max_tokens(&self) -> Option<u64> {
        self.max_tokens
    }

    /// The model-call limit set here.
    pub fn max_iterations(&self) -> Option<u32> {
        self.max_iterations
    }

    /// The money limit set here.
    pub fn max_cost(&self) -> Option<Cost> {
        self.max_cost
    }
}

/// The limits a run enforces: the configured ones, narrowed by its [`RunBudget`]. `narrowed_*` say whether the
/// run's own value won, so a message names the limit that ended the run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) max_tokens: u64,
    pub(super) narrowed_tokens: bool,
    /// The run's own call limit over the whole run (a conversation's cap grows with each follow-up; this does not).
    pub(super) max_iterations: Option<u32>,
    pub(super) max_cost: Option<Cost>,
    pub(super) narrowed_cost: bool,
}

impl Limits {
    pub(super) fn of(inner: &Inner, budget: &RunBudget) -> Limits {
        let configured = inner.config.llm.budget.max_tokens();
        let max_tokens = budget.max_tokens.map_or(configured, |n| n.min(configured));
        let max_iterations = budget.max_iterations;
        let max_cost = match (inner.long.max_cost, budget.max_cost) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Limits {
            max_tokens,
            narrowed_tokens: max_tokens < configured,
            max_iterations,
            max_cost,
            narrowed_cost: budget.max_cost.is_some_and(|b| inner.long.max_cost.is_none_or(|a| b < a)),
        }
    }
}

/// COST-4 for a run's own money limit: refused before anything runs when the model's price is not complete.
pub(super) fn check(inner: &Inner, budget: &RunBudget) -> Result<()> {
    if budget.max_cost.is_some() && !inner.long.pricing.is_some_and(|p| p.is_complete()) {
        return Err(Error::config(format!(
            "the run's max_cost cannot be enforced: the price of model {} is not known in full (give every price in \
             llm.pricing)",
            inner.model
        )));
    }
    Ok(())
}
