//! One live connection to an MCP server: the rmcp client over our stdio child or over streamable HTTP.

use super::listing::Ledger;
use super::stdio::{self, StdioChild};
use super::transport::StdioTransport;
use super::{McpImport, Transport};
use crate::error::{Error, ErrorKind, Result};
use crate::source::LoadContext;
use crate::tool::{CancellationToken, ToolOutput};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject, PaginatedRequestParams,
    ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long an HTTP server gets to answer the 2026-07-28 discovery before the 2025-11-25 handshake is tried.
const DISCOVER_PROBE: Duration = Duration::from_secs(3);

/// Whether a server could be reached, as `info` reports it (MCPI-11: lenient, where a run is strict).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reachability {
    /// Connected and listed.
    Reachable {
        /// How many tools it contributes, after the entry's filters.
        tools: usize,
    },
    /// Could not connect or list.
    Unreachable {
        /// Why, naming the server.
        reason: String,
    },
}

/// Our client: no capabilities beyond the protocol's basics (servers' elicitations are declined, rmcp's default).
#[derive(Debug, Clone, Default)]
pub(crate) struct ImportClient;

impl rmcp::ClientHandler for ImportClient {
    fn get_info(&self) -> ClientConfig {
        // The version offered by the `initialize` handshake, which only legacy servers get (the 2026-07-28
        // discovery names its versions itself): the newest revision that has a handshake. rmcp's default is the
        // newest revision of all, which has no `initialize`, so a strict legacy server refused it (MCPI-16).
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("fisk-ai", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A connected server. Dropping it ends the session and kills a stdio server's process group and every other
/// descendant (EXEC-17).
pub(crate) struct Connection {
    server: String,
    session: Mutex<Arc<RunningService<RoleClient, ImportClient>>>,
    /// Why the session is gone, once it is. A stdio server is gone for good: later calls fail fast with this
    /// reason. An HTTP session is dialled again by the next call (a restarted server, a reply over the limit).
    dead: Mutex<Option<String>>,
    http: Option<HttpDial>,
    redial: tokio::sync::Mutex<()>,
    /// What the transport learnt that rmcp's messages cannot carry (skipped tools, why it gave up).
    ledger: Ledger,
    /// Declared after `session` so the session ends before the group is killed.
    child: Option<StdioChild>,
}

/// What it takes to open an HTTP session again.
struct HttpDial {
    client: super::http::CappingClient,
    config: StreamableHttpClientTransportConfig,
    timeout: Duration,
}

impl HttpDial {
    /// The 2026-07-28 discovery first; when the server does not answer it (promptly) as a modern server, the
    /// 2025-11-25 handshake on a fresh transport. rmcp's own fallback waits 10 s for a server that stays silent
    /// on `server/discover`, which legacy HTTP servers can.
    async fn dial(&self) -> std::result::Result<RunningService<RoleClient, ImportClient>, String> {
        let transport = || StreamableHttpClientTransport::with_client(self.client.clone(), self.config.clone());
        let modern = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        let probe = self.timeout.min(DISCOVER_PROBE);
        if let Ok(Ok(service)) =
            tokio::time::timeout(probe, ImportClient.serve_with_lifecycle(transport(), modern)).await
        {
            return Ok(service);
        }
        let legacy = ImportClient.serve_with_lifecycle(transport(), ClientLifecycleMode::Initialize);
        bounded(self.timeout, async { legacy.await.map_err(|e| e.to_string()) }).await
    }
}

impl Connection {
    /// Start or connect, initialize and list every page, all bounded by the import's timeout. The tools come
    /// checked and cleaned (MCPI-6, MCPI-15); the skipped ones are in [`skipped`](Self::skipped).
    /// Tools the context's policy drops are passed over as each page is read (HARNESS-6).
    pub(crate) async fn open(import: &McpImport, ctx: &LoadContext) -> Result<(Connection, Vec<rmcp::model::Tool>)> {
        let env = ctx.env();
        let server = import.name.clone();
        let fail = |what: &str, e: &dyn std::fmt::Display| source_error(&import.name, format!("{what}: {e}"));
        let ledger = Ledger::new(ctx.policy().clone());
        let (service, child, http) = match &import.transport {
            Transport::Stdio(command) => {
                let (child, read, write, closed) = stdio::spawn(&server, command, env)?;
                let transport = StdioTransport::new(read, write, closed, ledger.clone());
                let service = bounded(import.timeout, connect(transport))
                    .await
                    .map_err(|e| fail("cannot initialize", &explained(Some(&child), &ledger, &capped(&e))))?;
                (service, Some(child), None)
            }
            Transport::Http { url, bearer_token_env } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(var) = bearer_token_env {
                    config = config.auth_header(bearer_token(&server, var)?);
                }
                // No redirects: a redirect would replay the model's arguments (and the session id) to wherever the
                // server points.
                let client = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(import.timeout)
                    .build()
                    .map_err(|e| fail("cannot build the HTTP client", &e))?;
                let mut client = super::http::CappingClient::new(client, ledger.clone());
                if let Some(oauth) = &import.oauth {
                    let grant = super::oauth::ClientCredentials::new(&server, url, oauth)
                        .map_err(|e| source_error(&server, e))?;
                    client = client.with_oauth(Arc::new(grant));
                }
                let dial = HttpDial { client, config, timeout: import.timeout };
                let service = dial.dial().await.map_err(|e| fail(&format!("cannot initialize {url}"), &capped(&e)))?;
                (service, None, Some(dial))
            }
        };
        let conn = Connection {
            server,
            session: Mutex::new(Arc::new(service)),
            dead: Mutex::new(None),
            http,
            redial: tokio::sync::Mutex::new(()),
            ledger,
            child,
        };
        let session = conn.current();
        match bounded(import.timeout, list(&session)).await {
            Ok(tools) => Ok((conn, tools)),
            Err(e) => {
                // The ledger's reason is the true one; rmcp only saw an error answer or a closed transport.
                let why = conn.ledger.failure().unwrap_or_else(|| capped(&e));
                Err(fail("cannot list tools", &conn.explain(&why)))
            }
        }
    }

    /// The tools the listing skipped, as `(tool, reason)` (MCPI-6); taken, so each is reported once.
    pub(crate) fn skipped(&self) -> Vec<(String, String)> {
        self.ledger.take_skipped()
    }

    fn current(&self) -> Arc<RunningService<RoleClient, ImportClient>> {
        match self.session.lock() {
            Ok(s) => Arc::clone(&s),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    fn dead_reason(&self) -> Option<String> {
        self.dead.lock().map(|d| d.clone()).unwrap_or_default()
    }

    /// The live session: the current one, or for HTTP a new one when it was lost.
    async fn live(&self) -> std::result::Result<Arc<RunningService<RoleClient, ImportClient>>, String> {
        let Some(reason) = self.dead_reason() else { return Ok(self.current()) };
        let Some(http) = &self.http else { return Err(reason) };
        let _one_at_a_time = self.redial.lock().await;
        if self.dead_reason().is_none() {
            return Ok(self.current());
        }
        let service = http.dial().await.map_err(|e| format!("{reason}; reconnecting failed: {e}"))?;
        let service = Arc::new(service);
        if let Ok(mut s) = self.session.lock() {
            *s = Arc::clone(&service);
        }
        if let Ok(mut d) = self.dead.lock() {
            *d = None;
        }
        Ok(service)
    }

    /// One `tools/call` (MCPI-8), bounded by `timeout` and `cancel`. Every failure is an error output naming the
    /// server.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        // OTEL-7: the server continues our trace (SEP-414 keys); nothing is added without an exporting layer.
        #[cfg(feature = "otel")]
        for (key, value) in crate::telemetry::current_trace_context() {
            params.meta.get_or_insert_with(Default::default).insert(key.to_owned(), value.into());
        }
        let work = async {
            let session = self.live().await.map_err(ToolOutput::error)?;
            Ok::<_, ToolOutput>((session.call_tool(params).await, session))
        };
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                return ToolOutput::cancelled(format!("mcp server {}: the call to {tool} was cancelled", self.server));
            }
            r = tokio::time::timeout(timeout, work) => r,
        };
        match outcome {
            Err(_) => ToolOutput::error(format!(
                "mcp server {}: {tool} did not answer within {}",
                self.server,
                crate::config::format_duration(timeout)
            )),
            Ok(Err(refused)) => refused,
            Ok(Ok((Ok(result), _))) => super::content::output(&self.server, &result),
            Ok(Ok((Err(e), session))) => self.failed(tool, &e, &session),
        }
    }

    /// A protocol or transport failure; a closed transport marks the session dead.
    fn failed(&self, tool: &str, e: &ServiceError, session: &RunningService<RoleClient, ImportClient>) -> ToolOutput {
        let closed = matches!(e, ServiceError::TransportClosed | ServiceError::TransportSend(_))
            || session.peer().is_transport_closed();
        if !closed {
            return ToolOutput::error(format!("mcp server {}: {tool} failed: {}", self.server, capped(&e.to_string())));
        }
        let reason = match &self.http {
            None => format!("mcp server {} is gone: {}", self.server, self.explain(&capped(&e.to_string()))),
            Some(_) => format!(
                "mcp server {}: the connection was lost during {tool} ({e}); the next call reconnects",
                self.server
            ),
        };
        if let Ok(mut dead) = self.dead.lock() {
            dead.get_or_insert_with(|| reason.clone());
        }
        ToolOutput::error(reason)
    }

    /// `what` went wrong, with a stdio child's exit status and the end of its stderr when there are any.
    fn explain(&self, what: &str) -> String {
        explained(self.child.as_ref(), &self.ledger, what)
    }
}

/// `what` went wrong: or rather the reason the transport ended the connection, when it did (MCPI-14), with a stdio
/// child's exit status and the end of its stderr when there are any.
fn explained(child: Option<&StdioChild>, ledger: &Ledger, what: &str) -> String {
    let what = match ledger.fault() {
        Some(fault) => format!("{fault}; the connection was ended"),
        None => what.to_owned(),
    };
    match child {
        Some(child) => child.explain(&what),
        None => what,
    }
}

/// The most pages: a server that keeps answering with a fresh cursor fails the load instead of running until the
/// timeout. (The tools and the bytes a listing holds are bounded as each page is read: [`super::listing`].)
const MAX_PAGES: usize = 2_000;

/// Every page of `tools/list` (MCPI-6), within [`MAX_PAGES`]; each page's tools arrive converted by the ledger.
async fn list(
    session: &RunningService<RoleClient, ImportClient>,
) -> std::result::Result<Vec<rmcp::model::Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = session.list_tools(params).await.map_err(|e| capped(&e.to_string()))?;
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(tools),
        }
    }
    Err(format!("its listing goes on past {MAX_PAGES} pages"))
}

