//! The tool set to other agents over NATS (SPEC section 16.1, A2A-1..13), through the NATS services framework.
//!
//! - Serving is opt-in: `expose.agent.agent_to_agent: true`, with `application_path` and `nats_context` (A2A-1).
//! - Served: the command tools after selection, narrowed by `expose.agent.tools`; gated, invalid-name and
//!   empty-description commands are skipped with a warning, and an empty set is an error (A2A-2, A2A-4, A2A-5).
//! - A service named after the identity (version `0.0.0`, queue group = identity) with endpoints `discovery` and
//!   `tool` on `choria.fisk-ai.discovery.<identity>` and `choria.fisk-ai.tool.<identity>`, so agents sharing an
//!   identity share the work and `nats micro ls` lists them (A2A-3).
//! - Every inbound body is checked for size, protocol and schema; a failure gets the framework's `400` error reply
//!   (A2A-10). An unknown tool gets an in-band error reply before any slot is taken.
//! - At most `expose.agent.a2a.max_concurrent_tools` calls run at once, each bounded by `tool_timeout` (A2A-11).
//!   Intake never blocks: a request beyond them waits in one of `expose.agent.a2a.queue` places (32 by default, at
//!   most 1024), in arrival order; one that finds no place is answered at once with the framework's `503` error
//!   ("busy, retry", A2A-14), so a caller always gets an answer, never a timeout, and memory stays bounded.
//! - Replies go only to inboxes (A2A-15): a request whose reply subject is not under the connection's inbox prefix
//!   (`_INBOX.` or the context's own) is refused unseen and never runs, unless `expose.agent.a2a.any_reply_subject:
//!   true`; each refusal is an [`A2aEvent::ReplyRefused`] and a `monotonic_counter.fisk_ai.a2a.reply_refused`
//!   telemetry event. A request without a reply subject is dropped unanswered and never runs. Shutdown
//!   unsubscribes first, then gives calls in progress [`SHUTDOWN_GRACE`].
//!
//! ```no_run
//! use fisk_ai::Config;
//! use fisk_ai::serve::a2a::{A2aEvent, A2aServer};
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let config = Config::load("agent.yaml")?;
//! let server = A2aServer::builder()
//!     .config(config)
//!     .events(|e: &A2aEvent<'_>| {
//!         if let A2aEvent::ToolCall { display, caller, .. } = e {
//!             eprintln!("-> {display} (for {caller})");
//!         }
//!     })
//!     .build()
//!     .await?; // introspects the application, selects the served tools, connects to NATS
//! eprintln!("serving on {}", server.tool_subject());
//! server.serve_until_signal().await // SIGINT or SIGTERM stops it gracefully
//! # }
//! ```

mod card;
mod events;
mod handler;
mod intake;

pub use events::{A2aEvent, A2aEventSink, NoA2aEvents};
pub use intake::SHUTDOWN_GRACE;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::harness::{self, Harness, HarnessBuilder};
use crate::nats::wire::{discovery_subject, tool_subject};
use crate::nats::{NatsConnection, NatsContext};
use crate::select::Toolset;
use crate::source::ToolSource;
use crate::warning::Warning;
use async_nats::service::ServiceExt;
use handler::Shared;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The services framework needs SemVer, so the framework version is fixed; the build version goes in the card.
const FRAMEWORK_VERSION: &str = "0.0.0";
const DESCRIPTION: &str = "fisk-ai a2a tool server";
/// Requests the client library holds for a busy server, per slot, and at least: beyond them it drops requests
/// (their callers time out) rather than buffering up to 64 Ki bodies of up to 1 MiB each.
const INTAKE_BUFFER_PER_SLOT: usize = 4;
const MIN_INTAKE_BUFFER: usize = 32;

/// A loaded a2a server: the served tools, the card and a NATS connection, ready to [`start`](A2aServer::start).
pub struct A2aServer {
    shared: Arc<Shared>,
    nats: NatsConnection,
    warnings: Vec<Warning>,
    version: String,
    max_concurrent: usize,
}

impl std::fmt::Debug for A2aServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServer")
            .field("identity", &self.shared.identity)
            .field("context", &self.nats.context())
            .field("tools", &self.shared.tools)
            .finish_non_exhaustive()
    }
}

