//! Confirmation over MCP (MCP-8..13): who is asked, the elicitation form, how an answer is judged, and the
//! server-side record that binds a 2026-07-28 approval round to the exact call it approves.
//!
//! Fail closed everywhere: only an `accept` whose content has `approve` equal to `true` runs the command. The
//! `requestState` a 2026-07-28 client echoes is never trusted to mean anything: it is an unguessable, single-use,
//! expiring key to a pending call kept here, and the approval must come back for that same tool with the same
//! arguments.

use super::auth::Principal;
use super::events::{Denial, GatedBehavior};
use crate::config::{ConfirmOverMcp, format_duration};
use rmcp::model::{ClientCapabilities, ElicitResult, ElicitationAction, ElicitationSchema, JsonObject};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a client's user has to answer an approval request (MCP-10).
pub const DEFAULT_CONFIRM_TIMEOUT: Duration = Duration::from_secs(120);
/// The single required boolean of the approval form (MCP-10).
pub(crate) const APPROVE: &str = "approve";
/// The key of the approval request inside a 2026-07-28 `InputRequiredResult`.
pub(crate) const INPUT_KEY: &str = "approval";
/// Approvals awaited at once on the 2026-07-28 path; more are refused rather than kept (memory stays bounded).
const MAX_PENDING: usize = 1024;

/// Whether a client declared form elicitation (MCP-9). No capabilities (a call before initialization) means no.
pub(crate) fn can_elicit(caps: Option<&ClientCapabilities>) -> bool {
    // A capability with neither `form` nor `url` is form-only (the 2025-06-18 shape).
    caps.and_then(|c| c.elicitation.as_ref()).is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// What happens to a gated call of a client (MCP-8).
pub(crate) fn behavior(mode: ConfirmOverMcp, capable: bool) -> GatedBehavior {
    match (mode, capable) {
        (ConfirmOverMcp::Never, _) => GatedBehavior::RunUngated,
        (_, true) => GatedBehavior::Asked,
        (ConfirmOverMcp::Auto, false) => GatedBehavior::RunUngated,
        (_, false) => GatedBehavior::Refused,
    }
}

/// The approval form: one required boolean `approve`, defaulting to false.
pub(crate) fn form_schema() -> Result<ElicitationSchema, &'static str> {
    ElicitationSchema::builder()
        .required_bool_property(APPROVE, |b| {
            b.title("Approve").description("Run this command now? Only an explicit yes runs it.").with_default(false)
        })
        .build()
}

/// The approval message (MCP-10): the server, the resolved command line and the triggering tag. `display` is
/// already quoted and sanitized; the tag comes from the application, and is sanitized here as the terminal gate
/// does (GATE-8).
pub(crate) fn message(identity: &str, display: &str, trigger: &str) -> String {
    let trigger = crate::gate::sanitize(trigger, crate::gate::PROMPT_LIMIT);
    format!("{identity} asks for approval to run (gated by tag {trigger}):\n\n{display}\n\nApprove running it?")
}

/// MCP-11: only `accept` with `approve: true` approves; everything else is a denial of the right kind.
pub(crate) fn judge(result: &ElicitResult) -> Result<(), Denial> {
    match result.action {
        ElicitationAction::Accept => match result.content.as_ref().and_then(|c| c.get(APPROVE)) {
            Some(Value::Bool(true)) => Ok(()),
            _ => Err(Denial::Refused),
        },
        ElicitationAction::Decline => Err(Denial::Refused),
        ElicitationAction::Cancel => Err(Denial::Dismissed),
        #[allow(unreachable_patterns)]
        _ => Err(Denial::Failed),
    }
}

