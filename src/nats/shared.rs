//! One connection for every NATS feature of an agent (CFG-15): made on first use, shared after.

use super::{NatsConnection, NatsContext};
use crate::error::Result;
use std::fmt;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The agent's NATS connection, shared by its `remote_tools` hosts and its JetStream memory and session stores
/// (CFG-15): either injected by the host, or connected from `nats_context` as the agent's identity the first time
/// a feature asks for it, so an agent that uses no NATS feature never connects. Cheap to clone.
///
/// Backends reach it through [`MemorySettings::nats`](crate::memory::MemorySettings::nats) and
/// [`SessionSettings::nats`](crate::session::SessionSettings::nats).
///
/// ```no_run
/// use fisk_ai::nats::SharedNats;
///
/// # async fn demo() -> fisk_ai::Result<()> {
/// let shared = SharedNats::from_context(Some("prod"), "ops");
/// let first = shared.get().await?; // connects
/// let again = shared.get().await?; // the same connection
/// assert_eq!(first.context(), again.context());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct SharedNats {
    inner: Arc<Inner>,
}

struct Inner {
    context: Option<String>,
    identity: String,
    connection: OnceCell<NatsConnection>,
}

impl fmt::Debug for SharedNats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedNats")
            .field("context", &self.inner.context)
            .field("identity", &self.inner.identity)
            .field("connected", &self.inner.connection.initialized())
            .finish()
    }
}

impl SharedNats {
    /// A connection made on first use from the NATS CLI context `context` (`None`: the selected context, else
    /// the default URL), named `fisk-ai <identity>`.
    pub fn from_context(context: Option<&str>, identity: impl Into<String>) -> Self {
        let inner =
            Inner { context: context.map(str::to_owned), identity: identity.into(), connection: OnceCell::new() };
        SharedNats { inner: Arc::new(inner) }
    }

    /// The host's connection (OVR-7: fisk-ai never closes a borrowed one).
    pub fn injected(connection: NatsConnection) -> Self {
        let inner = Inner {
            context: Some(connection.context().to_owned()),
            identity: String::new(),
            connection: OnceCell::new_with(Some(connection)),
        };
        SharedNats { inner: Arc::new(inner) }
    }

    /// The connection, connecting the first time. A failed connect is not remembered: the next caller tries again.
    ///
    /// # Errors
    ///
    /// As [`NatsContext::load`] and [`NatsConnection::connect`]: the context cannot be read, or no server answers.
    pub async fn get(&self) -> Result<NatsConnection> {
        let inner = &self.inner;
        let connection = inner
            .connection
            .get_or_try_init(|| async {
                let context = NatsContext::load(inner.context.as_deref())?;
                NatsConnection::connect(&context, &inner.identity).await
            })
            .await?;
        Ok(connection.clone())
    }

    /// The context name, for messages: the configured or injected one, else `(default)`.
    pub fn label(&self) -> &str {
        self.inner.context.as_deref().unwrap_or("(default)")
    }
}
