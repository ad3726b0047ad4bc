//! The composition root (DESIGN §4.2): one [`Harness`] is assembled once, asynchronously, from a configuration and
//! the host's plug-ins, and every surface is built from it without further I/O.
//!
//! ```text
//!  agent.yaml + plug-ins ──► HarnessBuilder::build()
//!      sources, built-in factories, provider factories, memory and session backends, a NATS connection,
//!      a prompter, host tools
//!                           │  1 validate (no I/O)
//!                           │  2 the scrub set: every registered provider's, source's and host-named credential
//!                           │  3 load every source once (introspection, MCP imports, remote agents), each
//!                           │    under its SourcePolicy: include/exclude on its names, what its failure does
//!                           │  4 built-ins, ask_human_*, memory_*; 5 select (deny, naming, include, exclude)
//!                           │  6 open the memory and session stores
//!                           ▼
//!                        Harness ── toolset · child env · stores · warnings · providers
//!                           │
//!        ┌──────────────────┼────────────────────┐
//!        ▼                  ▼                    ▼
//!  AgentBuilder       McpServerBuilder      A2aServerBuilder        (each: .harness(h), then build(): no I/O)
//!  the whole set      what says Servable    servable, ungated commands
//! ```
//!
//! What each surface takes is data on the tools ([`Exposure`](crate::tool::Exposure)), set by whoever made them:
//! commands and servable built-ins are served, `ask_human_*` and `memory_*` stay with the agent, imported tools are
//! never served on. One harness can feed an agent and an MCP server in the same process; every child either of them
//! starts (command tools, introspection, stdio MCP servers) gets the same scrubbed environment.
//!
//! A harness built [`for_agent(false)`](HarnessBuilder::for_agent) is for serving only: it connects to no
//! `mcp_servers` or `remote_tools` (imported tools are never re-served, MCPI-9, IMPORT-11), builds no `ask_human_*` or
//! `memory_*` tools and opens no stores.
//!
//! ```no_run
//! use fisk_ai::harness::Harness;
//! use fisk_ai::{Agent, Config, McpServer};
//! use std::sync::Arc;
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let config = Config::load("agent.yaml")?;
//! let harness = Arc::new(Harness::builder().config(config).build().await?);
//! for warning in harness.warnings() {
//!     eprintln!("warning: {warning}");
//! }
//! let agent = Agent::builder().harness(harness.clone()).build().await?;
//! let server = McpServer::builder().harness(harness).build().await?;
//! # let _ = (agent, server);
//! # Ok(())
//! # }
//! ```

mod audit;
#[cfg(any(feature = "mcp", feature = "nats"))]
mod expose;
mod pipeline;
mod policy;
mod stores;

#[cfg(any(feature = "mcp", feature = "nats"))]
pub(crate) use audit::open_audit;
#[cfg(any(feature = "mcp", feature = "nats"))]
pub(crate) use expose::Served;
#[cfg(feature = "nats")]
pub(crate) use expose::{a2a as a2a_served, check_a2a};
#[cfg(feature = "mcp")]
pub(crate) use expose::{check_mcp, mcp as mcp_served};
#[cfg(any(feature = "mcp", feature = "nats"))]
pub(crate) use policy::resolve as resolve_policy;
#[cfg(all(feature = "mcp", feature = "nats"))]
pub(crate) use stores::open_approvals;

use crate::builtin::{BuiltinEnv, BuiltinFactory, BuiltinRegistry};
use crate::config::{Config, Mode};
use crate::error::{Error, Result};
use crate::exec::ChildEnv;
use crate::llm::{ProviderFactory, ProviderRegistry};
use crate::memory::{MemoryBackend, MemoryBackends, MemoryStore};
use crate::operator::{NoOperator, Prompter};
use crate::select::Toolset;
use crate::session::{SessionBackend, SessionBackends, SessionStore};
use crate::source::pins::{PinReport, PinStore};
use crate::source::{OnFailure, SourcePolicy, ToolSource};
use crate::tool::Tool;
use crate::warning::Warning;
pub use pipeline::child_env;
use std::path::PathBuf;
use std::sync::Arc;
pub use stores::Stores;

use stores::Places;