impl A2aServer {
    /// Start building a server.
    pub fn builder() -> A2aServerBuilder {
        A2aServerBuilder::default()
    }

    /// The served tools (A2A-2).
    pub fn tools(&self) -> &Toolset {
        &self.shared.tools
    }

    /// Warnings found while building, including every skipped command (A2A-4).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The identity served under: the service name and queue group.
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }

    /// The build version the card carries (A2A-8).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The NATS context the connection came from, or `(default)`.
    pub fn context(&self) -> &str {
        self.nats.context()
    }

    /// Where discovery requests go (A2A-3).
    pub fn discovery_subject(&self) -> String {
        discovery_subject(&self.shared.identity)
    }

    /// Where tool requests go (A2A-3).
    pub fn tool_subject(&self) -> String {
        tool_subject(&self.shared.identity)
    }

    /// How many calls may run at once (A2A-11).
    pub fn max_concurrent_tools(&self) -> usize {
        self.max_concurrent
    }

    /// The bound on one call (A2A-11).
    pub fn tool_timeout(&self) -> Duration {
        self.shared.tool_timeout
    }

    /// Register the service and subscribe both endpoints; requests are answered from the moment this returns.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Nats`](crate::ErrorKind::Nats) when the service or an endpoint cannot be registered.
    pub async fn start(self) -> Result<Running> {
        let identity = self.shared.identity.clone();
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            Error::nats(format!("cannot serve a2a as {identity:?} (context {}): {what}: {e}", self.nats.context()))
        };
        let service = (self.nats.client().service_builder().description(DESCRIPTION).queue_group(&identity))
            .start(&identity, FRAMEWORK_VERSION)
            .await
            .map_err(|e| failed("registering the service", &e))?;
        let discovery = (service.endpoint_builder().name("discovery").add(discovery_subject(&identity)).await)
            .map_err(|e| failed("subscribing to discovery", &e))?;
        let tools = (service.endpoint_builder().name("tool").add(tool_subject(&identity)).await)
            .map_err(|e| failed("subscribing to tool", &e))?;
        // The subscriptions are in place before anyone is told the agent is up.
        settle(self.nats.client()).await.map_err(|e| failed("confirming the subscriptions", &e))?;
        let stop = CancellationToken::new();
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(intake::discovery(Arc::clone(&self.shared), discovery, stop.clone()));
        tasks.spawn(intake::tools(Arc::clone(&self.shared), tools, stop.clone()));
        tasks.spawn(connection_events(Arc::clone(&self.shared), self.nats.clone(), stop.clone()));
        Ok(Running { stop, tasks, service, nats: self.nats })
    }

    /// [`start`](A2aServer::start), serve until `shutdown` resolves, then stop gracefully.
    ///
    /// # Errors
    ///
    /// As [`start`](A2aServer::start).
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) -> Result<()> {
        let running = self.start().await?;
        shutdown.await;
        running.shutdown().await;
        Ok(())
    }

    /// [`serve`](A2aServer::serve) until SIGINT or SIGTERM (A2A-12).
    ///
    /// # Errors
    ///
    /// As [`start`](A2aServer::start).
    pub async fn serve_until_signal(self) -> Result<()> {
        self.serve(crate::serve::shutdown_signal()).await
    }
}

/// A started server. Dropping it without [`shutdown`](Running::shutdown) stops intake abruptly.
pub struct Running {
    stop: CancellationToken,
    tasks: tokio::task::JoinSet<()>,
    service: async_nats::service::Service,
    nats: NatsConnection,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("context", &self.nats.context()).finish_non_exhaustive()
    }
}

impl Running {
    /// Stop gracefully: unsubscribe (new requests go to other members of the queue group), let calls in progress
    /// finish within [`SHUTDOWN_GRACE`], stop the rest, then drain the connection if fisk-ai made it (a borrowed
    /// one is left open, OVR-7).
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        while self.tasks.join_next().await.is_some() {}
        let _ = self.service.stop().await;
        // The endpoints' unsubscribes went out as the intake tasks ended; on a borrowed connection that stays open,
        // wait until the server has processed them, so no request is routed here after this returns.
        let _ = settle(self.nats.client()).await;
        self.nats.close().await;
    }
}

