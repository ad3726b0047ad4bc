//! Approvals over NATS (APPR-1..8): for a fleet, which has no terminal. A gated call publishes a pending approval to
//! an existing JetStream KV bucket and waits for a decision that `cli approvals`, or any NATS client writing the
//! documented record, makes with compare-and-swap.
//!
//! The record, one JSON object per key (the approval id):
//!
//! ```json
//! {"version": 1, "id": "9f2c…", "state": "pending", "tool": "stream_rm", "command": "stream rm",
//!  "command_line": "nats stream rm ORDERS --force", "trigger": "ai:confirm", "session": "ticket-4711",
//!  "call_id": "toolu_01…", "input_digest": "…", "created_ms": 1764900000000, "expires_ms": 1764900600000,
//!  "decided_by": null, "decided_ms": null}
//! ```
//!
//! A decision rewrites it with `state` `approved` or `denied`, `decided_by` and `decided_ms`, as an update on the
//! revision read (compare-and-swap), so of two operators exactly one decides. The gate runs the call only on an
//! `approved` record identical to its own in every other field, decided before it expired; anything else declines
//! (APPR-4): a deleted, malformed, expired or foreign record, a lost connection, the timeout.

use crate::error::{Error, Result};
use crate::gate::{ConfirmGate, ConfirmRequest, Decision, call_digest};
use crate::nats::NatsConnection;
use async_nats::jetstream::{self, kv};
use async_trait::async_trait;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The key prefix of the pending approvals of MCP clients (REPL-1): a 2026-07-28 approval round kept in the same
/// bucket, so any replica of an MCP server answers it. Those are the client's user's to answer, through the client:
/// [`ApprovalBook::list`] skips them and [`ApprovalBook::decide`] refuses them.
pub const MCP_KEY_PREFIX: &str = "mcp.";

/// The largest record the gate or the CLI reads; anything longer is malformed.
const MAX_RECORD: usize = 64 * 1024;
/// The record format's version.
const VERSION: u32 = 1;

/// One approval, as kept in the bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ApprovalRecord {
    /// The record format (1).
    pub version: u32,
    /// The approval id: the key.
    pub id: String,
    /// `pending`, `approved`, `denied` or `expired`.
    pub state: String,
    /// The tool's final name.
    pub tool: String,
    /// The command path.
    pub command: String,
    /// The resolved command line, sanitized (GATE-8).
    pub command_line: String,
    /// The tag that gates the call.
    pub trigger: String,
    /// The run's session, when it is checkpointed (a worker's request id).
    pub session: Option<String>,
    /// The model's id for the call.
    pub call_id: Option<String>,
    /// [`call_digest`] of the call's input.
    pub input_digest: String,
    /// When it was asked, in Unix milliseconds.
    pub created_ms: u64,
    /// When it stops being answerable, in Unix milliseconds.
    pub expires_ms: u64,
    /// Who decided.
    pub decided_by: Option<String>,
    /// When, in Unix milliseconds.
    pub decided_ms: Option<u64>,
}

impl ApprovalRecord {
    fn parse(bytes: &[u8]) -> Option<ApprovalRecord> {
        (bytes.len() <= MAX_RECORD).then(|| serde_json::from_slice(bytes).ok()).flatten()
    }

    fn to_bytes(&self) -> bytes::Bytes {
        serde_json::to_vec(self).unwrap_or_default().into()
    }

    /// Whether `other` is this approval in every field a decision must not change.
    fn same_call(&self, other: &ApprovalRecord) -> bool {
        let key = |r: &ApprovalRecord| {
            (
                r.version,
                r.id.clone(),
                r.tool.clone(),
                r.command.clone(),
                r.command_line.clone(),
                r.trigger.clone(),
                r.session.clone(),
                r.call_id.clone(),
                r.input_digest.clone(),
                r.created_ms,
                r.expires_ms,
            )
        };
        key(self) == key(other)
    }

    /// APPR-4: the decision `decided` makes on this pending approval: only an `approved` record of this very call,
    /// decided in time, by someone, approves.
    fn judge(&self, decided: &ApprovalRecord) -> Option<Decision> {
        if !self.same_call(decided) {
            return Some(Decision::Decline);
        }
        let in_time = decided.decided_ms.is_some_and(|t| t <= self.expires_ms);
        let by = decided.decided_by.as_deref().is_some_and(|b| !b.trim().is_empty());
        match decided.state.as_str() {
            "pending" => None,
            "approved" if in_time && by => Some(Decision::Once),
            _ => Some(Decision::Decline),
        }
    }
}

/// Now, in Unix milliseconds.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The pending approvals in one bucket: what the gate writes and `cli approvals` reads and decides.
#[derive(Clone)]
pub struct ApprovalBook {
    kv: kv::Store,
    bucket: String,
}

impl std::fmt::Debug for ApprovalBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalBook").field("bucket", &self.bucket).finish_non_exhaustive()
    }
}

