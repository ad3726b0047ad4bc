//! The one assembly pipeline (DESIGN §4.1) every surface's harness runs:
//!
//! 1. sources: the configured application first (TOOL-7), then each `mcp_servers` entry and each `remote_tools`
//!    host (when the surface imports; the hosts share one NATS connection, CFG-15), then every other source, each
//!    declaring the credential variables it owns. Each is loaded under its [`SourcePolicy`] (HARNESS-6): the
//!    entry's `include`/`exclude` on the source's own names, and what its failure does ([`OnFailure`]: the
//!    source's own, else the surface's, else `Report` for a remote host and `Abort` for any other);
//!    A source whose policy is [`pinned`](SourcePolicy::pinned) (every configured import is) has its tools held
//!    to their pins ([`pins`](crate::source::pins)) before they join;
//! 2. the child environment: the scrub set is the union of every attached provider's and source's credentials,
//!    fixed before the first child (introspection included) starts (EXEC-8);
//! 3. built-ins, which each surface adds ([`Candidates::extend`]);
//! 4. [`Selection`]: the deny strip, final naming (IMPORT-5/6), include, exclude, and the [`Toolset`].

use crate::config::Config;
use crate::error::Result;
use crate::exec::ChildEnv;
use crate::sandbox::Confinement;
use crate::select::{Selection, Toolset};
use crate::source::fisk::FiskApp;
use crate::source::pins::{PinMode, PinReport, PinStore};
use crate::source::{LoadContext, Loaded, OnFailure, SourcePolicy, ToolSource, checked_dir};
use crate::tool::Tool;
use crate::warning::Warning;
use std::path::Path;
use std::sync::Arc;

/// The children's environment `config` gives without loading anything (ENV-4, SBX-1): the configured credentials
/// scrubbed, `harness.env`'s policy and `harness.sandbox`'s confinement, with the warnings of an unenforced
/// setting. What `info` reports, and what a harness built from `config` starts its children with (it scrubs the
/// credentials of every source and provider it loads besides).
///
/// # Errors
///
/// As [`HarnessBuilder::build`](super::HarnessBuilder::build) for `harness.env` and `harness.sandbox`: a bad policy, a path that cannot be
/// opened, or a setting the kernel cannot enforce without `best_effort`, located in the configuration.
pub fn child_env(config: &Config) -> Result<(ChildEnv, Vec<Warning>)> {
    let mut warnings = Vec::new();
    let env = ChildEnv::new().with_scrubbed_all(config.bearer_token_envs());
    let env = confine(config, env, &mut warnings)?;
    Ok((env, warnings))
}

/// What goes into the pipeline besides the configuration.
pub(crate) struct Inputs<'a> {
    /// The host's sources, after the configured application, each with its policy.
    pub(crate) sources: Vec<(Arc<dyn ToolSource>, SourcePolicy)>,
    /// What a source's failure does when its policy does not say (the surface's choice).
    pub(crate) on_failure: Option<OnFailure>,
    /// Every attached provider's credential variables (PROV-16).
    pub(crate) credentials: Vec<String>,
    /// The tool working directory (OVR-6).
    pub(crate) working_dir: Option<&'a Path>,
    /// Whether the configured imports (`mcp_servers`, `remote_tools`) join: an agent imports, a server never
    /// re-serves imported tools (MCPI-9, IMPORT-11), so it does not connect to them.
    pub(crate) imports: bool,
    /// The host's NATS connection for `remote_tools` (OVR-7: borrowed, never closed); without one the pipeline
    /// connects from `nats_context` when a host is configured.
    #[cfg(feature = "nats")]
    pub(crate) nats: Option<crate::nats::SharedNats>,
    /// The host's pin store; without one the default is opened when a source is pinned.
    pub(crate) pin_store: Option<Arc<dyn PinStore>>,
    /// The host's store base, under which the default file pin store lives.
    pub(crate) store_base: Option<&'a Path>,
}

