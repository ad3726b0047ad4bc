//! The server-side half of 2026-07-28 approvals (MCP-11, REPL-1..4): unguessable, single-use, expiring keys, each
//! bound to the exact tool, arguments and caller it was issued for.
//!
//! Under 2026-07-28 the server keeps no sessions, so the round that answers an approval may reach another replica
//! than the one that asked. With `harness.approvals.backend: nats` the records live in the approvals bucket
//! ([`kv`]), where any replica finds them and exactly one consumes each (compare-and-swap on its revision): an
//! approval started on one replica is accepted on another, and a replay is refused by all of them. Without it they
//! live in this process.
//!
//! Either way this replica bounds what it opens: at most [`MAX_PENDING`] records awaited at once, a quarter of them
//! per caller. A record this replica opened counts until it is answered here or expires.

#[cfg(feature = "nats")]
mod kv;

use super::auth::Principal;
use super::events::Denial;
use rmcp::model::JsonObject;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Approvals awaited at once on the 2026-07-28 path, per replica; more are refused rather than kept (memory stays
/// bounded).
pub(crate) const MAX_PENDING: usize = 1024;

/// Why an answer was refused: the denial, and what to add to its text.
pub(crate) type Refused = (Denial, Option<String>);

/// The detail of every answer that names no usable record.
const NO_MATCH: &str = "the answer does not match a pending approval";

/// A gated call awaiting its 2026-07-28 approval round.
#[derive(Debug)]
struct Pending {
    tool: String,
    /// SHA-256 of the canonical arguments: the binding, without keeping a copy of a possibly large body.
    args: [u8; 32],
    /// The caller it was issued to (AUTH-8), on a server with `auth`: nobody else may answer it.
    caller: Option<Principal>,
    expires: Instant,
}

impl Pending {
    /// MCP-11: an answer for another tool or other arguments is refused.
    fn matches(&self, tool: &str, args: &[u8; 32]) -> Result<(), Refused> {
        if self.tool == tool && &self.args == args { Ok(()) } else { Err(no_match()) }
    }
}

fn no_match() -> Refused {
    (Denial::Failed, Some(NO_MATCH.to_owned()))
}

/// The pending approvals of one server.
#[derive(Debug)]
pub(crate) struct PendingApprovals {
    ttl: Duration,
    /// The records this replica opened: every one without a shared store, else only their bound.
    map: Mutex<HashMap<String, Pending>>,
    /// REPL-1: the fleet's store, when approvals go through NATS.
    #[cfg(feature = "nats")]
    shared: Option<kv::SharedPending>,
}

impl PendingApprovals {
    /// Records kept in this process, each answerable for `ttl`.
    pub(crate) fn new(ttl: Duration) -> Self {
        PendingApprovals {
            ttl,
            map: Mutex::new(HashMap::new()),
            #[cfg(feature = "nats")]
            shared: None,
        }
    }

    /// REPL-1: records kept in the approvals bucket `book`, so any replica answers them.
    #[cfg(feature = "nats")]
    pub(crate) fn shared(ttl: Duration, book: &crate::nats::approvals::ApprovalBook) -> Self {
        PendingApprovals { shared: Some(kv::SharedPending::new(book)), ..Self::new(ttl) }
    }

    /// Record a call by `caller` that is being put to the user; the key goes to the client as `requestState`.
    ///
    /// # Errors
    ///
    /// Why no record was made: too many approvals are already awaited here, or (for a known caller) a quarter of
    /// them are that caller's; the shared store cannot be written.
    pub(crate) async fn open(
        &self,
        tool: &str,
        args: Option<&JsonObject>,
        caller: Option<&Principal>,
    ) -> Result<String, &'static str> {
        let args = digest(args);
        let (key, expired) = self.reserve(tool, args, caller)?;
        #[cfg(feature = "nats")]
        if let Some(shared) = &self.shared {
            shared.forget(expired);
            let record = kv::Record::new(tool, &args, caller, self.ttl);
            return match shared.open(&key, &record).await {
                Ok(()) => Ok(key),
                Err(why) => {
                    self.remove(&key);
                    Err(why)
                }
            };
        }
        drop(expired);
        Ok(key)
    }

    /// Make room and a key: prune what expired, check the bounds, keep the record. Returns the key and the keys
    /// that expired.
    fn reserve(
        &self,
        tool: &str,
        args: [u8; 32],
        caller: Option<&Principal>,
    ) -> Result<(String, Vec<String>), &'static str> {
        let now = Instant::now();
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let expired: Vec<String> = map.iter().filter(|(_, p)| p.expires <= now).map(|(k, _)| k.clone()).collect();
        for key in &expired {
            map.remove(key);
        }
        let quota = caller.map(|c| c.quota.as_str());
        let theirs = || map.values().filter(|p| p.caller.as_ref().map(|c| c.quota.as_str()) == quota).count();
        if map.len() >= MAX_PENDING || (caller.is_some() && theirs() >= MAX_PENDING / 4) {
            return Err("too many approvals are already pending");
        }
        let key = nonce();
        let expires = now.checked_add(self.ttl).unwrap_or(now);
        let caller = caller.cloned();
        map.insert(key.clone(), Pending { tool: tool.to_owned(), args, caller, expires });
        Ok((key, expired))
    }

    #[cfg(feature = "nats")]
    fn remove(&self, key: &str) -> Option<Pending> {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).remove(key)
    }

    /// Consume the record `key` for this call by `caller`.
    ///
    /// # Errors
    ///
    /// Unknown, used, expired, issued for another call or to another caller: a denial, with its detail.
    pub(crate) async fn close(
        &self,
        key: &str,
        tool: &str,
        args: Option<&JsonObject>,
        caller: Option<&Principal>,
    ) -> Result<(), Refused> {
        #[cfg(feature = "nats")]
        if let Some(shared) = &self.shared {
            let found = shared.close(key, caller).await;
            // Answered (or burned) here: this replica's bound is released.
            if found.is_ok() {
                self.remove(key);
            }
            return found?.check(tool, &digest(args));
        }
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        // Another caller's answer leaves the record to the caller it was issued to.
        if map.get(key).is_some_and(|p| p.caller.as_ref().map(|c| &c.key) != caller.map(|c| &c.key)) {
            return Err(no_match());
        }
        let pending = map.remove(key).ok_or_else(no_match)?;
        drop(map);
        if pending.expires <= Instant::now() {
            return Err((Denial::TimedOut, None));
        }
        pending.matches(tool, &digest(args))
    }
}

