//! Building an [`Agent`]: from a [`Harness`] (the composition root), or from plug-ins it assembles into one; then
//! the provider, the gate and the tool-search plan.

use super::{Agent, Inner};
use crate::builtin::BuiltinFactory;
use crate::config::{Config, Mode};
use crate::error::{Error, Result};
use crate::gate::{ConfirmGate, DenyAll};
use crate::harness::{AgentTools, Harness, HarnessBuilder};
use crate::llm::{ModelProvider, PriceTable, ProviderFactory, ProviderRegistry, ProviderSettings, ToolPlan};
use crate::memory::{MemoryBackend, MemoryStore};
use crate::operator::Prompter;
use crate::select::{SelectedTool, Toolset};
use crate::session::{Fingerprint, FingerprintInput, SessionBackend, SessionStore};
use crate::source::ToolSource;
use crate::tool::Tool;
use crate::warning::Warning;
use std::path::PathBuf;
use std::sync::Arc;

/// Builds an [`Agent`]; by value, finished with [`AgentBuilder::build`].
///
/// Give it a [`Harness`] ([`harness`](Self::harness)) and `build` does no I/O; or give it the configuration and
/// plug-ins directly (sources, built-ins, backends, stores, a prompter) and `build` assembles a harness of its own
/// first. The two ways do not mix: a plug-in given here alongside a harness is an error naming it.
#[derive(Default)]
pub struct AgentBuilder {
    config: Option<Config>,
    provider: Option<Arc<dyn ModelProvider>>,
    gate: Option<Arc<dyn ConfirmGate>>,
    trace_content: bool,
    harness: Option<Arc<Harness>>,
    prices: Option<PriceTable>,
    /// `search_tools`' hybrid tier, given by the host (else from `harness.knowledge.embeddings.tool_search`).
    #[cfg(feature = "knowledge")]
    tool_embeddings: Option<crate::agent::search::ToolEmbeddings>,
    parts: HarnessBuilder,
    /// The plug-in methods called, to refuse them beside a harness.
    touched: Vec<&'static str>,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("config", &self.config.is_some())
            .field("provider", &self.provider.is_some())
            .field("harness", &self.harness.is_some())
            .field("parts", &self.parts)
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
        self.touched.push("providers");
        self.parts = self.parts.providers(providers);
        self
    }

    /// Register one more provider factory in the [provider registry](AgentBuilder::providers).
    #[must_use]
    pub fn provider_factory(mut self, factory: impl ProviderFactory + 'static) -> Self {
        self.touched.push("provider_factory");
        self.parts = self.parts.provider_factory(factory);
        self
    }

    /// Who approves gated calls. Without one, `harness.approvals.backend: nats` asks over NATS (APPR-1), and
    /// otherwise every gated call is declined.
    #[must_use]
    pub fn gate(mut self, gate: impl ConfirmGate + 'static) -> Self {
        self.gate = Some(Arc::new(gate));
        self
    }

    /// Who answers the `ask_human_*` tools; without one nobody can be asked and they decline (HITL-7).
    #[must_use]
    pub fn prompter(mut self, prompter: impl Prompter + 'static) -> Self {
        self.touched.push("prompter");
        self.parts = self.parts.prompter(Arc::new(prompter));
        self
    }

    /// The memory store behind `memory_*` when `harness.memory.enabled` (OVR-7); borrowed, never closed by a run.
    /// It wins over the [backend registry](AgentBuilder::memory_backend) and stands for the default `file`
    /// backend: a configuration naming another backend fails, since one of the two would be ignored.
    #[must_use]
    pub fn memory_store(mut self, store: impl MemoryStore + 'static) -> Self {
        self.touched.push("memory_store");
        self.parts = self.parts.memory_store(Arc::new(store));
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
        self.touched.push("session_store");
        self.parts = self.parts.session_store(store);
        self
    }

    /// Keep the pins of imported tools in this store (PIN-5), as
    /// [`HarnessBuilder::pin_store`](crate::harness::HarnessBuilder::pin_store).
    #[must_use]
    pub fn pin_store(mut self, store: Arc<dyn crate::source::pins::PinStore>) -> Self {
        self.touched.push("pin_store");
        self.parts = self.parts.pin_store(store);
        self
    }

    /// Register a memory backend `harness.memory.backend` can name (replacing one of the same name); `file` is
    /// built in.
    #[must_use]
    pub fn memory_backend(mut self, backend: impl MemoryBackend + 'static) -> Self {
        self.touched.push("memory_backend");
        self.parts = self.parts.memory_backend(backend);
        self
    }

    /// Register a session backend `harness.sessions.backend` can name (replacing one of the same name); `file` is
    /// built in.
    #[must_use]
    pub fn session_backend(mut self, backend: impl SessionBackend + 'static) -> Self {
        self.touched.push("session_backend");
        self.parts = self.parts.session_backend(backend);
        self
    }

    /// Resolve relative store paths (the memory and session directories) under `dir` (OVR-6): an absolute path to an existing
    /// directory.
    #[must_use]
    pub fn store_base(mut self, dir: impl Into<PathBuf>) -> Self {
        self.touched.push("store_base");
        self.parts = self.parts.store_base(dir);
        self
    }

    /// Register a built-in factory of the host's; it is enabled like the crate's own, by a `harness.tools` entry
    /// of the same name (replacing a factory of that name).
    #[must_use]
    pub fn builtin(mut self, factory: impl BuiltinFactory + 'static) -> Self {
        self.touched.push("builtin");
        self.parts = self.parts.builtin(factory);
        self
    }

    /// The NATS connection every `remote_tools` host shares (CFG-15, OVR-7): borrowed, never closed by the agent.
    /// Without one the agent connects from `nats_context`, as its identity, when a host is configured.
    #[cfg(feature = "nats")]
    #[must_use]
    pub fn nats(mut self, nats: crate::nats::NatsConnection) -> Self {
        self.touched.push("nats");
        self.parts = self.parts.nats(nats);
        self
    }

    /// Another tool source.
    #[must_use]
    pub fn source(mut self, source: impl ToolSource + 'static) -> Self {
        self.touched.push("source");
        self.parts = self.parts.source(source);
        self
    }

    /// A custom tool of the host's (OVR-8); its name must not collide with any other tool.
    #[must_use]
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.touched.push("tool");
        self.parts = self.parts.tool(tool);
        self
    }

    /// Run command tools in `dir` (OVR-6): an absolute path to an existing directory.
    #[must_use]
    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.touched.push("working_dir");
        self.parts = self.parts.working_dir(dir);
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

    /// Rank client-side `search_tools` results by `embeddings` too, fused with the words by reciprocal rank (the
    /// hybrid tier), instead of what `harness.knowledge.embeddings.tool_search` configures. The tools' command paths
    /// and descriptions, and each search's query, are sent to the embedder.
    #[cfg(feature = "knowledge")]
    #[must_use]
    pub fn tool_search_embeddings(mut self, embeddings: crate::agent::search::ToolEmbeddings) -> Self {
        self.tool_embeddings = Some(embeddings);
        self
    }

    /// Prices of the models this host uses (COST-2), consulted after `llm.pricing` and before the built-in table of
    /// Anthropic models ([`PriceTable::anthropic`]). A model priced nowhere has an unknown cost.
    #[must_use]
    pub fn prices(mut self, table: PriceTable) -> Self {
        self.prices = Some(table);
        self
    }

    /// Build on `harness` (shared with other surfaces, for example an MCP server): `build` then does no I/O. The
    /// configuration, sources, built-ins, backends, stores and prompter are the harness's; giving any of them here
    /// as well is an error.
    #[must_use]
    pub fn harness(mut self, harness: Arc<Harness>) -> Self {
        self.harness = Some(harness);
        self
    }

    /// Validate the configuration for a run, assemble (or take) the harness, and plan tool search. Fails on
    /// configuration errors, source failures, name collisions and an empty tool set (SEL-13).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::ErrorKind::Config) when there is no configuration, it fails [`Mode::Agent`]
    /// validation, uses a key this version does not act on yet, or names no model or an unknown provider (or the
    /// provider cannot be built: no key, a bad base URL); a plug-in given beside a harness, a harness built for
    /// serving only, or an injected provider whose credentials the harness does not scrub; an introspection error
    /// when the application cannot be loaded; a selection error on a tool-name collision or an empty tool set
    /// (SEL-13); a store error when the memory or session backend cannot open, or is named alongside an injected
    /// store.
    pub async fn build(mut self) -> Result<Agent> {
        let (harness, provider) = match self.harness.take() {
            Some(harness) => {
                let provider = self.take_harness(&harness)?;
                (harness, provider)
            }
            None => self.assemble().await?,
        };
        let config = harness.config();
        let mut warnings = config.validate(Mode::Agent)?;
        warnings.extend(harness.warnings().iter().cloned());
        let model = config.llm.model.clone().ok_or_else(|| Error::config_key("llm.model", "llm.model is required"))?;
        let long = super::long_run::resolve(config, provider.as_ref(), &model, self.prices.as_ref())?;
        let toolset = harness.toolset().clone();
        toolset.ensure_not_empty(config.application_path.is_some())?;
        let tools = Tools {
            toolset,
            memory: harness.memory().cloned(),
            prompter: harness.prompter().clone(),
            sessions: harness.sessions_result(),
            built: harness.agent_tools().clone(),
            policy: harness.policy().cloned(),
            audit: harness.audit().cloned(),
            long,
        };
        let gate = self.gate.take().or_else(|| approvals_gate(&harness));
        #[cfg(feature = "knowledge")]
        let hybrid = match self.tool_embeddings.take() {
            Some(given) => Some(given),
            None => crate::agent::search::ToolEmbeddings::from_config(config)?,
        };
        #[cfg(not(feature = "knowledge"))]
        let hybrid = ();
        let search = Search { hybrid, trace_content: self.trace_content };
        Ok(finish(config.clone(), model, provider, gate, tools, warnings, search))
    }

    /// The convenience path: validate for a run and build the provider before any I/O, then assemble a harness
    /// from the plug-ins given here.
    async fn assemble(&mut self) -> Result<(Arc<Harness>, Arc<dyn ModelProvider>)> {
        let config = self.config.take().ok_or_else(|| Error::config("an agent needs a configuration"))?;
        config.validate(Mode::Agent)?;
        config.check_supported()?;
        let provider = match self.provider.take() {
            Some(provider) => provider,
            None => self.parts.provider_registry().build(&ProviderSettings::new(&config))?,
        };
        // PROV-16: the active provider's credentials too, besides every registered one's.
        let parts = std::mem::take(&mut self.parts).config(config).scrub(provider.capabilities().credentials.clone());
        Ok((Arc::new(parts.build().await?), provider))
    }

    /// A harness given: nothing else of the harness's may be given here, and an injected provider's credentials must
    /// be scrubbed already (fail closed: a key would otherwise reach every child).
    fn take_harness(&mut self, harness: &Harness) -> Result<Arc<dyn ModelProvider>> {
        if let Some(method) = self.touched.first() {
            return Err(Error::config(format!(
                "AgentBuilder::{method} was given together with a harness: give it to the HarnessBuilder instead"
            )));
        }
        if self.config.is_some() {
            return Err(Error::config(
                "AgentBuilder::config was given together with a harness: the agent uses the harness's configuration",
            ));
        }
        if !harness.is_for_agent() {
            return Err(Error::config(
                "this harness was built for serving only (HarnessBuilder::for_agent(false)); build one for the agent",
            ));
        }
        let provider = match self.provider.take() {
            Some(provider) => provider,
            None => harness.providers().build(&ProviderSettings::new(harness.config()))?,
        };
        let scrubbed: Vec<&str> = harness.child_env().scrubbed().collect();
        if let Some(name) = provider.capabilities().credentials.iter().find(|c| !scrubbed.contains(&c.as_str())) {
            return Err(Error::config(format!(
                "the provider's credential {name} is not scrubbed by the harness: register its factory with \
                 HarnessBuilder::provider_factory or name it with HarnessBuilder::scrub"
            )));
        }
        Ok(provider)
    }
}

