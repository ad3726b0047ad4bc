//! The records of one call, gathered by the dispatch path and written at the points where the call waits on
//! something or is about to run (AUD-6): one write (and one fsync) per point, not per record.

use super::{AuditScope, Entry, Event};
use crate::warning::Warning;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A process-unique call id: a random prefix drawn once per process, then a counter.
fn call_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| {
        use svix_ksuid::KsuidLike;
        svix_ksuid::Ksuid::new(None::<std::time::SystemTime>, None).to_string()
    });
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The pending records of one call; `None` inside when the surface has no trail (then every method does nothing).
pub(crate) struct Recorder {
    inner: Option<Open>,
}

struct Open {
    scope: AuditScope,
    call: String,
    tool: String,
    pending: Vec<Entry>,
}

impl Recorder {
    /// Records for a call of `tool` with `input` in `scope`, starting with `requested`.
    pub(crate) fn start(scope: Option<AuditScope>, tool: &str, input: &str) -> Self {
        let Some(scope) = scope else { return Recorder { inner: None } };
        let tool = bounded(tool).into_owned();
        let mut open = Open { scope, call: call_id(), tool, pending: Vec::with_capacity(4) };
        let include = open.scope.trail.include_input;
        let entry = open.push(Event::Requested);
        entry.input_digest = Some(digest(input));
        entry.input = include.then(|| input.to_owned());
        Recorder { inner: Some(open) }
    }

    /// Whether records are kept.
    pub(crate) fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// Add a record of `event`, completed by `fill`.
    pub(crate) fn note(&mut self, event: Event, fill: impl FnOnce(&mut Entry)) {
        if let Some(open) = &mut self.inner {
            fill(open.push(event));
        }
    }

    /// Add the record of a policy hook's `verdict`, with a deny's reason or a rewrite's new input.
    pub(crate) fn policy(&mut self, verdict: &str, reason: Option<&str>, rewritten: Option<&str>) {
        let Some(open) = &mut self.inner else { return };
        let include = open.scope.trail.include_input;
        let entry = open.push(Event::Policy);
        entry.verdict = Some(verdict.to_owned());
        entry.reason = reason.map(str::to_owned);
        entry.input_digest = rewritten.map(digest);
        entry.input = rewritten.filter(|_| include).map(str::to_owned);
    }

    /// Write the pending records of a call that is over or never ran: a failure cannot refuse anything any more,
    /// so it is a warning.
    pub(crate) async fn settle(&mut self) {
        let Some(open) = &mut self.inner else { return };
        if open.pending.is_empty() {
            return;
        }
        let written = open.scope.trail.append(&open.pending).await;
        open.pending.clear();
        if let Err(e) = written {
            let warning = Warning::AuditUnwritten { tool: open.tool.clone(), error: e.to_string() };
            warn(&warning);
        }
    }

    /// Write the pending records. `Err` names why, when the call must not go on (the trail fails closed); under
    /// `fail_open` a failure is a warning and the call goes on.
    pub(crate) async fn flush(&mut self) -> Result<(), String> {
        let Some(open) = &mut self.inner else { return Ok(()) };
        if open.pending.is_empty() {
            return Ok(());
        }
        let trail = &open.scope.trail;
        let written = trail.append(&open.pending).await;
        open.pending.clear();
        match written {
            Ok(()) => Ok(()),
            Err(e) if trail.fail_open => {
                let warning = Warning::AuditUnwritten { tool: open.tool.clone(), error: e.to_string() };
                warn(&warning);
                Ok(())
            }
            Err(e) => Err(format!("tool \"{}\" did not run: its audit record could not be written ({e})", open.tool)),
        }
    }
}

impl Open {
    fn push(&mut self, event: Event) -> &mut Entry {
        let s = &self.scope;
        let mut entry = Entry::new(event, s.surface.as_str(), &self.tool);
        entry.agent.clone_from(&s.trail.agent);
        entry.call.clone_from(&self.call);
        entry.caller.clone_from(&s.caller);
        entry.client.clone_from(&s.client);
        entry.session.clone_from(&s.session);
        entry.request.clone_from(&s.request);
        self.pending.push(entry);
        let last = self.pending.len() - 1;
        &mut self.pending[last]
    }
}

/// Record a call a surface refused before the dispatch path saw it (a tool hidden from this caller, a duplicate
/// argument found by the transport): `requested`, then `refused` with `reason`.
pub(crate) async fn refused(scope: Option<AuditScope>, tool: &str, input: &str, reason: &str) {
    let mut rec = Recorder::start(scope, tool, input);
    rec.note(Event::Refused, |e| e.reason = Some(reason.to_owned()));
    rec.settle().await;
}

/// The longest tool name a record keeps: a valid name has at most 64 characters, and an unknown one is the caller's
/// choice, so it is cut (on a character boundary) rather than copied into every record of the call.
const MAX_TOOL_NAME: usize = 256;

fn bounded(tool: &str) -> std::borrow::Cow<'_, str> {
    if tool.len() <= MAX_TOOL_NAME {
        return std::borrow::Cow::Borrowed(tool);
    }
    let mut end = MAX_TOOL_NAME;
    while !tool.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}...", &tool[..end]))
}

/// Log `w` as the telemetry module logs warnings (its target and kind field), without importing it: telemetry
/// reads the dispatch path's types, and the dispatch path writes records (HARNESS-8, no import cycle).
fn warn(w: &Warning) {
    const KIND: &str = "fisk_ai.warning.kind";
    tracing::warn!(target: "fisk_ai::telemetry", { { KIND } = w.kind() }, "{w}");
}

/// SHA-256 (hex) of an input's text.
pub(crate) fn digest(input: &str) -> String {
    crate::canonical::hex(&Sha256::digest(input.as_bytes()))
}
