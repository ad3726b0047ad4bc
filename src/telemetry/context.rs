//! W3C trace context across MCP (OTEL-5..7): a served request continues its caller's trace, and a call to an
//! imported server carries ours. The keys are SEP-414's (`traceparent`, `tracestate` in a request's `_meta`), the
//! same as the HTTP headers.
//!
//! What arrives is untrusted: a value that is not a well-formed version-00-compatible `traceparent`, or that is
//! longer than the bounds below, is ignored, never an error. Nothing here allocates more than the bounds.

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::collections::HashMap;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The key of the parent's id, in `_meta` and as an HTTP header.
pub(crate) const TRACEPARENT: &str = "traceparent";
/// The key of the vendors' state, in `_meta` and as an HTTP header.
pub(crate) const TRACESTATE: &str = "tracestate";
/// Version 00 is 55 characters; a later version may append fields, but a parent id this long is not one.
const MAX_TRACEPARENT: usize = 256;
/// W3C Trace Context asks vendors to pass on at least 512 characters of `tracestate`; a longer one is dropped (the
/// parent is still taken), since trimming list members safely is more than a caller's hint is worth.
const MAX_TRACESTATE: usize = 512;

/// Whether `value` has the shape W3C Trace Context gives a `traceparent`: `vv-<32 hex>-<16 hex>-ff`, lower-case,
/// version `ff` refused, version 00 exactly 55 characters and a later one only longer after a `-`. The SDK's own
/// parser accepts more (a `+` sign, short ids), so this runs first.
fn well_formed(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() < 55 || b.len() > MAX_TRACEPARENT {
        return false;
    }
    let hex = |s: &[u8]| s.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let zero = |s: &[u8]| s.iter().all(|&c| c == b'0');
    let version_ok = hex(&b[..2]) && &b[..2] != b"ff";
    let tail_ok = if &b[..2] == b"00" { b.len() == 55 } else { b.len() == 55 || b[55] == b'-' };
    version_ok
        && tail_ok
        && b[2] == b'-'
        && hex(&b[3..35])
        && !zero(&b[3..35])
        && b[35] == b'-'
        && hex(&b[36..52])
        && !zero(&b[36..52])
        && b[52] == b'-'
        && hex(&b[53..55])
}

/// Make `span` a child of the remote span `traceparent` names (with `tracestate` when it is within bounds), and
/// say whether the value was well-formed. A malformed or oversize value is ignored, as if absent. Without an
/// OpenTelemetry layer, or for a span no layer records, there is nothing to continue, and that is not an error.
pub(crate) fn continue_trace(span: &Span, traceparent: Option<&str>, tracestate: Option<&str>) -> bool {
    let Some(parent) = traceparent.map(str::trim).filter(|t| well_formed(t)) else {
        return false;
    };
    let mut carrier = HashMap::with_capacity(2);
    carrier.insert(TRACEPARENT.to_owned(), parent.to_owned());
    if let Some(state) = tracestate.filter(|s| s.len() <= MAX_TRACESTATE) {
        carrier.insert(TRACESTATE.to_owned(), state.to_owned());
    }
    let cx = TraceContextPropagator::new().extract(&carrier);
    if cx.span().span_context().is_valid() {
        // An error only says no layer takes the parent (none installed, or the span filtered out).
        let _ = span.set_parent(cx);
    }
    true
}

/// The current span's trace context as `(key, value)` pairs for a request's `_meta`: `traceparent`, and
/// `tracestate` when it is not empty. None when no OpenTelemetry layer records the current span.
pub(crate) fn current() -> Vec<(&'static str, String)> {
    let cx = Span::current().context();
    if !cx.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut carrier: HashMap<String, String> = HashMap::with_capacity(2);
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    [TRACEPARENT, TRACESTATE]
        .into_iter()
        .filter_map(|key| carrier.remove(key).filter(|v| !v.is_empty()).map(|v| (key, v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn otel_6_only_a_well_formed_traceparent_is_taken() {
        assert!(well_formed(GOOD));
        assert!(well_formed("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"));
        for bad in [
            "",
            "00",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "00-4bf92f3577b34da6a3ce929d0e0e473é-00f067aa0ba902b7-01",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(!well_formed(bad), "{bad:?}");
        }
        let long = format!("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}", "a".repeat(MAX_TRACEPARENT));
        assert!(!well_formed(&long));
    }

    #[test]
    fn otel_6_hostile_values_never_panic() {
        // Every prefix and every single-byte change of a good value, at every position: no panic, no parent.
        let span = tracing::info_span!("t");
        for cut in 0..=GOOD.len() {
            continue_trace(&span, Some(&GOOD[..cut]), Some(&"x".repeat(cut * 20)));
        }
        for i in 0..GOOD.len() {
            for c in ['-', 'g', 'F', '\0', 'é', ' '] {
                let mut v: Vec<char> = GOOD.chars().collect();
                v[i] = c;
                let v: String = v.into_iter().collect();
                continue_trace(&span, Some(&v), Some("k=v,,=,\u{7f}"));
            }
        }
        continue_trace(&span, None, Some(GOOD));
        assert!(current().is_empty(), "no OpenTelemetry layer, so no context to pass on");
    }
}