/// What assembly and the stores produced.
struct Tools {
    toolset: Toolset,
    memory: Option<Arc<dyn MemoryStore>>,
    prompter: Arc<dyn Prompter>,
    sessions: std::result::Result<Arc<dyn SessionStore>, String>,
    built: AgentTools,
    policy: Option<Arc<dyn crate::policy::PolicyHook>>,
    audit: Option<Arc<crate::audit::AuditTrail>>,
    long: super::long_run::LongRun,
}

/// The hybrid tier of client-side search, and whether spans carry content.
struct Search {
    hybrid: crate::agent::search::Hybrid,
    trace_content: bool,
}

/// The notes, warnings, tool-search plan and fingerprint of a built agent.
fn finish(
    config: Config,
    model: String,
    provider: Arc<dyn ModelProvider>,
    gate: Option<Arc<dyn ConfirmGate>>,
    tools: Tools,
    mut warnings: Vec<Warning>,
    search: Search,
) -> Agent {
    let Search { hybrid, trace_content } = search;
    let Tools { toolset, memory, prompter, sessions, built, policy, audit, long } = tools;
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
    let plans = plan_tools(toolset, caps, config.llm.no_tool_search, &hybrid, &mut warnings);
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
        policy,
        audit,
        long,
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
fn plan_tools(
    toolset: Toolset,
    caps: &crate::llm::Caps,
    no_tool_search: bool,
    hybrid: &crate::agent::search::Hybrid,
    warnings: &mut Vec<Warning>,
) -> Plans {
    let at_threshold = toolset.len() >= crate::llm::TOOL_SEARCH_THRESHOLD;
    if at_threshold
        && !caps.tool_search
        && !no_tool_search
        && let Some((request, search)) = super::search::request_tools(&toolset, hybrid)
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

/// APPR-1: the gate `harness.approvals.backend: nats` names, on the bucket the harness bound when it was built;
/// `None` under the terminal backend.
#[cfg(feature = "nats")]
fn approvals_gate(harness: &Harness) -> Option<Arc<dyn ConfirmGate>> {
    let timeout = harness.config().harness.approvals.timeout();
    let book = harness.approvals()?.clone();
    Some(Arc::new(crate::nats::approvals::NatsGate::new(book, timeout)))
}

/// Without NATS the backend is refused when the configuration is validated.
#[cfg(not(feature = "nats"))]
fn approvals_gate(_harness: &Harness) -> Option<Arc<dyn ConfirmGate>> {
    None
}
