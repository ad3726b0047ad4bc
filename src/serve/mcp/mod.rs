//! The tool set over the Model Context Protocol (SPEC section 15, MCP-1..24): rmcp's streamable HTTP server at the
//! listener root, or one client over stdin and stdout ([`McpServer::serve_stdio`], any stream pair with
//! [`McpServer::serve_io`]; STDIO-1..6), fed by the same loading and selection pipeline as the agent. Everything
//! below holds on both transports except what names HTTP (the bind address, `Host` checks, sessions).
//!
//! - Serving is opt-in: the configuration needs an `expose.agent.mcp` block (MCP-1).
//! - Served: command tools and MCP-servable `harness.tools` built-ins that survive selection, narrowed by
//!   `expose.agent.tools` (MCP-7). `ask_human_*`, `memory_*`, imported and custom tools are never served.
//! - Every input is checked against the tool's schema before anything is asked or run; every failure is an
//!   `isError: true` result, never a protocol error (MCP-18).
//! - Gated tools ask the client's user through elicitation, in both protocol eras: `elicitation/create` for
//!   clients on 2025-11-25 and earlier, an `InputRequiredResult` round for 2026-07-28. Only an explicit approval
//!   runs the command; a client that cannot be asked is refused under the default `confirm_over_mcp: always`
//!   (MCP-8..13).
//! - At most `max_concurrent_tools` calls run at once across all clients, each bounded by `tool_timeout`; approval
//!   waits hold no slot and are outside the timeout (MCP-13, MCP-16, MCP-17).
//! - It binds 127.0.0.1 unless told otherwise and accepts only `Host` headers that fit the bind address
//!   (DNS-rebinding protection); oversize bodies are refused (MCP-3).
//! - A client that declares the tasks extension gets each command call as a task it polls, cancels (killing the
//!   process group) and approves in the task's own round; `expose.agent.mcp.tasks` bounds their count and lifetime,
//!   and a task is visible only to the session that made it (TASK-1..6).
//! - At most `max_sessions` sessions are open; at the cap a new one replaces the least recently used session with
//!   no request in progress, and is refused (`503`) only when every session is busy (MCP-24).
//!
//! ```no_run
//! use fisk_ai::Config;
//! use fisk_ai::serve::mcp::{McpEvent, McpServer};
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let config = Config::load("agent.yaml")?;
//! let server = McpServer::builder()
//!     .config(config)
//!     .events(|e: &McpEvent<'_>| {
//!         if let McpEvent::ToolCall { display, .. } = e {
//!             eprintln!("-> {display}");
//!         }
//!     })
//!     .build()
//!     .await?; // introspects the application and selects the served tools once
//! let listener = server.bind().await?; // 127.0.0.1:8080 unless configured otherwise
//! server.serve_until_signal(listener).await // SIGINT or SIGTERM stops it gracefully
//! # }
//! ```

mod clients;
mod confirm;
mod duplicate;
mod events;
mod guard;
mod handler;
mod http;
mod listing;
mod progress;
mod sessions;
mod stdio;
mod tasks;

pub use super::signal::shutdown_signal;
pub use clients::{ClientEntry, ClientFile, ClientScope, Installed, ListedServer, McpClient};
pub use confirm::DEFAULT_CONFIRM_TIMEOUT;
pub use events::{Denial, GatedBehavior, McpEvent, McpEventSink, NoMcpEvents};
pub use http::SHUTDOWN_GRACE;

use crate::builtin::BuiltinFactory;
use crate::config::{Config, ConfirmOverMcp};
use crate::error::{Error, Result};
use crate::harness::{self, Harness, HarnessBuilder};
use crate::select::Toolset;
use crate::source::ToolSource;
use crate::warning::Warning;
use handler::{InFlight, Shared};
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The largest request accepted by default: over HTTP a bigger body gets `413 Payload Too Large`; over stdio a
/// longer line is answered with a JSON-RPC `-32600` error and skipped.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

/// A loaded MCP server: the served tools and the settings, ready to [`bind`](McpServer::bind) and
/// [`serve`](McpServer::serve).
pub struct McpServer {
    shared: Arc<Shared>,
    warnings: Vec<Warning>,
    address: String,
    port: u16,
    max_body: usize,
    hosts: Option<Vec<String>>,
    sessions: Arc<sessions::BoundedSessions>,
    sessions_cancel: CancellationToken,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("identity", &self.shared.identity)
            .field("address", &self.address)
            .field("port", &self.port)
            .field("tools", &self.shared.tools)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Start building a server.
    pub fn builder() -> McpServerBuilder {
        McpServerBuilder::default()
    }

    /// The served tools, in request order (MCP-7).
    pub fn tools(&self) -> &Toolset {
        &self.shared.tools
    }

