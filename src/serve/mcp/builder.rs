//! [`McpServerBuilder`]: the served tool set and the settings, put together once.

use super::auth::{self, Auth, ToolScopes};
use super::events::{McpEventSink, NoMcpEvents};
use super::handler::{InFlight, Shared};
use super::pending::PendingApprovals;
use super::server::McpServer;
use super::{confirm, listing, sessions, tasks};
use crate::builtin::BuiltinFactory;
use crate::config::Config;
use crate::config::McpExpose;
use crate::error::{Error, Result};
use crate::harness::{self, Harness, HarnessBuilder};
use crate::select::Toolset;
use crate::source::ToolSource;
use crate::warning::Warning;
use confirm::DEFAULT_CONFIRM_TIMEOUT;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The largest request accepted by default: over HTTP a bigger body gets `413 Payload Too Large`; over stdio a
/// longer line is answered with a JSON-RPC `-32600` error and skipped.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

/// Builds an [`McpServer`]; by value, finished with [`McpServerBuilder::build`].
pub struct McpServerBuilder {
    config: Option<Config>,
    harness: Option<Arc<Harness>>,
    parts: HarnessBuilder,
    touched: Option<&'static str>,
    toolset: Option<Toolset>,
    address: Option<String>,
    port: u16,
    events: Option<Arc<dyn McpEventSink>>,
    confirm_timeout: Duration,
    max_body: usize,
    hosts: Option<Vec<String>>,
    version: Option<String>,
    jwks_min_refresh: Duration,
}

impl Default for McpServerBuilder {
    fn default() -> Self {
        McpServerBuilder {
            config: None,
            harness: None,
            parts: HarnessBuilder::default().for_agent(false),
            touched: None,
            toolset: None,
            address: None,
            port: 0,
            events: None,
            confirm_timeout: DEFAULT_CONFIRM_TIMEOUT,
            max_body: DEFAULT_MAX_REQUEST_BODY,
            hosts: None,
            version: None,
            jwks_min_refresh: auth::DEFAULT_MIN_REFRESH,
        }
    }
}

impl std::fmt::Debug for McpServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServerBuilder")
            .field("config", &self.config.is_some())
            .field("harness", &self.harness.is_some())
            .field("address", &self.address)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

/// The MCP server's configuration and served set: from a harness given, a tool set given, or a harness for serving
/// assembled from the builder's plug-ins; MCP's checks run before anything loads.
async fn serving_harness(
    config: Option<Config>,
    given: Option<Arc<Harness>>,
    parts: HarnessBuilder,
    touched: Option<&'static str>,
    toolset: Option<Toolset>,
) -> Result<(Config, harness::Served)> {
    if let Some(harness) = given {
        if let Some(method) = touched.or(config.as_ref().map(|_| "config")) {
            return Err(Error::config(format!(
                "McpServerBuilder::{method} was given together with a harness: give it to the HarnessBuilder instead"
            )));
        }
        let config = harness.config().clone();
        let mut warnings = harness::check_mcp(&config)?;
        warnings.extend(harness.warnings().iter().cloned());
        let served = with_harness(harness::mcp_served(&config, harness.toolset(), warnings)?, &harness);
        return Ok((config, served));
    }
    let config = config.ok_or_else(|| Error::config("an MCP server needs a configuration"))?;
    let mut warnings = harness::check_mcp(&config)?;
    let served = match toolset {
        Some(toolset) => {
            // POL-1: a configured hook applies to a given tool set too, never dropped silently.
            let mut served = harness::mcp_served(&config, &toolset, warnings)?;
            let env = crate::exec::ChildEnv::new().with_scrubbed_all(config.bearer_token_envs());
            served.policy = harness::resolve_policy(&config, None, &env)?;
            // AUD-1: so is a configured trail (a stream sink needs the harness's NATS connection).
            served.audit = harness::open_audit(&config, None, None, &mut served.warnings).await?;
            // REPL-1: and the approvals bucket, over a connection of its own.
            #[cfg(feature = "nats")]
            {
                let nats = config
                    .identity()
                    .ok()
                    .map(|id| crate::nats::SharedNats::from_context(config.nats_context.as_deref(), id));
                served.approvals = harness::open_approvals(&config, nats.as_ref()).await?;
            }
            served
        }
        None => {
            let harness = parts.config(config.clone()).build().await?;
            warnings.extend(harness.warnings().iter().cloned());
            with_harness(harness::mcp_served(&config, harness.toolset(), warnings)?, &harness)
        }
    };
    Ok((config, served))
}

