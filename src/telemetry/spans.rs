//! The span constructors and events of the [module docs](super), so every name is spelled once.

use super::*;
use crate::dispatch::Refusal;
use crate::tool::{ToolInput, ToolKind, ToolOutput};
use crate::warning::Warning;
use serde::Serialize;
use std::fmt;
use std::time::Duration;
use tracing::field::Empty;
use tracing::{Span, info, info_span, warn};

/// `"{operation} {target}"`, or the operation alone when there is no target (`tools/list`, not `tools/list `, as
/// an exported span name), formatted only when a subscriber records it.
pub(crate) struct Named<'a>(pub(crate) &'a str, pub(crate) &'a str);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1.is_empty() { f.write_str(self.0) } else { write!(f, "{} {}", self.0, self.1) }
    }
}

/// A value as compact JSON, serialized only when a subscriber records it.
pub(crate) struct Json<'a, T: ?Sized>(pub(crate) &'a T);

impl<T: Serialize + ?Sized> fmt::Display for Json<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&serde_json::to_string(self.0).map_err(|_| fmt::Error)?)
    }
}

/// A count as `i64`, the integer type `tracing-opentelemetry` exports as an integer attribute (it exports `u64`
/// values as strings), so a collector can sum and compare GenAI token counts.
pub(crate) fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Mark `span` failed, with an error class and what failed.
pub(crate) fn failed(span: &Span, error_type: &str, description: &dyn fmt::Display) {
    span.record(ERROR_TYPE, error_type);
    span.record(OTEL_STATUS_CODE, "error");
    span.record(OTEL_STATUS_DESCRIPTION, tracing::field::display(description));
}

/// A model-call attempt that got no complete reply within `timeout` (PROV-5).
#[cfg(any(feature = "anthropic", feature = "openai"))]
pub(crate) fn model_timeout(timeout: Duration) {
    warn!(target: TARGET, { { TIMEOUT_MS } = millis(timeout) }, "the model call attempt timed out");
}

/// The `execute_tool` span of one call.
pub(crate) fn tool_span(name: &str, call_id: Option<&str>, kind: Option<ToolKind>, gated: bool) -> Span {
    info_span!(
        target: TARGET,
        TOOL_SPAN,
        { OTEL_NAME } = %Named(TOOL_SPAN, name),
        { OPERATION_NAME } = TOOL_SPAN,
        { TOOL_NAME } = name,
        { TOOL_CALL_ID } = call_id,
        { TOOL_TYPE } = if kind == Some(ToolKind::Imported) { "extension" } else { "function" },
        { TOOL_KIND } = kind.map(kind_name),
        { TOOL_GATED } = gated,
        { ENDUSER_ID } = Empty,
        { CLIENT_ID } = Empty,
        { TOOL_OUTCOME } = Empty,
        { PROCESS_EXIT_CODE } = Empty,
        { TOOL_TRUNCATED } = Empty,
        { ERROR_TYPE } = Empty,
        { OTEL_STATUS_CODE } = Empty,
        { OTEL_STATUS_DESCRIPTION } = Empty,
    )
}

fn kind_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Command => "command",
        ToolKind::Builtin => "builtin",
        ToolKind::Imported => "imported",
        ToolKind::Custom => "custom",
    }
}

/// The call ran: its exit code and truncation for a command, the status for an error result. Call inside the
/// tool span.
pub(crate) fn tool_ran(span: &Span, output: &ToolOutput) {
    span.record(TOOL_OUTCOME, "ran");
    if let Some(report) = output.exec_report() {
        span.record(PROCESS_EXIT_CODE, report.exit_code);
        span.record(TOOL_TRUNCATED, report.truncated);
        if report.truncated {
            let why = "the command's output was truncated to its head and tail";
            info!(target: TARGET, { { TOOL_TRUNCATED } = true }, "{why}");
        }
    }
    if output.is_error() {
        failed(span, "tool_error", &"the tool returned an error result");
    }
}

/// The call was refused before the gate (steps 1-4 of the dispatch path). Call inside the tool span.
pub(crate) fn tool_refused(span: &Span, refusal: &Refusal) {
    let why = match refusal {
        Refusal::UnknownTool { .. } => "unknown_tool",
        Refusal::Missing(_) => "missing_required",
        Refusal::Invalid { .. } => "invalid_arguments",
        Refusal::Unrecorded { .. } => "unrecorded",
    };
    span.record(TOOL_OUTCOME, "refused");
    failed(span, why, &"the call was refused before it ran");
    info!(target: TARGET, { { REFUSAL } = why }, "tool call refused");
}

