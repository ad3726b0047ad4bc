//! A fleet's settings: `expose.agent.worker` (WORK-1..) and the approvals backend of `harness.approvals`
//! (APPR-1..).

use std::time::Duration;

use serde::Deserialize;

use super::{GoDuration, de};
use crate::error::{Error, Result};

/// Default `expose.agent.worker.max_concurrent_runs`.
pub const DEFAULT_MAX_CONCURRENT_RUNS: usize = 4;
/// Largest `expose.agent.worker.max_concurrent_runs`.
pub const MAX_CONCURRENT_RUNS: usize = 1024;
/// Default `expose.agent.worker.ack_wait`: the consumer's ack wait must equal it.
pub const DEFAULT_ACK_WAIT: Duration = Duration::from_secs(30);
/// Default `expose.agent.worker.max_deliver`: the consumer's max deliver must equal it.
pub const DEFAULT_MAX_DELIVER: u32 = 5;
/// Default `harness.approvals.timeout` under the `nats` backend: how long a gated call waits for a decision.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

/// `expose.agent.worker` (WORK-1): runs taken from a JetStream work queue. Present (even as `{}`) means `cli worker`
/// may run; the three names are then required.
///
/// Zero values mean "unset"; the accessors apply the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct WorkerExpose {
    /// `stream`: the existing work-queue stream the requests are published to (required).
    #[serde(deserialize_with = "de::opt_string")]
    pub stream: Option<String>,
    /// `consumer`: the existing durable pull consumer on it (required).
    #[serde(deserialize_with = "de::opt_string")]
    pub consumer: Option<String>,
    /// `results_prefix`: results go to `<results_prefix>.<id>`, stored by a stream over `<results_prefix>.>`
    /// (required).
    #[serde(deserialize_with = "de::opt_string")]
    pub results_prefix: Option<String>,
    /// `max_concurrent_runs` as written (0..=1024); 0 means unset. Use
    /// [`WorkerExpose::max_concurrent_runs()`].
    #[serde(deserialize_with = "de::concurrency")]
    pub max_concurrent_runs: u32,
    /// `ack_wait` as written. Use [`WorkerExpose::ack_wait()`].
    #[serde(deserialize_with = "de::positive_duration")]
    pub ack_wait: Option<GoDuration>,
    /// `max_deliver` as written; 0 means unset. Use [`WorkerExpose::max_deliver()`].
    #[serde(deserialize_with = "de::non_negative")]
    pub max_deliver: u64,
}

impl WorkerExpose {
    /// Runs at once, [`DEFAULT_MAX_CONCURRENT_RUNS`] when unset.
    pub fn max_concurrent_runs(&self) -> usize {
        if self.max_concurrent_runs == 0 { DEFAULT_MAX_CONCURRENT_RUNS } else { self.max_concurrent_runs as usize }
    }

    /// The ack wait the consumer must have, [`DEFAULT_ACK_WAIT`] when unset.
    pub fn ack_wait(&self) -> Duration {
        self.ack_wait.and_then(GoDuration::to_std).filter(|d| !d.is_zero()).unwrap_or(DEFAULT_ACK_WAIT)
    }

    /// The max deliver the consumer must have, [`DEFAULT_MAX_DELIVER`] when unset.
    pub fn max_deliver(&self) -> u32 {
        match self.max_deliver {
            0 => DEFAULT_MAX_DELIVER,
            n => u32::try_from(n).unwrap_or(u32::MAX),
        }
    }

