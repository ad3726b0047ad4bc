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

mod events;
mod outcome;
mod resume;
mod run;

pub use events::{EventSink, NoEvents, RunEvent};
pub use outcome::{RunOutcome, RunStats, TerminalReason};

use crate::builtin::{BuiltinEnv, BuiltinRegistry, BuiltinTool};
use crate::config::{Config, Mode};
use crate::error::{Error, Result};
use crate::exec::ChildEnv;
use crate::gate::{ConfirmGate, DenyAll};
use crate::llm::{ModelProvider, ProviderFactory, ProviderRegistry, ProviderSettings, ToolPlan};
use crate::memory::{FileMemoryStore, MemoryStore};
use crate::operator::{NoOperator, Prompter};
use crate::select::{Selection, Toolset};
use crate::session::{FileSessionStore, Fingerprint, FingerprintInput, SessionId, SessionStore};
use crate::source::{ToolSource, checked_dir};
use crate::tool::{CancellationToken, Tool};
use crate::warning::Warning;
use std::path::PathBuf;
use std::sync::Arc;

/// A loaded agent: configuration, provider, gate and the selected tools. Cheap to clone; one agent serves many
/// concurrent runs.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    model: String,
    provider: Arc<dyn ModelProvider>,
    gate: Arc<dyn ConfirmGate>,
    plan: ToolPlan,
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
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.inner.model)
            .field("provider", &self.inner.provider.capabilities().provider)
            .field("tools", self.inner.plan.toolset())
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
        self.inner.plan.toolset()
    }

    /// The tools with their tool-search deferral decisions.
    pub fn tool_plan(&self) -> &ToolPlan {
        &self.inner.plan
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

    /// The fingerprint a checkpointed run of this agent records and a resume compares (SESS-16).
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.inner.fingerprint
    }

    /// Run the loop on `prompt` to a terminal state. Never fails: every failure is a [`RunOutcome`] with its
    /// reason, error text and statistics (OVR-2); a panic inside the run is caught and reported as an internal
    /// error (OVR-5). With [`RunOptions::with_checkpoint`] every step is journaled to a new session first
    /// (SESS-1); a session that cannot be created ends the run with reason `error` before any model call.
    pub async fn run(&self, prompt: &str, options: RunOptions) -> RunOutcome {
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
    pub async fn resume(&self, id: &SessionId, options: RunOptions) -> Result<RunOutcome> {
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
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("events", &self.events.is_some())
            .field("checkpoint", &self.checkpoint)
            .field("force", &self.force)
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

    /// Let [`Agent::resume`] continue a session whose configuration changed (SESS-19); its recorded confirmation
    /// answers are dropped. Never overrides a provider change (SESS-18).
    #[must_use]
    pub fn with_force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }
}

/// Builds an [`Agent`]; by value, finished with [`AgentBuilder::build`].
pub struct AgentBuilder {
    config: Option<Config>,
    provider: Option<Arc<dyn ModelProvider>>,
    providers: ProviderRegistry,
    gate: Option<Arc<dyn ConfirmGate>>,
    prompter: Option<Arc<dyn Prompter>>,
    memory: Option<Arc<dyn MemoryStore>>,
    sources: Vec<Arc<dyn ToolSource>>,
    tools: Vec<Arc<dyn Tool>>,
    registry: BuiltinRegistry,
    working_dir: Option<PathBuf>,
    store_base: Option<PathBuf>,
    sessions: Option<Arc<dyn SessionStore>>,
}

impl Default for AgentBuilder {
    fn default() -> Self {
        AgentBuilder {
            config: None,
            provider: None,
            providers: ProviderRegistry::with_defaults(),
            gate: None,
            prompter: None,
            memory: None,
            sources: Vec::new(),
            tools: Vec::new(),
            registry: BuiltinRegistry::with_defaults(),
            working_dir: None,
            store_base: None,
            sessions: None,
        }
    }
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("config", &self.config.is_some())
            .field("provider", &self.provider.is_some())
            .field("sources", &self.sources.len())
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The parsed configuration (required). The wrapped application is added as a source automatically when
    /// `application_path` is set.
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// The model provider. Without one, `llm.provider` is resolved from the [provider
    /// registry](AgentBuilder::providers) with the provider's own environment variables (PROV-3).
    #[must_use]
    pub fn provider(self, provider: impl ModelProvider + 'static) -> Self {
        self.provider_arc(Arc::new(provider))
    }

