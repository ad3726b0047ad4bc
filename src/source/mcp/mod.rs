//! Tools imported from MCP servers (SPEC section 17, MCPI-1..12): one [`McpImport`] per `mcp_servers` entry.
//!
//! At load time the source starts or connects to the server, initializes it (either protocol era: the
//! 2026-07-28 discovery, falling back to the 2025-11-25 handshake), lists its tools following pagination, keeps
//! those the pipeline's [`SourcePolicy`](crate::source::SourcePolicy) keeps (the entry's `include` then
//! `exclude`), and hands them to the one assembly pipeline, where final naming
//! (IMPORT-5/6) and selection apply. The connection is kept for as long as any of its tools lives. When the last
//! tool is dropped, that is when the agent is, a stdio server is closed as the transport specification asks
//! (MCPI-17): its stdin is closed, it has two seconds to exit, then `SIGTERM` and two more, and then its whole
//! process group and every other descendant are killed (EXEC-17). That happens in the background; a host about to
//! exit waits for it with [`wait_servers_closed`], or ends every server at once with [`kill_servers_now`] on a way
//! out that skips destructors. What a server leaves running when it exits on its own is killed then.
//!
//! Calls go through the one dispatch path like every tool: the input is validated against the server's schema
//! first, gated when the entry sets `confirm`, and sent as one `tools/call` bounded by the entry's timeout. The
//! result follows MCPI-8 and is capped exactly as EXEC-12; a stdio server's oversized reply is read in bounded
//! memory, whatever its size.
//!
//! ```no_run
//! use fisk_ai::source::ToolSource;
//! use fisk_ai::source::mcp::McpImport;
//! use std::time::Duration;
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let github = McpImport::http("github", "https://mcp.example.com/mcp")?
//!     .with_alias("gh")?
//!     .with_bearer_token_env("GITHUB_TOKEN")
//!     .with_timeout(Duration::from_secs(30))
//!     .with_confirm(true);
//! let files = McpImport::stdio("files", ["/usr/local/bin/files-mcp", "--stdio"])?;
//! let loaded = files.load().await?;
//! println!("{} tools from {}", loaded.tools.len(), files.name());
//! # let _ = github;
//! # Ok(())
//! # }
//! ```

mod closing;
mod connection;
mod content;
mod http;
mod lines;
mod listing;
mod malformed;
mod oauth;
mod oversize;
mod sse;
mod stdio;
mod tool;
mod transport;

use crate::config::{McpOAuth, McpServerEntry, check_http_url};
use crate::error::{Error, Result};
use crate::exec::ChildEnv;
use crate::source::{LoadContext, Loaded, ToolSource};
use crate::tool::{Origin, Tool};
use crate::warning::Warning;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

pub use closing::{kill_servers_now, wait_servers_closed};
pub use connection::Reachability;

/// The per-call timeout when neither the entry nor the host sets one (`llm.budget.call_timeout`'s default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// How an [`McpImport`] reaches its server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking MCP over stdin/stdout: the executable path and its arguments.
    Stdio(Vec<String>),
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint URL (https unless loopback, no userinfo: MCPI-2).
        url: String,
        /// The environment variable holding the bearer token, if any (MCPI-4).
        bearer_token_env: Option<String>,
    },
}

/// A [`ToolSource`] importing the tools of one MCP server (MCPI-1..12).
///
/// Built from an `mcp_servers` entry by the assembly pipeline ([`McpImport::from_entry`]) or by a host directly;
/// builders by value. See the [module docs](self) for an example.
#[derive(Debug, Clone)]
pub struct McpImport {
    name: String,
    alias: Option<String>,
    transport: Transport,
    timeout: Duration,
    confirm: bool,
    /// Tokens from the client-credentials grant (OAUTHC-1..6), HTTP only.
    oauth: Option<McpOAuth>,
}

impl McpImport {
    /// A server started as a child over stdio: `command` is the executable path and its arguments, run without a
    /// shell (MCPI-3).
    ///
    /// # Errors
    ///
    /// A configuration error when `name` is not `^[a-zA-Z0-9_-]+$` or `command` is empty.
    pub fn stdio<I, S>(name: impl Into<String>, command: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let command: Vec<String> = command.into_iter().map(Into::into).collect();
        if command.first().is_none_or(String::is_empty) {
            return Err(Error::config("mcp server command must name an executable"));
        }
        Self::with_transport(name.into(), Transport::Stdio(command))
    }

