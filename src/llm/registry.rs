//! Providers by name (PROV-3): `llm.provider` is looked up in a [`ProviderRegistry`] a host can extend, and the
//! [`ProviderFactory`] found there builds the provider from the configuration and the host's settings.

use super::observe::WireObserver;
use super::provider::{Caps, ModelProvider};
use crate::config::Config;
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::sync::Arc;

/// What a factory builds a provider from: the configuration plus the host's overrides (a CLI's `--api-key`,
/// `--base-url`, `--http-debug`, `--trace`). Unset overrides fall back to the provider's environment variables.
#[derive(Clone)]
#[non_exhaustive]
pub struct ProviderSettings<'a> {
    /// The run's configuration (`llm.*`).
    pub config: &'a Config,
    /// The API key, instead of the provider's environment variable.
    pub api_key: Option<String>,
    /// The base URL, instead of the provider's environment variable (checked by PROV-7).
    pub base_url: Option<String>,
    /// Write every request and response to this file (mode 0600, PROV-17).
    pub http_debug: Option<PathBuf>,
    /// Observers of the wire traffic (PROV-18).
    pub observers: Vec<Arc<dyn WireObserver>>,
}

impl std::fmt::Debug for ProviderSettings<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("provider", &self.config.llm.provider)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("base_url", &self.base_url)
            .field("http_debug", &self.http_debug)
            .field("observers", &self.observers.len())
            .finish()
    }
}

impl<'a> ProviderSettings<'a> {
    /// Settings with no overrides.
    pub fn new(config: &'a Config) -> Self {
        ProviderSettings { config, api_key: None, base_url: None, http_debug: None, observers: Vec::new() }
    }

    /// Use `key` as the API key; empty means unset.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k| !k.trim().is_empty());
        self
    }

    /// Use `url` as the base URL; empty means unset.
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into()).filter(|u| !u.trim().is_empty());
        self
    }

    /// Dump the HTTP traffic to `path`.
    #[must_use]
    pub fn with_http_debug(mut self, path: impl Into<PathBuf>) -> Self {
        self.http_debug = Some(path.into());
        self
    }

    /// Add a wire observer.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn WireObserver>) -> Self {
        self.observers.push(observer);
        self
    }
}

/// Builds one kind of provider; registered in a [`ProviderRegistry`] under [`name`](ProviderFactory::name).
///
/// ```
/// use fisk_ai::llm::{Caps, ModelProvider, ProviderFactory, ProviderRegistry, ProviderSettings, ScriptedProvider};
/// use std::sync::Arc;
///
/// /// A provider for dry runs: every answer is scripted.
/// struct DryRun;
///
/// impl ProviderFactory for DryRun {
///     fn name(&self) -> &str {
///         "dry-run"
///     }
///
///     fn credentials(&self) -> Vec<String> {
///         vec!["DRY_RUN_TOKEN".to_owned()]
///     }
///
///     fn build(&self, _settings: &ProviderSettings<'_>) -> fisk_ai::Result<Arc<dyn ModelProvider>> {
///         Ok(Arc::new(ScriptedProvider::new([]).with_caps(Caps::new("dry-run"))))
///     }
/// }
///
/// let mut providers = ProviderRegistry::with_defaults();
/// providers.register(Arc::new(DryRun));
/// assert!(providers.names().any(|n| n == "dry-run"));
/// assert!(providers.credentials().iter().any(|c| c == "DRY_RUN_TOKEN"));
/// ```
pub trait ProviderFactory: Send + Sync {
    /// The name `llm.provider` uses.
    fn name(&self) -> &str;

    /// The credential variables the provider reads, known before it is built: every registered provider's names
    /// are scrubbed from every child, whichever provider is active (PROV-16).
    fn credentials(&self) -> Vec<String> {
        Vec::new()
    }

    /// What the provider will declare once built (PROV-4), known without building it (no key needed): for a host's
    /// `info` view, say. The default is [`name`](Self::name) with [`credentials`](Self::credentials) and no tool
    /// search.
    fn capabilities(&self) -> Caps {
        Caps::new(self.name()).with_credentials(self.credentials())
    }

    /// Check the settings the way [`build`](Self::build) will (the base URL, PROV-7) without building anything or
    /// touching the file system, so a host can refuse a bad setting before any other run work. The default accepts
    /// everything; [`build`](Self::build) must check again either way.
    ///
    /// # Errors
    ///
    /// A configuration error naming the setting (a base URL that fails PROV-7, say).
    fn check(&self, _settings: &ProviderSettings<'_>) -> Result<()> {
        Ok(())
    }

