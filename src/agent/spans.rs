//! The `invoke_agent` span of one run: built here, where the run's types live (see [`telemetry`](crate::telemetry)).

use super::{RunStats, TerminalReason};
use crate::llm::spans::input_tokens;
use crate::telemetry::*;
use tracing::Span;
use tracing::field::Empty;
use tracing::info_span;

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
    span.record(USAGE_INPUT_TOKENS, int(input_tokens(&stats.usage)));
    span.record(USAGE_OUTPUT_TOKENS, int(stats.usage.output_tokens));
    span.record(RUN_OUTCOME, reason.as_str());
    span.record(RUN_LLM_CALLS, i64::from(stats.llm_calls));
    span.record(RUN_TOOL_CALLS, i64::from(stats.tool_calls));
    if !reason.is_success()
        && let Some(error) = error
    {
        failed(span, reason.as_str(), error);
    }
}