    /// A server reached over streamable HTTP at `url`.
    ///
    /// # Errors
    ///
    /// A configuration error when `name` is not `^[a-zA-Z0-9_-]+$`, or `url` is not https (unless loopback) or
    /// carries userinfo (MCPI-2).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Result<Self> {
        let url = url.into();
        check_http_url(&url).map_err(|e| Error::config(format!("invalid mcp server url {url:?}: {e}")))?;
        Self::with_transport(name.into(), Transport::Http { url, bearer_token_env: None })
    }

    fn with_transport(name: String, transport: Transport) -> Result<Self> {
        crate::config::check_identity_name(&name).map_err(|e| Error::config(format!("mcp server name: {e}")))?;
        Ok(McpImport { name, alias: None, transport, timeout: DEFAULT_TIMEOUT, confirm: false, oauth: None })
    }

    /// The source for one `mcp_servers` entry, whose calls default to `call_timeout` (MCPI-8). The entry has
    /// passed [`Config::validate`](crate::Config::validate); `index` locates its key in errors.
    ///
    /// # Errors
    ///
    /// A configuration error naming `mcp_servers[index]` for an entry that did not pass validation (no transport,
    /// a bad name, URL or filter regex).
    pub fn from_entry(index: usize, entry: &McpServerEntry, call_timeout: Duration) -> Result<Self> {
        let key = format!("mcp_servers[{index}]");
        let at = |e: Error| Error::config_key(&key, format!("{key}: {e}"));
        let mut import = match (&entry.url, &entry.command) {
            (Some(url), None) => McpImport::http(&entry.name, url).map_err(at)?,
            (None, Some(command)) => McpImport::stdio(&entry.name, command.clone()).map_err(at)?,
            _ => return Err(at(Error::config("set exactly one of url and command"))),
        };
        if let Some(alias) = entry.alias.as_deref().filter(|a| !a.is_empty()) {
            import = import.with_alias(alias).map_err(at)?;
        }
        if let Some(var) = entry.bearer_token_env.as_deref().filter(|v| !v.is_empty()) {
            import = import.with_bearer_token_env(var);
        }
        if let Some(oauth) = &entry.oauth {
            import = import.with_oauth(oauth.clone());
        }
        Ok(import.with_timeout(entry.timeout().unwrap_or(call_timeout)).with_confirm(entry.confirm))
    }

    /// The prefix for colliding names (IMPORT-5); the server name by default.
    ///
    /// # Errors
    ///
    /// A configuration error when `alias` is not `^[a-zA-Z0-9_-]+$`.
    pub fn with_alias(mut self, alias: impl Into<String>) -> Result<Self> {
        let alias = alias.into();
        crate::config::check_identity_name(&alias).map_err(|e| Error::config(format!("mcp server alias: {e}")))?;
        self.alias = Some(alias);
        Ok(self)
    }

    /// Send `Authorization: Bearer <value of var>` (MCPI-4). The variable is read at load time (unset or empty
    /// fails the load, naming it) and joins the scrub set of every child process. No effect over stdio.
    #[must_use]
    pub fn with_bearer_token_env(mut self, var: impl Into<String>) -> Self {
        if let Transport::Http { bearer_token_env, .. } = &mut self.transport {
            *bearer_token_env = Some(var.into());
        }
        self
    }

    /// Get bearer tokens with the OAuth 2.1 client-credentials grant (OAUTHC-1..6): the token endpoint is
    /// `oauth.token_url`, or discovered through the server's protected-resource metadata (RFC 9728) and its
    /// issuer's metadata (RFC 8414); the request carries `oauth.scopes` and this server's URL as `resource`
    /// (RFC 8707). The secret is read from `oauth.client_secret_env` at load time (unset or empty fails the load,
    /// naming it) and that variable joins the scrub set of every child process. A token is kept in memory, fetched
    /// again shortly before it expires, and once more when the server answers `401`. Replaces any
    /// [`with_bearer_token_env`](McpImport::with_bearer_token_env); no effect over stdio.
    ///
    /// ```
    /// use fisk_ai::config::McpOAuth;
    /// use fisk_ai::source::mcp::McpImport;
    ///
    /// let import = McpImport::http("inventory", "https://inventory.example.com/mcp")?
    ///     .with_oauth(McpOAuth::new("fisk-agent", "INVENTORY_CLIENT_SECRET").with_scopes(["inventory.read"]));
    /// # Ok::<(), fisk_ai::Error>(())
    /// ```
    #[must_use]
    pub fn with_oauth(mut self, oauth: McpOAuth) -> Self {
        if let Transport::Http { bearer_token_env, .. } = &mut self.transport {
            *bearer_token_env = None;
            self.oauth = Some(oauth);
        }
        self
    }

    /// The bound of every call (and of connecting and listing); 120 s by default, as `llm.budget.call_timeout`.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Gate every tool of this server (MCPI-10).
    #[must_use]
    pub fn with_confirm(mut self, confirm: bool) -> Self {
        self.confirm = confirm;
        self
    }

    /// How the server is reached.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The effective alias: the alias, or the server name.
    pub fn alias(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }

    /// Connect, list and build the tools with every compiled-in provider's credentials and this server's own
    /// scrubbed from a stdio server's environment. The harness calls [`ToolSource::load`] instead, with the scrub set
    /// of every registered plug-in.
    ///
    /// # Errors
    ///
    /// A source error naming the server when it cannot be started, reached, initialized or listed.
    pub async fn load(&self) -> Result<Loaded> {
        let env = ChildEnv::new().with_scrubbed_all(self.credentials());
        ToolSource::load(self, &LoadContext::new(env)).await
    }
}

#[async_trait]
impl ToolSource for McpImport {
    fn name(&self) -> &str {
        &self.name
    }

    fn origin(&self) -> Origin {
        Origin::mcp_server(&self.name, self.alias())
    }

    fn credentials(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Transport::Http { bearer_token_env: Some(var), .. } = &self.transport {
            out.push(var.clone());
        }
        out.extend(self.oauth.as_ref().map(|o| o.client_secret_env.clone()));
        out
    }

    /// MCPI-6, MCPI-11: strict. An unreachable server or a failed listing fails the load, naming the server; a
    /// tool that cannot be used (an empty description, a non-object input schema, ...) is skipped with a warning.
    async fn load(&self, ctx: &LoadContext) -> Result<Loaded> {
        let (conn, listed) = connection::Connection::open(self, ctx).await?;
        let conn = Arc::new(conn);
        let mut warnings: Vec<Warning> = conn
            .skipped()
            .into_iter()
            .map(|(tool, reason)| Warning::ImportSkipped { source: self.name.clone(), tool, reason })
            .collect();
        let tools: Vec<Arc<dyn Tool>> =
            listed.into_iter().map(|t| Arc::new(tool::ImportedTool::new(self, &conn, t)) as Arc<dyn Tool>).collect();
        if tools.is_empty() {
            warnings.push(Warning::ImportEmpty { section: "mcp_servers", name: self.name.clone() });
        }
        Ok(Loaded::new(tools).with_warnings(warnings))
    }
}
