//! Tools imported from other agents over NATS (SPEC section 16.2, IMPORT-1..11; docs/nats-wire.md §2): one
//! [`RemoteAgent`] per `remote_tools` host.
//!
//! At load time the source sends one discovery request to the host's discovery subject, bounded by its timeout,
//! and reads the agent card. A reply that is too large, not JSON, of the wrong protocol or against the schema, or
//! the services framework's error reply, fails the whole host (and so the run: IMPORT-7); a tool with an empty
//! description is skipped with a warning. Each tool is kept as its spec (name, description, schema), the raw reply
//! dropped, and what the specs of every host of a listing hold is bounded together by [`MAX_REMOTE_SPEC_BYTES`]
//! ([`ListingBudget`], IMPORT-12): past it the host fails, naming what was read and the bound. A tool's description
//! and its schema's prose are cleaned of control and invisible characters once, here (IMPORT-13). The pipeline's
//! [`SourcePolicy`](crate::source::SourcePolicy) (the host's `include` then `exclude`, IMPORT-2) picks tools by
//! name before anything else is done with them, and the tools join the one assembly pipeline, where final naming (IMPORT-5/6) and selection apply. A card carries
//! no tags (a serving agent never offers a gated tool, A2A-4), so imported tools are neither stripped nor gated by
//! tag.
//!
//! Each call is one tool request on the host's tool subject, bounded by the smaller of the call's timeout and the
//! source's, and by the call's cancellation. The outgoing request is checked against the schema first, so a
//! non-object input fails locally. A transport failure becomes the error result
//! `calling tool "<name>" on agent "<host>": <error>`, an `is_error` reply its `output` verbatim, anything else
//! the EXEC-13 JSON rebuilt from `output` and `exec` (IMPORT-9). Nothing a peer sends can panic the caller.
//!
//! ```no_run
//! use fisk_ai::nats::{NatsConnection, NatsContext};
//! use fisk_ai::select::Rule;
//! use fisk_ai::source::{LoadContext, SourcePolicy, ToolSource};
//! use fisk_ai::source::remote::RemoteAgent;
//! use std::time::Duration;
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let nats = NatsConnection::connect(&NatsContext::load(Some("prod"))?, "ops").await?;
//! let storage = RemoteAgent::new(nats, "ops", "storage")?
//!     .with_alias("st")?
//!     .with_timeout(Duration::from_secs(30));
//! let streams = SourcePolicy::new().include(Rule::tools(["^stream_"])?).exclude(Rule::tools(["_rm$"])?);
//! let found = storage.discover(&LoadContext::default().with_policy(streams)).await?;
//! println!("{} {}: {} of {} tools", storage.host(), found.version, found.loaded.tools.len(), found.advertised);
//! # Ok(())
//! # }
//! ```

mod budget;
mod exchange;
mod tool;

pub use budget::{ListingBudget, MAX_REMOTE_SPEC_BYTES};