/// The digest of a call's arguments in canonical form (sorted keys, no whitespace); absent arguments and `{}` are
/// the same call.
fn digest(args: Option<&JsonObject>) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut out = Vec::new();
    out.push(b'{');
    if let Some(map) = args {
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_unstable();
        for (i, k) in keys.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            crate::canonical::write_canonical(&mut out, &serde_json::Value::String(k.clone()));
            out.push(b':');
            crate::canonical::write_canonical(&mut out, &map[k.as_str()]);
        }
    }
    out.push(b'}');
    Sha256::digest(&out).into()
}

/// 256 bits from the operating system's random source, as hex.
fn nonce() -> String {
    use svix_ksuid::{Ksuid, KsuidLike};
    let mut out = String::with_capacity(64);
    for _ in 0..2 {
        // Each KSUID payload is 128 bits from getrandom.
        for b in Ksuid::new(None::<std::time::SystemTime>, None).payload() {
            out.push_str(&format!("{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn args(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[tokio::test]
    async fn pending_approvals_are_single_use_and_bound_to_the_call() {
        let p = PendingApprovals::new(Duration::from_secs(60));
        let a = args(json!({"target": "x"}));
        let key = p.open("purge", Some(&a), None).await.unwrap();
        assert_eq!(key.len(), 64);
        assert_eq!(
            p.close(&key, "purge", Some(&args(json!({"target": "y"}))), None).await.map_err(|e| e.0),
            Err(Denial::Failed)
        );
        // The mismatch consumed it.
        assert_eq!(p.close(&key, "purge", Some(&a), None).await.map_err(|e| e.0), Err(Denial::Failed));
        let key = p.open("purge", Some(&a), None).await.unwrap();
        assert_eq!(p.close(&key, "other", Some(&a), None).await.map_err(|e| e.0), Err(Denial::Failed));
        let key = p.open("purge", Some(&a), None).await.unwrap();
        assert_eq!(p.close(&key, "purge", Some(&a), None).await.map_err(|e| e.0), Ok(()));
        assert_eq!(p.close(&key, "purge", Some(&a), None).await.map_err(|e| e.0), Err(Denial::Failed), "single use");
        assert_eq!(p.close("made-up", "purge", Some(&a), None).await.map_err(|e| e.0), Err(Denial::Failed));
        let key = p.open("noargs", None, None).await.unwrap();
        assert_eq!(p.close(&key, "noargs", Some(&JsonObject::new()), None).await.map_err(|e| e.0), Ok(()));
    }

    #[tokio::test]
    async fn invariant_10_mcp_11_opening_an_approval_keeps_the_others_pending() {
        // Pruning on open drops only expired records: two calls awaiting their users at once both stay answerable.
        let p = PendingApprovals::new(Duration::from_secs(60));
        let a = args(json!({"target": "a"}));
        let b = args(json!({"target": "b"}));
        let first = p.open("purge", Some(&a), None).await.unwrap();
        let second = p.open("purge", Some(&b), None).await.unwrap();
        assert_ne!(first, second);
        assert_eq!(p.close(&first, "purge", Some(&a), None).await.map_err(|e| e.0), Ok(()));
        assert_eq!(p.close(&second, "purge", Some(&b), None).await.map_err(|e| e.0), Ok(()));
    }

    fn who(sub: &str, client: &str) -> Principal {
        Principal::of(&crate::serve::mcp::Caller::new(Some(sub), Some(client), Vec::<String>::new()))
    }

    #[tokio::test]
    async fn auth_8_a_pending_approval_is_answered_only_by_the_caller_it_was_issued_to() {
        let p = PendingApprovals::new(Duration::from_secs(60));
        let (alice, mallory, bob) = (who("alice", "app"), who("mallory", "app"), who("bob", "app"));
        let key = p.open("purge", None, Some(&alice)).await.unwrap();
        assert_eq!(p.close(&key, "purge", None, Some(&mallory)).await.map_err(|e| e.0), Err(Denial::Failed));
        assert_eq!(p.close(&key, "purge", None, None).await.map_err(|e| e.0), Err(Denial::Failed));
        // Neither burned it: Alice still answers it.
        assert_eq!(p.close(&key, "purge", None, Some(&alice)).await.map_err(|e| e.0), Ok(()));
        let key = p.open("purge", None, Some(&alice)).await.unwrap();
        assert_eq!(p.close(&key, "purge", None, Some(&alice)).await.map_err(|e| e.0), Ok(()));
        // One caller holds at most a quarter of the pending records.
        let mut held = Vec::new();
        while let Ok(key) = p.open("purge", None, Some(&alice)).await {
            held.push(key);
        }
        assert_eq!(held.len(), MAX_PENDING / 4);
        assert!(p.open("purge", None, Some(&bob)).await.is_ok(), "another caller still gets one");
        // The share is the subject's: more client ids do not multiply it.
        assert!(p.open("purge", None, Some(&who("alice", "another-app"))).await.is_err());
    }

    /// REPL-5: 1,024 rounds awaited at once, whoever asks; an answered or expired one makes room again.
    #[tokio::test]
    async fn repl_5_a_replica_awaits_at_most_1024_rounds_and_room_returns_when_one_ends() {
        let p = PendingApprovals::new(Duration::from_secs(60));
        let mut held = Vec::new();
        for _ in 0..MAX_PENDING {
            held.push(p.open("purge", None, None).await.unwrap());
        }
        assert_eq!(p.open("purge", None, None).await, Err("too many approvals are already pending"));
        assert!(p.open("purge", None, Some(&who("carol", "app"))).await.is_err(), "a caller's quarter is no way past");
        assert_eq!(p.close(&held[7], "purge", None, None).await.map_err(|e| e.0), Ok(()));
        assert!(p.open("purge", None, None).await.is_ok(), "an answered round makes room");
        assert!(p.open("purge", None, None).await.is_err());

        let p = PendingApprovals::new(Duration::from_millis(200));
        for _ in 0..MAX_PENDING {
            p.open("purge", None, None).await.unwrap();
        }
        assert!(p.open("purge", None, None).await.is_err());
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(p.open("purge", None, None).await.is_ok(), "expired rounds make room");
        assert_eq!(p.map.lock().unwrap().len(), 1, "and are pruned, not kept");
    }

    #[tokio::test]
    async fn pending_approvals_expire() {
        let p = PendingApprovals::new(Duration::ZERO);
        let key = p.open("purge", None, None).await.unwrap();
        assert_eq!(p.close(&key, "purge", None, None).await.map_err(|e| e.0), Err(Denial::TimedOut));
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce(), nonce());
    }
}