/// The error result text of a denial (MCP-11, MCP-12): it says the command did not run and why, and tells the
/// model not to retry.
pub(crate) fn denial_text(
    why: Denial,
    name: &str,
    display: &str,
    trigger: &str,
    timeout: Duration,
    detail: Option<&str>,
) -> String {
    let head = format!("The command `{display}` did not run");
    match why {
        Denial::Refused => {
            format!("{head}: the user refused to approve it. This was the user's decision; do not retry this call.")
        }
        Denial::Dismissed => format!(
            "{head}: the approval prompt was closed without a decision. Do not retry it unless the user asks you to."
        ),
        Denial::TimedOut => format!(
            "{head}: nobody answered the approval request within {}. Do not retry it unless the user asks you to.",
            format_duration(timeout)
        ),
        Denial::Failed => format!(
            "{head}: the approval request failed{}. Do not retry it unless the user asks you to.",
            detail.map(|d| format!(" ({d})")).unwrap_or_default()
        ),
        Denial::CannotAsk => format!(
            "{head}: tool \"{name}\" needs approval (tag {trigger}) and this client cannot be asked (it did not \
             declare elicitation support). Do not retry; use a client that supports elicitation."
        ),
    }
}

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

/// The server-side half of 2026-07-28 approvals: unguessable, single-use, expiring keys, each bound to the exact
/// tool and arguments it was issued for.
#[derive(Debug)]
pub(crate) struct PendingApprovals {
    ttl: Duration,
    map: Mutex<HashMap<String, Pending>>,
}

impl PendingApprovals {
    pub(crate) fn new(ttl: Duration) -> Self {
        PendingApprovals { ttl, map: Mutex::new(HashMap::new()) }
    }