use crate::config::{RemoteToolsHost, check_identity_name};
use crate::error::{Error, Result};
use crate::nats::NatsConnection;
use crate::nats::wire::{self, Card, DiscoveryRequest, Header, MessageKind};
use crate::source::{LoadContext, Loaded, ToolSource};
use crate::tool::{CancellationToken, Origin, Tool};
use crate::warning::Warning;
use async_trait::async_trait;
use exchange::{Failure, Outgoing, Received, exchange};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bound of discovery and of every call when none is configured (docs/nats-wire.md §2).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The bound of a configuration's discovery and calls: `llm.budget.call_timeout`, or [`DEFAULT_TIMEOUT`] only
/// when none is configured (docs/nats-wire.md §2).
pub fn configured_timeout(config: &crate::Config) -> Duration {
    (config.llm.budget.call_timeout)
        .and_then(crate::config::GoDuration::to_std)
        .filter(|d| !d.is_zero())
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// A [`ToolSource`] importing the tools of one remote agent over NATS (IMPORT-1..11).
///
/// Built from a `remote_tools` host by the assembly pipeline ([`RemoteAgent::from_host`]) or by a host directly;
/// builders by value. See the [module docs](self) for an example.
#[derive(Debug, Clone)]
pub struct RemoteAgent {
    nats: NatsConnection,
    caller: String,
    host: String,
    alias: Option<String>,
    timeout: Duration,
    budget: ListingBudget,
}

/// What one discovery found: the card's facts and the tools imported from it, as `info` reports them (INFO-9).
#[derive(Debug)]
#[non_exhaustive]
pub struct Discovery {
    /// The version the agent advertises (`dev` when it sent none, as A2A-8 says a server writes it).
    pub version: String,
    /// How long the discovery request took to be answered.
    pub round_trip: Duration,
    /// How many tools the card lists.
    pub advertised: usize,
    /// The tools kept after the IMPORT-4 skips and the host's filters, with the warnings.
    pub loaded: Loaded,
}

impl RemoteAgent {
    /// The tools of the agent `host` (its identity), asked for by `caller` (this agent's identity) over `nats`,
    /// which is borrowed and never closed by the source. Calls are bounded by [`DEFAULT_TIMEOUT`] until
    /// [`with_timeout`](RemoteAgent::with_timeout) says otherwise.
    ///
    /// # Errors
    ///
    /// A configuration error when `host` or `caller` is not `^[a-zA-Z0-9_-]+$` (IMPORT-1, A2A-6).
    pub fn new(nats: NatsConnection, caller: impl Into<String>, host: impl Into<String>) -> Result<Self> {
        let (caller, host) = (caller.into(), host.into());
        check_identity_name(&host).map_err(|e| Error::config(format!("remote_tools host name: {e}")))?;
        check_identity_name(&caller).map_err(|e| Error::config(format!("remote_tools caller identity: {e}")))?;
        Ok(RemoteAgent { nats, caller, host, alias: None, timeout: DEFAULT_TIMEOUT, budget: ListingBudget::new() })
    }

    /// The source for `remote_tools[index]`, bounded by `call_timeout` (IMPORT-9). The host has passed
    /// [`Config::validate`](crate::Config::validate); `index` locates its key in errors.
    ///
    /// # Errors
    ///
    /// A configuration error naming `remote_tools[index]` for a host that did not pass validation (a bad name,
    /// alias or filter regex).
    pub fn from_host(
        index: usize,
        host: &RemoteToolsHost,
        nats: NatsConnection,
        caller: &str,
        call_timeout: Duration,
    ) -> Result<Self> {
        let key = format!("remote_tools[{index}]");
        let at = |e: Error| Error::config_key(&key, format!("{key}: {e}"));
        let mut agent = RemoteAgent::new(nats, caller, &host.name).map_err(at)?;
        if let Some(alias) = host.alias.as_deref().filter(|a| !a.is_empty()) {
            agent = agent.with_alias(alias).map_err(at)?;
        }
        Ok(agent.with_timeout(call_timeout))
    }

    /// The prefix for colliding names (IMPORT-5); the host name by default.
    ///
    /// # Errors
    ///
    /// A configuration error when `alias` is not `^[a-zA-Z0-9_-]+$`.
    pub fn with_alias(mut self, alias: impl Into<String>) -> Result<Self> {
        let alias = alias.into();
        check_identity_name(&alias).map_err(|e| Error::config(format!("remote_tools alias: {e}")))?;
        self.alias = Some(alias);
        Ok(self)
    }

    /// The bound of discovery and of every call (IMPORT-9); a zero duration keeps the current one.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() {
            self.timeout = timeout;
        }
        self
    }

    /// Count this host's tool specs against `budget`, shared with the other hosts of the same listing (IMPORT-12).
    /// Without it the host has a [`MAX_REMOTE_SPEC_BYTES`] budget of its own.
    #[must_use]
    pub fn with_budget(mut self, budget: &ListingBudget) -> Self {
        self.budget = budget.clone();
        self
    }

    /// The host's identity.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The effective alias: the alias, or the host name.
    pub fn alias(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.host)
    }

    /// The NATS context the connection came from, as errors name it.
    pub fn context(&self) -> &str {
        self.nats.context()
    }

    /// The bound of discovery and of every call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Discover the host's tools (A2A-7, IMPORT-2, IMPORT-4, IMPORT-8): one discovery request, the card checked,
    /// the tools `ctx`'s policy drops passed over. [`load`](ToolSource::load) is this without the card's facts.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Nats`](crate::ErrorKind::Nats) when the host does not answer (no responders, the timeout) or
    /// the request fails; [`ErrorKind::Source`](crate::ErrorKind::Source) for the framework's error reply or a
    /// reply that is too large, not JSON, of the wrong protocol or against the schema, or whose tool specs would take
    /// the listing past its [`ListingBudget`] (IMPORT-12). Both name the host and the NATS context (IMPORT-7).
    pub async fn discover(&self, ctx: &LoadContext) -> Result<Discovery> {
        let request =
            DiscoveryRequest { header: Header::request(MessageKind::DiscoveryRequest, &self.caller, &self.host) };
        let started = Instant::now();
        let subject = wire::discovery_subject(&self.host);
        let never = CancellationToken::new();
        let client = self.nats.client();
        let kind = MessageKind::DiscoveryReply;
        let out = Outgoing {
            host: &self.host,
            subject: &subject,
            id: &request.header.id,
            body: wire::encode(&request),
            kind,
        };
        let Received { value, read } = exchange(client, out, self.timeout, &never).await.map_err(|f| self.error(&f))?;
        let round_trip = started.elapsed();
        let mut card: Card = wire::typed(value).map_err(|e| {
            self.error(&Failure::BadReply(format!("remote agent \"{}\" sent an invalid reply: {e}", self.host)))
        })?;
        let advertised = card.tools.len();
        let version = if card.version.is_empty() { "dev".to_owned() } else { std::mem::take(&mut card.version) };
        let loaded = self.import(card, read, ctx).map_err(|f| self.error(&f))?;
        Ok(Discovery { version, round_trip, advertised, loaded })
    }

    /// IMPORT-2, IMPORT-4, IMPORT-8: the filters first (on the peer's names), then the per-tool skips. IMPORT-12:
    /// the card is taken apart tool by tool and what the kept specs and warnings hold is charged to the budget.
    fn import(&self, card: Card, read: usize, ctx: &LoadContext) -> Result<Loaded, Failure> {
        let host = tool::Host {
            nats: self.nats.clone(),
            caller: self.caller.clone(),
            name: self.host.clone(),
            timeout: self.timeout,
        };
        let origin = self.origin();
        let mut warnings = Vec::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut held = 0usize;
        for descriptor in card.tools.into_iter().filter(|d| ctx.keeps(&d.name)) {
            match tool::RemoteTool::new(&host, &origin, descriptor) {
                Ok(imported) => {
                    held = held.saturating_add(imported.held());
                    tools.push(Arc::new(imported));
                }
                Err((tool, reason)) => {
                    held = held.saturating_add(std::mem::size_of::<Warning>() + tool.len() + reason.len());
                    warnings.push(Warning::ImportSkipped { source: self.host.clone(), tool, reason });
                }
            }
        }
        let refused = |why: String| Failure::BadReply(format!("remote agent \"{}\": {why}", self.host));
        self.budget.charge(&self.host, read, held).map_err(refused)?;
        if tools.is_empty() {
            warnings.push(Warning::ImportEmpty { section: "remote_tools", name: self.host.clone() });
        }
        Ok(Loaded::new(tools).with_warnings(warnings))
    }

    /// IMPORT-7: every import failure names the host and the NATS context.
    fn error(&self, failure: &Failure) -> Error {
        let message = format!("remote_tools host \"{}\" (NATS context {}): {failure}", self.host, self.context());
        if failure.is_transport() { Error::nats(message) } else { Error::source_failed(message) }
    }
}

impl RemoteAgent {
    /// Discover every tool of the host ([`discover`](Self::discover) without the card's facts or a policy).
    ///
    /// # Errors
    ///
    /// As [`discover`](Self::discover).
    pub async fn load(&self) -> Result<Loaded> {
        self.discover(&LoadContext::default()).await.map(|d| d.loaded)
    }
}

#[async_trait]
impl ToolSource for RemoteAgent {
    fn name(&self) -> &str {
        &self.host
    }

    fn origin(&self) -> Origin {
        Origin::remote_host(&self.host, self.alias())
    }

    /// IMPORT-7: strict. A host that cannot be reached or whose card is refused fails the load.
    /// No child process is started: the context's environment has nothing to do here.
    async fn load(&self, ctx: &LoadContext) -> Result<Loaded> {
        self.discover(ctx).await.map(|d| d.loaded)
    }
}