impl ApprovalBook {
    /// Bind the existing bucket `bucket` (never created here).
    ///
    /// # Errors
    ///
    /// A configuration error naming the `nats kv add` command when the bucket does not exist; a NATS error when the
    /// server cannot be asked.
    pub async fn bind(nats: &NatsConnection, bucket: &str) -> Result<ApprovalBook> {
        let js = jetstream::new(nats.client().clone());
        let kv = js.get_key_value(bucket).await.map_err(|e| {
            let text = e.to_string();
            if text.contains("not found") || text.contains("10059") {
                Error::config_key(
                    "harness.approvals.bucket",
                    format!(
                        "harness.approvals.bucket: bucket {bucket} does not exist (context {}); the agent never \
                         creates it (fix: nats kv add {bucket} --history 1)",
                        nats.context()
                    ),
                )
            } else {
                Error::nats(format!("cannot bind approvals bucket {bucket} (context {}): {e}", nats.context()))
            }
        })?;
        Ok(ApprovalBook { kv, bucket: bucket.to_owned() })
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The bucket itself, for the MCP server's pending approvals (REPL-1).
    #[cfg(feature = "mcp")]
    pub(crate) fn store(&self) -> &kv::Store {
        &self.kv
    }

    /// Every approval in the bucket that parses, pending or decided, oldest first; unreadable keys, and MCP
    /// clients' approvals ([`MCP_KEY_PREFIX`]), are skipped.
    ///
    /// # Errors
    ///
    /// A NATS error when the keys cannot be listed.
    pub async fn list(&self) -> Result<Vec<ApprovalRecord>> {
        let fail = |e: &dyn std::fmt::Display| Error::nats(format!("cannot list bucket {}: {e}", self.bucket));
        let mut keys = match self.kv.keys().await {
            Ok(keys) => keys,
            Err(e) if e.to_string().contains("no keys") => return Ok(Vec::new()),
            Err(e) => return Err(fail(&e)),
        };
        let mut out = Vec::new();
        while let Some(key) = keys.next().await {
            let Ok(key) = key else { continue };
            if key.starts_with(MCP_KEY_PREFIX) {
                continue;
            }
            if let Ok(Some(entry)) = self.kv.entry(key).await
                && let Some(record) = ApprovalRecord::parse(&entry.value)
            {
                out.push(record);
            }
        }
        out.sort_by_key(|r| r.created_ms);
        Ok(out)
    }

    /// Decide approval `id` (APPR-3): a compare-and-swap on the pending record, so of two deciders exactly one
    /// wins. Returns the decided record.
    ///
    /// # Errors
    ///
    /// A run error naming the id when it is unknown, malformed, already decided (and by whom), expired, or an MCP
    /// client's ([`MCP_KEY_PREFIX`]); a NATS error when the bucket cannot be read or written.
    pub async fn decide(&self, id: &str, approve: bool, by: &str) -> Result<ApprovalRecord> {
        if id.starts_with(MCP_KEY_PREFIX) {
            return Err(Error::run(format!(
                "{id} is an MCP client's pending approval: its user answers it in the client, never here"
            )));
        }
        let entry = self
            .kv
            .entry(id)
            .await
            .map_err(|e| Error::nats(format!("cannot read approval {id} in bucket {}: {e}", self.bucket)))?
            .filter(|e| e.operation == kv::Operation::Put)
            .ok_or_else(|| Error::run(format!("no approval {id} in bucket {}", self.bucket)))?;
        let mut record = ApprovalRecord::parse(&entry.value)
            .ok_or_else(|| Error::run(format!("approval {id} is not a valid approval record")))?;
        if record.state != "pending" {
            let by = record.decided_by.as_deref().unwrap_or("nobody");
            return Err(Error::run(format!("approval {id} is already {} (by {by})", record.state)));
        }
        if now_ms() > record.expires_ms {
            return Err(Error::run(format!("approval {id} has expired; the call was declined")));
        }
        record.state = if approve { "approved" } else { "denied" }.to_owned();
        record.decided_by = Some(crate::gate::sanitize(by, 200));
        record.decided_ms = Some(now_ms());
        match self.kv.update(id, record.to_bytes(), entry.revision).await {
            Ok(_) => Ok(record),
            Err(_) => {
                // Someone else wrote first: say who, if the record says.
                let now = self.kv.entry(id).await.ok().flatten().and_then(|e| ApprovalRecord::parse(&e.value));
                let (state, by) = now.map_or(("changed".to_owned(), None), |r| (r.state, r.decided_by));
                Err(Error::run(format!(
                    "approval {id} is already {state} (by {}); your decision was not recorded",
                    by.as_deref().unwrap_or("someone else")
                )))
            }
        }
    }
}

/// The gate of `harness.approvals.backend: nats` (APPR-1): each gated call waits up to `timeout` for a decision
/// in the bucket.
///
/// ```no_run
/// use fisk_ai::nats::approvals::{ApprovalBook, NatsGate};
/// use fisk_ai::nats::NatsConnection;
/// use std::time::Duration;
///
/// # async fn demo(nats: NatsConnection) -> fisk_ai::Result<()> {
/// let gate = NatsGate::new(ApprovalBook::bind(&nats, "APPROVALS").await?, Duration::from_secs(600));
/// let agent = fisk_ai::Agent::builder().gate(gate); // ... .config(...).build().await?
/// # let _ = agent; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct NatsGate {
    book: ApprovalBook,
    timeout: Duration,
}

