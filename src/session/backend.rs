//! Session backends resolved by name (`harness.sessions.backend`, SESS-25) from a registry a host can extend.

use super::{FileSessionStore, SessionStore};
use crate::config::Config;
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::path::Path;
use std::sync::Arc;

/// What a [`SessionBackend`] gets to open its store.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SessionSettings<'a> {
    /// The configuration; `harness.sessions.options` holds the backend's options.
    pub config: &'a Config,
    /// Where relative store paths resolve (OVR-6), when the host set one.
    pub store_base: Option<&'a Path>,
    #[cfg(feature = "nats")]
    nats: Option<&'a crate::nats::SharedNats>,
}

impl<'a> SessionSettings<'a> {
    /// Settings for `config`.
    pub fn new(config: &'a Config) -> Self {
        SessionSettings {
            config,
            store_base: None,
            #[cfg(feature = "nats")]
            nats: None,
        }
    }

    /// Give backends the agent's shared NATS connection (CFG-15).
    #[cfg(feature = "nats")]
    #[must_use]
    pub fn with_nats(mut self, nats: Option<&'a crate::nats::SharedNats>) -> Self {
        self.nats = nats;
        self
    }

    /// The agent's shared NATS connection, for backends that keep journals in NATS; `None` when the settings were
    /// built without one.
    #[cfg(feature = "nats")]
    pub fn nats(&self) -> Option<&'a crate::nats::SharedNats> {
        self.nats
    }

    /// The backend's `harness.sessions.options` as written (a host backend reads and checks its own here).
    pub fn options(&self) -> &'a serde_json::Map<String, serde_json::Value> {
        &self.config.harness.sessions.backend_options
    }

    /// Refuse every option not in `allowed`: a configuration error on `harness.sessions.options.<key>`, with the
    /// file, line and column, naming the backend and the options it takes. A key a backend does not act on is
    /// never ignored.
    ///
    /// # Errors
    ///
    /// The error above, for the first unknown key.
    pub fn reject_unknown_options(&self, allowed: &[&str]) -> crate::error::Result<()> {
        let backend = &self.config.harness.sessions.backend;
        match self.options().keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => Err(self.config.locate(crate::error::Error::config_key(
                format!("harness.sessions.options.{key}"),
                format!(
                    "harness.sessions.options.{key}: the session backend \"{backend}\" has no option \"{key}\"; it takes: {}",
                    if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") }
                ),
            ))),
        }
    }

    /// Resolve relative store paths under `base`.
    #[must_use]
    pub fn with_store_base(mut self, base: Option<&'a Path>) -> Self {
        self.store_base = base;
        self
    }
}

/// Opens the session store a backend name stands for.
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::session::{FileSessionStore, SessionBackend, SessionBackends, SessionSettings, SessionStore};
/// use std::sync::Arc;
///
/// /// "file", always under one directory of the host's.
/// struct Pinned(std::path::PathBuf);
///
/// #[async_trait]
/// impl SessionBackend for Pinned {
///     fn name(&self) -> &str {
///         "file"
///     }
///     async fn open(&self, _settings: &SessionSettings<'_>) -> fisk_ai::Result<Arc<dyn SessionStore>> {
///         Ok(Arc::new(FileSessionStore::new(self.0.clone())))
///     }
/// }
///
/// let mut backends = SessionBackends::with_defaults();
/// backends.register(Arc::new(Pinned("/var/lib/agent/runs".into())));
/// assert!(backends.get("file").is_some());
/// ```
#[async_trait]
pub trait SessionBackend: Send + Sync {
    /// The `harness.sessions.backend` name.
    fn name(&self) -> &str;

    /// Open (or bind) the store. An error does not fail the agent build: it fails the first checkpointed run.
    async fn open(&self, settings: &SessionSettings<'_>) -> Result<Arc<dyn SessionStore>>;
}

/// The `file` backend: one JSON-lines journal per session (SESS-26..30).
#[derive(Debug, Clone, Copy, Default)]
pub struct FileSessionBackend;

#[async_trait]
impl SessionBackend for FileSessionBackend {
    fn name(&self) -> &str {
        "file"
    }

