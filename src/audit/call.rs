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
    /// Whether records were written (`gated`, `run`) and no record of how the call ended yet.
    running: bool,
    /// Whether `run` was among them.
    ran: bool,
}

/// A call dropped after a durable record (`run`, or `gated` while it waited for approval: a task's TTL, a host's
/// `select!`, a client gone) still gets an ending: `cancelled`, after what was noted since (an approval), written
/// in the background since a drop cannot wait.
impl Drop for Recorder {
    fn drop(&mut self) {
        let Some(open) = &mut self.inner else { return };
        if !open.running {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let why = if open.ran {
            "the call was dropped before it ended"
        } else {
            "the call was dropped before it ran (while it waited for approval, or right after)"
        };
        open.push(Event::Cancelled).reason = Some(why.to_owned());
        let (trail, entries, tool) = (open.scope.trail.clone(), std::mem::take(&mut open.pending), open.tool.clone());
        runtime.spawn(async move {
            if let Err(e) = trail.append_settled(&entries).await {
                warn(&Warning::AuditUnwritten { tool, error: e.to_string() });
            }
        });
    }
}

impl Recorder {
    /// Records for a call of `tool` with `input` in `scope`, starting with `requested`.
    pub(crate) fn start(scope: Option<AuditScope>, tool: &str, input: &str) -> Self {
        let Some(scope) = scope else { return Recorder { inner: None } };
        let tool = bounded(tool).into_owned();
        let mut open =
            Open { scope, call: call_id(), tool, pending: Vec::with_capacity(4), running: false, ran: false };
        let include = open.scope.trail.include_input;
        let entry = open.push(Event::Requested);
        entry.input_digest = Some(digest(input));
        entry.input = include.then(|| cut(input, MAX_INPUT).into_owned());
        Recorder { inner: Some(open) }
    }

    /// Whether records are kept.
    pub(crate) fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether records may carry the input (or text quoting it): `include_input`.
    pub(crate) fn includes_input(&self) -> bool {
        self.inner.as_ref().is_some_and(|o| o.scope.trail.include_input)
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
        entry.input = rewritten.filter(|_| include).map(|i| cut(i, MAX_INPUT).into_owned());
    }

    /// Write the pending records of a call that is over or never ran: a failure cannot refuse anything any more,
    /// so it is a warning.
    pub(crate) async fn settle(&mut self) {
        let Some(open) = &mut self.inner else { return };
        if open.pending.is_empty() {
            return;
        }
        open.running = false;
        open.bound();
        let written = open.scope.trail.append_settled(&open.pending).await;
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
        open.bound();
        let ran = open.pending.iter().any(|e| e.event == Event::Run);
        let trail = &open.scope.trail;
        let written = trail.append(&open.pending).await;
        open.pending.clear();
        let Err(e) = written else {
            open.running = true;
            open.ran |= ran;
            return Ok(());
        };
        // The details (a path, a stream, an OS error) are the operator's, logged here; the caller reads only that
        // the call was not recorded.
        warn(&Warning::AuditUnwritten { tool: open.tool.clone(), error: e.to_string() });
        if trail.fail_open {
            open.running = true;
            open.ran |= ran;
            return Ok(());
        }
        Err(format!("tool \"{}\" did not run: its audit record could not be written", open.tool))
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

    /// Cut what a caller or a tool chose to the bounds a record keeps (AUD-2), so one record always fits a line the
    /// reader accepts and a NATS message.
    fn bound(&mut self) {
        for e in &mut self.pending {
            let texts = [&mut e.reason, &mut e.command, &mut e.request, &mut e.session, &mut e.caller, &mut e.client];
            for text in texts.into_iter().chain([&mut e.program]) {
                if let Some(t) = text.as_mut().filter(|t| t.len() > MAX_TEXT) {
                    *t = cut(t, MAX_TEXT).into_owned();
                }
            }
        }
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

/// The longest reason, command line, request, session or caller a record keeps.
const MAX_TEXT: usize = 4096;

/// The longest input text a record keeps (`include_input`); its digest always covers the whole input.
const MAX_INPUT: usize = 256 << 10;

fn bounded(tool: &str) -> std::borrow::Cow<'_, str> {
    cut(tool, MAX_TOOL_NAME)
}

/// `text` cut to `max` bytes on a character boundary, marked `...` when cut.
fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}...", &text[..end]))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{AuditSink, AuditTrail};
    use crate::policy::SurfaceKind;
    use std::sync::{Arc, Mutex};

    /// Keeps every appended entry's event and reason.
    #[derive(Default)]
    struct Kept(Mutex<Vec<(Event, Option<String>)>>);

    #[async_trait::async_trait]
    impl AuditSink for Kept {
        async fn append(&self, entries: &[Entry]) -> crate::Result<()> {
            self.0.lock().unwrap().extend(entries.iter().map(|e| (e.event, e.reason.clone())));
            Ok(())
        }

        fn describe(&self) -> String {
            "kept".to_owned()
        }
    }

    async fn dropped_after(gated_only: bool) -> Vec<(Event, Option<String>)> {
        let kept = Arc::new(Kept::default());
        let trail = Arc::new(AuditTrail::new(kept.clone()));
        let mut rec = Recorder::start(Some(AuditScope::new(trail, SurfaceKind::Mcp)), "purge", "{}");
        rec.note(Event::Validated, |_| {});
        rec.note(Event::Gated, |_| {});
        rec.flush().await.unwrap();
        rec.note(Event::Approved, |_| {});
        if !gated_only {
            rec.note(Event::Run, |_| {});
            rec.flush().await.unwrap();
        }
        // Dropped, as a task's TTL sweep or a vanished client drops the call's future.
        drop(rec);
        for _ in 0..200 {
            if kept.0.lock().unwrap().last().is_some_and(|(e, _)| *e == Event::Cancelled) {
                break;
            }
            tokio::task::yield_now().await;
        }
        kept.0.lock().unwrap().clone()
    }

    #[tokio::test]
    async fn aud_1_a_call_dropped_after_a_durable_record_still_gets_an_ending() {
        let waiting = dropped_after(true).await;
        let events: Vec<Event> = waiting.iter().map(|(e, _)| *e).collect();
        // What was noted since the last durable record (the approval) is kept before the ending.
        assert_eq!(events, [Event::Requested, Event::Validated, Event::Gated, Event::Approved, Event::Cancelled]);
        assert!(waiting[4].1.as_deref().unwrap().contains("dropped before it ran"), "{waiting:?}");

        let running = dropped_after(false).await;
        let events: Vec<Event> = running.iter().map(|(e, _)| *e).collect();
        assert_eq!(events[events.len() - 2..], [Event::Run, Event::Cancelled]);
        assert!(running.last().unwrap().1.as_deref().unwrap().contains("dropped before it ended"), "{running:?}");
    }
}
