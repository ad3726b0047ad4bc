//! OTEL-5, OTEL-6: a served MCP request continues its caller's W3C trace (feature `otel`).

use crate::telemetry;
use rmcp::service::{RequestContext, RoleServer};
use tracing::Span;

/// OTEL-5: the request continues its caller's trace: the context in its `_meta` (SEP-414) when there is one, since
/// it names this message and a header may name a whole HTTP exchange; else a single `traceparent` header.
pub(super) fn continue_caller_trace(
    span: &Span,
    context: &RequestContext<RoleServer>,
    parts: Option<&axum::http::request::Parts>,
) {
    if let Some(parent) = context.meta.get_traceparent() {
        telemetry::continue_trace(span, Some(parent), context.meta.get_tracestate());
    } else if let Some(headers) = parts.map(|p| &p.headers) {
        continue_from_headers(span, headers);
    }
}

/// OTEL-5, OTEL-6: a `traceparent` header, taken only when there is exactly one (W3C: more is invalid), with a
/// single `tracestate` header beside it.
pub(super) fn continue_from_headers(span: &Span, headers: &axum::http::HeaderMap) {
    let single = |name: &str| {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (Some(v), None) => v.to_str().ok(),
            _ => None,
        }
    };
    if let Some(parent) = single(telemetry::TRACEPARENT) {
        telemetry::continue_trace(span, Some(parent), single(telemetry::TRACESTATE));
    }
}