    /// The model provider, shared.
    #[must_use]
    pub fn provider_arc(mut self, provider: Arc<dyn ModelProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The providers `llm.provider` can name when no [`provider`](AgentBuilder::provider) is given
    /// ([`ProviderRegistry::with_defaults`] unless replaced). Every registered provider's credential variables are
    /// scrubbed from every child, whichever provider runs (PROV-16).
    #[must_use]
    pub fn providers(mut self, providers: ProviderRegistry) -> Self {
        self.providers = providers;
        self
    }

    /// Register one more provider factory in the [provider registry](AgentBuilder::providers).
    #[must_use]
    pub fn provider_factory(mut self, factory: impl ProviderFactory + 'static) -> Self {
        self.providers.register(Arc::new(factory));
        self
    }

    /// Who approves gated calls; without one every gated call is declined.
    #[must_use]
    pub fn gate(mut self, gate: impl ConfirmGate + 'static) -> Self {
        self.gate = Some(Arc::new(gate));
        self
    }

    /// Who answers the `ask_human_*` tools; without one nobody can be asked and they decline (HITL-7).
    #[must_use]
    pub fn prompter(mut self, prompter: impl Prompter + 'static) -> Self {
        self.prompter = Some(Arc::new(prompter));
        self
    }

    /// The memory store behind `memory_*` when `harness.memory.enabled` (OVR-7); borrowed, never closed by a run.
    /// Without one the file backend of `harness.memory` is used.
    #[must_use]
    pub fn memory_store(mut self, store: impl MemoryStore + 'static) -> Self {
        self.memory = Some(Arc::new(store));
        self
    }

    /// Where checkpointed runs are journaled (OVR-7); borrowed, never closed by a run. Without one the
    /// `harness.sessions` file backend is used ([`FileSessionStore::from_config`]).
    #[must_use]
    pub fn session_store(self, store: impl SessionStore + 'static) -> Self {
        self.session_store_arc(Arc::new(store))
    }

    /// The session store, shared.
    #[must_use]
    pub fn session_store_arc(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.sessions = Some(store);
        self
    }

    /// Resolve relative store paths (the memory and session directories) under `dir` (OVR-6): an absolute path to an existing
    /// directory.
    #[must_use]
    pub fn store_base(mut self, dir: impl Into<PathBuf>) -> Self {
        self.store_base = Some(dir.into());
        self
    }

    /// Register a built-in factory of the host's; it is enabled like the crate's own, by a `harness.tools` entry
    /// of the same name (replacing a factory of that name).
    #[must_use]
    pub fn builtin(mut self, factory: impl BuiltinTool + 'static) -> Self {
        self.registry.register(Arc::new(factory));
        self
    }

    /// Another tool source.
    #[must_use]
    pub fn source(mut self, source: impl ToolSource + 'static) -> Self {
        self.sources.push(Arc::new(source));
        self
    }

    /// A custom tool of the host's (OVR-8); its name must not collide with any other tool.
    #[must_use]
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Run command tools in `dir` (OVR-6): an absolute path to an existing directory.
    #[must_use]
    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Validate the configuration for a run, load every source once, run the selection pipeline, and plan tool
    /// search. Fails on configuration errors, source failures, name collisions and an empty tool set (SEL-13).
    pub async fn build(self) -> Result<Agent> {
        let config = self.config.ok_or_else(|| Error::config("an agent needs a configuration"))?;
        let mut warnings = config.validate(Mode::Agent)?;
        config.check_supported()?;
        let provider = match self.provider {
            Some(provider) => provider,
            None => self.providers.build(&ProviderSettings::new(&config))?,
        };
        let model = config.llm.model.clone().ok_or_else(|| Error::config_key("llm.model", "llm.model is required"))?;
        let caps = provider.capabilities();

        let mut env = ChildEnv::new();
        for name in caps.credentials.iter().cloned().chain(self.providers.credentials()) {
            env = env.with_scrubbed(name);
        }
        if let Some(dir) = checked_dir("tool working directory", self.working_dir.as_deref())? {
            env = env.with_working_dir(dir);
        }

        let mut candidates = crate::source::load_all(&config, self.sources, env, &mut warnings).await?;
        candidates.extend(self.tools);
        let prompter: Arc<dyn Prompter> = self.prompter.unwrap_or_else(|| Arc::new(NoOperator));
        let env = BuiltinEnv::new(&config, prompter.clone())?;
        let harness = &config.harness;
        let mut system: Vec<String> = config.system_prompt.iter().cloned().collect();
        // SEL-12 and LOOP-2 order: HITL, then memory, then harness.tools.
        if harness.human_in_the_loop.enabled {
            candidates.extend(crate::operator::hitl_tools(prompter.clone()));
        }
        let memory = if harness.memory.enabled {
            let store = match self.memory {
                Some(store) if harness.memory.backend == "file" => store,
                Some(_) => {
                    return Err(Error::config_key(
                        "harness.memory.backend",
                        format!(
                            "a memory store was injected but harness.memory.backend names \"{}\"; remove one of them",
                            harness.memory.backend
                        ),
                    ));
                }
                None if harness.memory.backend == "file" => {
                    let base = checked_dir("store base", self.store_base.as_deref())?;
                    Arc::new(FileMemoryStore::from_config(
                        &harness.memory.options,
                        &config.identity()?,
                        base,
                        &env.working_dir,
                    )) as Arc<dyn MemoryStore>
                }
                None => {
                    return Err(Error::config_key(
                        "harness.memory.backend",
                        format!(
                            "the {} memory backend is not supported in this build; use backend: file",
                            harness.memory.backend
                        ),
                    ));
                }
            };
            candidates.extend(crate::memory::memory_tools(store.clone()));
            Some(store)
        } else {
            None
        };
        candidates.extend(self.registry.build_enabled(&config, &env)?);
        let toolset = Selection::from_config(&config)?.apply(candidates)?;
        warnings.extend(toolset.warnings().iter().cloned());
        toolset.ensure_not_empty(config.application_path.is_some())?;

        // The notes (LOOP-2) and HITL-11 concern the tools that survived selection, not the ones configured.
        let kept = |prefix: &str| {
            toolset
                .iter()
                .any(|t| t.spec().kind() == crate::tool::ToolKind::Builtin && t.spec().name().starts_with(prefix))
        };
        if harness.human_in_the_loop.enabled && kept("ask_human_") {
            system.push(crate::operator::hitl_note().to_owned());
            if !prompter.can_ask() {
                warnings.push(Warning::HitlWithoutOperator);
            }
        }
        let memory = memory.filter(|_| kept("memory_"));
        if memory.is_some() {
            system.push(crate::memory::memory_note().to_owned());
        }
        let memory_index = memory.is_some() && !harness.memory.no_index;

        let search_allowed = caps.tool_search && !config.llm.no_tool_search;
        if toolset.len() >= crate::llm::TOOL_SEARCH_THRESHOLD && !search_allowed {
            warnings.push(if caps.tool_search {
                Warning::ToolSearchDisabled { count: toolset.len() }
            } else {
                Warning::ToolSearchUnavailable { provider: caps.provider.clone(), count: toolset.len() }
            });
        }
        let gate: Arc<dyn ConfirmGate> = self.gate.unwrap_or_else(|| Arc::new(DenyAll));
        let gated = toolset.gated_count();
        if gated > 0 && !gate.can_ask() {
            warnings.push(Warning::GatedWithoutOperator { count: gated });
        }
        let mut triggers: Vec<String> = Vec::new();
        for t in toolset.iter().filter_map(|t| t.gate_trigger()) {
            if !triggers.iter().any(|x| x == t) {
                triggers.push(t.to_owned());
            }
        }
        let plan = ToolPlan::new(toolset, search_allowed);
        let budget = &config.llm.budget;
        let fingerprint = Fingerprint::compute(FingerprintInput {
            provider: &caps.provider,
            model: &model,
            system: &system,
            tools: &plan,
            thinking: config.llm.thinking.enabled,
            max_tokens: budget.max_tokens(),
            max_iterations: budget.max_iterations(),
        });
        // OVR-7, SESS-25: an injected store stands for the file default; the jetstream backend is not in this build.
        let backend = config.harness.sessions.backend.as_str();
        let sessions = match self.sessions {
            Some(_) if backend != "file" => {
                return Err(Error::config_key(
                    "harness.sessions.backend",
                    format!(
                        "a session store was injected but harness.sessions.backend names \"{backend}\"; remove one of them"
                    ),
                ));
            }
            Some(store) => Ok(store),
            None if backend == "file" => {
                let base = checked_dir("store base", self.store_base.as_deref())?;
                FileSessionStore::from_config(&config.harness.sessions.options, base)
                    .map(|s| Arc::new(s) as Arc<dyn SessionStore>)
                    .map_err(|e| e.to_string())
            }
            None => Err(format!(
                "harness.sessions.backend: the {backend} session backend is not supported in this build; use backend: file"
            )),
        };
        Ok(Agent {
            inner: Arc::new(Inner {
                config,
                model,
                provider,
                gate,
                plan,
                system,
                warnings,
                triggers,
                memory,
                memory_index,
                sessions,
                fingerprint,
            }),
        })
    }
}
