//! [`McpServer`]: a loaded server, served over HTTP on its own listener, mounted in a host's router, or over a
//! byte stream pair (stdio).

use super::auth::Auth;
use super::builder::McpServerBuilder;
use super::handler::Shared;
use super::{http, sessions, stdio};
use crate::config::ConfirmOverMcp;
use crate::error::{Error, Result};
use crate::select::Toolset;
use crate::serve::signal::shutdown_signal;
use crate::warning::Warning;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::http::SHUTDOWN_GRACE;
/// A loaded MCP server: the served tools and the settings, ready to [`bind`](McpServer::bind) and
/// [`serve`](McpServer::serve).
pub struct McpServer {
    pub(super) shared: Arc<Shared>,
    pub(super) warnings: Vec<Warning>,
    pub(super) address: String,
    pub(super) port: u16,
    pub(super) max_body: usize,
    pub(super) hosts: Option<Vec<String>>,
    pub(super) sessions: Arc<sessions::BoundedSessions>,
    pub(super) sessions_cancel: CancellationToken,
    pub(super) auth: Option<Arc<Auth>>,
    pub(super) insecure_no_auth: bool,
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
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) naming the address when it cannot be bound (in use, not permitted); a
    /// configuration error naming `expose.agent.mcp.auth` for an address that is not loopback when neither `auth`
    /// nor `insecure_no_auth` is set (AUTH-9).
    pub async fn bind(&self) -> Result<TcpListener> {
        self.check_exposure(super::builder::is_loopback(&self.address), &self.address)?;
        http::bind(&self.address, self.port).await
    }

    /// AUTH-9: a listener that is not loopback needs `auth`, or the explicit `insecure_no_auth`.
    fn check_exposure(&self, loopback: bool, address: &str) -> Result<()> {
        if loopback || self.auth.is_some() || self.insecure_no_auth {
            return Ok(());
        }
        Err(Error::config_key(
            "expose.agent.mcp.auth",
            format!(
                "MCP would be served on {address} without authentication: set expose.agent.mcp.auth, serve on a \
                 loopback address, or set expose.agent.mcp.insecure_no_auth: true for a server behind a gateway \
                 that authenticates for it"
            ),
        ))
    }

    /// Whether requests need a bearer token (`expose.agent.mcp.auth`).
    pub fn requires_auth(&self) -> bool {
        self.auth.is_some()
    }

    /// The protected-resource metadata document (RFC 9728) when `auth` is set. [`router`](McpServer::router)
    /// answers it at `/.well-known/oauth-protected-resource` under its own root; a host that mounts the router under
    /// a path serves this at its root's well-known path (with the resource's path appended) too.
    pub fn resource_metadata(&self) -> Option<&[u8]> {
        self.auth.as_ref().map(|a| a.resource().document())
    }

    /// Serve on `listener` until `shutdown` resolves, then shut down gracefully: stop accepting, wait at most
    /// [`SHUTDOWN_GRACE`] for calls in progress, stop the rest (killing their process groups) and return
    /// (MCP-22). Only a listener failure is an error.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when the listener has no address or accepting fails for good; a
    /// configuration error naming `expose.agent.mcp.auth` for a listener that is not loopback when neither `auth`
    /// nor `insecure_no_auth` is set (AUTH-9).
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
        let local = listener
            .local_addr()
            .map_err(|e| Error::new(crate::ErrorKind::Io, format!("the MCP listener has no address: {e}")))?;
        self.check_exposure(local.ip().is_loopback(), &local.to_string())?;
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
                auth: self.auth.clone(),
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