/// Wait until the server has processed this connection's subscriptions. `flush` only empties the socket; the
/// server handles one connection's commands in order, so once a message sent after them comes back to us, every
/// client's requests reach them.
async fn settle(client: &async_nats::Client) -> std::result::Result<(), String> {
    use futures::StreamExt;
    let inbox = client.new_inbox();
    let mut probe = client.subscribe(inbox.clone()).await.map_err(|e| e.to_string())?;
    client.publish(inbox, bytes::Bytes::new()).await.map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(10), probe.next()).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err("the connection closed".to_owned()),
        Err(_) => Err("the server did not answer within 10s".to_owned()),
    }
}

/// The connection's inbox prefix, with its trailing dot: what its own inboxes start with (`_INBOX.` unless the
/// context sets another), read off a fresh inbox so a host's connection is covered too.
fn inbox_prefix(client: &async_nats::Client) -> String {
    let inbox = client.new_inbox();
    match inbox.rsplit_once('.') {
        Some((prefix, _)) => format!("{prefix}."),
        None => "_INBOX.".to_owned(),
    }
}

async fn connection_events(shared: Arc<Shared>, nats: NatsConnection, stop: CancellationToken) {
    let mut events = nats.events();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            e = events.recv() => match e {
                Ok(event) => shared.events.emit(&A2aEvent::Connection(&event)),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            },
        }
    }
}

/// The a2a server's configuration and served set: from a harness given, a tool set given, or a harness for serving
/// assembled from the builder's sources; a2a's checks run before anything loads.
async fn serving_harness(
    config: Option<Config>,
    given: Option<Arc<Harness>>,
    parts: Option<HarnessBuilder>,
    touched: Option<&'static str>,
    toolset: Option<Toolset>,
) -> Result<(Config, harness::Served)> {
    if let Some(harness) = given {
        if let Some(method) = touched.or(config.as_ref().map(|_| "config")) {
            return Err(Error::config(format!(
                "A2aServerBuilder::{method} was given together with a harness: give it to the HarnessBuilder instead"
            )));
        }
        let config = harness.config().clone();
        let mut warnings = harness::check_a2a(&config)?;
        warnings.extend(harness.warnings().iter().cloned());
        let mut served = harness::a2a_served(&config, harness.toolset(), warnings)?;
        served.policy = harness.policy().cloned();
        served.audit = harness.audit().cloned();
        return Ok((config, served));
    }
    let config = config.ok_or_else(|| Error::config("an a2a server needs a configuration"))?;
    let mut warnings = harness::check_a2a(&config)?;
    let served = match toolset {
        Some(toolset) => {
            // POL-1: a configured hook applies to a given tool set too, never dropped silently.
            let mut served = harness::a2a_served(&config, &toolset, warnings)?;
            let env = crate::exec::ChildEnv::new().with_scrubbed_all(config.bearer_token_envs());
            served.policy = harness::resolve_policy(&config, None, &env)?;
            // AUD-1: so is a configured trail (a stream sink needs the harness's NATS connection).
            served.audit = harness::open_audit(&config, None, None, &mut served.warnings).await?;
            served
        }
        None => {
            let parts = parts.unwrap_or_default().for_agent(false);
            let harness = parts.config(config.clone()).build().await?;
            warnings.extend(harness.warnings().iter().cloned());
            let mut served = harness::a2a_served(&config, harness.toolset(), warnings)?;
            served.policy = harness.policy().cloned();
            served.audit = harness.audit().cloned();
            served
        }
    };
    Ok((config, served))
}

/// Builds an [`A2aServer`]; by value, finished with [`A2aServerBuilder::build`].
#[derive(Default)]
pub struct A2aServerBuilder {
    config: Option<Config>,
    harness: Option<Arc<Harness>>,
    parts: Option<HarnessBuilder>,
    touched: Option<&'static str>,
    toolset: Option<Toolset>,
    nats: Option<NatsConnection>,
    events: Option<Arc<dyn A2aEventSink>>,
    version: Option<String>,
}

impl std::fmt::Debug for A2aServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServerBuilder")
            .field("config", &self.config.is_some())
            .field("harness", &self.harness.is_some())
            .field("nats", &self.nats)
            .finish_non_exhaustive()
    }
}

