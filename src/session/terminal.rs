//! How a run ended: the agent's outcome and the journal's terminal record share this one type.

use std::fmt;

/// How a run ended (BUDGET-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TerminalReason {
    /// The model gave its final answer.
    Completed,
    /// The run stopped at a boundary and can be resumed.
    Suspended,
    /// Something failed: the provider, a truncated or refused reply, cancellation, an internal error.
    Error,
    /// The cumulative token budget was reached.
    Budget,
    /// The iteration cap was reached.
    MaxIterations,
}

impl TerminalReason {
    /// The wire name (`completed`, `suspended`, `error`, `budget`, `max_iterations`).
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalReason::Completed => "completed",
            TerminalReason::Suspended => "suspended",
            TerminalReason::Error => "error",
            TerminalReason::Budget => "budget",
            TerminalReason::MaxIterations => "max_iterations",
        }
    }

    /// The reason of a wire name, e.g. from a journal's terminal record.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "completed" => TerminalReason::Completed,
            "suspended" => TerminalReason::Suspended,
            "error" => TerminalReason::Error,
            "budget" => TerminalReason::Budget,
            "max_iterations" => TerminalReason::MaxIterations,
            _ => return None,
        })
    }

    /// Whether the CLI exits 0 (CLI-16).
    pub fn is_success(self) -> bool {
        matches!(self, TerminalReason::Completed | TerminalReason::Suspended)
    }
}

impl fmt::Display for TerminalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