/// What the pin checks found, for [`Harness::pin_reports`](super::Harness::pin_reports).
#[derive(Default)]
pub(crate) struct Pinning {
    pub(crate) store: Option<Arc<dyn PinStore>>,
    pub(crate) reports: Vec<PinReport>,
}

/// One source as the pipeline loads it.
struct Planned {
    source: Arc<dyn ToolSource>,
    policy: SourcePolicy,
    /// What its failure does when neither its policy nor the surface says.
    fallback: OnFailure,
}

impl Planned {
    fn new(source: Arc<dyn ToolSource>, policy: SourcePolicy, fallback: OnFailure) -> Self {
        Planned { source, policy, fallback }
    }
}

/// The loaded candidates.
pub(crate) struct Candidates {
    tools: Vec<Arc<dyn Tool>>,
}

/// Steps 1 and 2: fix the child environment, then load every source once, in order. Warnings are appended; the
/// child environment every later child gets is returned with the candidates.
pub(crate) async fn load(
    config: &Config,
    mut inputs: Inputs<'_>,
    warnings: &mut Vec<Warning>,
) -> Result<(Candidates, ChildEnv, Pinning)> {
    let mut sources = configured(config, inputs.imports)?;
    #[cfg(feature = "nats")]
    if inputs.imports {
        sources.extend(remote::sources(config, inputs.nats.clone()).await?);
    }
    sources.extend(
        std::mem::take(&mut inputs.sources).into_iter().map(|(s, policy)| Planned::new(s, policy, OnFailure::Abort)),
    );
    // Every configured bearer variable, whether or not this surface imports (a server that does not connect to
    // `mcp_servers` still must not hand the token to its children: MCPI-4).
    let mut env = ChildEnv::new()
        .with_scrubbed_all(std::mem::take(&mut inputs.credentials))
        .with_scrubbed_all(config.bearer_token_envs());
    for planned in &sources {
        env = env.with_scrubbed_all(planned.source.credentials());
    }
    if let Some(dir) = checked_dir("tool working directory", inputs.working_dir)? {
        env = env.with_working_dir(dir);
    }
    env = confine(config, env, warnings)?;
    let ctx = LoadContext::new(env);
    let mut pinning = Pinning::default();
    let store = pin_store(config, &inputs, &sources).await;
    pinning.store = store.as_ref().and_then(|s| s.as_ref().ok().cloned());
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut failed = Vec::new();
    for Planned { source, policy, fallback } in sources {
        let on_failure = policy.failure().or(inputs.on_failure).unwrap_or(fallback);
        match load_one(&source, &ctx, policy, store.as_ref(), &mut pinning.reports).await {
            Ok(loaded) => {
                tools.extend(loaded.tools);
                warnings.extend(loaded.warnings);
            }
            Err(e) => match on_failure {
                OnFailure::Abort => {
                    failed.push(e);
                    break;
                }
                OnFailure::Report => failed.push(e),
                OnFailure::Warn => warnings.push(Warning::SourceFailed {
                    source: crate::gate::sanitize(source.name(), 200),
                    reason: crate::gate::sanitize(&e.to_string(), 2000),
                }),
            },
        }
    }
    // What failed before an `Abort` is reported with it, in order (IMPORT-7).
    joined(failed)?;
    Ok((Candidates { tools }, ctx.env().clone(), pinning))
}

/// The environment policy (ENV-1) and the confinement (SBX-1) of every child, from `harness.env` and
/// `harness.sandbox`; a setting the kernel cannot enforce fails here (SBX-6), or is a warning under `best_effort`.
pub(crate) fn confine(config: &Config, env: ChildEnv, warnings: &mut Vec<Warning>) -> Result<ChildEnv> {
    let harness = &config.harness;
    let env = if harness.env.is_set() {
        env.with_env_policy(&harness.env.policy()).map_err(|e| config.locate(e))?
    } else {
        env
    };
    if !harness.sandbox.is_enabled() {
        return Ok(env);
    }
    let base = config.file().and_then(std::path::Path::parent);
    let confinement = Confinement::new(harness.sandbox.profile(base)).map_err(|e| config.locate(e))?;
    warnings.extend(
        confinement
            .unenforced()
            .iter()
            .map(|u| Warning::SandboxUnenforced { setting: u.setting.clone(), why: u.why.clone() }),
    );
    Ok(env.with_confinement(Arc::new(confinement)))
}

