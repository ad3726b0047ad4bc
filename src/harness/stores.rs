//! The memory and session stores a harness opens: an injected store, else the backend the configuration names,
//! from the registry (MEM-18, SESS-25, OVR-7).

use crate::config::Config;
use crate::error::{Error, Result};
use crate::memory::{MemoryBackends, MemorySettings, MemoryStore};
use crate::session::{SessionBackends, SessionSettings, SessionStore};
use crate::source::checked_dir;
use std::path::Path;
use std::sync::Arc;

#[cfg(feature = "nats")]
pub(crate) use crate::nats::SharedNats;
/// Without NATS there is never a shared connection; the stand-in keeps one signature for both builds.
#[cfg(not(feature = "nats"))]
pub(crate) enum SharedNats {}

/// CFG-15: one connection for remote hosts, JetStream stores and the fleet surfaces: the injected one, else one from
/// `nats_context`, made when the first of them needs it.
#[cfg(feature = "nats")]
pub(crate) fn shared_nats(config: &Config, injected: Option<crate::nats::NatsConnection>) -> Option<SharedNats> {
    match injected {
        Some(connection) => Some(SharedNats::injected(connection)),
        None => config.identity().ok().map(|id| SharedNats::from_context(config.nats_context.as_deref(), id)),
    }
}

/// What opening a store needs besides the configuration.
pub(crate) struct Places<'a> {
    pub(crate) working_dir: &'a Path,
    pub(crate) store_base: Option<&'a Path>,
    // Without the feature the stand-in has no values, so nothing reads it.
    #[cfg_attr(not(feature = "nats"), expect(dead_code))]
    pub(crate) nats: Option<&'a SharedNats>,
}

/// MEM-18, SESS-25: the backends the configuration names are registered (whether or not memory is enabled: a name
/// nothing can open is refused, never ignored). Checked before anything loads.
pub(crate) fn check_registered(config: &Config, memory: &MemoryBackends, sessions: &SessionBackends) -> Result<()> {
    let h = &config.harness;
    for (key, name, what, listed) in [
        (
            "harness.memory.backend",
            &h.memory.backend,
            "memory",
            memory.get(&h.memory.backend).map(drop).ok_or_else(|| memory.listed()),
        ),
        (
            "harness.sessions.backend",
            &h.sessions.backend,
            "session",
            sessions.get(&h.sessions.backend).map(drop).ok_or_else(|| sessions.listed()),
        ),
    ] {
        if let Err(registered) = listed {
            return Err(config.locate(Error::config_key(
                key,
                format!("{key}: no {what} backend \"{name}\" is registered (registered: {registered})"),
            )));
        }
    }
    Ok(())
}

/// MEM-18, OVR-7: the injected store, else the configured backend from the registry; `None` when memory is off.
pub(crate) async fn open_memory(
    config: &Config,
    injected: Option<Arc<dyn MemoryStore>>,
    backends: &MemoryBackends,
    places: &Places<'_>,
) -> Result<Option<Arc<dyn MemoryStore>>> {
    let memory = &config.harness.memory;
    if !memory.enabled {
        return Ok(None);
    }
    if let Some(store) = injected {
        return if memory.backend == "file" { Ok(Some(store)) } else { Err(conflict("memory", &memory.backend)) };
    }
    let identity = config.identity()?;
    let base = checked_dir("store base", places.store_base)?;
    let settings = MemorySettings::new(config, &identity, places.working_dir).with_store_base(base);
    #[cfg(feature = "nats")]
    let settings = settings.with_nats(places.nats);
    backends.open(&settings).await.map(Some).map_err(|e| config.locate(e))
}

/// SESS-25, OVR-7: the injected store, else the configured backend; a backend that cannot open fails only the
/// checkpointed runs, with its reason (a configuration error, such as an unknown option, fails the build).
pub(crate) async fn open_sessions(
    config: &Config,
    injected: Option<Arc<dyn SessionStore>>,
    backends: &SessionBackends,
    places: &Places<'_>,
) -> Result<std::result::Result<Arc<dyn SessionStore>, Error>> {
    let backend = config.harness.sessions.backend.as_str();
    if let Some(store) = injected {
        return if backend == "file" { Ok(Ok(store)) } else { Err(conflict("sessions", backend)) };
    }
    let base = checked_dir("store base", places.store_base)?;
    let settings = SessionSettings::new(config).with_store_base(base);
    #[cfg(feature = "nats")]
    let settings = settings.with_nats(places.nats);
    match backends.open(&settings).await {
        Ok(store) => Ok(Ok(store)),
        // A configuration error (an option the backend refuses) is the build's: never ignored until a run needs it.
        Err(e) if e.is_config() => Err(config.locate(e)),
        Err(e) => Ok(Err(e)),
    }
}

