//! The budgeted agent loop (SPEC section 9) over a selected [`Toolset`].
//!
//! ```no_run
//! use fisk_ai::agent::{Agent, RunOptions};
//! use fisk_ai::gate::DenyAll;
//! use fisk_ai::llm::ScriptedProvider;
//! use fisk_ai::Config;
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let config = Config::load("agent.yaml")?;
//! let agent = Agent::builder()
//!     .config(config)
//!     .provider(ScriptedProvider::new([]))
//!     .gate(DenyAll)
//!     .build()
//!     .await?; // introspects the application and runs the selection pipeline once
//! let outcome = agent.run("report on the ORDERS stream", RunOptions::default()).await;
//! println!("{:?}: {}", outcome.reason, outcome.answer.unwrap_or_default());
//! # Ok(()) }
//! ```

mod budget;
mod builder;
mod conversation;
mod events;
mod long_run;
mod outcome;
mod resume;
mod run;
pub mod search;
mod spans;

pub use budget::RunBudget;
pub use builder::AgentBuilder;
pub use conversation::{Continuation, NextStep, TurnEnd};
pub use events::{EventSink, NoEvents, RunEvent};
pub use long_run::DEFAULT_COMPACTION_PROMPT;
pub use outcome::{RunOutcome, RunStats, TerminalReason};
pub use search::{CALL_TOOL, SEARCH_TOOLS};

use crate::config::Config;
use crate::error::Result;
use crate::gate::ConfirmGate;
use crate::llm::{ModelProvider, ToolPlan};
use crate::memory::MemoryStore;
use crate::select::Toolset;
use crate::session::{Fingerprint, SessionId, SessionStore};
use crate::tool::CancellationToken;
use crate::warning::Warning;
use std::sync::Arc;

/// A loaded agent: configuration, provider, gate and the selected tools. Cheap to clone; one agent serves many
/// concurrent runs.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

struct Inner {
    /// The agent's name in traces: the configuration's identity.
    name: String,
    /// Whether traces carry content (AgentBuilder::trace_content).
    trace_content: bool,
    config: Config,
    model: String,
    provider: Arc<dyn ModelProvider>,
    gate: Arc<dyn ConfirmGate>,
    /// The harness's policy hook (POL-1).
    policy: Option<Arc<dyn crate::policy::PolicyHook>>,
    /// The harness's audit trail (AUD-1).
    audit: Option<Arc<crate::audit::AuditTrail>>,
    /// What every request carries.
    plan: ToolPlan,
    /// The selected tools.
    tools: Toolset,
    /// What a call may name: the selected tools, plus `search_tools` under client-side search.
    callable: Toolset,
    /// Whether deferred tools are reached through `search_tools` and `call_tool` (the provider has no search).
    client_search: bool,
    system: Vec<String>,
    warnings: Vec<Warning>,
    triggers: Vec<String>,
    /// The memory store, when memory is enabled: each run gets its own memory tools over it, so per-run rules
    /// (MEM-25 read-before-update, MEM-27 count once per run) never leak between runs.
    memory: Option<Arc<dyn MemoryStore>>,
    /// Whether its index is appended to the system prompt at each run start (MEM-15).
    memory_index: bool,
    /// Where checkpointed runs are journaled, or why they cannot be.
    sessions: std::result::Result<Arc<dyn SessionStore>, String>,
    /// The configuration's resume fingerprint (SESS-16).
    fingerprint: Fingerprint,
    /// The model's price, the money budget and the compaction plan.
    long: long_run::LongRun,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.inner.model)
            .field("provider", &self.inner.provider.capabilities().provider)
            .field("tools", &self.inner.tools)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Start building an agent.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// The tools a run may use, in request order.
    pub fn toolset(&self) -> &Toolset {
        &self.inner.tools
    }

    /// What each request carries, with the server-side deferral decisions. Under client-side search (the provider
    /// has none) that is the direct tools plus `search_tools` and `call_tool`, the same on every turn.
    pub fn tool_plan(&self) -> &ToolPlan {
        &self.inner.plan
    }

    /// Whether deferred tools are reached through the agent's own `search_tools` and `call_tool`
    /// ([`SEARCH_TOOLS`], [`CALL_TOOL`]) because the provider has no server-side tool search.
    pub fn client_tool_search(&self) -> bool {
        self.inner.client_search
    }

    /// Warnings found while building (configuration, tags, selection, tool search, gating).
    pub fn warnings(&self) -> &[Warning] {
        &self.inner.warnings
    }

    /// The model id.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The configuration the agent was built from.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Whether the model's price is known in full (cache prices included), so a money budget can be enforced
    /// (COST-4).
    pub fn has_complete_price(&self) -> bool {
        self.inner.long.pricing.is_some_and(|p| p.is_complete())
    }

    /// The session store checkpointed runs are journaled to, or why there is none.
    #[cfg(feature = "nats")]
    pub(crate) fn session_store(&self) -> std::result::Result<&Arc<dyn SessionStore>, &str> {
        self.inner.sessions.as_ref().map_err(String::as_str)
    }

    /// What `usage` costs at this agent's model price (COST-1): `None` when the price is unknown.
    pub fn cost_of(&self, usage: &crate::llm::Usage) -> Option<crate::llm::Cost> {
        self.inner.long.pricing.and_then(|p| p.cost(usage))
    }

    /// The fingerprint a checkpointed run of this agent records and a resume compares (SESS-16).
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.inner.fingerprint
    }

    /// Run the loop on `prompt` to a terminal state. Never fails: every failure is a [`RunOutcome`] with its
    /// reason, error text and statistics (OVR-2); a panic inside the run is caught and reported as an internal
    /// error (OVR-5). With [`RunOptions::with_checkpoint`] every step is journaled to a new session first
    /// (SESS-1); a session that cannot be created ends the run with reason `error` before any model call, and so
    /// does an output schema whose final-answer tool name a selected tool already has (OUT-2).
    pub async fn run(&self, prompt: &str, options: RunOptions) -> RunOutcome {
        let checked =
            run::check_output(&self.inner, &options).and_then(|()| budget::check(&self.inner, &options.budget));
        if let Err(e) = checked {
            return RunOutcome {
                reason: TerminalReason::Error,
                answer: None,
                error: Some(e),
                stats: RunStats::new(&self.inner.model),
                session_id: None,
                messages: Vec::new(),
                internal_error: false,
                output: None,
            };
        }
        resume::run(&self.inner, prompt, options).await
    }

    /// Continue checkpointed session `id` (SESS-13..23): its conversation, counters and held confirmation answers
    /// are restored and replayed as a [`RunEvent::Replay`], its pending tool calls run first, and the loop goes on
    /// journaling to the same session. Recorded model turns and tool results are never repeated (DESIGN §6.9).
    ///
    /// Fails before doing anything when the session cannot be opened, is locked by another run, is corrupt, has
    /// completed, was interactive, was started with another provider, or was started with another configuration
    /// (one line per changed field) unless [`RunOptions::with_force`] is set; a forced resume drops the recorded
    /// answers (GATE-15).
    ///
    /// # Errors
    ///
    /// A session error when the session cannot be opened, is locked by another run, is corrupt, has completed, was
    /// interactive, was started with another provider, or (without [`RunOptions::with_force`]) with another
    /// configuration; an I/O or session error when the reset of the recorded answers cannot be journaled; a
    /// configuration error when a selected tool has the final-answer tool's name and an output schema is given
    /// (OUT-2). Nothing has run when it fails.
    pub async fn resume(&self, id: &SessionId, options: RunOptions) -> Result<RunOutcome> {
        run::check_output(&self.inner, &options)?;
        budget::check(&self.inner, &options.budget)?;
        resume::resume(&self.inner, id, options).await
    }
}