/// The pin store, when a source is pinned: the host's, else the default one opened now (its failure is each
/// pinned source's, so it is kept as a message).
async fn pin_store(
    config: &Config,
    inputs: &Inputs<'_>,
    sources: &[Planned],
) -> Option<std::result::Result<Arc<dyn PinStore>, String>> {
    if !sources.iter().any(|p| p.policy.pins().is_some()) {
        return None;
    }
    if let Some(store) = &inputs.pin_store {
        return Some(Ok(store.clone()));
    }
    #[cfg(feature = "nats")]
    let opened = super::stores::open_pins(config, inputs.store_base, inputs.nats.as_ref()).await;
    #[cfg(not(feature = "nats"))]
    let opened = super::stores::open_pins(config, inputs.store_base).await;
    Some(opened.map_err(|e| e.to_string()))
}

/// One source: loaded under its policy, its filters held, then its pins checked (PIN-2..4).
async fn load_one(
    source: &Arc<dyn ToolSource>,
    ctx: &LoadContext,
    policy: SourcePolicy,
    store: Option<&std::result::Result<Arc<dyn PinStore>, String>>,
    reports: &mut Vec<PinReport>,
) -> Result<Loaded> {
    let filters = policy.filters().then(|| policy.clone());
    let pins = policy.pins().map(|(key, mode)| (key.to_owned(), mode));
    let mut loaded = source.load(&ctx.clone().with_policy(policy)).await?;
    // A source that ignored the policy is held to it here.
    if let Some(policy) = &filters {
        loaded.tools.retain(|t| policy.keeps(t.spec().name()));
    }
    let Some((key, mode)) = pins else { return Ok(loaded) };
    // Under `warn` the tools survive a failed check, so the check gets copies (pointer clones).
    let tools = if mode == PinMode::Warn { loaded.tools.clone() } else { std::mem::take(&mut loaded.tools) };
    let checked = match store {
        Some(Ok(store)) => crate::source::pins::apply(store.as_ref(), &key, mode, tools).await,
        Some(Err(reason)) => Err(crate::error::Error::source_failed(reason.clone())),
        None => Err(crate::error::Error::source_failed("no pin store")),
    };
    match checked {
        Ok((tools, warnings, found)) => {
            loaded.tools = tools;
            loaded.warnings.extend(warnings);
            reports.extend(found);
            Ok(loaded)
        }
        // PIN-4: under `warn` the tools go on unchecked, with a warning; under `refuse` nothing unchecked is offered.
        Err(e) if mode == PinMode::Warn => {
            let reason = crate::gate::sanitize(&e.to_string(), 2000);
            loaded.warnings.push(Warning::PinUnchecked { server: key, reason });
            Ok(loaded)
        }
        // A store's error can quote what a file or a NATS peer holds (GATE-8).
        Err(e) => Err(crate::error::Error::new(
            e.kind(),
            format!(
                "{key}: its tools cannot be checked against their pins: {}",
                crate::gate::sanitize(&e.to_string(), 2000)
            ),
        )),
    }
}

