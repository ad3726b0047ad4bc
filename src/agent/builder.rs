//! Building an [`Agent`]: the assembly pipeline, the stores from their registries, and the tool-search plan.

use super::{Agent, Inner};
use crate::assemble;
use crate::builtin::{BuiltinEnv, BuiltinFactory, BuiltinRegistry};
use crate::config::{Config, Mode};
use crate::error::{Error, Result};
use crate::gate::{ConfirmGate, DenyAll};
use crate::llm::{ModelProvider, ProviderFactory, ProviderRegistry, ProviderSettings, ToolPlan};
use crate::memory::{MemoryBackend, MemoryBackends, MemorySettings, MemoryStore};
use crate::operator::{NoOperator, Prompter};
use crate::select::{SelectedTool, Toolset};
use crate::session::{Fingerprint, FingerprintInput, SessionBackend, SessionBackends, SessionSettings, SessionStore};
use crate::source::{ToolSource, checked_dir};
use crate::tool::Tool;
use crate::warning::Warning;
use std::path::PathBuf;
use std::sync::Arc;

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
    memory_backends: MemoryBackends,
    session_backends: SessionBackends,
    working_dir: Option<PathBuf>,
    store_base: Option<PathBuf>,
    sessions: Option<Arc<dyn SessionStore>>,
    trace_content: bool,
    #[cfg(feature = "nats")]
    nats: Option<crate::nats::NatsConnection>,
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
            memory_backends: MemoryBackends::with_defaults(),
            session_backends: SessionBackends::with_defaults(),
            working_dir: None,
            store_base: None,
            sessions: None,
            trace_content: false,
            #[cfg(feature = "nats")]
            nats: None,
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
    /// It wins over the [backend registry](AgentBuilder::memory_backend) and stands for the default `file`
    /// backend: a configuration naming another backend fails, since one of the two would be ignored.
    #[must_use]
    pub fn memory_store(mut self, store: impl MemoryStore + 'static) -> Self {
        self.memory = Some(Arc::new(store));
        self
    }

    /// Where checkpointed runs are journaled (OVR-7); borrowed, never closed by a run. It wins over the [backend
    /// registry](AgentBuilder::session_backend) and stands for the default `file` backend: a configuration naming
    /// another backend fails.
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

    /// Register a memory backend `harness.memory.backend` can name (replacing one of the same name); `file` is
    /// built in.
    #[must_use]
    pub fn memory_backend(mut self, backend: impl MemoryBackend + 'static) -> Self {
        self.memory_backends.register(Arc::new(backend));
        self
    }

    /// Register a session backend `harness.sessions.backend` can name (replacing one of the same name); `file` is
    /// built in.
    #[must_use]
    pub fn session_backend(mut self, backend: impl SessionBackend + 'static) -> Self {
        self.session_backends.register(Arc::new(backend));
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
    pub fn builtin(mut self, factory: impl BuiltinFactory + 'static) -> Self {
        self.registry.register(Arc::new(factory));
        self
    }

    /// The NATS connection every `remote_tools` host shares (CFG-15, OVR-7): borrowed, never closed by the agent.
    /// Without one the agent connects from `nats_context`, as its identity, when a host is configured.
    #[cfg(feature = "nats")]
    #[must_use]
    pub fn nats(mut self, nats: crate::nats::NatsConnection) -> Self {
        self.nats = Some(nats);
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

    /// Add prompts, model replies, tool arguments and tool results to the run's [tracing](crate::telemetry) as
    /// events with target [`CONTENT_TARGET`](crate::telemetry::CONTENT_TARGET). Off by default: spans then carry
    /// names, ids, counts and outcomes only. The content may hold secrets a tool printed or a user typed; turn it
    /// on only where the trace is kept as carefully as the conversation.
    #[must_use]
    pub fn trace_content(mut self, on: bool) -> Self {
        self.trace_content = on;
        self
    }

    /// Validate the configuration for a run, run the assembly pipeline once (sources, built-ins, selection), and
    /// plan tool search. Fails on configuration errors, source failures, name collisions and an empty tool set
    /// (SEL-13).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::ErrorKind::Config) when there is no configuration, it fails [`Mode::Agent`]
    /// validation, uses a key this version does not act on yet, or names no model or an unknown provider (or the
    /// provider cannot be built: no key, a bad base URL); an introspection error when the application cannot be loaded;
    /// a selection error on a tool-name collision or an empty tool set (SEL-13); a store error when the memory or
    /// session backend cannot open, or is named alongside an injected store.
    pub async fn build(mut self) -> Result<Agent> {
        let config = self.config.take().ok_or_else(|| Error::config("an agent needs a configuration"))?;
        let mut warnings = config.validate(Mode::Agent)?;
        config.check_supported()?;
        let provider = match self.provider.take() {
            Some(provider) => provider,
            None => self.providers.build(&ProviderSettings::new(&config))?,
        };
        let model = config.llm.model.clone().ok_or_else(|| Error::config_key("llm.model", "llm.model is required"))?;
        // PROV-16: the active provider's credentials and every registered one's.
        let credentials: Vec<String> =
            provider.capabilities().credentials.iter().cloned().chain(self.providers.credentials()).collect();
        // CFG-15: one connection for remote hosts and JetStream stores, made when the first of them needs it.
        #[cfg(feature = "nats")]
        let nats = match self.nats.take() {
            Some(connection) => Some(crate::nats::SharedNats::injected(connection)),
            None => config
                .identity()
                .ok()
                .map(|id| crate::nats::SharedNats::from_context(config.nats_context.as_deref(), id)),
        };
        let inputs = assemble::Inputs {
            sources: std::mem::take(&mut self.sources),
            credentials,
            working_dir: self.working_dir.as_deref(),
            imports: true,
            #[cfg(feature = "nats")]
            nats: nats.clone(),
        };
        let mut candidates = assemble::load(&config, inputs, &mut warnings).await?;
        candidates.extend(std::mem::take(&mut self.tools));
        let prompter: Arc<dyn Prompter> = self.prompter.take().unwrap_or_else(|| Arc::new(NoOperator));
        let env = BuiltinEnv::new(&config, prompter.clone())?;
        // SEL-12 and LOOP-2 order: HITL, then memory, then harness.tools.
        let mut built = BuiltNames::default();
        if config.harness.human_in_the_loop.enabled {
            let hitl = crate::operator::hitl_tools(prompter.clone());
            built.hitl = hitl.iter().map(|t| t.spec().name().to_owned()).collect();
            candidates.extend(hitl);
        }
        #[cfg(not(feature = "nats"))]
        let nats = None;
        let memory = self.open_memory(&config, &env, nats.as_ref()).await?;
        if let Some(store) = &memory {
            let tools = crate::memory::memory_tools(store.clone());
            built.memory = tools.iter().map(|t| t.spec().name().to_owned()).collect();
            candidates.extend(tools);
        }
        candidates.extend(self.registry.build_enabled(&config, &env)?);
        let toolset = candidates.select(&config, &mut warnings)?;
        toolset.ensure_not_empty(config.application_path.is_some())?;
        let sessions = self.open_sessions(&config, nats.as_ref()).await?;
        let tools = Tools { toolset, memory, prompter, sessions, built };
        Ok(finish(config, model, provider, self.gate.take(), tools, warnings, self.trace_content))
    }

    /// MEM-18, OVR-7: the injected store, else the configured backend from the registry; `None` when memory is off.
    async fn open_memory(
        &mut self,
        config: &Config,
        env: &BuiltinEnv,
        nats: Option<&SharedNats>,
    ) -> Result<Option<Arc<dyn MemoryStore>>> {
        let memory = &config.harness.memory;
        if !memory.enabled {
            return Ok(None);
        }
        if let Some(store) = self.memory.take() {
            return if memory.backend == "file" { Ok(Some(store)) } else { Err(conflict("memory", &memory.backend)) };
        }
        let identity = config.identity()?;
        let base = checked_dir("store base", self.store_base.as_deref())?;
        let settings = MemorySettings::new(config, &identity, &env.working_dir).with_store_base(base);
        #[cfg(feature = "nats")]
        let settings = settings.with_nats(nats);
        #[cfg(not(feature = "nats"))]
        let _ = nats;
        self.memory_backends.open(&settings).await.map(Some)
    }

    /// SESS-25, OVR-7: the injected store, else the configured backend; a backend that cannot open fails only the
    /// checkpointed runs, with its reason.
    async fn open_sessions(
        &mut self,
        config: &Config,
        nats: Option<&SharedNats>,
    ) -> Result<std::result::Result<Arc<dyn SessionStore>, String>> {
        let backend = config.harness.sessions.backend.as_str();
        if let Some(store) = self.sessions.take() {
            return if backend == "file" { Ok(Ok(store)) } else { Err(conflict("sessions", backend)) };
        }
        let base = checked_dir("store base", self.store_base.as_deref())?;
        let settings = SessionSettings::new(config).with_store_base(base);
        #[cfg(feature = "nats")]
        let settings = settings.with_nats(nats);
        #[cfg(not(feature = "nats"))]
        let _ = nats;
        Ok(self.session_backends.open(&settings).await.map_err(|e| e.to_string()))
    }
}

#[cfg(feature = "nats")]
use crate::nats::SharedNats;
/// Without NATS there is never a shared connection; the stand-in keeps one signature for both builds.
#[cfg(not(feature = "nats"))]
enum SharedNats {}

/// OVR-7: an injected store and a configured non-default backend cannot both be meant.
fn conflict(what: &str, backend: &str) -> Error {
    let store = if what == "memory" { "memory" } else { "session" };
    Error::config_key(
        format!("harness.{what}.backend"),
        format!("a {store} store was injected but harness.{what}.backend names \"{backend}\"; remove one of them"),
    )
}

/// What assembly and the stores produced.
struct Tools {
    toolset: Toolset,
    memory: Option<Arc<dyn MemoryStore>>,
    prompter: Arc<dyn Prompter>,
    sessions: std::result::Result<Arc<dyn SessionStore>, String>,
    built: BuiltNames,
}

/// The names of the agent-only tools the builder made, to tell whether any survived selection.
#[derive(Default)]
struct BuiltNames {
    hitl: Vec<String>,
    memory: Vec<String>,
}

/// The notes, warnings, tool-search plan and fingerprint of a built agent.
fn finish(
    config: Config,
    model: String,
    provider: Arc<dyn ModelProvider>,
    gate: Option<Arc<dyn ConfirmGate>>,
    tools: Tools,
    mut warnings: Vec<Warning>,
    trace_content: bool,
) -> Agent {
    let Tools { toolset, memory, prompter, sessions, built } = tools;
    let harness = &config.harness;
    let mut system: Vec<String> = config.system_prompt.iter().cloned().collect();
    // The notes (LOOP-2) and HITL-11 concern the tools that survived selection, not the ones configured.
    let kept = |names: &[String]| toolset.iter().any(|t| names.iter().any(|n| n == t.spec().name()));
    if harness.human_in_the_loop.enabled && kept(&built.hitl) {
        system.push(crate::operator::hitl_note().to_owned());
        if !prompter.can_ask() {
            warnings.push(Warning::HitlWithoutOperator);
        }
    }
    let memory = memory.filter(|_| kept(&built.memory));
    if memory.is_some() {
        system.push(crate::memory::memory_note().to_owned());
    }
    let memory_index = memory.is_some() && !harness.memory.no_index;
    let caps = provider.capabilities();
    let plans = plan_tools(toolset, caps, config.llm.no_tool_search, &mut warnings);
    let gate: Arc<dyn ConfirmGate> = gate.unwrap_or_else(|| Arc::new(DenyAll));
    let gated = plans.tools.gated_count();
    if gated > 0 && !gate.can_ask() {
        warnings.push(Warning::GatedWithoutOperator { count: gated });
    }
    let mut triggers: Vec<String> = Vec::new();
    for t in plans.tools.iter().filter_map(|t| t.gate_trigger()) {
        if !triggers.iter().any(|x| x == t) {
            triggers.push(t.to_owned());
        }
    }
    let budget = &config.llm.budget;
    // SESS-16: under client-side search the fingerprint covers every selected tool, not only what is sent.
    let fingerprinted =
        if plans.client_search { ToolPlan::new(plans.tools.clone(), false) } else { plans.plan.clone() };
    let fingerprint = Fingerprint::compute(FingerprintInput {
        provider: &caps.provider,
        model: &model,
        system: &system,
        tools: &fingerprinted,
        thinking: config.llm.thinking.enabled,
        max_tokens: budget.max_tokens(),
        max_iterations: budget.max_iterations(),
    });
    // Validated by `Config::validate` already; the fallback only keeps a span name non-empty.
    let name = config.identity().unwrap_or_else(|_| "fisk".to_owned());
    let inner = Inner {
        name,
        trace_content,
        config,
        model,
        provider,
        gate,
        plan: plans.plan,
        tools: plans.tools,
        callable: plans.callable,
        client_search: plans.client_search,
        system,
        warnings,
        triggers,
        memory,
        memory_index,
        sessions,
        fingerprint,
    };
    Agent { inner: Arc::new(inner) }
}

/// What a run sends and what it may call.
struct Plans {
    plan: ToolPlan,
    tools: Toolset,
    callable: Toolset,
    client_search: bool,
}

/// SEARCH-1..6: server-side deferral when the provider has it; otherwise, at the threshold, client-side search
/// (the request carries the direct tools plus `search_tools` and `call_tool`); otherwise every tool, with a warning.
fn plan_tools(toolset: Toolset, caps: &crate::llm::Caps, no_tool_search: bool, warnings: &mut Vec<Warning>) -> Plans {
    let at_threshold = toolset.len() >= crate::llm::TOOL_SEARCH_THRESHOLD;
    if at_threshold
        && !caps.tool_search
        && !no_tool_search
        && let Some((request, search)) = super::search::request_tools(&toolset)
    {
        let callable: Vec<SelectedTool> = toolset.iter().cloned().chain([SelectedTool::new(search, None)]).collect();
        return Plans {
            plan: ToolPlan::new(request, false),
            callable: Toolset::new(callable, Vec::new()),
            tools: toolset,
            client_search: true,
        };
    }
    let search_allowed = caps.tool_search && !no_tool_search;
    if at_threshold && !search_allowed {
        // The remedy is named: client-side search would have applied but for `llm.no_tool_search`.
        warnings.push(if no_tool_search {
            Warning::ToolSearchDisabled { count: toolset.len() }
        } else {
            Warning::ToolSearchUnavailable { provider: caps.provider.clone(), count: toolset.len() }
        });
    }
    Plans {
        plan: ToolPlan::new(toolset.clone(), search_allowed),
        callable: toolset.clone(),
        tools: toolset,
        client_search: false,
    }
}