    /// WORK-1: the three names are set and are NATS names (no spaces, wildcards or dots in the stream and
    /// consumer; a subject prefix without wildcards or empty tokens), and `max_deliver` is at least 1.
    pub(crate) fn validate(&self) -> Result<()> {
        const KEY: &str = "expose.agent.worker";
        if cfg!(not(feature = "nats")) {
            return Err(Error::config_key(KEY, format!("{KEY}: this build has no `nats` feature, which runs workers")));
        }
        let name = |key: &str, v: &Option<String>| -> Result<()> {
            let full = format!("{KEY}.{key}");
            match v.as_deref() {
                None | Some("") => Err(Error::config_key(&full, format!("{full} is required to run a worker"))),
                Some(s) if !super::validate::is_name(s) => Err(Error::config_key(
                    &full,
                    format!("{full}: invalid name {s:?}: use only ASCII letters, digits, '_' and '-'"),
                )),
                Some(_) => Ok(()),
            }
        };
        name("stream", &self.stream)?;
        name("consumer", &self.consumer)?;
        let key = format!("{KEY}.results_prefix");
        match self.results_prefix.as_deref() {
            None | Some("") => Err(Error::config_key(&key, format!("{key} is required to run a worker"))),
            Some(p) if !is_subject_prefix(p) => Err(Error::config_key(
                &key,
                format!("{key}: {p:?} is not a subject prefix (dot-separated tokens, no wildcards or spaces)"),
            )),
            Some(_) => Ok(()),
        }?;
        // In-progress acks go out every third of it: much less, and a live worker's request would lapse.
        if self.ack_wait() < Duration::from_secs(1) {
            let key = format!("{KEY}.ack_wait");
            return Err(Error::config_key(&key, format!("{key}: must be at least 1s")));
        }
        if self.max_deliver > u64::from(u32::MAX) {
            let key = format!("{KEY}.max_deliver");
            return Err(Error::config_key(&key, format!("{key}: must be at most {}", u32::MAX)));
        }
        Ok(())
    }
}

/// A subject prefix: non-empty dot-separated tokens of printable ASCII without wildcards.
pub(crate) fn is_subject_prefix(p: &str) -> bool {
    !p.is_empty()
        && p.split('.').all(|t| {
            !t.is_empty() && t != "*" && t != ">" && t.bytes().all(|b| b.is_ascii_graphic() && b != b'*' && b != b'>')
        })
}

/// `harness.approvals.backend`: who decides gated calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase", expecting = "`terminal` or `nats`")]
#[non_exhaustive]
pub enum ApprovalBackend {
    /// `terminal` (the default): the operator at the terminal of `cli run` and `cli chat`; MCP clients by
    /// elicitation.
    #[default]
    Terminal,
    /// `nats`: pending approvals in a JetStream KV bucket, decided by `cli approvals` or any NATS client (APPR-1).
    Nats,
}

/// APPR-1: `backend: nats` needs `bucket` and the `nats` feature; `bucket` and `timeout` mean nothing to the
/// terminal.
pub(crate) fn validate_approvals(a: &super::Approvals, nats_context: Option<&str>) -> Result<()> {
    const KEY: &str = "harness.approvals";
    match a.backend {
        ApprovalBackend::Nats => {
            if cfg!(not(feature = "nats")) {
                let key = format!("{KEY}.backend");
                return Err(Error::config_key(
                    &key,
                    format!("{key}: this build has no `nats` feature, which keeps approvals in JetStream"),
                ));
            }
            let key = format!("{KEY}.bucket");
            match a.bucket.as_deref() {
                None | Some("") => {
                    return Err(Error::config_key(&key, format!("{key} is required with backend: nats")));
                }
                Some(b) if !super::validate::is_name(b) => {
                    return Err(Error::config_key(
                        &key,
                        format!("{key}: invalid bucket name {b:?}: use only ASCII letters, digits, '_' and '-'"),
                    ));
                }
                Some(_) => {}
            }
            if nats_context.is_none_or(str::is_empty) {
                return Err(Error::config_key(
                    "nats_context",
                    "nats_context is required with harness.approvals.backend: nats",
                ));
            }
        }
        ApprovalBackend::Terminal => {
            for (set, name) in [(a.bucket.is_some(), "bucket"), (a.timeout.is_some(), "timeout")] {
                if set {
                    let key = format!("{KEY}.{name}");
                    return Err(Error::config_key(
                        &key,
                        format!("{key} is only used with backend: nats (the terminal gate waits for its operator)"),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_prefixes() {
        assert!(is_subject_prefix("results"));
        assert!(is_subject_prefix("fleet.results"));
        for bad in ["", ".", "a..b", "a.*", "a.>", "a b", "a.b.", "r*s"] {
            assert!(!is_subject_prefix(bad), "{bad:?}");
        }
    }
}