/// An assembled tool set with everything its surfaces share: the configuration, the selected tools, the child
/// environment, the opened stores and the warnings. Built once with [`Harness::builder`]; see the [module
/// docs](self).
pub struct Harness {
    config: Config,
    toolset: Toolset,
    env: ChildEnv,
    warnings: Vec<Warning>,
    providers: ProviderRegistry,
    prompter: Arc<dyn Prompter>,
    memory: Option<Arc<dyn MemoryStore>>,
    sessions: std::result::Result<Arc<dyn SessionStore>, String>,
    agent_tools: AgentTools,
    for_agent: bool,
    pinning: pipeline::Pinning,
    policy: Option<Arc<dyn crate::policy::PolicyHook>>,
    audit: Option<Arc<crate::audit::AuditTrail>>,
    /// The one NATS connection of remote hosts, JetStream stores and fleet surfaces, made on first use (CFG-15).
    #[cfg(feature = "nats")]
    nats: Option<stores::SharedNats>,
    /// The approvals bucket under `harness.approvals.backend: nats` (APPR-1, REPL-1).
    #[cfg(feature = "nats")]
    approvals: Option<crate::nats::approvals::ApprovalBook>,
}

/// The names of the agent-only tools the harness made, to tell whether any survived selection.
#[derive(Debug, Default, Clone)]
pub(crate) struct AgentTools {
    pub(crate) hitl: Vec<String>,
    pub(crate) memory: Vec<String>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("tools", &self.toolset.len())
            .field("scrubbed", &self.env.scrubbed().count())
            .field("warnings", &self.warnings.len())
            .field("memory", &self.memory.is_some())
            .field("for_agent", &self.for_agent)
            .finish_non_exhaustive()
    }
}

impl Harness {
    /// A builder; see [`HarnessBuilder`].
    pub fn builder() -> HarnessBuilder {
        HarnessBuilder::default()
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Every selected tool: the agent's view (each server offers a subset of it).
    pub fn toolset(&self) -> &Toolset {
        &self.toolset
    }

    /// The environment every child process of every surface gets: the scrub set and the tool working directory.
    pub fn child_env(&self) -> &ChildEnv {
        &self.env
    }

    /// The warnings of loading and selection, in order.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The provider factories `llm.provider` can name.
    pub fn providers(&self) -> &ProviderRegistry {
        &self.providers
    }

    /// Who answers `ask_human_*` (and is handed to built-ins).
    pub fn prompter(&self) -> &Arc<dyn Prompter> {
        &self.prompter
    }

    /// The memory store, when `harness.memory` is enabled and the harness is for an agent.
    pub fn memory(&self) -> Option<&Arc<dyn MemoryStore>> {
        self.memory.as_ref()
    }

    /// The session store.
    ///
    /// # Errors
    ///
    /// Why the configured backend could not open (only checkpointed runs need it), or that the harness is for
    /// serving only.
    pub fn sessions(&self) -> std::result::Result<&Arc<dyn SessionStore>, &str> {
        self.sessions.as_ref().map_err(String::as_str)
    }

    /// How each pinned import's tools stood against their pins when this harness loaded them (PIN-2..4), in load
    /// order: what `info` shows and what [`pins::accept`](crate::source::pins::accept) pins. Empty when nothing is
    /// pinned.
    pub fn pin_reports(&self) -> &[PinReport] {
        &self.pinning.reports
    }

    /// The pin store the imports were checked against; `None` when nothing is pinned or the store could not be
    /// opened (then every `refuse` import failed to load, naming why).
    pub fn pin_store(&self) -> Option<&Arc<dyn PinStore>> {
        self.pinning.store.as_ref()
    }

    /// The policy hook every surface built from this harness consults (POL-1), if any.
    pub fn policy(&self) -> Option<&Arc<dyn crate::policy::PolicyHook>> {
        self.policy.as_ref()
    }

    /// The audit trail every surface built from this harness writes (AUD-1), if any.
    pub fn audit(&self) -> Option<&Arc<crate::audit::AuditTrail>> {
        self.audit.as_ref()
    }

    /// Whether it was built for an agent ([`HarnessBuilder::for_agent`]).
    pub fn is_for_agent(&self) -> bool {
        self.for_agent
    }

    /// The harness's NATS connection (the injected one, else one from `nats_context` made on first use), shared
    /// by remote hosts, JetStream stores and the fleet surfaces (CFG-15).
    ///
    /// # Errors
    ///
    /// As [`SharedNats::get`](crate::nats::SharedNats::get): the context cannot be read or no server answers; a
    /// configuration error when the configuration has no identity to name the connection by.
    #[cfg(feature = "nats")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
    pub async fn nats(&self) -> Result<crate::nats::NatsConnection> {
        match &self.nats {
            Some(shared) => shared.get().await,
            None => Err(Error::config("no NATS connection: the configuration has no identity to connect as")),
        }
    }

    /// The approvals bucket every surface shares under `harness.approvals.backend: nats`, bound when the harness
    /// was built: the agent's gate waits on it (APPR-1), and an MCP server keeps its clients' pending approvals in
    /// it so any replica answers them (REPL-1). `None` under the terminal backend.
    #[cfg(feature = "nats")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
    pub fn approvals(&self) -> Option<&crate::nats::approvals::ApprovalBook> {
        self.approvals.as_ref()
    }

    pub(crate) fn agent_tools(&self) -> &AgentTools {
        &self.agent_tools
    }

    pub(crate) fn sessions_result(&self) -> std::result::Result<Arc<dyn SessionStore>, String> {
        self.sessions.clone()
    }
}

/// Builds a [`Harness`]; by value, finished with [`build`](HarnessBuilder::build). Everything but the
/// configuration has a default: the crate's own built-ins, providers and backends, no host sources, no operator.
pub struct HarnessBuilder {
    config: Option<Config>,
    sources: Vec<(Arc<dyn ToolSource>, SourcePolicy)>,
    on_source_failure: Option<OnFailure>,
    tools: Vec<Arc<dyn Tool>>,
    builtins: BuiltinRegistry,
    providers: ProviderRegistry,
    memory_backends: MemoryBackends,
    session_backends: SessionBackends,
    memory: Option<Arc<dyn MemoryStore>>,
    sessions: Option<Arc<dyn SessionStore>>,
    pins: Option<Arc<dyn PinStore>>,
    policy: Option<Arc<dyn crate::policy::PolicyHook>>,
    audit: Option<Arc<crate::audit::AuditTrail>>,
    prompter: Option<Arc<dyn Prompter>>,
    working_dir: Option<PathBuf>,
    store_base: Option<PathBuf>,
    scrub: Vec<String>,
    for_agent: bool,
    #[cfg(feature = "nats")]
    nats: Option<crate::nats::NatsConnection>,
}

impl Default for HarnessBuilder {
    fn default() -> Self {
        HarnessBuilder {
            config: None,
            sources: Vec::new(),
            on_source_failure: None,
            tools: Vec::new(),
            builtins: BuiltinRegistry::with_defaults(),
            providers: ProviderRegistry::with_defaults(),
            memory_backends: MemoryBackends::with_defaults(),
            session_backends: SessionBackends::with_defaults(),
            memory: None,
            sessions: None,
            pins: None,
            policy: None,
            audit: None,
            prompter: None,
            working_dir: None,
            store_base: None,
            scrub: Vec::new(),
            for_agent: true,
            #[cfg(feature = "nats")]
            nats: None,
        }
    }
}

impl std::fmt::Debug for HarnessBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HarnessBuilder")
            .field("config", &self.config.is_some())
            .field("sources", &self.sources.len())
            .field("tools", &self.tools.len())
            .field("for_agent", &self.for_agent)
            .finish_non_exhaustive()
    }
}

