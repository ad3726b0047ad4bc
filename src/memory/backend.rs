//! Memory backends resolved by name (`harness.memory.backend`, MEM-18) from a registry a host can extend.

use super::{FileMemoryStore, MemoryStore};
use crate::config::Config;
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::path::Path;
use std::sync::Arc;

/// What a [`MemoryBackend`] gets to open its store.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct MemorySettings<'a> {
    /// The configuration; `harness.memory.options` holds the backend's options.
    pub config: &'a Config,
    /// The agent's identity (CFG-5), which names the default store.
    pub identity: &'a str,
    /// Where relative store paths resolve (OVR-6), when the host set one.
    pub store_base: Option<&'a Path>,
    /// The process working directory when the agent was built.
    pub working_dir: &'a Path,
    #[cfg(feature = "nats")]
    nats: Option<&'a crate::nats::SharedNats>,
}

impl<'a> MemorySettings<'a> {
    /// Settings for `config` under `identity`, resolving relative paths against `working_dir`.
    pub fn new(config: &'a Config, identity: &'a str, working_dir: &'a Path) -> Self {
        MemorySettings {
            config,
            identity,
            store_base: None,
            working_dir,
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

    /// The agent's shared NATS connection, for backends that keep memory in NATS; `None` when the settings were
    /// built without one.
    #[cfg(feature = "nats")]
    pub fn nats(&self) -> Option<&'a crate::nats::SharedNats> {
        self.nats
    }

    /// The backend's `harness.memory.options` as written (a host backend reads and checks its own here).
    pub fn options(&self) -> &'a serde_json::Map<String, serde_json::Value> {
        &self.config.harness.memory.backend_options
    }

    /// Refuse every option not in `allowed`: a configuration error on `harness.memory.options.<key>`, with the
    /// file, line and column, naming the backend and the options it takes. A key a backend does not act on is
    /// never ignored.
    ///
    /// # Errors
    ///
    /// The error above, for the first unknown key.
    pub fn reject_unknown_options(&self, allowed: &[&str]) -> crate::error::Result<()> {
        let backend = &self.config.harness.memory.backend;
        match self.options().keys().find(|k| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some(key) => Err(self.config.locate(crate::error::Error::config_key(
                format!("harness.memory.options.{key}"),
                format!(
                    "harness.memory.options.{key}: the memory backend \"{backend}\" has no option \"{key}\"; it takes: {}",
                    if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") }
                ),
            ))),
        }
    }

    /// Resolve relative store paths under `base` instead.
    #[must_use]
    pub fn with_store_base(mut self, base: Option<&'a Path>) -> Self {
        self.store_base = base;
        self
    }
}

/// Opens the memory store a backend name stands for.
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::memory::{InMemoryStore, MemoryBackend, MemoryBackends, MemorySettings, MemoryStore};
/// use std::sync::Arc;
///
/// /// "file" replaced by a process-local store, e.g. for tests of a host.
/// struct Scratch;
///
/// #[async_trait]
/// impl MemoryBackend for Scratch {
///     fn name(&self) -> &str {
///         "file"
///     }
///     async fn open(&self, _settings: &MemorySettings<'_>) -> fisk_ai::Result<Arc<dyn MemoryStore>> {
///         Ok(Arc::new(InMemoryStore::new()))
///     }
/// }
///
/// let mut backends = MemoryBackends::with_defaults();
/// backends.register(Arc::new(Scratch));
/// assert!(backends.names().any(|name| name == "file"));
/// ```
#[async_trait]
pub trait MemoryBackend: Send + Sync {
    /// The `harness.memory.backend` name.
    fn name(&self) -> &str;

    /// Open (or bind) the store; an error fails the agent build.
    async fn open(&self, settings: &MemorySettings<'_>) -> Result<Arc<dyn MemoryStore>>;
}

/// The `file` backend: one Markdown file per entry (MEM-19..21).
#[derive(Debug, Clone, Copy, Default)]
pub struct FileMemoryBackend;

#[async_trait]
impl MemoryBackend for FileMemoryBackend {
    fn name(&self) -> &str {
        "file"
    }

    async fn open(&self, s: &MemorySettings<'_>) -> Result<Arc<dyn MemoryStore>> {
        let options = &s.config.harness.memory.options;
        Ok(Arc::new(FileMemoryStore::from_config(options, s.identity, s.store_base, s.working_dir)))
    }
}

/// The `jetstream` backend: a KV bucket over the agent's shared NATS connection (MEM-22..27).
#[cfg(feature = "nats")]
#[derive(Debug, Clone, Copy, Default)]
pub struct JetStreamMemoryBackend;

#[cfg(feature = "nats")]
#[async_trait]
impl MemoryBackend for JetStreamMemoryBackend {
    fn name(&self) -> &str {
        "jetstream"
    }

    async fn open(&self, s: &MemorySettings<'_>) -> Result<Arc<dyn MemoryStore>> {
        let options = &s.config.harness.memory.options;
        let bucket = options.bucket.as_deref().filter(|b| !b.is_empty()).ok_or_else(|| {
            Error::config_key(
                "harness.memory.options.bucket",
                "harness.memory.options.bucket is required for the jetstream memory backend",
            )
        })?;
        // A keyed configuration error (the prefix) already names its key.
        let located = |e: Error| {
            if e.key().is_some() { e } else { Error::new(e.kind(), format!("harness.memory (jetstream): {e}")) }
        };
        let nats = match s.nats() {
            Some(shared) => shared.get().await.map_err(located)?,
            None => {
                let context = crate::nats::NatsContext::load(s.config.nats_context.as_deref()).map_err(located)?;
                crate::nats::NatsConnection::connect(&context, s.identity).await.map_err(located)?
            }
        };
        let store = super::JetStreamMemory::bind_configured(&nats, bucket, options.prefix.as_deref(), s.identity)
            .await
            .map_err(located)?;
        Ok(Arc::new(store.with_read_before_update(!options.no_require_read_before_update)))
    }
}

/// Memory backends by name ([`Registry`](crate::registry::Registry)); `harness.memory.backend` names one.
pub type MemoryBackends = crate::registry::Registry<dyn MemoryBackend>;

impl crate::registry::Named for dyn MemoryBackend {
    fn registered_name(&self) -> &str {
        self.name()
    }
}

impl Default for MemoryBackends {
    fn default() -> Self {
        Self::with_defaults()
    }
}

impl MemoryBackends {
    /// The backends this build ships: `file`, and `jetstream` with the `nats` feature.
    pub fn with_defaults() -> Self {
        let mut r = Self::empty();
        r.register(Arc::new(FileMemoryBackend));
        #[cfg(feature = "nats")]
        r.register(Arc::new(JetStreamMemoryBackend));
        r
    }

    /// Open the store `harness.memory.backend` names. An unregistered name is a configuration error naming the
    /// key and the names this build has.
    ///
    /// # Errors
    ///
    /// A configuration error on `harness.memory.backend` for an unregistered name; whatever the backend's own `open`
    /// returns (a directory that cannot be created, say).
    pub async fn open(&self, settings: &MemorySettings<'_>) -> Result<Arc<dyn MemoryStore>> {
        let name = settings.config.harness.memory.backend.as_str();
        match self.get(name) {
            Some(backend) => backend.open(settings).await,
            None => Err(Error::config_key(
                "harness.memory.backend",
                format!(
                    "harness.memory.backend: no memory backend \"{name}\" is registered (registered: {})",
                    self.listed()
                ),
            )),
        }
    }
}
