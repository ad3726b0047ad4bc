//! The span constructors and events of the [module docs](super), so every name is spelled once.

use super::*;
use crate::agent::{RunStats, TerminalReason};
use crate::dispatch::Refusal;
use crate::llm::{Block, Message, ProviderError, ProviderErrorKind, Response, StopReason, Usage};
use crate::tool::{ToolInput, ToolKind, ToolOutput};
use crate::warning::Warning;
use serde::Serialize;
use std::fmt;
use std::time::Duration;
use tracing::field::Empty;
use tracing::{Span, info, info_span, warn};

/// `"{operation} {target}"`, formatted only when a subscriber records it.
struct Named<'a>(&'a str, &'a str);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.0, self.1)
    }
}

/// A value as compact JSON, serialized only when a subscriber records it.
struct Json<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> fmt::Display for Json<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&serde_json::to_string(self.0).map_err(|_| fmt::Error)?)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Mark `span` failed, with an error class and what failed.
fn failed(span: &Span, error_type: &str, description: &dyn fmt::Display) {
    span.record(ERROR_TYPE, error_type);
    span.record(OTEL_STATUS_CODE, "error");
    span.record(OTEL_STATUS_DESCRIPTION, tracing::field::display(description));
}

/// The `invoke_agent` span of one run.
pub(crate) fn run_span(agent: &str, provider: &str, model: &str, session: Option<&str>, resumed: bool) -> Span {
    info_span!(
        target: TARGET,
        RUN_SPAN,
        { OTEL_NAME } = %Named(RUN_SPAN, agent),
        { OPERATION_NAME } = RUN_SPAN,
        { AGENT_NAME } = agent,
        { PROVIDER_NAME } = provider,
        { SYSTEM } = provider,
        { REQUEST_MODEL } = model,
        { CONVERSATION_ID } = session,
        { RUN_RESUMED } = resumed,
        { USAGE_INPUT_TOKENS } = Empty,
        { USAGE_OUTPUT_TOKENS } = Empty,
        { RUN_OUTCOME } = Empty,
        { RUN_LLM_CALLS } = Empty,
        { RUN_TOOL_CALLS } = Empty,
        { ERROR_TYPE } = Empty,
        { OTEL_STATUS_CODE } = Empty,
        { OTEL_STATUS_DESCRIPTION } = Empty,
    )
}

/// The run's totals and how it ended.
pub(crate) fn run_ended(span: &Span, stats: &RunStats, reason: TerminalReason, error: Option<&crate::Error>) {
    span.record(USAGE_INPUT_TOKENS, input_tokens(&stats.usage));
    span.record(USAGE_OUTPUT_TOKENS, stats.usage.output_tokens);
    span.record(RUN_OUTCOME, reason.as_str());
    span.record(RUN_LLM_CALLS, stats.llm_calls);
    span.record(RUN_TOOL_CALLS, stats.tool_calls);
    if !reason.is_success()
        && let Some(error) = error
    {
        failed(span, reason.as_str(), error);
    }
}

/// Every input token, cached ones included (the convention's `input_tokens`).
fn input_tokens(usage: &Usage) -> u64 {
    usage.input_tokens.saturating_add(usage.cache_read_tokens).saturating_add(usage.cache_creation_tokens)
}

/// The `chat` span of one model call.
pub(crate) fn chat_span(provider: &str, model: &str, iteration: u32, max_tokens: Option<u32>) -> Span {
    info_span!(
        target: TARGET,
        CHAT_SPAN,
        { OTEL_NAME } = %Named(CHAT_SPAN, model),
        { OTEL_KIND } = "client",
        { OPERATION_NAME } = CHAT_SPAN,
        { PROVIDER_NAME } = provider,
        { SYSTEM } = provider,
        { REQUEST_MODEL } = model,
        { REQUEST_MAX_TOKENS } = max_tokens,
        { ITERATION } = iteration,
        { RESPONSE_MODEL } = Empty,
        { RESPONSE_ID } = Empty,
        { RESPONSE_FINISH_REASONS } = Empty,
        { USAGE_INPUT_TOKENS } = Empty,
        { USAGE_OUTPUT_TOKENS } = Empty,
        { USAGE_CACHE_READ_TOKENS } = Empty,
        { USAGE_CACHE_CREATION_TOKENS } = Empty,
        { ERROR_TYPE } = Empty,
        { OTEL_STATUS_CODE } = Empty,
        { OTEL_STATUS_DESCRIPTION } = Empty,
    )
}