    /// Warnings found while building: configuration, tags, selection, and MCP-21's agent-only settings.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The server name clients see: the configuration's identity (MCP-5).
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }

    /// The address [`bind`](McpServer::bind) listens on (MCP-3).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The port [`bind`](McpServer::bind) listens on (MCP-2).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// How gated tools behave (MCP-8).
    pub fn confirm_over_mcp(&self) -> ConfirmOverMcp {
        self.shared.confirm
    }

    /// How many calls may run at once across all clients (MCP-16).
    pub fn max_concurrent_tools(&self) -> usize {
        self.shared.max_concurrent
    }

    /// The bound on one call (MCP-17).
    pub fn tool_timeout(&self) -> Duration {
        self.shared.tool_timeout
    }

    /// How long a user has to answer an approval request (MCP-10).
    pub fn confirm_timeout(&self) -> Duration {
        self.shared.confirm_timeout
    }

    /// Listen on the configured address and port (127.0.0.1:8080 unless told otherwise).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) naming the address when it cannot be bound (in use, not permitted).
    pub async fn bind(&self) -> Result<TcpListener> {
        http::bind(&self.address, self.port).await
    }

    /// Serve on `listener` until `shutdown` resolves, then shut down gracefully: stop accepting, wait at most
    /// [`SHUTDOWN_GRACE`] for calls in progress, stop the rest (killing their process groups) and return
    /// (MCP-22). Only a listener failure is an error.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when the listener has no address or accepting fails for good.
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
        let local = listener
            .local_addr()
            .map_err(|e| Error::new(crate::ErrorKind::Io, format!("the MCP listener has no address: {e}")))?;
        let app = self.router_for(self.hosts_for(Some(local)));
        http::serve(self.shared, self.sessions_cancel, listener, app, shutdown).await
    }

    /// The MCP endpoint as an axum [`Router`](axum::Router) answering at its root, for a host to mount under its
    /// own path beside its own routes, TLS and authentication layers. The strict `Host` and `Origin` checks (for
    /// the configured address, or [`McpServerBuilder::allowed_hosts`]), the body limit, the session cap, the
    /// concurrency bound and the per-call timeout all apply; call [`shutdown`](McpServer::shutdown) from the
    /// host's graceful-shutdown future. Set `TCP_NODELAY` on the host's connections (axum's
    /// `ListenerExt::tap_io`), or every response waits about 40 ms on Nagle's algorithm.
    ///
    /// ```no_run
    /// # async fn demo(server: fisk_ai::serve::mcp::McpServer) -> std::io::Result<()> {
    /// use axum::serve::ListenerExt;
    /// let server = std::sync::Arc::new(server);
    /// let app = axum::Router::new()
    ///     .route("/healthz", axum::routing::get(|| async { "ok" }))
    ///     .nest_service("/mcp", server.router());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// let listener = listener.tap_io(|tcp| {
    ///     let _ = tcp.set_nodelay(true);
    /// });
    /// let stopping = server.clone();
    /// axum::serve(listener, app)
    ///     .with_graceful_shutdown(async move {
    ///         fisk_ai::serve::mcp::shutdown_signal().await;
    ///         stopping.shutdown().await;
    ///     })
    ///     .await
    /// # }
    /// ```
    pub fn router(&self) -> axum::Router {
        self.router_for(self.hosts_for(None))
    }

    /// Shut an embedded [`router`](McpServer::router) down gracefully (MCP-22): no new call starts, calls in
    /// progress get at most [`SHUTDOWN_GRACE`], then they are stopped (their process groups killed) and every
    /// session ends, so the host's server can finish draining its connections.
    pub async fn shutdown(&self) {
        http::stop(&self.shared, &self.sessions_cancel, tokio::time::Instant::now() + SHUTDOWN_GRACE).await;
    }

    /// MCP sessions open now (sessions idle past `session_idle_timeout` are counted until the next one opens).
    pub fn open_sessions(&self) -> usize {
        self.sessions.len()
    }

    fn router_for(&self, hosts: Option<Vec<String>>) -> axum::Router {
        http::router(
            self.shared.clone(),
            http::RouterParts {
                hosts,
                max_body: self.max_body,
                sessions: self.sessions.clone(),
                sessions_cancel: self.sessions_cancel.clone(),
            },
        )
    }

    /// The `Host`s to accept: the builder's list (empty means any), else those the bound (or configured) address
    /// implies.
    fn hosts_for(&self, local: Option<std::net::SocketAddr>) -> Option<Vec<String>> {
        if let Some(hosts) = &self.hosts {
            return (!hosts.is_empty()).then(|| hosts.clone());
        }
        let bare = self.address.trim_start_matches('[').trim_end_matches(']');
        let local = local.or_else(|| bare.parse::<std::net::IpAddr>().ok().map(|ip| (ip, self.port).into()));
        match local {
            Some(local) => http::allowed_hosts(&self.address, local),
            // A name that was not bound here: accept it, and the loopback names when it is localhost.
            None => http::allowed_hosts(&self.address, ([127, 0, 0, 1], self.port).into())
                .filter(|_| bare.eq_ignore_ascii_case("localhost"))
                .or_else(|| Some(vec![bare.to_ascii_lowercase()])),
        }
    }

    /// Serve one client over a byte stream pair: newline-delimited JSON-RPC, MCP's stdio transport (STDIO-1). The
    /// same tools, approval rules, concurrency bound and timeout apply as over HTTP; the `Host` and `Origin` checks
    /// do not, because there is no network peer to rebind: whoever holds the streams started this process.
    ///
    /// Input lines are bounded by [`McpServerBuilder::max_request_body`]: a longer one is answered with a JSON-RPC
    /// error and skipped (STDIO-3). When the input ends, the client leaves or `shutdown` resolves, every call still
    /// running is stopped at once (its process group killed) and this returns once they are gone (STDIO-4). Write
    /// nothing else to `write`: logs belong on stderr.
    ///
    /// ```no_run
    /// use fisk_ai::Config;
    /// use fisk_ai::serve::mcp::McpServer;
    ///
    /// # async fn demo() -> fisk_ai::Result<()> {
    /// let server = McpServer::builder().config(Config::load("agent.yaml")?).build().await?;
    /// // An in-memory pipe, as a test of a host's own client would use; a process serves its stdin and stdout
    /// // with `serve_stdio`.
    /// let (ours, theirs) = tokio::io::duplex(64 * 1024);
    /// let (read, write) = tokio::io::split(ours);
    /// # drop(theirs);
    /// server.serve_io(read, write, std::future::pending::<()>()).await
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when the session fails on something other than its end.
    pub async fn serve_io<R, W>(self, read: R, write: W, shutdown: impl Future<Output = ()> + Send) -> Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        stdio::serve(self.shared, read, write, self.max_body, shutdown).await
    }

    /// [`serve_io`](McpServer::serve_io) over this process's stdin and stdout until either closes or SIGINT or
    /// SIGTERM arrives.
    ///
    /// # Errors
    ///
    /// As [`serve_io`](McpServer::serve_io).
    pub async fn serve_stdio(self) -> Result<()> {
        self.serve_io(stdio::stdin(), stdio::stdout(), shutdown_signal()).await
    }

    /// [`serve`](McpServer::serve) until SIGINT or SIGTERM (MCP-22). The signal handlers are installed when this is
    /// first polled; to catch a signal that arrives earlier, call [`shutdown_signal`] first and pass it to
    /// [`serve`](McpServer::serve).
    ///
    /// # Errors
    ///
    /// As [`serve`](McpServer::serve).
    pub async fn serve_until_signal(self, listener: TcpListener) -> Result<()> {
        self.serve(listener, shutdown_signal()).await
    }
}

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
        let served = harness::mcp_served(&config, harness.toolset(), warnings)?;
        return Ok((config, served));
    }
    let config = config.ok_or_else(|| Error::config("an MCP server needs a configuration"))?;
    let mut warnings = harness::check_mcp(&config)?;
    let served = match toolset {
        Some(toolset) => harness::mcp_served(&config, &toolset, warnings)?,
        None => {
            let harness = parts.config(config.clone()).build().await?;
            warnings.extend(harness.warnings().iter().cloned());
            harness::mcp_served(&config, harness.toolset(), warnings)?
        }
    };
    Ok((config, served))
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

    /// Deliver [`McpEvent`]s to `sink` (client connections, calls, denials, warnings).
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

    /// Validate the configuration, load and select the tools once, and keep what MCP serves. Fails when MCP is
    /// not enabled (MCP-1), on configuration, source and selection errors, and when no tool can be served (MCP-7).
    ///
    /// # Errors
    ///
    /// A configuration error when there is no configuration, MCP is not enabled (MCP-1), validation fails or the
    /// identity is invalid; an introspection or source error when a tool source cannot be loaded; a selection error on
    /// a name collision or when no tool can be served (MCP-7).
    pub async fn build(self) -> Result<McpServer> {
        let (config, harness::Served { tools, warnings }) =
            serving_harness(self.config, self.harness, self.parts, self.touched, self.toolset).await?;
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
            pending: confirm::PendingApprovals::new(self.confirm_timeout),
            form,
            events: self.events.unwrap_or_else(|| Arc::new(NoMcpEvents)),
            in_flight: InFlight::default(),
            calls_cancel: CancellationToken::new(),
            tasks: tasks::Tasks::new(mcp.task_ttl(), mcp.tasks.max()),
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
        })
    }
}
