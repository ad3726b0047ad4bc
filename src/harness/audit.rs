//! What a harness opens without loading a tool: the stores alone and the pin store for a host's own tooling
//! (OVR-7, PIN-5), and the audit trail every surface writes (AUD-1, AUD-4..6).

use super::HarnessBuilder;
use super::stores::{self, Places, SharedNats, Stores};
use crate::audit::{AuditSink, AuditTrail, DEFAULT_ROTATE_BYTES, Entry, FileSink};
use crate::builtin::BuiltinEnv;
use crate::config::{Config, Mode};
use crate::error::{Error, Result};
use crate::operator::NoOperator;
use crate::source::pins::PinStore;
use crate::warning::Warning;
use std::sync::Arc;

impl HarnessBuilder {
    /// `nats`, unless a connection was given already: a server's own connection serves its harness's stores too.
    #[cfg(feature = "nats")]
    pub(crate) fn nats_or(mut self, nats: &crate::nats::NatsConnection) -> Self {
        if self.nats.is_none() {
            self.nats = Some(nats.clone());
        }
        self
    }

    /// Open only the stores the configuration names, as [`build`](Self::build) would (the same registered
    /// backends, injected stores, options, store base and one shared NATS connection), without loading any tool.
    /// For a host's own tooling: the example CLI's `session` and `info` commands use it.
    ///
    /// # Errors
    ///
    /// A configuration error: no configuration, an unregistered backend name, an option a backend refuses. A store
    /// that cannot be reached is not an error here: [`Stores`] keeps it for each store.
    pub async fn open_stores(mut self) -> Result<Stores> {
        let config = self.config.take().ok_or_else(|| Error::config("opening stores needs a configuration"))?;
        config.validate(Mode::Lenient)?;
        config.check_supported()?;
        stores::check_registered(&config, &self.memory_backends, &self.session_backends)?;
        let nats = self.shared_nats(&config);
        let builtin_env = BuiltinEnv::new(&config, Arc::new(NoOperator))?;
        let places = Places {
            working_dir: &builtin_env.working_dir,
            store_base: self.store_base.as_deref(),
            nats: nats.as_ref(),
        };
        let injected = stores::Injected { memory: self.memory.take(), sessions: self.sessions.take() };
        stores::open_both(&config, injected, (&self.memory_backends, &self.session_backends), &places).await
    }

    /// Open only the pin store a build would check imports against (PIN-5, PIN-6): the injected
    /// [`pin_store`](Self::pin_store), else the `pins_bucket` KV bucket when sessions live in JetStream, else the
    /// file store under the store base or the state directory. For a host's own tooling: the example CLI's `pins`
    /// and `info` commands use it.
    ///
    /// # Errors
    ///
    /// No configuration, an identity that cannot name the store, no state directory, or a bucket that does not
    /// exist or cannot be reached.
    pub async fn open_pin_store(mut self) -> Result<Arc<dyn PinStore>> {
        let config = self.config.take().ok_or_else(|| Error::config("opening the pin store needs a configuration"))?;
        if let Some(store) = self.pins.take() {
            return Ok(store);
        }
        #[cfg(feature = "nats")]
        let nats = self.shared_nats(&config);
        #[cfg(feature = "nats")]
        return stores::open_pins(&config, self.store_base.as_deref(), nats.as_ref()).await;
        #[cfg(not(feature = "nats"))]
        stores::open_pins(&config, self.store_base.as_deref()).await
    }

    /// CFG-15: the injected connection, else one from `nats_context` made on first use.
    #[cfg(feature = "nats")]
    pub(super) fn shared_nats(&mut self, config: &Config) -> Option<stores::SharedNats> {
        stores::shared_nats(config, self.nats.take())
    }

    #[cfg(not(feature = "nats"))]
    pub(super) fn shared_nats(&mut self, _config: &Config) -> Option<stores::SharedNats> {
        None
    }
}

/// The trail for `harness.audit`, or the host's ([`HarnessBuilder::audit`]); both at once is ambiguous and
/// refused. A sink that cannot open stops the build (AUD-6), unless `fail_open` is set: then it is kept as a sink
/// whose every write fails, so each call warns.
pub(crate) async fn open_audit(
    config: &Config,
    injected: Option<Arc<AuditTrail>>,
    nats: Option<&SharedNats>,
    warnings: &mut Vec<Warning>,
) -> Result<Option<Arc<AuditTrail>>> {
    let audit = &config.harness.audit;
    let trail = match (injected, audit.is_enabled()) {
        (Some(_), true) => {
            return Err(config.locate(Error::config_key(
                "harness.audit",
                "harness.audit is set but the host gave an audit trail too; remove one of them",
            )));
        }
        (Some(trail), false) => trail,
        (None, false) => return Ok(None),
        (None, true) => {
            let mut sinks = Vec::new();
            if let Some(file) = &audit.file {
                let path = match (file.is_relative(), config.file().and_then(std::path::Path::parent)) {
                    (true, Some(dir)) => dir.join(file),
                    _ => file.clone(),
                };
                let opened = FileSink::open(path, audit.rotate_bytes.unwrap_or(DEFAULT_ROTATE_BYTES));
                sinks.push(keep(opened.map(|s| Arc::new(s) as Arc<dyn AuditSink>), audit.fail_open, "file")?);
            }
            if let Some(stream) = &audit.stream {
                let opened = open_stream(stream, nats).await.map_err(|e| config.locate(e));
                sinks.push(keep(opened, audit.fail_open, "stream")?);
            }
            let mut sinks = sinks.into_iter();
            let Some(first) = sinks.next() else { return Ok(None) };
            let trail = sinks.fold(AuditTrail::new(first), AuditTrail::sink);
            Arc::new(trail.agent(config.identity()?).include_input(audit.include_input).fail_open(audit.fail_open))
        }
    };
    if trail.is_fail_open() {
        warnings.push(Warning::AuditFailOpen { sinks: trail.describe().join(", ") });
    }
    Ok(Some(trail))
}

/// A sink, or under `fail_open` one that reports why it could not open on every write.
fn keep(opened: Result<Arc<dyn AuditSink>>, fail_open: bool, what: &str) -> Result<Arc<dyn AuditSink>> {
    match opened {
        Ok(sink) => Ok(sink),
        Err(e) if fail_open => Ok(Arc::new(Unopened(format!("the audit {what} could not be opened: {e}")))),
        Err(e) => Err(e),
    }
}

struct Unopened(String);

#[async_trait::async_trait]
impl AuditSink for Unopened {
    async fn append(&self, _entries: &[Entry]) -> Result<()> {
        Err(Error::audit(self.0.clone()))
    }

    fn describe(&self) -> String {
        "an audit sink that could not be opened".to_owned()
    }
}

#[cfg(feature = "nats")]
async fn open_stream(stream: &str, nats: Option<&SharedNats>) -> Result<Arc<dyn AuditSink>> {
    let Some(nats) = nats else {
        return Err(Error::nats("the audit stream needs a NATS connection and there is none"));
    };
    Ok(Arc::new(crate::audit::StreamSink::bind(&nats.get().await?, stream).await?))
}

#[cfg(not(feature = "nats"))]
async fn open_stream(_stream: &str, _nats: Option<&SharedNats>) -> Result<Arc<dyn AuditSink>> {
    Err(Error::config_key("harness.audit.stream", "this build has no `nats` feature"))
}
