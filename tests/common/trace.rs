//! A capturing `tracing` layer: every span (name, parent, fields, later records included) and every event (target,
//! enclosing span, fields), in order, for assertions on the span tree.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span: `index` is its position in [`Trace::spans`], `parent` its parent's.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    pub index: usize,
    pub name: &'static str,
    pub target: String,
    pub parent: Option<usize>,
    pub fields: BTreeMap<String, String>,
}

impl SpanRecord {
    /// A field's value as text (`Display` values as displayed, strings unquoted).
    pub fn field(&self, name: &str) -> Option<&str> {
        field(&self.fields, name)
    }
}

/// One event, with the index of the span it happened in.
#[derive(Debug, Clone)]
pub struct EventRecord {
    pub target: String,
    pub level: Level,
    pub span: Option<usize>,
    pub fields: BTreeMap<String, String>,
}

impl EventRecord {
    /// A field's value as text.
    pub fn field(&self, name: &str) -> Option<&str> {
        field(&self.fields, name)
    }
}

fn field<'a>(fields: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    fields.get(name).map(String::as_str)
}

/// Everything captured so far.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub spans: Vec<SpanRecord>,
    pub events: Vec<EventRecord>,
}

impl Trace {
    /// The spans named `name`, in creation order.
    pub fn named(&self, name: &str) -> Vec<&SpanRecord> {
        self.spans.iter().filter(|s| s.name == name).collect()
    }

    /// The events that happened inside span `index`.
    pub fn events_in(&self, index: usize) -> Vec<&EventRecord> {
        self.events.iter().filter(|e| e.span == Some(index)).collect()
    }

    /// Every field value of every span and event whose target starts with `prefix`, with where it was seen.
    pub fn values<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (String, &'a str)> {
        let spans = self.spans.iter().filter(move |s| s.target.starts_with(prefix));
        let events = self.events.iter().filter(move |e| e.target.starts_with(prefix));
        let spans = spans.flat_map(|s| s.fields.iter().map(move |(k, v)| (format!("{}.{k}", s.name), v)));
        let events = events.flat_map(|e| e.fields.iter().map(move |(k, v)| (format!("{}: {k}", e.target), v)));
        spans.chain(events).map(|(k, v)| (k, v.as_str()))
    }
}

/// The capturing layer; clones share one [`Trace`].
#[derive(Debug, Clone, Default)]
pub struct Capture(Arc<Mutex<Trace>>);

impl Capture {
    /// A copy of what was captured.
    pub fn trace(&self) -> Trace {
        self.0.lock().unwrap().clone()
    }
}

/// Capture on this thread until the guard drops.
pub fn capture() -> (Capture, TraceGuard) {
    // One capture at a time per test binary: tracing-core recomputes its global level and callsite interest when
    // a subscriber is created or dropped, and two of those recomputations racing on other threads can leave this
    // subscriber's events filtered out (seen as a missing event about one run in ten).
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let lock = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    tracing::callsite::rebuild_interest_cache();
    (capture, TraceGuard { _default: guard, _lock: lock })
}

/// Keeps the capturing subscriber the thread's default, and other captures of this binary waiting, until dropped.
pub struct TraceGuard {
    // Field order is drop order: the subscriber goes before the next capture may start.
    _default: tracing::subscriber::DefaultGuard,
    _lock: std::sync::MutexGuard<'static, ()>,
}

/// Where a span's record is, kept in the registry's span extensions (span ids are reused after close).
struct Index(usize);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span.parent().and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut trace = self.0.lock().unwrap();
        let index = trace.spans.len();
        let meta = attrs.metadata();
        trace.spans.push(SpanRecord { index, name: meta.name(), target: meta.target().to_owned(), parent, fields });
        span.extensions_mut().insert(Index(index));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(index) = ctx.span(id).and_then(|s| s.extensions().get::<Index>().map(|i| i.0)) else { return };
        let mut trace = self.0.lock().unwrap();
        values.record(&mut Fields(&mut trace.spans[index].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let span = ctx.event_span(event).and_then(|s| s.extensions().get::<Index>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        let record = EventRecord { target: meta.target().to_owned(), level: *meta.level(), span, fields };
        self.0.lock().unwrap().events.push(record);
    }
}