/// What the server takes from the harness besides the tools: the policy hook, the audit trail and the approvals
/// bucket.
fn with_harness(mut served: harness::Served, harness: &Harness) -> harness::Served {
    served.policy = harness.policy().cloned();
    served.audit = harness.audit().cloned();
    #[cfg(feature = "nats")]
    {
        served.approvals = harness.approvals().cloned();
    }
    served
}

impl McpServerBuilder {
    /// The parsed configuration (required); it must have an `expose.agent.mcp` block (MCP-1). It is validated
    /// leniently: `system_prompt` and `llm` are not needed. The wrapped application is loaded when
    /// `application_path` is set.
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Another tool source; its tools are served when their specs say
    /// [`Exposure::Servable`](crate::tool::Exposure::Servable) (command tools do by default; imported tools never
    /// are).
    #[must_use]
    pub fn source(mut self, source: impl ToolSource + 'static) -> Self {
        self.touched.get_or_insert("source");
        self.parts = self.parts.source(source);
        self
    }

    /// Register a built-in factory of the host's; it is served when a `harness.tools` entry enables it and the
    /// tool's spec says [`Exposure::Servable`](crate::tool::Exposure::Servable).
    #[must_use]
    pub fn builtin(mut self, factory: impl BuiltinFactory + 'static) -> Self {
        self.touched.get_or_insert("builtin");
        self.parts = self.parts.builtin(factory);
        self
    }

    /// Serve from `harness` (shared with an agent, say): `build` then does no I/O, and serves what of the harness's
    /// tool set MCP may (commands, and built-ins and host tools whose specs say
    /// [`Exposure::Servable`](crate::tool::Exposure::Servable)). The configuration, sources and built-ins are the
    /// harness's; giving them here as well is an error.
    #[must_use]
    pub fn harness(mut self, harness: Arc<Harness>) -> Self {
        self.harness = Some(harness);
        self
    }

    /// Serve from an already-selected tool set (for example an [`Agent`](crate::Agent)'s) instead of loading one;
    /// the configuration still supplies the MCP settings, and MCP-7 still decides what of it is served.
    #[must_use]
    pub fn toolset(mut self, toolset: Toolset) -> Self {
        self.toolset = Some(toolset);
        self
    }

