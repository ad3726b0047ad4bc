//! The one NATS connection every NATS feature borrows (DESIGN §4, feature `nats`): a2a serving
//! ([`serve::a2a`](crate::serve::a2a)), remote import ([`source::remote`](crate::source::remote)) and, later, the
//! JetStream stores ([`memory::jetstream`](crate::memory), [`session`](crate::session)), all through one
//! [`SharedNats`] per agent. [`approvals`] keeps a fleet's approvals in a KV bucket.
//!
//! - A connection is made from a NATS CLI context ([`NatsContext`], A2A-13, CFG-16) and names itself
//!   `fisk-ai <identity>`.
//! - It follows async-nats's reconnect behaviour: no retry when the first connect fails, then reconnects with the
//!   client's default back-off. Disconnects and reconnects are logged and published as [`ConnectionEvent`]s.
//! - A connection a host injects ([`NatsConnection::borrowed`]) is never closed by fisk-ai (OVR-7); one fisk-ai made
//!   is drained by [`NatsConnection::close`].
//!
//! ```no_run
//! use fisk_ai::nats::{NatsConnection, NatsContext};
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let context = NatsContext::load(Some("prod"))?; // ~/.config/nats/context/prod.json
//! let nats = NatsConnection::connect(&context, "ops").await?; // named "fisk-ai ops"
//! let mut events = nats.events();
//! tokio::spawn(async move {
//!     while let Ok(event) = events.recv().await {
//!         eprintln!("NATS: {event}");
//!     }
//! });
//! # Ok(())
//! # }
//! ```

pub mod approvals;
mod conforming;
mod context;
mod ksuid;
mod shared;
pub mod wire;

pub use context::{DEFAULT_URL, NatsContext};
pub use shared::SharedNats;

use crate::error::{Error, Result};
use context::{Auth, redact_url};
use std::fmt;
use std::sync::Arc;
use tokio::sync::broadcast;

/// A change in the connection's state, as async-nats reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionEvent {
    /// Connected: the first connect, and again after each disconnect.
    Connected,
    /// The connection to the server was lost; the client is reconnecting.
    Disconnected,
    /// The server entered lame-duck mode and will close the connection.
    LameDuck,
    /// The connection was closed for good.
    Closed,
    /// Anything else the client reported (a server or client error, a slow consumer), as text.
    Other(String),
}

impl fmt::Display for ConnectionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectionEvent::Connected => f.write_str("connected"),
            ConnectionEvent::Disconnected => f.write_str("disconnected"),
            ConnectionEvent::LameDuck => f.write_str("server in lame duck mode"),
            ConnectionEvent::Closed => f.write_str("connection closed"),
            ConnectionEvent::Other(text) => f.write_str(text),
        }
    }
}

/// A NATS connection and where it came from. Cheap to clone: clones share the one connection.
#[derive(Clone)]
pub struct NatsConnection {
    client: async_nats::Client,
    context: Arc<str>,
    owned: bool,
    events: broadcast::Sender<ConnectionEvent>,
}

impl fmt::Debug for NatsConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsConnection")
            .field("context", &self.context)
            .field("owned", &self.owned)
            .field("state", &self.client.connection_state())
            .finish()
    }
}

impl NatsConnection {
    /// Connect with the settings of `context`, naming the connection `fisk-ai <identity>` (A2A-13).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::ErrorKind::Config) for a credential or certificate file that cannot be read
    /// (naming the context and file); [`ErrorKind::Nats`](crate::ErrorKind::Nats) when no server accepts the
    /// connection, naming the context and the servers.
    pub async fn connect(context: &NatsContext, identity: &str) -> Result<NatsConnection> {
        Self::connect_with(context, identity, None).await
    }

    /// [`connect`](NatsConnection::connect), buffering at most `subscription_capacity` undelivered messages per
    /// subscription (async-nats drops the rest and reports a slow consumer): a server's intake stays bounded in
    /// memory however fast peers publish.
    pub(crate) async fn connect_with(
        context: &NatsContext,
        identity: &str,
        subscription_capacity: Option<usize>,
    ) -> Result<NatsConnection> {
        let (events, _) = broadcast::channel(64);
        let mut options = options(context, identity, events.clone()).await?;
        if let Some(capacity) = subscription_capacity {
            options = options.subscription_capacity(capacity);
        }
        let servers = context.servers();
        let addrs: Vec<async_nats::ServerAddr> = servers
            .iter()
            .map(|s| {
                s.parse().map_err(|e| context.error(&format!("has an invalid server URL {:?}: {e}", redact_url(s))))
            })
            .collect::<Result<_>>()?;
        let client = options.connect(addrs).await.map_err(|e| {
            let shown: Vec<String> = servers.iter().map(|s| redact_url(s)).collect();
            Error::nats(format!("cannot connect to NATS at {} (context {}): {e}", shown.join(","), context.label()))
                .with_source(e)
        })?;
        Ok(NatsConnection { client, context: context.label().into(), owned: true, events })
    }

