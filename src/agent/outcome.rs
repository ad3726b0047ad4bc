use crate::config::format_duration;
use crate::error::Error;
use crate::llm::{Cost, Message, Usage};
use crate::session::SessionId;
use std::time::{Duration, SystemTime};

// Defined with the journal records (the session layer does not depend on the agent); re-exported here.
pub use crate::session::TerminalReason;

/// Counters of one run (LOOP-12).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunStats {
    /// Model calls made.
    pub llm_calls: u32,
    /// Tool calls dispatched, rejected ones included.
    pub tool_calls: u32,
    /// Of those, calls of imported tools.
    pub remote_tool_calls: u32,
    /// Tokens over every call, summarising calls of compaction included.
    pub usage: Usage,
    /// What those tokens cost (COST-1), or `None` when the model's price is unknown: never a guess, never zero.
    pub cost: Option<Cost>,
    /// How many times older turns were summarised (COMP-1).
    pub compactions: u32,
    /// The model.
    pub model: String,
    /// When the run started.
    pub started: SystemTime,
    /// Wall time of the run.
    pub latency: Duration,
}

impl RunStats {
    /// Zero counters for `model`, starting now (for a front end that reports a run that never started).
    pub fn new(model: &str) -> Self {
        RunStats {
            llm_calls: 0,
            tool_calls: 0,
            remote_tool_calls: 0,
            usage: Usage::default(),
            cost: None,
            compactions: 0,
            model: model.to_owned(),
            started: SystemTime::now(),
            latency: Duration::ZERO,
        }
    }

    /// The LOOP-13 summary line, exactly:
    /// `Run summary: [session=<id> ][model=<model> ]llm_calls=<n> tool_calls=<n>[ remote_tool_calls=<n>]
    /// tokens=<in>/<out>[ cached=<n>][ cache_write=<n>] cost=<$d.dddddd|unknown>[ compactions=<n>]
    /// latency=<duration>` (COST-5: the cost is always shown, `unknown` when the model's price is).
    ///
    /// ```
    /// # use fisk_ai::agent::RunStats;
    /// # fn show(stats: &RunStats) {
    /// eprintln!("{}", stats.summary(false, None, false));
    /// # }
    /// ```
    pub fn summary(&self, suspended: bool, session: Option<&str>, verbose: bool) -> String {
        let mut s = String::from(if suspended { "Run suspended: " } else { "Run summary: " });
        if let Some(id) = session.filter(|s| !s.is_empty()) {
            s.push_str(&format!("session={id} "));
        }
        if !self.model.is_empty() {
            s.push_str(&format!("model={} ", self.model));
        }
        s.push_str(&format!("llm_calls={} tool_calls={}", self.llm_calls, self.tool_calls));
        if self.remote_tool_calls > 0 {
            s.push_str(&format!(" remote_tool_calls={}", self.remote_tool_calls));
        }
        s.push_str(&format!(" tokens={}/{}", self.usage.input_tokens, self.usage.output_tokens));
        if self.usage.cache_read_tokens > 0 {
            s.push_str(&format!(" cached={}", self.usage.cache_read_tokens));
        }
        if verbose && self.usage.cache_creation_tokens > 0 {
            s.push_str(&format!(" cache_write={}", self.usage.cache_creation_tokens));
        }
        match self.cost {
            Some(cost) => s.push_str(&format!(" cost={cost}")),
            None => s.push_str(" cost=unknown"),
        }
        if self.compactions > 0 {
            s.push_str(&format!(" compactions={}", self.compactions));
        }
        // Rounded to the millisecond (LOOP-13), not truncated.
        let rounded = self.latency.saturating_add(Duration::from_micros(500)).as_millis();
        let ms = Duration::from_millis(u64::try_from(rounded).unwrap_or(u64::MAX));
        s.push_str(&format!(" latency={}", format_duration(ms)));
        s
    }
}

/// The result of a run, returned even when it failed (OVR-2).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOutcome {
    /// How it ended.
    pub reason: TerminalReason,
    /// The final answer (also the truncated text of a `max_tokens` turn).
    pub answer: Option<String>,
    /// What went wrong, for every reason but `completed` and `suspended`: [`ErrorKind::Provider`] when the model
    /// call failed, [`ErrorKind::Run`] for a budget, the iteration limit, cancellation and the like, and the
    /// session or configuration error that stopped a checkpointed run.
    ///
    /// [`ErrorKind::Provider`]: crate::ErrorKind::Provider
    /// [`ErrorKind::Run`]: crate::ErrorKind::Run
    pub error: Option<Error>,
    /// Counters.
    pub stats: RunStats,
    /// The session, when the run was checkpointed.
    pub session_id: Option<SessionId>,
    /// The conversation as it stood at the end.
    pub messages: Vec<Message>,
    /// Whether the run crashed (OVR-5): the error is an internal one and no summary should be shown (CLI-13).
    pub internal_error: bool,
    /// The final answer parsed as JSON, when the run had an output schema
    /// ([`RunOptions::with_output_schema`](crate::agent::RunOptions::with_output_schema)) and completed: valid
    /// against that schema, and [`answer`](Self::answer) is its text (OUT-6).
    pub output: Option<serde_json::Value>,
}
