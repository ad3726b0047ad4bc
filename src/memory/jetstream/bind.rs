//! Binding an existing KV bucket and checking it can hold memories (MEM-22..24).

use super::JetStreamMemory;
use crate::error::{Error, Result};
use crate::memory::rules::validate_key;
use crate::nats::NatsConnection;
use async_nats::jetstream::stream::Config as StreamConfig;
use std::time::Duration;

/// MEM-23: binding and its status checks together.
pub(super) const BIND_TIMEOUT: Duration = Duration::from_secs(10);
/// MEM-23: the 64 KB body plus the largest header a record can carry.
pub const MIN_MAX_VALUE_SIZE: i32 = 69_600;

/// The key prefix MEM-24 picks: `prefix` unset means the identity, `""` means none (flat), anything else must be
/// a valid key itself.
pub(super) fn resolve_prefix(prefix: Option<&str>, identity: &str, bucket: &str) -> Result<String> {
    match prefix {
        Some("") => Ok(String::new()),
        Some(p) => match validate_key(p) {
            Ok(()) => Ok(p.to_owned()),
            Err(e) => Err(Error::config_key(
                "harness.memory.options.prefix",
                format!("harness.memory.options.prefix: {p:?} cannot prefix keys in bucket {bucket:?}: {e}"),
            )),
        },
        None => match validate_key(identity) {
            Ok(()) => Ok(identity.to_owned()),
            Err(e) => Err(Error::config_key(
                "harness.memory.options.prefix",
                format!(
                    "the identity {identity:?} cannot prefix memory keys in bucket {bucket:?} ({e}); set \
                     harness.memory.options.prefix to a valid key, or to \"\" for a flat keyspace"
                ),
            )),
        },
    }
}

/// Bind `bucket` (never creating it) and check its configuration, all within [`BIND_TIMEOUT`].
pub(super) async fn bind(nats: &NatsConnection, bucket: &str, prefix: String) -> Result<JetStreamMemory> {
    let js = async_nats::jetstream::new(nats.client().clone());
    let context = nats.context().to_owned();
    let work = async {
        let stream = js.get_stream(format!("KV_{bucket}")).await.map_err(|e| {
            let text = e.to_string();
            if text.contains("10059") || text.to_ascii_lowercase().contains("stream not found") {
                Error::nats(format!(
                    "memory bucket {bucket:?} does not exist (NATS context {context}); the agent never creates it: \
                     create it with `nats kv add {bucket} --history=1 --max-value-size={MIN_MAX_VALUE_SIZE}`"
                ))
            } else {
                Error::nats(format!("cannot bind memory bucket {bucket:?} (NATS context {context}): {text}"))
            }
        })?;
        check_config(bucket, &stream.cached_info().config)?;
        js.get_key_value(bucket)
            .await
            .map_err(|e| Error::nats(format!("cannot bind memory bucket {bucket:?} (NATS context {context}): {e}")))
    };
    let kv = tokio::time::timeout(BIND_TIMEOUT, work).await.map_err(|_| {
        Error::nats(format!(
            "binding memory bucket {bucket:?} (NATS context {context}) took over {}s; is JetStream enabled on the \
             server?",
            BIND_TIMEOUT.as_secs()
        ))
    })??;
    Ok(JetStreamMemory::from_parts(kv, nats.client().clone(), bucket.to_owned(), prefix, context))
}

/// MEM-23: no TTL (memories must not expire) and room for the largest record.
pub(super) fn check_config(bucket: &str, config: &StreamConfig) -> Result<()> {
    if !config.max_age.is_zero() {
        return Err(Error::nats(format!(
            "memory bucket {bucket:?} has a TTL of {}s, so memories would expire; use a bucket without a TTL \
             (`nats kv add {bucket} --history=1 --max-value-size={MIN_MAX_VALUE_SIZE}`)",
            config.max_age.as_secs()
        )));
    }
    if config.max_message_size > 0 && config.max_message_size < MIN_MAX_VALUE_SIZE {
        return Err(Error::nats(format!(
            "memory bucket {bucket:?} has a max value size of {} bytes, below the {MIN_MAX_VALUE_SIZE} a 64 KB memory \
             needs with its headers; raise it (`nats kv edit {bucket} --max-value-size={MIN_MAX_VALUE_SIZE}`) or \
             use another bucket",
            config.max_message_size
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_24_prefix_defaults_to_the_identity_empty_is_flat_and_others_must_be_keys() {
        assert_eq!(resolve_prefix(None, "ops", "b").unwrap(), "ops");
        assert_eq!(resolve_prefix(Some(""), "ops", "b").unwrap(), "");
        assert_eq!(resolve_prefix(Some("team.a"), "ops", "b").unwrap(), "team.a");
        let bad = resolve_prefix(Some("a..b"), "ops", "b").unwrap_err();
        assert!(bad.to_string().contains("harness.memory.options.prefix"), "{bad}");
        // An identity is letters, digits, '_' and '-', all valid in keys; a bad one still gets the hint.
        let bad = resolve_prefix(None, "a b", "b").unwrap_err();
        assert!(bad.to_string().contains("set harness.memory.options.prefix"), "{bad}");
    }

    #[test]
    fn mem_23_ttl_and_small_values_are_refused_with_the_fix() {
        let ok = StreamConfig { max_message_size: -1, ..Default::default() };
        check_config("b", &ok).unwrap();
        check_config("b", &StreamConfig { max_message_size: MIN_MAX_VALUE_SIZE, ..Default::default() }).unwrap();
        let ttl = StreamConfig { max_age: Duration::from_secs(60), ..Default::default() };
        let e = check_config("b", &ttl).unwrap_err().to_string();
        assert!(e.contains("TTL of 60s") && e.contains("nats kv add b"), "{e}");
        let small = StreamConfig { max_message_size: 1024, ..Default::default() };
        let e = check_config("b", &small).unwrap_err().to_string();
        assert!(e.contains("1024 bytes") && e.contains("--max-value-size=69600"), "{e}");
    }
}