    /// Run command tools in `dir` (OVR-6): an absolute path to an existing directory.
    #[must_use]
    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.touched.get_or_insert("working_dir");
        self.parts = self.parts.working_dir(dir);
        self
    }

    /// Listen on `address` instead of the configured one; empty means unset (MCP-3).
    #[must_use]
    pub fn address(mut self, address: impl Into<String>) -> Self {
        let address = address.into();
        self.address = (!address.trim().is_empty()).then(|| address.trim().to_owned());
        self
    }

    /// Listen on `port` instead of the configured one; 0 means unset (MCP-2).
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Deliver [`McpEvent`](super::McpEvent)s to `sink` (client connections, calls, denials, warnings).
    #[must_use]
    pub fn events(mut self, sink: impl McpEventSink + 'static) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// How long a user has to answer an approval request; 2 minutes by default (MCP-10). An unanswered request
    /// denies the call.
    #[must_use]
    pub fn confirm_timeout(mut self, timeout: Duration) -> Self {
        self.confirm_timeout = timeout;
        self
    }

    /// The largest request accepted, in bytes ([`DEFAULT_MAX_REQUEST_BODY`] by default): an HTTP body, or a stdio
    /// line.
    #[must_use]
    pub fn max_request_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// Accept exactly these `Host` headers (names or `host:port`) instead of those the bind address implies. An
    /// empty list accepts any host, which gives up DNS-rebinding protection.
    #[must_use]
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The version reported to clients; this crate's version by default (MCP-5).
    #[must_use]
    pub fn server_version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// The least time between two reads of the issuer's keys caused by tokens with an unknown key id (AUTH-7):
    /// 10 seconds by default. A flood of such tokens causes at most one read per interval; a key the issuer
    /// rotated in is found at the first token that names it once the interval since the last read has passed.
    #[must_use]
    pub fn jwks_min_refresh(mut self, interval: Duration) -> Self {
        self.jwks_min_refresh = interval;
        self
    }

    /// Validate the configuration, load and select the tools once, and keep what MCP serves. Fails when MCP is
    /// not enabled (MCP-1), on configuration, source and selection errors, and when no tool can be served (MCP-7).
    ///
    /// # Errors
    ///
    /// A configuration error when there is no configuration, MCP is not enabled (MCP-1), validation fails or the
    /// identity is invalid; an introspection or source error when a tool source cannot be loaded; a selection error on
    /// a name collision or when no tool can be served (MCP-7).
    pub async fn build(self) -> Result<McpServer> {
        let (config, served) =
            serving_harness(self.config, self.harness, self.parts, self.touched, self.toolset).await?;
        let pending = pending_approvals(&served, self.confirm_timeout);
        let harness::Served { tools, mut warnings, policy, audit, .. } = served;
        let mcp = config.expose.agent.mcp.clone().unwrap_or_default();
        let identity = config.identity()?;
        let version = self.version.unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tasks().build())
            .with_server_info(Implementation::new(identity.clone(), version));
        if !mcp.instructions.trim().is_empty() {
            info = info.with_instructions(mcp.instructions.clone());
        }
        let listing =
            listing::build(&tools).map_err(|e| Error::config(format!("the tool listing cannot be serialized: {e}")))?;
        let form = confirm::form_schema().map_err(|e| Error::config(format!("the approval form is invalid: {e}")))?;
        let max_concurrent = mcp.max_concurrent_tools();
        let address = self.address.unwrap_or_else(|| mcp.address().to_owned());
        let port = if self.port != 0 { self.port } else { mcp.port() };
        let (scopes, auth) = resource_server(&mcp, &identity, &tools, self.jwks_min_refresh, &mut warnings).await?;
        if auth.is_none() && mcp.insecure_no_auth && !is_loopback(&address) {
            warnings.push(Warning::InsecureNoAuth { address: address.clone() });
        }
        let shared = Shared {
            identity,
            info,
            tools,
            listing: Arc::new(listing),
            confirm: mcp.confirm_over_mcp,
            confirm_timeout: self.confirm_timeout,
            tool_timeout: mcp.tool_timeout(),
            max_concurrent,
            slots: Arc::new(Semaphore::new(max_concurrent)),
            pending,
            form,
            events: self.events.unwrap_or_else(|| Arc::new(NoMcpEvents)),
            in_flight: InFlight::default(),
            calls_cancel: CancellationToken::new(),
            tasks: tasks::Tasks::new(mcp.task_ttl(), mcp.tasks.max()),
            scopes,
            policy,
            audit,
        };
        let shared = Arc::new(shared);
        let sessions = sessions::BoundedSessions::new(mcp.max_sessions(), mcp.session_idle_timeout());
        let sessions = Arc::new(sessions.with_work(shared.clone()));
        Ok(McpServer {
            shared,
            warnings,
            address,
            port,
            max_body: self.max_body,
            hosts: self.hosts,
            sessions,
            sessions_cancel: CancellationToken::new(),
            auth,
            insecure_no_auth: mcp.insecure_no_auth,
        })
    }
}

/// REPL-1: pending 2026-07-28 approvals in the approvals bucket under `harness.approvals.backend: nats`, so any
/// replica answers them; in this process otherwise.
fn pending_approvals(served: &harness::Served, ttl: Duration) -> PendingApprovals {
    #[cfg(feature = "nats")]
    if let Some(book) = &served.approvals {
        return PendingApprovals::shared(ttl, book);
    }
    let _ = served;
    PendingApprovals::new(ttl)
}

/// AUTH-1, AUTH-5: the resource server and the tools' scopes when `auth` is set; without it, tags are warned about
/// and every tool is served.
async fn resource_server(
    mcp: &McpExpose,
    identity: &str,
    tools: &Toolset,
    min_refresh: Duration,
    warnings: &mut Vec<Warning>,
) -> Result<(Arc<ToolScopes>, Option<Arc<Auth>>)> {
    let Some(config) = &mcp.auth else {
        warnings.extend(ToolScopes::unenforced(tools));
        return Ok((Arc::new(ToolScopes::default()), None));
    };
    let (scopes, tag_warnings) = ToolScopes::of(tools);
    warnings.extend(tag_warnings);
    let auth = Auth::new(config, identity, &scopes, min_refresh).await?;
    Ok((Arc::new(scopes), Some(Arc::new(auth))))
}

/// Whether `address` (as configured: an IP literal or a name) is loopback; a name other than `localhost` may
/// resolve anywhere, so it is not.
pub(crate) fn is_loopback(address: &str) -> bool {
    let bare = address.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