impl NatsGate {
    /// A gate over `book`, waiting up to `timeout` for each decision.
    pub fn new(book: ApprovalBook, timeout: Duration) -> NatsGate {
        NatsGate { book, timeout }
    }

    /// The approval id of `req`: derived from its session and call when it has both, so a run resumed elsewhere
    /// finds the same approval (APPR-6); random otherwise. Hex, so model-chosen ids never reach a key.
    fn id_of(req: &ConfirmRequest) -> String {
        use sha2::{Digest, Sha256};
        match (&req.session, &req.call_id) {
            (Some(session), Some(call)) => {
                let digest = Sha256::digest(format!("{session}\0{call}").as_bytes());
                digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
            }
            _ => {
                use svix_ksuid::{Ksuid, KsuidLike};
                // 128 bits from getrandom.
                Ksuid::new(None::<SystemTime>, None).payload().iter().map(|b| format!("{b:02x}")).collect()
            }
        }
    }

    fn record_of(&self, req: &ConfirmRequest) -> ApprovalRecord {
        let created_ms = now_ms();
        let timeout = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        ApprovalRecord {
            version: VERSION,
            id: Self::id_of(req),
            state: "pending".to_owned(),
            tool: req.tool.clone(),
            command: req.command.clone(),
            command_line: req.command_line.clone(),
            trigger: crate::gate::sanitize(&req.trigger, crate::gate::PROMPT_LIMIT),
            session: req.session.clone(),
            call_id: req.call_id.as_deref().map(|c| crate::gate::sanitize(c, 200)),
            input_digest: call_digest(&req.input, &req.command_line),
            created_ms,
            expires_ms: created_ms.saturating_add(timeout),
            decided_by: None,
            decided_ms: None,
        }
    }

    /// Ask, and wait; every failure declines.
    async fn ask(&self, req: &ConfirmRequest) -> Result<Decision> {
        let kv = &self.book.kv;
        let mut mine = self.record_of(req);
        // Watch first, so a decision made between the write and the watch is not missed.
        let mut watch = kv.watch(&mine.id).await.map_err(|e| Error::nats(e.to_string()))?;
        let mut revision = match kv.entry(&mine.id).await.map_err(|e| Error::nats(e.to_string()))? {
            // APPR-6: the same call asked before (a resumed run): its record, and any decision on it, stand.
            Some(entry) if entry.operation == kv::Operation::Put => {
                let Some(found) = ApprovalRecord::parse(&entry.value) else { return Ok(Decision::Decline) };
                let pending =
                    ApprovalRecord { state: "pending".to_owned(), decided_by: None, decided_ms: None, ..found.clone() };
                let comparable =
                    ApprovalRecord { created_ms: found.created_ms, expires_ms: found.expires_ms, ..mine.clone() };
                if !comparable.same_call(&pending) {
                    return Ok(Decision::Decline);
                }
                mine = pending;
                if let Some(decision) = mine.judge(&found) {
                    return Ok(decision);
                }
                entry.revision
            }
            _ => kv.create(&mine.id, mine.to_bytes()).await.map_err(|e| Error::nats(e.to_string()))?,
        };
        let deadline = tokio::time::Instant::now() + Duration::from_millis(mine.expires_ms.saturating_sub(now_ms()));
        loop {
            match tokio::time::timeout_at(deadline, watch.next()).await {
                Ok(Some(Ok(entry))) => {
                    if entry.operation != kv::Operation::Put {
                        return Ok(Decision::Decline);
                    }
                    let Some(decided) = ApprovalRecord::parse(&entry.value) else { return Ok(Decision::Decline) };
                    revision = entry.revision;
                    if let Some(decision) = mine.judge(&decided) {
                        return Ok(decision);
                    }
                }
                Ok(_) => return Ok(Decision::Decline),
                Err(_) => return Ok(self.expire(&mine, revision).await),
            }
        }
    }

    /// APPR-5: mark the approval expired, so a late decision fails and says so. Were a decision written in the
    /// meantime, it is judged instead.
    async fn expire(&self, mine: &ApprovalRecord, revision: u64) -> Decision {
        let expired = ApprovalRecord { state: "expired".to_owned(), ..mine.clone() };
        if self.book.kv.update(&mine.id, expired.to_bytes(), revision).await.is_ok() {
            return Decision::Decline;
        }
        match self.book.kv.entry(&mine.id).await {
            Ok(Some(e)) => ApprovalRecord::parse(&e.value).and_then(|d| mine.judge(&d)).unwrap_or(Decision::Decline),
            _ => Decision::Decline,
        }
    }
}

#[async_trait]
impl ConfirmGate for NatsGate {
    fn can_ask(&self) -> bool {
        true
    }

    async fn confirm(&self, req: &ConfirmRequest) -> Decision {
        // Fail closed: an error is never approval.
        self.ask(req).await.unwrap_or(Decision::Decline)
    }
}