impl HarnessBuilder {
    /// The parsed configuration (required). The wrapped application is a source when `application_path` is set.
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Another tool source, loaded after the application and the configured imports.
    #[must_use]
    pub fn source(self, source: impl ToolSource + 'static) -> Self {
        self.source_arc(Arc::new(source))
    }

    /// Another tool source, shared.
    #[must_use]
    pub fn source_arc(self, source: Arc<dyn ToolSource>) -> Self {
        self.source_arc_with(source, SourcePolicy::new())
    }

    /// Another tool source under `policy`: the pipeline keeps only the tools the policy keeps (by the source's own
    /// names) and applies its failure policy (HARNESS-6).
    ///
    /// ```no_run
    /// use fisk_ai::harness::Harness;
    /// use fisk_ai::select::Rule;
    /// use fisk_ai::source::mcp::McpImport;
    /// use fisk_ai::source::{OnFailure, SourcePolicy};
    ///
    /// # async fn demo(config: fisk_ai::Config) -> fisk_ai::Result<()> {
    /// let wiki = McpImport::http("wiki", "https://wiki.example.com/mcp")?;
    /// let harness = Harness::builder()
    ///     .config(config)
    ///     .source_with(wiki, SourcePolicy::new().exclude(Rule::tools(["^delete_"])?).on_failure(OnFailure::Warn))
    ///     .build()
    ///     .await?;
    /// # let _ = harness;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn source_with(self, source: impl ToolSource + 'static, policy: SourcePolicy) -> Self {
        self.source_arc_with(Arc::new(source), policy)
    }

    /// Another tool source, shared, under `policy`.
    #[must_use]
    pub fn source_arc_with(mut self, source: Arc<dyn ToolSource>, policy: SourcePolicy) -> Self {
        self.sources.push((source, policy));
        self
    }

    /// What a source's failure to load does when its policy does not say: this surface's choice for every
    /// source, configured ones included. Unset, a `remote_tools` host's failure is reported with the others'
    /// after all are tried (IMPORT-7) and any other source's stops the build at once.
    #[must_use]
    pub fn on_source_failure(mut self, on_failure: OnFailure) -> Self {
        self.on_source_failure = Some(on_failure);
        self
    }

    /// A host tool (custom kind), selected like every other tool.
    #[must_use]
    pub fn tool(self, tool: impl Tool + 'static) -> Self {
        self.tool_arc(Arc::new(tool))
    }

    /// A host tool, shared.
    #[must_use]
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Register a built-in factory a `harness.tools` entry can enable.
    #[must_use]
    pub fn builtin(mut self, factory: impl BuiltinFactory + 'static) -> Self {
        self.builtins.register(Arc::new(factory));
        self
    }

    /// Replace the built-in registry.
    #[must_use]
    pub fn builtins(mut self, registry: BuiltinRegistry) -> Self {
        self.builtins = registry;
        self
    }

    /// Register a provider factory `llm.provider` can name; its credential variables join the scrub set of every
    /// child, whichever provider runs (PROV-16).
    #[must_use]
    pub fn provider_factory(mut self, factory: impl ProviderFactory + 'static) -> Self {
        self.providers.register(Arc::new(factory));
        self
    }

    /// Replace the provider registry.
    #[must_use]
    pub fn providers(mut self, providers: ProviderRegistry) -> Self {
        self.providers = providers;
        self
    }

    /// Register a memory backend `harness.memory.backend` can name.
    #[must_use]
    pub fn memory_backend(mut self, backend: impl MemoryBackend + 'static) -> Self {
        self.memory_backends.register(Arc::new(backend));
        self
    }

    /// Register a session backend `harness.sessions.backend` can name.
    #[must_use]
    pub fn session_backend(mut self, backend: impl SessionBackend + 'static) -> Self {
        self.session_backends.register(Arc::new(backend));
        self
    }

    /// Use this memory store instead of opening the configured backend (OVR-7).
    #[must_use]
    pub fn memory_store(mut self, store: Arc<dyn MemoryStore>) -> Self {
        self.memory = Some(store);
        self
    }

    /// Keep the pins of imported tools in this store (PIN-5) instead of the default: a file per server under the
    /// store base or the state directory, or the `pins_bucket` KV bucket when sessions live in JetStream.
    #[must_use]
    pub fn pin_store(mut self, store: Arc<dyn PinStore>) -> Self {
        self.pins = Some(store);
        self
    }

    /// Consult `hook` on every call of every surface (POL-1), instead of `harness.policy.command`.
    #[must_use]
    pub fn policy(mut self, hook: Arc<dyn crate::policy::PolicyHook>) -> Self {
        self.policy = Some(hook);
        self
    }

    /// Record every call of every surface in `trail` (AUD-1), instead of opening `harness.audit`'s sinks.
    #[must_use]
    pub fn audit(mut self, trail: crate::audit::AuditTrail) -> Self {
        self.audit = Some(Arc::new(trail));
        self
    }

    /// Use this session store instead of opening the configured backend (OVR-7).
    #[must_use]
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.sessions = Some(store);
        self
    }

    /// Who answers `ask_human_*`; without one nobody can be asked.
    #[must_use]
    pub fn prompter(mut self, prompter: Arc<dyn Prompter>) -> Self {
        self.prompter = Some(prompter);
        self
    }

    /// Run command tools in `dir` (OVR-6).
    #[must_use]
    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Resolve relative store paths under `dir` (OVR-6).
    #[must_use]
    pub fn store_base(mut self, dir: impl Into<PathBuf>) -> Self {
        self.store_base = Some(dir.into());
        self
    }

    /// Also remove these variables from every child's environment (credentials the host knows of).
    #[must_use]
    pub fn scrub<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scrub.extend(names.into_iter().map(Into::into));
        self
    }

    /// Whether an agent runs on this harness (the default). A harness for serving only connects to no imports,
    /// builds no `ask_human_*` or `memory_*` tools and opens no stores.
    #[must_use]
    pub fn for_agent(mut self, on: bool) -> Self {
        self.for_agent = on;
        self
    }

    /// The NATS connection remote hosts and the JetStream stores share (CFG-15; borrowed, never closed, OVR-7).
    #[cfg(feature = "nats")]
    #[must_use]
    pub fn nats(mut self, nats: crate::nats::NatsConnection) -> Self {
        self.nats = Some(nats);
        self
    }

    /// The provider registry so far (the agent builds its provider from it before anything loads).
    pub(crate) fn provider_registry(&self) -> &ProviderRegistry {
        &self.providers
    }

    /// Assemble: validate, fix the scrub set, load every source once, add the built-ins, select, open the stores.
    ///
    /// # Errors
    ///
    /// A configuration error (no configuration, a key this version does not act on, an unknown built-in or backend
    /// name, an option a backend refuses), an introspection or import error, a selection error on a name collision,
    /// or a store error when the memory backend cannot open.
    pub async fn build(mut self) -> Result<Harness> {
        let config = self.config.take().ok_or_else(|| Error::config("a harness needs a configuration"))?;
        config.validate(Mode::Lenient)?;
        config.check_supported()?;
        if self.for_agent {
            stores::check_registered(&config, &self.memory_backends, &self.session_backends)?;
        }
        let nats = self.shared_nats(&config);
        let credentials: Vec<String> = self.providers.credentials().into_iter().chain(self.scrub.drain(..)).collect();
        let mut warnings = Vec::new();
        let inputs = pipeline::Inputs {
            sources: std::mem::take(&mut self.sources),
            on_failure: self.on_source_failure,
            credentials,
            working_dir: self.working_dir.as_deref(),
            imports: self.for_agent,
            #[cfg(feature = "nats")]
            nats: nats.clone(),
            pin_store: self.pins.take(),
            store_base: self.store_base.as_deref(),
        };
        let (mut candidates, env, pinning) = pipeline::load(&config, inputs, &mut warnings).await?;
        let policy = policy::resolve(&config, self.policy.take(), &env)?;
        let audit = audit::open_audit(&config, self.audit.take(), nats.as_ref(), &mut warnings).await?;
        #[cfg(feature = "nats")]
        let approvals = stores::open_approvals(&config, nats.as_ref()).await?;
        candidates.extend(std::mem::take(&mut self.tools));
        let prompter: Arc<dyn Prompter> = self.prompter.take().unwrap_or_else(|| Arc::new(NoOperator));
        let builtin_env = BuiltinEnv::new(&config, prompter.clone())?;
        let places = Places {
            working_dir: &builtin_env.working_dir,
            store_base: self.store_base.as_deref(),
            nats: nats.as_ref(),
        };
        let mut agent_tools = AgentTools::default();
        let mut memory = None;
        if self.for_agent {
            // SEL-12 and LOOP-2 order: HITL, then memory, then harness.tools.
            if config.harness.human_in_the_loop.enabled {
                let hitl = crate::operator::hitl_tools(prompter.clone());
                agent_tools.hitl = hitl.iter().map(|t| t.spec().name().to_owned()).collect();
                candidates.extend(hitl);
            }
            memory = stores::open_memory(&config, self.memory.take(), &self.memory_backends, &places).await?;
            if let Some(store) = &memory {
                let tools = crate::memory::memory_tools(store.clone());
                agent_tools.memory = tools.iter().map(|t| t.spec().name().to_owned()).collect();
                candidates.extend(tools);
            }
        }
        #[cfg(feature = "knowledge")]
        if config.harness.knowledge.enabled {
            // KNOW-10: for the agent and for serving alike; MCP serves it only when `builtins` lists it.
            let kb = crate::knowledge::KnowledgeBase::from_config(&config, self.store_base.as_deref())?;
            candidates.extend([Arc::new(crate::knowledge::KnowledgeSearchTool::new(kb)) as Arc<dyn crate::tool::Tool>]);
        }
        candidates.extend(self.builtins.build_enabled(&config, &builtin_env)?);
        let toolset = candidates.select(&config, &mut warnings)?;
        let sessions = if self.for_agent {
            stores::open_sessions(&config, self.sessions.take(), &self.session_backends, &places)
                .await?
                .map_err(|e| e.to_string())
        } else {
            Err("this harness is for serving only: no session store was opened".to_owned())
        };
        Ok(Harness {
            config,
            toolset,
            env,
            warnings,
            providers: self.providers,
            prompter,
            memory,
            sessions,
            agent_tools,
            for_agent: self.for_agent,
            pinning,
            policy,
            audit,
            #[cfg(feature = "nats")]
            nats,
            #[cfg(feature = "nats")]
            approvals,
        })
    }
}