/// Server-chosen text in an error (a JSON-RPC error's message and data can be megabytes): at most 2 KiB of it,
/// head and tail, so an error result never floods the model's context.
pub(crate) fn capped(text: &str) -> String {
    const KEEP: usize = 1024;
    if text.len() <= 2 * KEEP {
        return text.to_owned();
    }
    // Char boundaries by hand: `floor_char_boundary` is newer than the crate's minimum Rust.
    let head = (0..=KEEP).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    let tail = (text.len() - KEEP..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    format!("{} ...[{} bytes omitted]... {}", &text[..head], tail - head, &text[tail..])
}

/// Connect in the 2026-07-28 era, falling back to the 2025-11-25 handshake when the server is legacy.
async fn connect<T, E, A>(transport: T) -> std::result::Result<RunningService<RoleClient, ImportClient>, String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    };
    ImportClient.serve_with_lifecycle(transport, lifecycle).await.map_err(|e| e.to_string())
}

async fn bounded<T>(
    limit: Duration,
    work: impl Future<Output = std::result::Result<T, String>>,
) -> std::result::Result<T, String> {
    match tokio::time::timeout(limit, work).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {}", crate::config::format_duration(limit))),
    }
}

/// MCPI-4: the token is read at load time; unset or empty fails, naming the variable (never the value).
fn bearer_token(server: &str, var: &str) -> Result<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Ok(v),
        Ok(_) => Err(source_error(server, format!("bearer_token_env {var} is empty"))),
        Err(_) => Err(source_error(server, format!("bearer_token_env {var} is not set"))),
    }
}

pub(crate) fn source_error(server: &str, message: String) -> Error {
    Error::new(ErrorKind::Source, format!("mcp server {server}: {message}"))
}
