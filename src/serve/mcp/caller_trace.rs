//! OTEL-5, OTEL-6: a served MCP request continues its caller's W3C trace (feature `otel`).

use crate::telemetry;
use rmcp::service::{RequestContext, RoleServer};
use tracing::Span;

/// OTEL-5: the request continues its caller's trace: the context in its `_meta` (SEP-414) when it is well-formed,
/// since it names this message while a header may name a whole HTTP exchange; else a single `traceparent` header.
pub(super) fn continue_caller_trace(
    span: &Span,
    context: &RequestContext<RoleServer>,
    parts: Option<&axum::http::request::Parts>,
) {
    let meta = &context.meta;
    if !telemetry::continue_trace(span, meta.get_traceparent(), meta.get_tracestate())
        && let Some(p) = parts
    {
        continue_from_headers(span, &p.headers);
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
    telemetry::continue_trace(span, single(telemetry::TRACEPARENT), single(telemetry::TRACESTATE));
}