/// Per-run settings.
#[derive(Clone, Default)]
pub struct RunOptions {
    cancel: CancellationToken,
    suspend: CancellationToken,
    events: Option<Arc<dyn EventSink>>,
    checkpoint: Option<SessionId>,
    force: bool,
    continuation: Option<Arc<dyn Continuation>>,
    output: Option<crate::llm::OutputSchema>,
    budget: RunBudget,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("events", &self.events.is_some())
            .field("checkpoint", &self.checkpoint)
            .field("force", &self.force)
            .field("conversation", &self.continuation.is_some())
            .field("output_schema", &self.output.is_some())
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl RunOptions {
    /// Defaults: never cancelled, events discarded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel the run (and any running tool's process group) when `token` is cancelled.
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Deliver events to `sink`.
    #[must_use]
    pub fn with_events(mut self, sink: impl EventSink + 'static) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// Journal the run to a new session `id` (SESS-1, SESS-2): [`SessionId::generate`] for a fresh KSUID, or a
    /// name of the host's. Ignored by [`Agent::resume`], which continues the session it is given.
    #[must_use]
    pub fn with_checkpoint(mut self, id: SessionId) -> Self {
        self.checkpoint = Some(id);
        self
    }

    /// Ask a checkpointed run to suspend when `token` is cancelled (SESS-24): the step in progress completes, the
    /// run stops at the next boundary with reason `suspended` and can be resumed. A run that is not checkpointed
    /// ignores it (cancel such a run instead).
    #[must_use]
    pub fn with_suspend(mut self, token: CancellationToken) -> Self {
        self.suspend = token;
        self
    }

    /// Make the run a conversation (LOOP-15, see [`Continuation`]): after each turn `continuation` says whether a
    /// follow-up, a reset or the end comes next. A checkpointed conversation is a chat session (SESS-23): it
    /// resumes only with a continuation, and a one-shot session only without one.
    #[must_use]
    pub fn with_continuation(mut self, continuation: impl Continuation + 'static) -> Self {
        self.continuation = Some(Arc::new(continuation));
        self
    }

    /// Require the final answer to be JSON valid against `schema` (OUT-1): every model request of the run asks for
    /// it through the provider's own mechanism, the answer is validated, one repair turn is allowed (OUT-7), and an
    /// answer still invalid after it ends the run with reason `error` and the validation errors (OUT-8). A
    /// completed run's [`RunOutcome::output`] holds the parsed answer. A selected tool named
    /// [`FINAL_ANSWER_TOOL`](crate::llm::FINAL_ANSWER_TOOL) is refused before anything runs (OUT-2).
    #[must_use]
    pub fn with_output_schema(mut self, schema: crate::llm::OutputSchema) -> Self {
        self.output = Some(schema);
        self
    }

    /// Narrow the configured budget for this run (WORK-6): each limit of `budget` applies only where it is tighter
    /// than `llm.budget`. A money limit needs the model's complete price, as `llm.budget.max_cost` does; without
    /// it the run is refused before anything runs.
    #[must_use]
    pub fn with_budget(mut self, budget: RunBudget) -> Self {
        self.budget = budget;
        self
    }

    /// The narrowing [`with_budget`](Self::with_budget) set.
    pub fn budget(&self) -> &RunBudget {
        &self.budget
    }

    /// The schema [`with_output_schema`](Self::with_output_schema) set.
    pub fn output_schema(&self) -> Option<&crate::llm::OutputSchema> {
        self.output.as_ref()
    }

    /// Let [`Agent::resume`] continue a session whose configuration changed (SESS-19); its recorded confirmation
    /// answers are dropped. Never overrides a provider change (SESS-18).
    #[must_use]
    pub fn with_force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }
}