/// The sources the configuration names: the application (TOOL-7), then the MCP imports in entry order, each
/// with its entry's filters.
fn configured(config: &Config, imports: bool) -> Result<Vec<Planned>> {
    let mut sources = Vec::new();
    if let Some(app) = FiskApp::from_config(config) {
        sources.push(Planned::new(Arc::new(app), SourcePolicy::new(), OnFailure::Abort));
    }
    if !imports {
        return Ok(sources);
    }
    #[cfg(feature = "mcp")]
    for (i, entry) in config.mcp_servers.iter().enumerate() {
        let import = crate::source::mcp::McpImport::from_entry(i, entry, config.llm.budget.call_timeout())
            .map_err(|e| config.locate(e))?;
        let key = format!("mcp_servers[{i}]");
        let policy = SourcePolicy::from_filters(&key, entry.include.as_ref(), entry.exclude.as_ref())
            .map_err(|e| config.locate(e))?
            .pinned(format!("mcp_servers.{}", entry.name), entry.pins);
        sources.push(Planned::new(Arc::new(import), policy, OnFailure::Abort));
    }
    Ok(sources)
}

/// Several errors as one: the first's kind, every message in order.
fn joined(mut errors: Vec<crate::error::Error>) -> Result<()> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => {
            let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
            Err(crate::error::Error::new(errors[0].kind(), text.join("; ")))
        }
    }
}

impl Candidates {
    /// Step 3: add built-ins or custom tools.
    pub(crate) fn extend(&mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) {
        self.tools.extend(tools);
    }

    /// Step 4: select, keeping the selection's warnings.
    pub(crate) fn select(self, config: &Config, warnings: &mut Vec<Warning>) -> Result<Toolset> {
        let toolset = Selection::from_config(config)?.apply(self.tools)?;
        warnings.extend(toolset.warnings().iter().cloned());
        Ok(toolset)
    }
}

/// The `remote_tools` hosts (IMPORT-1..11), sharing one connection (CFG-15).
#[cfg(feature = "nats")]
mod remote {
    use super::Planned;
    use crate::config::Config;
    use crate::error::{Error, Result};
    use crate::nats::{NatsConnection, NatsContext, SharedNats};
    use crate::source::remote::{ListingBudget, RemoteAgent, configured_timeout};
    use crate::source::{OnFailure, SourcePolicy};
    use std::sync::Arc;

    /// One [`RemoteAgent`] per host, in config order, over the injected connection or one made from
    /// `nats_context` with the agent's identity, all counting their tool specs against one [`ListingBudget`]
    /// (IMPORT-12), each with its host's filters; a host's failure is reported with the others' (IMPORT-7). None
    /// when no host is configured (nothing connects).
    pub(super) async fn sources(config: &Config, nats: Option<SharedNats>) -> Result<Vec<Planned>> {
        if config.remote_tools.is_empty() {
            return Ok(Vec::new());
        }
        let identity = config.identity()?;
        let nats = match nats {
            Some(shared) => shared.get().await.map_err(|e| failure(config, e))?,
            None => connect(config, &identity).await?,
        };
        let timeout = configured_timeout(config);
        let budget = ListingBudget::new();
        (config.remote_tools.iter().enumerate())
            .map(|(i, host)| {
                let agent = RemoteAgent::from_host(i, host, nats.clone(), &identity, timeout)?;
                let key = format!("remote_tools[{i}]");
                let policy = SourcePolicy::from_filters(&key, host.include.as_ref(), host.exclude.as_ref())?
                    .pinned(format!("remote_tools.{}", host.name), host.pins);
                Ok(Planned::new(Arc::new(agent.with_budget(&budget)), policy, OnFailure::Report))
            })
            .map(|planned: Result<Planned>| planned.map_err(|e| config.locate(e)))
            .collect()
    }

    /// IMPORT-7: a connection failure names every host it stops, and the context.
    async fn connect(config: &Config, identity: &str) -> Result<NatsConnection> {
        let context = NatsContext::load(config.nats_context.as_deref()).map_err(|e| failure(config, e))?;
        NatsConnection::connect(&context, identity).await.map_err(|e| failure(config, e))
    }

    fn failure(config: &Config, e: Error) -> Error {
        let hosts: Vec<String> = config.remote_tools.iter().map(|h| format!("\"{}\"", h.name)).collect();
        Error::new(e.kind(), format!("remote_tools host {}: {e}", hosts.join(", ")))
    }
}