/// What the reply says about itself: model, id, tokens, stop reason; and the LOOP-6 truncation event.
pub(crate) fn chat_answered(span: &Span, response: &Response) {
    if let Some(model) = &response.model {
        span.record(RESPONSE_MODEL, model.as_str());
    }
    if let Some(id) = &response.id {
        span.record(RESPONSE_ID, id.as_str());
    }
    let usage = &response.usage;
    span.record(USAGE_INPUT_TOKENS, input_tokens(usage));
    span.record(USAGE_OUTPUT_TOKENS, usage.output_tokens);
    span.record(USAGE_CACHE_READ_TOKENS, usage.cache_read_tokens);
    span.record(USAGE_CACHE_CREATION_TOKENS, usage.cache_creation_tokens);
    span.record(RESPONSE_FINISH_REASONS, response.stop_reason.as_str());
    if response.stop_reason == StopReason::MaxTokens {
        span.in_scope(|| {
            warn!(
                target: TARGET,
                { { RESPONSE_FINISH_REASONS } = response.stop_reason.as_str() },
                "the model's reply was truncated at the output limit (llm.budget.max_output_tokens)"
            );
        });
    }
}

/// A model call that failed after any retries.
pub(crate) fn chat_failed(span: &Span, error: &ProviderError) {
    failed(span, provider_error_type(error.kind()), error);
}

/// The [`ERROR_TYPE`] of a provider error.
fn provider_error_type(kind: ProviderErrorKind) -> &'static str {
    match kind {
        ProviderErrorKind::Status => "status",
        ProviderErrorKind::Timeout => "timeout",
        ProviderErrorKind::Transport => "transport",
        ProviderErrorKind::Decode => "decode",
        ProviderErrorKind::Stream => "stream",
        ProviderErrorKind::Cancelled => "cancelled",
        ProviderErrorKind::Config => "config",
    }
}

/// A failed model-call attempt that will be retried (retry number `attempt`, from 1, after `wait`).
#[cfg(any(feature = "anthropic", feature = "openai"))]
pub(crate) fn model_retry(attempt: u32, wait: Duration, error: &ProviderError) {
    warn!(
        target: TARGET,
        {
            { RETRY_ATTEMPT } = attempt,
            { RETRY_WAIT_MS } = millis(wait),
            { ERROR_TYPE } = provider_error_type(error.kind()),
            { HTTP_STATUS_CODE } = error.http_status(),
        },
        "retrying the model call: {error}"
    );
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
    )
}

/// An MCP HTTP request refused before it reached the protocol layer.
#[cfg(feature = "mcp")]
pub(crate) fn http_refused(status: u16, why: &str) {
    warn!(target: TARGET, { { HTTP_STATUS_CODE } = status }, "MCP request refused: {why}");
}

/// Content: what a model call sends that earlier calls did not (the system prompt on the first call).
pub(crate) fn content_input(system: Option<&[String]>, added: &[Message]) {
    info!(
        target: CONTENT_TARGET,
        {
            { SYSTEM_INSTRUCTIONS } = system.map(|s| tracing::field::display(Json(s))),
            { INPUT_MESSAGES } = %Json(added),
        },
        "model input"
    );
}

/// Content: the model's reply.
pub(crate) fn content_output(content: &[Block]) {
    info!(target: CONTENT_TARGET, { { OUTPUT_MESSAGES } = %Json(content) }, "model output");
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