/// The gated call was declined, for `reason`. Call inside the tool span.
pub(crate) fn tool_declined(span: &Span, reason: &str) {
    span.record(TOOL_OUTCOME, "declined");
    info!(target: TARGET, { { DECLINE_REASON } = reason }, "tool call declined");
}

/// How a call that neither ran nor was refused or declined ended: `halted`, `cancelled`.
pub(crate) fn tool_ended(span: &Span, outcome: &'static str) {
    span.record(TOOL_OUTCOME, outcome);
}

/// A tool call that did not finish within `timeout`, or was stopped (`what` says how).
pub(crate) fn tool_timeout(timeout: Duration, what: &str) {
    warn!(target: TARGET, { { TIMEOUT_MS } = millis(timeout) }, "{what}");
}

/// A [`Warning`], its text withheld when it quotes a call's arguments and content is off.
pub(crate) fn warning(w: &Warning, content: bool) {
    let quotes_input = matches!(w, Warning::InvalidArguments { .. } | Warning::UngatedOverMcp { .. });
    if quotes_input && !content {
        warn!(target: TARGET, { { WARNING_KIND } = w.kind() }, "warning (its text quotes a call's arguments)");
    } else {
        warn!(target: TARGET, { { WARNING_KIND } = w.kind() }, "{w}");
    }
}

/// The `mcp.request` span of one MCP request.
#[cfg(feature = "mcp")]
pub(crate) fn mcp_span(
    method: &str,
    tool: Option<&str>,
    session: Option<&str>,
    request_id: &dyn fmt::Display,
    protocol: Option<&str>,
) -> Span {
    info_span!(
        target: TARGET,
        MCP_SPAN,
        { OTEL_NAME } = %Named(method, tool.unwrap_or_default()),
        { OTEL_KIND } = "server",
        { MCP_METHOD_NAME } = method,
        { MCP_SESSION_ID } = session,
        { JSONRPC_REQUEST_ID } = %request_id,
        { MCP_PROTOCOL_VERSION } = protocol,
        { TOOL_NAME } = tool,
        { ENDUSER_ID } = Empty,
        { CLIENT_ID } = Empty,
    )
}

/// Record who called on an `mcp.request` or `execute_tool` span (AUTH-8).
#[cfg(feature = "mcp")]
pub(crate) fn caller(span: &Span, subject: Option<&str>, client_id: Option<&str>) {
    if let Some(s) = subject {
        span.record(ENDUSER_ID, s);
    }
    if let Some(c) = client_id {
        span.record(CLIENT_ID, c);
    }
}

/// An MCP HTTP request refused before it reached the protocol layer.
#[cfg(feature = "mcp")]
pub(crate) fn http_refused(status: u16, why: &str) {
    warn!(target: TARGET, { { HTTP_STATUS_CODE } = status }, "MCP request refused: {why}");
}

/// Content: a tool call's arguments, as the model wrote them (refused calls included).
pub(crate) fn content_tool_arguments(input: &ToolInput) {
    info!(target: CONTENT_TARGET, { { TOOL_CALL_ARGUMENTS } = input.as_str() }, "tool call arguments");
}

/// Content: the resolved command line or summary of a call about to run.
pub(crate) fn content_tool_display(line: &str) {
    info!(target: CONTENT_TARGET, { { TOOL_DISPLAY } = line }, "tool call");
}

/// Content: a tool call's result.
pub(crate) fn content_tool_result(result: &str) {
    info!(target: CONTENT_TARGET, { { TOOL_CALL_RESULT } = result }, "tool result");
}

/// A2A-15: an a2a request with a reply subject outside the inbox prefix was refused (a counter for metrics
/// layers that read `monotonic_counter.*` fields).
#[cfg(feature = "nats")]
pub(crate) fn a2a_reply_refused(endpoint: &str, reply_subject: &str, inbox_prefix: &str) {
    warn!(
        target: TARGET,
        { monotonic_counter.fisk_ai.a2a.reply_refused = 1_u64, endpoint = endpoint, reply_subject = reply_subject },
        "a2a request refused: its reply subject is not under the inbox prefix {inbox_prefix}"
    );
}

/// A2A-14: an a2a tool request answered busy (no slot, no queue place).
#[cfg(feature = "nats")]
pub(crate) fn a2a_busy(tool: &str) {
    warn!(
        target: TARGET,
        { monotonic_counter.fisk_ai.a2a.busy = 1_u64, { TOOL_NAME } = tool },
        "a2a request answered busy (503): every slot and queue place is taken"
    );
}