    async fn open(&self, s: &SessionSettings<'_>) -> Result<Arc<dyn SessionStore>> {
        Ok(Arc::new(FileSessionStore::from_config(&s.config.harness.sessions.options, s.store_base)?))
    }
}

/// The `jetstream` backend (SESS-31, SESS-32): journals in the existing stream `harness.sessions.options.stream`,
/// reached through the agent's shared NATS connection (CFG-15), else a connection made from `nats_context`.
///
/// ```
/// use fisk_ai::session::SessionBackends;
///
/// assert!(SessionBackends::with_defaults().get("jetstream").is_some());
/// ```
#[cfg(feature = "nats")]
#[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
#[derive(Debug, Clone, Copy, Default)]
pub struct JetStreamSessionBackend;

#[cfg(feature = "nats")]
#[async_trait]
impl SessionBackend for JetStreamSessionBackend {
    fn name(&self) -> &str {
        "jetstream"
    }

    async fn open(&self, s: &SessionSettings<'_>) -> Result<Arc<dyn SessionStore>> {
        let context = s.config.nats_context.as_deref().unwrap_or("(default)");
        let Some(stream) = s.config.harness.sessions.options.stream.as_deref().filter(|v| !v.is_empty()) else {
            return Err(Error::config_key(
                "harness.sessions.options.stream",
                "harness.sessions.options.stream: the jetstream session backend needs the name of an existing stream",
            ));
        };
        let connection = match s.nats() {
            Some(shared) => shared.get().await,
            None => {
                let identity = s.config.identity().unwrap_or_else(|_| "fisk-ai".to_owned());
                crate::nats::SharedNats::from_context(s.config.nats_context.as_deref(), identity).get().await
            }
        };
        // The injected or configured connection's own name for its context.
        let context = s.nats().map_or(context, |shared| shared.label());
        let connection = connection.map_err(|e| {
            Error::nats(format!("jetstream session backend (stream {stream}, NATS context {context}): {e}"))
        })?;
        let store = super::jetstream::JetStreamSessions::bind(&connection, stream).await.map_err(|e| {
            let message = format!("jetstream session backend: {e}");
            if e.is_config() {
                Error::config_key("harness.sessions.options.stream", message)
            } else {
                Error::nats(message)
            }
        })?;
        Ok(Arc::new(store))
    }
}

/// Session backends by name ([`Registry`](crate::registry::Registry)); `harness.sessions.backend` names one.
pub type SessionBackends = crate::registry::Registry<dyn SessionBackend>;

impl crate::registry::Named for dyn SessionBackend {
    fn registered_name(&self) -> &str {
        self.name()
    }
}

impl Default for SessionBackends {
    fn default() -> Self {
        Self::with_defaults()
    }
}

impl SessionBackends {
    /// The backends this build ships: `file`, and `jetstream` with the `nats` feature.
    pub fn with_defaults() -> Self {
        let mut r = Self::empty();
        r.register(Arc::new(FileSessionBackend));
        #[cfg(feature = "nats")]
        r.register(Arc::new(JetStreamSessionBackend));
        r
    }

    /// Open the store `harness.sessions.backend` names. An unregistered name is a configuration error naming the
    /// key and the names this build has.
    ///
    /// # Errors
    ///
    /// A configuration error on `harness.sessions.backend` for an unregistered name; whatever the backend's own `open`
    /// returns (no session directory can be placed, say).
    pub async fn open(&self, settings: &SessionSettings<'_>) -> Result<Arc<dyn SessionStore>> {
        let name = settings.config.harness.sessions.backend.as_str();
        match self.get(name) {
            Some(backend) => backend.open(settings).await,
            None => Err(Error::config_key(
                "harness.sessions.backend",
                format!(
                    "harness.sessions.backend: no session backend \"{name}\" is registered (registered: {})",
                    self.listed()
                ),
            )),
        }
    }
}