    /// Record a call by `caller` that is being put to the user; the key goes to the client as `requestState`.
    /// `None` when too many approvals are already awaited, or (for a known caller) a quarter of them are that
    /// caller's.
    pub(crate) fn open(&self, tool: &str, args: Option<&JsonObject>, caller: Option<&Principal>) -> Option<String> {
        let now = Instant::now();
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, p| p.expires > now);
        let quota = caller.map(|c| c.quota.as_str());
        let theirs = || map.values().filter(|p| p.caller.as_ref().map(|c| c.quota.as_str()) == quota).count();
        if map.len() >= MAX_PENDING || (caller.is_some() && theirs() >= MAX_PENDING / 4) {
            return None;
        }
        let key = nonce();
        let expires = now.checked_add(self.ttl).unwrap_or(now);
        let caller = caller.cloned();
        map.insert(key.clone(), Pending { tool: tool.to_owned(), args: digest(args), caller, expires });
        Some(key)
    }

    /// Consume the record `key` for this call by `caller`. Unknown, used, expired, issued for another call or to
    /// another caller: a denial.
    pub(crate) fn close(
        &self,
        key: &str,
        tool: &str,
        args: Option<&JsonObject>,
        caller: Option<&Principal>,
    ) -> Result<(), Denial> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        // Another caller's answer leaves the record to the caller it was issued to.
        if map.get(key).is_some_and(|p| p.caller.as_ref().map(|c| &c.key) != caller.map(|c| &c.key)) {
            return Err(Denial::Failed);
        }
        let Some(pending) = map.remove(key) else {
            return Err(Denial::Failed);
        };
        drop(map);
        if pending.expires <= Instant::now() {
            return Err(Denial::TimedOut);
        }
        let same_args = pending.args == digest(args);
        if pending.tool != tool || !same_args {
            return Err(Denial::Failed);
        }
        Ok(())
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
    use rmcp::model::ElicitationAction;
    use serde_json::json;

    fn args(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn mcp_11_only_accept_with_approve_true_approves() {
        let accept = |c: Value| ElicitResult::new(ElicitationAction::Accept).with_content(c);
        assert_eq!(judge(&accept(json!({"approve": true}))), Ok(()));
        assert_eq!(judge(&accept(json!({"approve": false}))), Err(Denial::Refused));
        assert_eq!(judge(&accept(json!({"approve": "true"}))), Err(Denial::Refused));
        assert_eq!(judge(&accept(json!({}))), Err(Denial::Refused));
        assert_eq!(judge(&ElicitResult::new(ElicitationAction::Accept)), Err(Denial::Refused));
        assert_eq!(judge(&ElicitResult::new(ElicitationAction::Decline)), Err(Denial::Refused));
        assert_eq!(judge(&ElicitResult::new(ElicitationAction::Cancel)), Err(Denial::Dismissed));
    }

    #[test]
    fn mcp_8_behavior_per_mode_and_capability() {
        use ConfirmOverMcp::*;
        assert_eq!(behavior(Always, true), GatedBehavior::Asked);
        assert_eq!(behavior(Always, false), GatedBehavior::Refused);
        assert_eq!(behavior(Auto, true), GatedBehavior::Asked);
        assert_eq!(behavior(Auto, false), GatedBehavior::RunUngated);
        assert_eq!(behavior(Never, true), GatedBehavior::RunUngated);
        assert_eq!(behavior(Never, false), GatedBehavior::RunUngated);
    }

    #[test]
    fn pending_approvals_are_single_use_and_bound_to_the_call() {
        let p = PendingApprovals::new(Duration::from_secs(60));
        let a = args(json!({"target": "x"}));
        let key = p.open("purge", Some(&a), None).unwrap();
        assert_eq!(key.len(), 64);
        assert_eq!(p.close(&key, "purge", Some(&args(json!({"target": "y"}))), None), Err(Denial::Failed));
        // The mismatch consumed it.
        assert_eq!(p.close(&key, "purge", Some(&a), None), Err(Denial::Failed));
        let key = p.open("purge", Some(&a), None).unwrap();
        assert_eq!(p.close(&key, "other", Some(&a), None), Err(Denial::Failed));
        let key = p.open("purge", Some(&a), None).unwrap();
        assert_eq!(p.close(&key, "purge", Some(&a), None), Ok(()));
        assert_eq!(p.close(&key, "purge", Some(&a), None), Err(Denial::Failed), "single use");
        assert_eq!(p.close("made-up", "purge", Some(&a), None), Err(Denial::Failed));
        let key = p.open("noargs", None, None).unwrap();
        assert_eq!(p.close(&key, "noargs", Some(&JsonObject::new()), None), Ok(()));
    }

    #[test]
    fn invariant_10_mcp_11_opening_an_approval_keeps_the_others_pending() {
        // Pruning on open drops only expired records: two calls awaiting their users at once both stay answerable.
        let p = PendingApprovals::new(Duration::from_secs(60));
        let a = args(json!({"target": "a"}));
        let b = args(json!({"target": "b"}));
        let first = p.open("purge", Some(&a), None).unwrap();
        let second = p.open("purge", Some(&b), None).unwrap();
        assert_ne!(first, second);
        assert_eq!(p.close(&first, "purge", Some(&a), None), Ok(()));
        assert_eq!(p.close(&second, "purge", Some(&b), None), Ok(()));
    }

    fn who(sub: &str, client: &str) -> Principal {
        Principal::of(&crate::serve::mcp::Caller::new(Some(sub), Some(client), Vec::<String>::new()))
    }

    #[test]
    fn auth_8_a_pending_approval_is_answered_only_by_the_caller_it_was_issued_to() {
        let p = PendingApprovals::new(Duration::from_secs(60));
        let (alice, mallory, bob) = (who("alice", "app"), who("mallory", "app"), who("bob", "app"));
        let key = p.open("purge", None, Some(&alice)).unwrap();
        assert_eq!(p.close(&key, "purge", None, Some(&mallory)), Err(Denial::Failed));
        assert_eq!(p.close(&key, "purge", None, None), Err(Denial::Failed));
        // Neither burned it: Alice still answers it.
        assert_eq!(p.close(&key, "purge", None, Some(&alice)), Ok(()));
        let key = p.open("purge", None, Some(&alice)).unwrap();
        assert_eq!(p.close(&key, "purge", None, Some(&alice)), Ok(()));
        // One caller holds at most a quarter of the pending records.
        let held: Vec<_> = std::iter::from_fn(|| p.open("purge", None, Some(&alice))).take(MAX_PENDING).collect();
        assert_eq!(held.len(), MAX_PENDING / 4);
        assert!(p.open("purge", None, Some(&bob)).is_some(), "another caller still gets one");
        // The share is the subject's: more client ids do not multiply it.
        assert!(p.open("purge", None, Some(&who("alice", "another-app"))).is_none());
    }

    #[test]
    fn pending_approvals_expire() {
        let p = PendingApprovals::new(Duration::ZERO);
        let key = p.open("purge", None, None).unwrap();
        assert_eq!(p.close(&key, "purge", None, None), Err(Denial::TimedOut));
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce(), nonce());
    }
}
