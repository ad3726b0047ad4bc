//! Listing a prefix by watching its latest values (MEM-27): de-duplicated, without delete markers, and never
//! partial.

use super::JetStreamMemory;
use crate::memory::{Entry, MAX_DESCRIPTION_CHARS, MAX_ENTRIES, MemoryError, decode};
use async_nats::jetstream::consumer::push::OrderedConfig;
use async_nats::jetstream::consumer::{DeliverPolicy, ReplayPolicy};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::time::Duration;

/// A listing holding more than this many keys fails (other writers can exceed the per-run cap; not this far).
const MAX_LISTED: usize = 4 * MAX_ENTRIES;

/// A description within [`MAX_DESCRIPTION_CHARS`].
fn cut(mut description: String) -> String {
    if let Some((at, _)) = description.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        description.truncate(at);
    }
    description
}

/// The whole listing, however many entries, must finish within this; past it the list fails rather than being
/// returned short.
const LIST_TIMEOUT: Duration = Duration::from_secs(15);

impl JetStreamMemory {
    /// Every live entry under the prefix, sorted by key.
    pub(super) async fn watch_list(&self) -> Result<Vec<Entry>, MemoryError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            MemoryError::backend(format!("cannot list memory bucket {:?}: {what}: {e}", self.bucket))
        };
        let work = async {
            let filter = format!("{}{}", self.kv.prefix, self.key_filter());
            let config = OrderedConfig {
                deliver_subject: self.client.new_inbox(),
                description: Some("fisk-ai memory listing".into()),
                filter_subject: filter,
                deliver_policy: DeliverPolicy::LastPerSubject,
                replay_policy: ReplayPolicy::Instant,
                ..Default::default()
            };
            let consumer = self.kv.stream.create_consumer(config).await.map_err(|e| fail("watch", &e))?;
            let mut pending = consumer.cached_info().num_pending;
            let mut messages = consumer.messages().await.map_err(|e| fail("watch", &e))?;
            let mut entries = BTreeMap::new();
            while pending > 0 {
                let message = match messages.next().await {
                    Some(Ok(message)) => message,
                    Some(Err(e)) => return Err(fail("the watch failed", &e)),
                    None => return Err(fail("the watch ended early", &"before every value arrived")),
                };
                let info = message.info().map_err(|e| fail("unreadable message metadata", &e))?;
                pending = info.pending;
                let Some(key) = self.key_of(&message.subject) else { continue };
                if is_marker(message.headers.as_ref()) {
                    entries.remove(key);
                    continue;
                }
                let description = std::str::from_utf8(&message.payload).map(|v| decode(v).0).unwrap_or_default();
                // A peer sharing the bucket is not trusted to keep to the limits: descriptions are cut to the
                // stored maximum, and a listing far over the entry cap fails instead of growing without end.
                entries.insert(key.to_owned(), cut(description));
                if entries.len() > MAX_LISTED {
                    return Err(fail(
                        "too many entries",
                        &format_args!(
                            "over {MAX_LISTED} keys under this prefix, {} times the entry cap",
                            MAX_LISTED / MAX_ENTRIES
                        ),
                    ));
                }
            }
            Ok(entries.into_iter().map(|(key, description)| Entry::new(key, description)).collect())
        };
        tokio::time::timeout(LIST_TIMEOUT, work)
            .await
            .map_err(|_| fail("timed out", &format_args!("no complete listing within {}s", LIST_TIMEOUT.as_secs())))?
    }

    /// The subject filter below the bucket's prefix: `<prefix>.>`, or `>` for a flat keyspace.
    fn key_filter(&self) -> String {
        if self.prefix.is_empty() { ">".to_owned() } else { format!("{}.>", self.prefix) }
    }

    /// The memory key of a bucket subject, when it is one of ours and a valid key (others are skipped).
    fn key_of<'a>(&self, subject: &'a str) -> Option<&'a str> {
        let key = subject.strip_prefix(self.kv.prefix.as_str())?;
        let key =
            if self.prefix.is_empty() { key } else { key.strip_prefix(self.prefix.as_str())?.strip_prefix('.')? };
        crate::memory::rules::is_valid_key(key).then_some(key)
    }
}

/// A `KV-Operation: DEL` or `PURGE` marker: the key is gone.
pub(super) fn is_marker(headers: Option<&async_nats::HeaderMap>) -> bool {
    headers.and_then(|h| h.get("KV-Operation")).is_some_and(|op| matches!(op.as_str(), "DEL" | "PURGE"))
}
