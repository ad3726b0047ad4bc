//! REPL-1..4: pending 2026-07-28 approvals kept in the approvals bucket, under
//! [`MCP_KEY_PREFIX`]`<key>`, so that any replica behind a load balancer answers them and exactly one consumes each.
//!
//! The record binds what the in-process one does, without anything a reader of the bucket could use to answer for
//! someone else: the tool, a digest of the arguments, a digest of the caller's key, and the expiry in Unix
//! milliseconds (replicas share a clock only that far).
//!
//! ```json
//! {"version": 1, "tool": "purge", "args": "<sha-256 hex>", "owner": "<sha-256 hex>|null", "expires_ms": 1764900120000}
//! ```

use super::{Refused, no_match};
use crate::nats::approvals::{ApprovalBook, MCP_KEY_PREFIX};
use crate::serve::mcp::auth::Principal;
use crate::serve::mcp::events::Denial;
use async_nats::jetstream::kv;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The largest record read; anything longer is not ours.
const MAX_RECORD: usize = 4 * 1024;

/// One pending approval, as kept in the bucket.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Record {
    version: u32,
    tool: String,
    /// SHA-256 of the canonical arguments, hex.
    args: String,
    /// SHA-256 of the caller's owner key, hex; `null` on a server without `auth`.
    owner: Option<String>,
    expires_ms: u64,
}

impl Record {
    /// The record of a call of `tool` with arguments `args` by `caller`, answerable for `ttl`.
    pub(super) fn new(tool: &str, args: &[u8; 32], caller: Option<&Principal>, ttl: Duration) -> Record {
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        Record {
            version: 1,
            tool: tool.to_owned(),
            args: hex(args),
            owner: caller.map(owner),
            expires_ms: now_ms().saturating_add(ttl),
        }
    }

    /// MCP-11 on a consumed record: expired, or issued for another tool or other arguments, is refused.
    pub(super) fn check(&self, tool: &str, args: &[u8; 32]) -> Result<(), Refused> {
        if now_ms() >= self.expires_ms {
            return Err((Denial::TimedOut, None));
        }
        if self.tool == tool && self.args == hex(args) { Ok(()) } else { Err(no_match()) }
    }
}

/// The bucket, as this server's pending approvals.
#[derive(Debug)]
pub(super) struct SharedPending {
    kv: kv::Store,
    bucket: String,
}

impl SharedPending {
    pub(super) fn new(book: &ApprovalBook) -> Self {
        SharedPending { kv: book.store().clone(), bucket: book.bucket().to_owned() }
    }

    /// Write a new record under `key` (created, never overwritten).
    pub(super) async fn open(&self, key: &str, record: &Record) -> Result<(), &'static str> {
        let body = serde_json::to_vec(record).unwrap_or_default();
        match self.kv.create(format!("{MCP_KEY_PREFIX}{key}"), body.into()).await {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(bucket = %self.bucket, error = %e, "cannot record a pending approval");
                Err("the approvals bucket cannot be written")
            }
        }
    }

    /// REPL-2: consume the record `key` for `caller`: found, theirs, and purged on the revision read, so of two
    /// replicas given the same answer exactly one gets it. Another caller's answer leaves it in place.
    pub(super) async fn close(&self, key: &str, caller: Option<&Principal>) -> Result<Record, Refused> {
        // The key is the client's to choose: only one of ours is ever looked up.
        if key.len() != 64 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(no_match());
        }
        let name = format!("{MCP_KEY_PREFIX}{key}");
        let entry = match self.kv.entry(name.as_str()).await {
            Ok(Some(entry)) if entry.operation == kv::Operation::Put => entry,
            Ok(_) => return Err(no_match()),
            Err(e) => {
                tracing::warn!(bucket = %self.bucket, error = %e, "cannot read a pending approval");
                return Err((Denial::Failed, Some("the approvals bucket cannot be read".to_owned())));
            }
        };
        let record = (entry.value.len() <= MAX_RECORD)
            .then(|| serde_json::from_slice::<Record>(&entry.value).ok())
            .flatten()
            .filter(|r| r.version == 1)
            .ok_or_else(no_match)?;
        if record.owner != caller.map(owner) {
            return Err(no_match());
        }
        if let Err(e) = self.kv.purge_expect_revision(name.as_str(), Some(entry.revision)).await {
            // Another replica consumed it first (a replay), or the bucket refused the write: never approval.
            tracing::debug!(bucket = %self.bucket, error = %e, "a pending approval was not consumed");
            return Err(no_match());
        }
        Ok(record)
    }

    /// Remove records this replica opened that expired unanswered, in the background (best effort: a bucket
    /// `--ttl` bounds what a replica that died leaves behind).
    pub(super) fn forget(&self, expired: Vec<String>) {
        if expired.is_empty() {
            return;
        }
        let kv = self.kv.clone();
        tokio::spawn(async move {
            for key in expired {
                let _ = kv.purge(format!("{MCP_KEY_PREFIX}{key}")).await;
            }
        });
    }
}

/// The caller's owner key as the record keeps it: a digest, so the bucket holds no subject or client id.
fn owner(caller: &Principal) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(caller.key.as_bytes()).into())
}

fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Now, in Unix milliseconds.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
