//! The spans and events of model calls (the `chat` span, retries, content), built here where the model's types live
//! so [`telemetry`](crate::telemetry) stays a leaf of names and helpers every layer can use.

use crate::llm::{Block, Message, ProviderError, ProviderErrorKind, Response, StopReason, Usage};
use crate::telemetry::*;
use tracing::field::Empty;
use tracing::{Span, info, info_span, warn};

/// Every input token, cached ones included (the convention's `input_tokens`).
pub(crate) fn input_tokens(usage: &Usage) -> u64 {
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
        { REQUEST_MAX_TOKENS } = max_tokens.map(i64::from),
        { ITERATION } = i64::from(iteration),
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
    span.record(USAGE_INPUT_TOKENS, int(input_tokens(usage)));
    span.record(USAGE_OUTPUT_TOKENS, int(usage.output_tokens));
    span.record(USAGE_CACHE_READ_TOKENS, int(usage.cache_read_tokens));
    span.record(USAGE_CACHE_CREATION_TOKENS, int(usage.cache_creation_tokens));
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
pub(crate) fn model_retry(attempt: u32, wait: std::time::Duration, error: &ProviderError) {
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