    /// Wrap a connection the host made. fisk-ai uses it and never closes it (OVR-7); `context` is the label shown
    /// in startup lines and errors. Connection events come only from connections fisk-ai made.
    pub fn borrowed(client: async_nats::Client, context: impl Into<String>) -> NatsConnection {
        let (events, _) = broadcast::channel(1);
        NatsConnection { client, context: context.into().into(), owned: false, events }
    }

    /// The client, for requests and subscriptions.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// The context this connection came from: its name or `(default)`.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// Whether fisk-ai made this connection (and so may close it).
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// Disconnects and reconnects from now on (none for a borrowed connection).
    pub fn events(&self) -> broadcast::Receiver<ConnectionEvent> {
        self.events.subscribe()
    }

    /// Flush and drain a connection fisk-ai made; a borrowed one is left alone (OVR-7).
    pub async fn close(&self) {
        if self.owned {
            let _ = self.client.drain().await;
        }
    }
}

/// The client options a context asks for.
async fn options(
    context: &NatsContext,
    identity: &str,
    events: broadcast::Sender<ConnectionEvent>,
) -> Result<async_nats::ConnectOptions> {
    let mut options = match context.auth()? {
        Auth::None => async_nats::ConnectOptions::new(),
        Auth::UserPassword(user, password) => async_nats::ConnectOptions::with_user_and_password(user, password),
        Auth::CredsFile(path) => async_nats::ConnectOptions::with_credentials_file(&path)
            .await
            .map_err(|e| context.error(&format!("names creds file {}, which cannot be used: {e}", path.display())))?,
        Auth::NkeySeedFile(path) => async_nats::ConnectOptions::with_nkey(seed_from_file(context, &path)?),
        Auth::JwtSeed(jwt, seed) => async_nats::ConnectOptions::with_credentials(&creds_text(&jwt, &seed))
            .map_err(|e| context.error(&format!("has a user_jwt/user_seed pair that cannot be used: {e}")))?,
    };
    if let Some(token) = context.token() {
        options = options.token(token.to_owned());
    }
    let (ca, pair) = context.tls()?;
    for file in ca.iter().chain(pair.iter().flat_map(|(c, k)| [c, k])) {
        if !file.is_file() {
            return Err(context.error(&format!("names {}, which is not a readable file", file.display())));
        }
    }
    let tls = ca.is_some() || pair.is_some();
    if let Some(ca) = ca {
        options = options.add_root_certificates(ca);
    }
    if let Some((cert, key)) = pair {
        options = options.add_client_certificate(cert, key);
    }
    if tls {
        options = options.require_tls(true);
    }
    if context.tls_first() {
        options = options.tls_first();
    }
    if let Some(prefix) = context.inbox_prefix() {
        options = options.custom_inbox_prefix(prefix);
    }
    let label = context.label().to_owned();
    Ok(options.name(format!("fisk-ai {identity}")).event_callback(move |event| {
        let events = events.clone();
        let label = label.clone();
        async move {
            let event = match event {
                async_nats::Event::Connected => ConnectionEvent::Connected,
                async_nats::Event::Disconnected => ConnectionEvent::Disconnected,
                async_nats::Event::LameDuckMode => ConnectionEvent::LameDuck,
                async_nats::Event::Closed => ConnectionEvent::Closed,
                other => ConnectionEvent::Other(other.to_string()),
            };
            tracing::info!(context = %label, "NATS connection: {event}");
            let _ = events.send(event);
        }
    }))
}

/// An nkey seed file holds the seed on a line of its own (an `S...` key).
fn seed_from_file(context: &NatsContext, path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| context.error(&format!("names nkey file {}, which cannot be read: {e}", path.display())))?;
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with('S') && l.len() > 2)
        .map(str::to_owned)
        .ok_or_else(|| context.error(&format!("names nkey file {}, which holds no nkey seed", path.display())))
}

/// A JWT and seed in the decorated creds format the client parses.
fn creds_text(jwt: &str, seed: &str) -> String {
    format!(
        "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
         -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
    )
}