    /// Build the provider. Fails with a configuration error naming the setting (a missing key, a bad base URL).
    ///
    /// # Errors
    ///
    /// A configuration error naming the setting: a missing key, a bad base URL, a debug file that cannot be created.
    fn build(&self, settings: &ProviderSettings<'_>) -> Result<Arc<dyn ModelProvider>>;
}

/// The providers `llm.provider` can name ([`Registry`](crate::registry::Registry)).
pub type ProviderRegistry = crate::registry::Registry<dyn ProviderFactory>;

impl crate::registry::Named for dyn ProviderFactory {
    fn registered_name(&self) -> &str {
        self.name()
    }
}

impl Default for ProviderRegistry {
    fn default() -> Self {
        Self::empty()
    }
}

impl ProviderRegistry {
    /// The providers compiled into this build: `anthropic` and `openai`, each with its feature, and `scripted`
    /// (a replayed model, [`ScriptedFactory`](super::ScriptedFactory)).
    pub fn with_defaults() -> Self {
        let mut registry = Self::empty();
        #[cfg(feature = "anthropic")]
        registry.register(Arc::new(super::anthropic::AnthropicFactory));
        #[cfg(feature = "openai")]
        registry.register(Arc::new(super::openai::OpenAiFactory));
        registry.register(Arc::new(super::ScriptedFactory));
        registry
    }

    /// Every registered provider's credential variables, each once.
    pub fn credentials(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in self.iter().flat_map(|f| f.credentials()) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }

    /// Build the provider `llm.provider` names. An unknown name is a configuration error on `llm.provider` that
    /// lists the available ones (PROV-3).
    ///
    /// # Errors
    ///
    /// A configuration error on `llm.provider` for an unregistered name (listing the registered ones), or what the
    /// factory's [`build`](ProviderFactory::build) returns.
    pub fn build(&self, settings: &ProviderSettings<'_>) -> Result<Arc<dyn ModelProvider>> {
        self.factory(settings)?.build(settings)
    }

    /// Check the settings for the provider `llm.provider` names without building it ([`ProviderFactory::check`]):
    /// an unknown name (PROV-3) or a bad base URL (PROV-7) fails here, before any file is created.
    ///
    /// # Errors
    ///
    /// A configuration error on `llm.provider` for an unregistered name, or what the factory's
    /// [`check`](ProviderFactory::check) returns.
    pub fn check(&self, settings: &ProviderSettings<'_>) -> Result<()> {
        self.factory(settings)?.check(settings)
    }

    fn factory(&self, settings: &ProviderSettings<'_>) -> Result<&Arc<dyn ProviderFactory>> {
        let name = settings.config.llm.provider.as_str();
        self.get(name).ok_or_else(|| {
            let known = self.listed();
            Error::config_key("llm.provider", format!("llm.provider: unknown provider \"{name}\"; available: {known}"))
        })
    }
}

/// A variable's value, unless it is unset or blank.
#[cfg(any(feature = "anthropic", feature = "openai"))]
pub(crate) fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The base URL an HTTP provider's settings name, checked (PROV-7) and trimmed: `--base-url`, then the provider's
/// own variable `var`, then `llm.base_url` (whose error names that key). One copy, so the providers cannot drift:
/// the two copies this replaces already disagreed on trimming.
#[cfg(any(feature = "anthropic", feature = "openai"))]
pub(crate) fn checked_base_url(settings: &ProviderSettings<'_>, var: &str) -> Result<Option<String>> {
    let (url, source) = match (&settings.base_url, non_empty_env(var), &settings.config.llm.base_url) {
        (Some(url), _, _) => (url.clone(), format!("--base-url / {var}")),
        (None, Some(url), _) => (url, format!("--base-url / {var}")),
        (None, None, Some(url)) => (url.clone(), "llm.base_url".to_owned()),
        (None, None, None) => return Ok(None),
    };
    crate::config::check_http_url(url.trim()).map_err(|e| {
        let msg = format!("invalid base URL {url:?} ({source}): {e}");
        if source == "llm.base_url" { Error::config_key(source, msg) } else { Error::config(msg) }
    })?;
    Ok(Some(url.trim().to_owned()))
}