impl A2aServerBuilder {
    /// The parsed configuration (required): `expose.agent.agent_to_agent: true`, `application_path` and
    /// `nats_context` (A2A-1). No prompt or model is needed.
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Another tool source; its command tools are served like the application's (imported tools never are).
    #[must_use]
    pub fn source(mut self, source: impl ToolSource + 'static) -> Self {
        self.touched.get_or_insert("source");
        self.parts = Some(self.parts.take().unwrap_or_default().source(source));
        self
    }

    /// Serve from `harness` (shared with an agent or an MCP server, say): `build` then loads nothing and serves
    /// the harness's servable, ungated command tools. The configuration and sources are the harness's; giving them
    /// here as well is an error.
    #[must_use]
    pub fn harness(mut self, harness: Arc<Harness>) -> Self {
        self.harness = Some(harness);
        self
    }

    /// Serve from an already-selected tool set instead of loading one; A2A-2 and A2A-4 still decide what of it is
    /// served.
    #[must_use]
    pub fn toolset(mut self, toolset: Toolset) -> Self {
        self.toolset = Some(toolset);
        self
    }

    /// Run command tools in `dir` (OVR-6): an absolute path to an existing directory.
    #[must_use]
    pub fn working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.touched.get_or_insert("working_dir");
        self.parts = Some(self.parts.take().unwrap_or_default().working_dir(dir));
        self
    }

    /// Serve over this connection instead of one made from `nats_context`. It is borrowed: the server never
    /// closes it (OVR-7). Its subscription buffer is the host's choice (async-nats's default holds 64 Ki messages
    /// per subscription); set `ConnectOptions::subscription_capacity` to bound a flood's memory.
    #[must_use]
    pub fn nats(mut self, nats: NatsConnection) -> Self {
        self.nats = Some(nats);
        self
    }

    /// Deliver [`A2aEvent`]s to `sink` (calls, rejections, connection changes).
    #[must_use]
    pub fn events(mut self, sink: impl A2aEventSink + 'static) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// The build version the card carries; this crate's version by default, `dev` when empty (A2A-8).
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Validate the configuration, load and select the tools once, build the card, and connect to NATS (unless a
    /// connection was given).
    ///
    /// # Errors
    ///
    /// A configuration error when there is no configuration, serving is not enabled (A2A-1), validation fails or
    /// the NATS context does not resolve; an introspection or source error when a tool source cannot be loaded; a
    /// selection error when no tool can be served (A2A-5) or the card is too large; a NATS error when the
    /// connection cannot be made.
    pub async fn build(self) -> Result<A2aServer> {
        // The server's connection, when given, is the one its harness's JetStream stores use (CFG-15).
        let parts = match &self.nats {
            Some(nats) => Some(self.parts.unwrap_or_default().nats_or(nats)),
            None => self.parts,
        };
        let (config, harness::Served { tools, warnings, policy, audit, .. }) =
            serving_harness(self.config, self.harness, parts, self.touched, self.toolset).await?;
        let a2a = &config.expose.agent.a2a;
        let identity = config.identity()?;
        let version = self.version.unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
        let card = card::CardBody::new(&identity, &version, &tools)?;
        let max_concurrent = a2a.max_concurrent_tools();
        let nats = match self.nats {
            Some(nats) => nats,
            None => {
                let context = NatsContext::load(config.nats_context.as_deref()).map_err(|e| config.locate(e))?;
                let buffered = max_concurrent
                    .saturating_mul(INTAKE_BUFFER_PER_SLOT)
                    .max(MIN_INTAKE_BUFFER)
                    .max(a2a.queue().saturating_add(max_concurrent));
                NatsConnection::connect_with(&context, &identity, Some(buffered)).await?
            }
        };
        let shared = Shared {
            identity,
            tools,
            card,
            tool_timeout: a2a.tool_timeout(),
            slots: Arc::new(Semaphore::new(max_concurrent)),
            events: self.events.unwrap_or_else(|| Arc::new(NoA2aEvents)),
            calls_cancel: CancellationToken::new(),
            waiting: Arc::new(Semaphore::new(a2a.queue())),
            inbox_prefix: inbox_prefix(nats.client()),
            any_reply_subject: a2a.any_reply_subject,
            policy,
            audit,
        };
        Ok(A2aServer { shared: Arc::new(shared), nats, warnings, version, max_concurrent })
    }
}