/// The stores a configuration names, opened on their own, without loading any tool
/// ([`HarnessBuilder::open_stores`](super::HarnessBuilder::open_stores)): for a host's own tooling (listing sessions,
/// checking that a store is reachable) that must resolve the same backends, options and NATS connection a run would.
///
/// A configuration error (an unregistered backend, an option it refuses) fails the open; a store that cannot be
/// reached is kept here as its error, so each store is reported on its own.
pub struct Stores {
    pub(crate) memory: Option<std::result::Result<Arc<dyn MemoryStore>, Error>>,
    pub(crate) sessions: std::result::Result<Arc<dyn SessionStore>, Error>,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores")
            .field("memory", &self.memory.as_ref().map(|m| m.as_ref().map(drop)))
            .field("sessions", &self.sessions.as_ref().map(drop))
            .finish()
    }
}

impl Stores {
    /// The memory store: `None` when `harness.memory` is off, else the store or why it could not open.
    pub fn memory(&self) -> Option<std::result::Result<&Arc<dyn MemoryStore>, &Error>> {
        self.memory.as_ref().map(std::result::Result::as_ref)
    }

    /// The session store, or why it could not open.
    ///
    /// # Errors
    ///
    /// The backend's own error (the stream does not exist, the server is unreachable).
    pub fn sessions(&self) -> std::result::Result<&Arc<dyn SessionStore>, &Error> {
        self.sessions.as_ref()
    }

    /// The session store, owned.
    ///
    /// # Errors
    ///
    /// As [`sessions`](Self::sessions).
    pub fn into_sessions(self) -> Result<Arc<dyn SessionStore>> {
        self.sessions
    }
}

/// Stores the host handed over instead of a configured backend (OVR-7).
pub(crate) struct Injected {
    pub(crate) memory: Option<Arc<dyn MemoryStore>>,
    pub(crate) sessions: Option<Arc<dyn SessionStore>>,
}

/// Both stores for [`Stores`]: configuration errors fail, a store that cannot open is kept as its error.
pub(crate) async fn open_both(
    config: &Config,
    injected: Injected,
    backends: (&MemoryBackends, &SessionBackends),
    places: &Places<'_>,
) -> Result<Stores> {
    let memory = match open_memory(config, injected.memory, backends.0, places).await {
        Ok(store) => store.map(Ok),
        Err(e) if e.is_config() => return Err(e),
        Err(e) => Some(Err(e)),
    };
    let sessions = open_sessions(config, injected.sessions, backends.1, places).await?;
    Ok(Stores { memory, sessions })
}

/// OVR-7: an injected store and a configured non-default backend cannot both be meant.
fn conflict(what: &str, backend: &str) -> Error {
    let store = if what == "memory" { "memory" } else { "session" };
    Error::config_key(
        format!("harness.{what}.backend"),
        format!("a {store} store was injected but harness.{what}.backend names \"{backend}\"; remove one of them"),
    )
}

/// PIN-5, PIN-6: the default pin store: a KV bucket over the shared connection when sessions live in JetStream
/// (`harness.sessions.options.pins_bucket`, else [`DEFAULT_PINS_BUCKET`](crate::source::pins::DEFAULT_PINS_BUCKET)),
/// else a file per server under the store base or the state directory, for this identity.
pub(crate) async fn open_pins(
    config: &Config,
    store_base: Option<&Path>,
    #[cfg(feature = "nats")] nats: Option<&SharedNats>,
) -> Result<Arc<dyn crate::source::pins::PinStore>> {
    let identity = config.identity()?;
    #[cfg(feature = "nats")]
    if config.harness.sessions.backend == "jetstream" {
        let options = &config.harness.sessions.options;
        let bucket = options.pins_bucket.as_deref().filter(|b| !b.is_empty());
        let bucket = bucket.unwrap_or(crate::source::pins::DEFAULT_PINS_BUCKET);
        let nats = match nats {
            Some(shared) => shared.get().await?,
            None => return Err(Error::nats("the pin bucket needs a NATS connection and there is none")),
        };
        return Ok(Arc::new(crate::source::pins::KvPinStore::bind(&nats, bucket, &identity).await?));
    }
    let base = checked_dir("store base", store_base)?;
    let dir = crate::source::pins::FilePinStore::default_dir(&identity, base)?;
    Ok(Arc::new(crate::source::pins::FilePinStore::new(dir)))
}

/// APPR-1, REPL-1: the approvals bucket of `harness.approvals.backend: nats`, bound once (never created) for every
/// surface built from the harness: the agent's gate and the MCP server's pending approvals. `None` under the
/// terminal backend.
#[cfg(feature = "nats")]
pub(crate) async fn open_approvals(
    config: &Config,
    nats: Option<&SharedNats>,
) -> Result<Option<crate::nats::approvals::ApprovalBook>> {
    let approvals = &config.harness.approvals;
    if approvals.backend != crate::config::ApprovalBackend::Nats {
        return Ok(None);
    }
    let bucket = approvals.bucket.as_deref().unwrap_or_default();
    let nats = match nats {
        Some(shared) => shared.get().await?,
        None => return Err(Error::nats("the approvals bucket needs a NATS connection and there is none")),
    };
    let book = crate::nats::approvals::ApprovalBook::bind(&nats, bucket).await.map_err(|e| config.locate(e))?;
    Ok(Some(book))
}
