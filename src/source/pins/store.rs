//! Where pins are kept (PIN-5, PIN-6).

use super::Pins;
use crate::error::{Error, Result};
use async_trait::async_trait;

/// A store of pins, one record per server key (`mcp_servers.github`, `remote_tools.ops`).
///
/// The crate ships [`FilePinStore`](super::FilePinStore) (a JSON file per server in the state directory) and, with
/// the `nats` feature, [`KvPinStore`](super::KvPinStore) (a JetStream KV bucket shared by a fleet); a host can keep
/// pins anywhere else and hand its store to
/// [`HarnessBuilder::pin_store`](crate::harness::HarnessBuilder::pin_store). Every method fails with an error naming
/// the store and the server rather than guessing: a pin check that cannot read its pins refuses the tools.
///
/// ```
/// use async_trait::async_trait;
/// use fisk_ai::source::pins::{PinStore, Pins};
/// use std::collections::HashMap;
/// use std::sync::Mutex;
///
/// /// Pins in this process only (a test double; real stores persist).
/// #[derive(Default)]
/// struct InProcess(Mutex<HashMap<String, Pins>>);
///
/// #[async_trait]
/// impl PinStore for InProcess {
///     fn describe(&self) -> String {
///         "in-process pins".to_owned()
///     }
///     async fn load(&self, server: &str) -> fisk_ai::Result<Option<Pins>> {
///         Ok(self.0.lock().unwrap().get(server).cloned())
///     }
///     async fn save(&self, server: &str, pins: &Pins) -> fisk_ai::Result<()> {
///         self.0.lock().unwrap().insert(server.to_owned(), pins.clone());
///         Ok(())
///     }
///     async fn forget(&self, server: &str) -> fisk_ai::Result<bool> {
///         Ok(self.0.lock().unwrap().remove(server).is_some())
///     }
///     async fn servers(&self) -> fisk_ai::Result<Vec<String>> {
///         let mut keys: Vec<String> = self.0.lock().unwrap().keys().cloned().collect();
///         keys.sort();
///         Ok(keys)
///     }
/// }
/// ```
#[async_trait]
pub trait PinStore: Send + Sync {
    /// Where the pins are, for messages (`pin directory /home/op/.local/state/fisk-ai/pins/ops`).
    fn describe(&self) -> String;

    /// The pins of `server`; `None` when it was never pinned (or was forgotten).
    async fn load(&self, server: &str) -> Result<Option<Pins>>;

    /// Replace the pins of `server`.
    async fn save(&self, server: &str, pins: &Pins) -> Result<()>;

    /// Pin `server` for the first time: `false`, storing nothing, when it already has pins (another run pinned it
    /// first; the caller compares against those instead).
    ///
    /// The provided method loads then saves; a store shared between processes should make it atomic (a create
    /// that fails when the record exists), as both shipped stores do.
    async fn create(&self, server: &str, pins: &Pins) -> Result<bool> {
        if self.load(server).await?.is_some() {
            return Ok(false);
        }
        self.save(server, pins).await?;
        Ok(true)
    }

    /// Remove every pin of `server`: its next load is a first sight again. `false` when there was none.
    async fn forget(&self, server: &str) -> Result<bool>;

    /// The server keys that have pins, sorted.
    async fn servers(&self) -> Result<Vec<String>>;
}

/// A server key names a file and a KV key: ASCII letters, digits, `_`, `-` and inner `.`, at most 200 bytes.
///
/// # Errors
///
/// A configuration error naming the key.
pub fn validate_server_key(key: &str) -> Result<()> {
    let ok = !key.is_empty()
        && key.len() <= 200
        && !key.starts_with('.')
        && !key.ends_with('.')
        && !key.contains("..")
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Error::config(format!(
            "pin key {:?} is not usable: use ASCII letters, digits, '_', '-' and inner '.', at most 200 bytes",
            crate::gate::sanitize(key, 200)
        )))
    }
}

/// Refuse stored pins that no pin check wrote: a digest that is not SHA-256 hex, or a tool name or time that
/// carries control characters. `place` names the file or bucket.
pub(crate) fn check_stored(pins: &super::Pins, place: &str) -> Result<()> {
    let clean = |s: &str| s.len() <= 4096 && !s.chars().any(char::is_control);
    match pins.iter().find(|(name, pin)| !pin.fingerprint.is_well_formed() || !clean(name) || !clean(&pin.pinned_at)) {
        None => Ok(()),
        Some((name, _)) => Err(Error::source_failed(format!(
            "{place} holds a pin for {:?} that no pin check wrote (its digests or fields are malformed); forget it",
            crate::gate::sanitize(name, 200)
        ))),
    }
}
