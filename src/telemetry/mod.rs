//! Tracing spans and events, named after the OpenTelemetry GenAI semantic conventions.
//!
//! The crate emits [`tracing`] spans and events where an operator would look; it installs no subscriber. A host
//! that installs one (`tracing-subscriber`'s `fmt`, say) sees them; a host that adds a `tracing-opentelemetry`
//! layer exports them as standard GenAI spans: [`OTEL_NAME`] carries the convention's span name (`chat
//! claude-sonnet-4-6`; a `tracing` span name must be static), and [`OTEL_KIND`] the span kind.
//!
//! # Spans
//!
//! ```text
//! invoke_agent      one Agent::run or Agent::resume              otel.name = "invoke_agent {agent}"
//! ├── chat          one model call (its retries included)        otel.name = "chat {model}", kind client
//! ├── execute_tool  one tool call: checks, approval, the run     otel.name = "execute_tool {tool}"
//! ├── execute_tool
//! └── chat
//!
//! mcp.request       one MCP request served (initialize,          otel.name = "{method} {tool}", kind server
//!                   server/discover, tools/list, tools/call)
//! └── execute_tool  a tools/call's tool call
//! ```
//!
//! Every span is at level `INFO`, with target `fisk_ai::telemetry`.
//!
//! Fields, with the ones recorded when the span ends after the arrow:
//!
//! - `invoke_agent`: [`OPERATION_NAME`] `invoke_agent`, [`AGENT_NAME`] (the configuration's `identity`),
//!   [`PROVIDER_NAME`] and [`SYSTEM`], [`REQUEST_MODEL`], [`CONVERSATION_ID`] (the session id of a checkpointed
//!   run), [`RUN_RESUMED`] → [`USAGE_INPUT_TOKENS`] and [`USAGE_OUTPUT_TOKENS`] (run totals, cumulative across
//!   resumes), [`RUN_OUTCOME`], [`RUN_LLM_CALLS`], [`RUN_TOOL_CALLS`]; for a run that did not succeed
//!   [`ERROR_TYPE`] (its outcome), [`OTEL_STATUS_CODE`] and [`OTEL_STATUS_DESCRIPTION`].
//! - `chat`: [`OPERATION_NAME`] `chat`, [`PROVIDER_NAME`] and [`SYSTEM`], [`REQUEST_MODEL`],
//!   [`REQUEST_MAX_TOKENS`], [`ITERATION`] → [`RESPONSE_MODEL`] and [`RESPONSE_ID`] (when the provider reports
//!   them), [`USAGE_INPUT_TOKENS`] (cached tokens included, as the convention counts them),
//!   [`USAGE_OUTPUT_TOKENS`], [`USAGE_CACHE_READ_TOKENS`], [`USAGE_CACHE_CREATION_TOKENS`],
//!   [`RESPONSE_FINISH_REASONS`]; for a failed call [`ERROR_TYPE`] (the provider error's kind) and the status.
//! - `execute_tool`: [`OPERATION_NAME`] `execute_tool`, [`TOOL_NAME`], [`TOOL_CALL_ID`] (the model's call id; none
//!   over MCP), [`TOOL_TYPE`] (`function`, or `extension` for an imported tool), [`TOOL_KIND`], [`TOOL_GATED`] →
//!   [`TOOL_OUTCOME`]; for a command that ran [`PROCESS_EXIT_CODE`] and [`TOOL_TRUNCATED`]; for an error result
//!   or a refused call [`ERROR_TYPE`] and the status.
//! - `mcp.request`: [`MCP_METHOD_NAME`], [`MCP_SESSION_ID`], [`JSONRPC_REQUEST_ID`], [`MCP_PROTOCOL_VERSION`]
//!   (when known), [`TOOL_NAME`] (`tools/call`); on a server with `auth`, [`ENDUSER_ID`] and [`CLIENT_ID`] (also
//!   on its `execute_tool` span).
//!
//! [`RESPONSE_FINISH_REASONS`] is one string (`tool_use`, `end_turn`, ...): `tracing` has no array values.
//!
//! # Events
//!
//! Inside those spans, with target `fisk_ai::telemetry`:
//!
//! - `WARN` a failed model-call attempt that is retried: [`RETRY_ATTEMPT`], [`RETRY_WAIT_MS`], [`ERROR_TYPE`],
//!   [`HTTP_STATUS_CODE`], and the error in the message;
//! - `WARN` a model-call attempt that timed out (PROV-5): [`TIMEOUT_MS`];
//! - `WARN` a model reply truncated at the output cap (LOOP-6): [`RESPONSE_FINISH_REASONS`];
//! - `WARN` a command killed at its timeout, or an MCP call abandoned after `tool_timeout`: [`TIMEOUT_MS`];
//! - `INFO` a command's output cut to its head and tail (EXEC-12): [`TOOL_TRUNCATED`];
//! - `INFO` a call refused before the gate (unknown tool, missing or invalid arguments): [`REFUSAL`];
//! - `INFO` a gated call declined (by the operator, for want of one, or through MCP elicitation):
//!   [`DECLINE_REASON`];
//! - `WARN` each [`Warning`](crate::Warning) of a run or of the MCP server: [`WARNING_KIND`], and its text in the
//!   message;
//! - `WARN` an MCP HTTP request refused before the protocol (headers, body size, the session cap):
//!   [`HTTP_STATUS_CODE`], and the reason in the message.
//!
//! # Content
//!
//! No field carries a secret, prompt text, model output, tool input or tool output by default: spans hold
//! names, ids, counts and outcomes. The two warnings whose text quotes a call's arguments (`invalid_arguments`,
//! `ungated_over_mcp`) carry only their kind unless content is on.
//!
//! That promise covers this crate's spans and events. rmcp, which serves MCP, logs each whole message (arguments
//! included) in its own `TRACE` events with target `rmcp`; a filter such as `rmcp=info` keeps them out.
//!
//! [`AgentBuilder::trace_content`](crate::agent::AgentBuilder::trace_content) turns content on for an agent's
//! runs: events with target [`CONTENT_TARGET`] at level `INFO` then carry the system prompt
//! ([`SYSTEM_INSTRUCTIONS`], on the first call), the messages each model call adds ([`INPUT_MESSAGES`]: the
//! prompt, then the tool results; earlier ones are in earlier `chat` spans), the model's reply
//! ([`OUTPUT_MESSAGES`]), and each tool call's resolved command line ([`TOOL_DISPLAY`]), arguments
//! ([`TOOL_CALL_ARGUMENTS`]) and result ([`TOOL_CALL_RESULT`]). Messages are JSON in the session journal's block
//! format, serialized only when a subscriber takes the event.
//!
//! # Exporting to OpenTelemetry
//!
//! With the `otel` feature, [`otel::install`] exports these spans over OTLP/HTTP (protobuf) in one call, configured
//! by the standard `OTEL_*` variables, and [`otel::OtlpExport::layer`] adds the same export to a host's own
//! subscriber. With it the MCP server also continues a caller's W3C trace context and calls to imported MCP
//! servers carry ours (OTEL-1..8; see [`otel`]).
//!
//! ```no_run
//! # #[cfg(feature = "otel")]
//! # fn main() -> fisk_ai::Result<()> {
//! let _export = fisk_ai::telemetry::otel::install()?; // flushes when dropped
//! # Ok(()) }
//! # #[cfg(not(feature = "otel"))]
//! # fn main() {}
//! ```
//!
//! Without the feature, a host adds `tracing-opentelemetry` and an exporter itself and installs its layer next to
//! any other; the span names and kinds above are already in the fields it reads.
//!
//! `examples/telemetry.rs` runs one scripted run under a `fmt` subscriber: `cargo run --example telemetry`.

// Trace context only crosses MCP, so without `mcp` there is nothing to carry it.
#[cfg(all(feature = "otel", feature = "mcp"))]
mod context;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel;
mod spans;

#[cfg(all(feature = "otel", feature = "mcp"))]
pub(crate) use context::{TRACEPARENT, TRACESTATE, continue_trace, current as current_trace_context};
pub(crate) use spans::*;

/// The target of every span and event but the content events.
pub const TARGET: &str = "fisk_ai::telemetry";
/// The target of the content events, on only with
/// [`AgentBuilder::trace_content`](crate::agent::AgentBuilder::trace_content); a filter can drop them apart.
pub const CONTENT_TARGET: &str = "fisk_ai::content";

/// The span of one agent run.
pub const RUN_SPAN: &str = "invoke_agent";
/// The span of one model call.
pub const CHAT_SPAN: &str = "chat";
/// The span of one tool call.
pub const TOOL_SPAN: &str = "execute_tool";
/// The span of one MCP request served.
pub const MCP_SPAN: &str = "mcp.request";

/// The span name OpenTelemetry exporters use (`tracing-opentelemetry`'s special field).
pub const OTEL_NAME: &str = "otel.name";
/// The span kind (`client`, `server`; internal when absent).
pub const OTEL_KIND: &str = "otel.kind";
/// `error` on a failed span.
pub const OTEL_STATUS_CODE: &str = "otel.status_code";
/// What failed, with [`OTEL_STATUS_CODE`].
pub const OTEL_STATUS_DESCRIPTION: &str = "otel.status_description";

/// `invoke_agent`, `chat` or `execute_tool`.
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
/// The provider id: `anthropic`, `openai`, or a host provider's.
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
/// The provider id under its older convention name, for backends that predate [`PROVIDER_NAME`].
pub const SYSTEM: &str = "gen_ai.system";
/// The agent's name: the configuration's `identity`.
pub const AGENT_NAME: &str = "gen_ai.agent.name";
/// The session id of a checkpointed run.
pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// The model asked for.
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// The output cap asked for (`llm.budget.max_output_tokens`), when set.
pub const REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// The model that answered, when the provider reports it.
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
/// The provider's id of the reply, when it reports one.
pub const RESPONSE_ID: &str = "gen_ai.response.id";
/// Why the model stopped (one stop reason).
pub const RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// Input tokens, cached ones included.
pub const USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// Output tokens.
pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// Input tokens read from the prompt cache.
pub const USAGE_CACHE_READ_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// Input tokens written to the prompt cache.
pub const USAGE_CACHE_CREATION_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
/// The tool's name.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// The model's id of the call.
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `function` (runs here), or `extension` (an imported tool, run elsewhere).
pub const TOOL_TYPE: &str = "gen_ai.tool.type";
/// A failure's class: a provider error kind, a run's terminal reason, `tool_error`, a refusal.
pub const ERROR_TYPE: &str = "error.type";
/// A command tool's exit status (`-1` when a signal ended it).
pub const PROCESS_EXIT_CODE: &str = "process.exit.code";
/// The HTTP status of a failed attempt or a refused MCP request.
pub const HTTP_STATUS_CODE: &str = "http.response.status_code";

/// The MCP method (`tools/call`, `tools/list`, `initialize`, ...).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
/// The MCP session, when the request carries one.
pub const MCP_SESSION_ID: &str = "mcp.session.id";
/// The negotiated MCP protocol version, when known.
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// The JSON-RPC request id.
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";

/// The model-call number within the run, from 1.
pub const ITERATION: &str = "fisk_ai.iteration";
/// Whether the run continues a suspended session.
pub const RUN_RESUMED: &str = "fisk_ai.run.resumed";
/// How the run ended: `completed`, `suspended`, `error`, `budget`, `max_iterations`.
pub const RUN_OUTCOME: &str = "fisk_ai.run.outcome";
/// Model calls made (cumulative across resumes).
pub const RUN_LLM_CALLS: &str = "fisk_ai.run.llm_calls";
/// Tool calls dispatched (cumulative across resumes).
pub const RUN_TOOL_CALLS: &str = "fisk_ai.run.tool_calls";
/// `command`, `builtin`, `custom` or `imported`.
pub const TOOL_KIND: &str = "fisk_ai.tool.kind";
/// Whether the tool needs approval.
pub const TOOL_GATED: &str = "fisk_ai.tool.gated";
/// The caller's token subject (`sub`), on an MCP server with `auth` (AUTH-8).
pub const ENDUSER_ID: &str = "enduser.id";
/// The caller's token client id (`client_id`, else `azp`), on an MCP server with `auth` (AUTH-8).
pub const CLIENT_ID: &str = "fisk_ai.client_id";
/// How the call ended: `ran`, `refused`, `declined`, `halted`, `cancelled`.
pub const TOOL_OUTCOME: &str = "fisk_ai.tool.outcome";
/// Whether a command's output was cut to its head and tail.
pub const TOOL_TRUNCATED: &str = "fisk_ai.tool.truncated";
/// Why a call was refused before the gate: `unknown_tool`, `missing_required`, `invalid_arguments`.
pub const REFUSAL: &str = "fisk_ai.refusal";
/// Why a gated call was declined.
pub const DECLINE_REASON: &str = "fisk_ai.decline.reason";
/// The retry number, from 1.
pub const RETRY_ATTEMPT: &str = "fisk_ai.retry.attempt";
/// The wait before the retry, in milliseconds.
pub const RETRY_WAIT_MS: &str = "fisk_ai.retry.wait_ms";
/// The timeout that expired, in milliseconds.
pub const TIMEOUT_MS: &str = "fisk_ai.timeout_ms";
/// A warning's kind ([`Warning::kind`](crate::Warning::kind)).
pub const WARNING_KIND: &str = "fisk_ai.warning.kind";

/// Content (opt-in): the system prompt segments, JSON.
pub const SYSTEM_INSTRUCTIONS: &str = "gen_ai.system_instructions";
/// Content (opt-in): the messages a model call adds to the conversation, JSON.
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// Content (opt-in): the model's reply, JSON.
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// Content (opt-in): a tool call's arguments, as the model wrote them.
pub const TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// Content (opt-in): a tool call's result, as the model reads it.
pub const TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
/// Content (opt-in): a tool call's resolved command line or summary (EXEC-6).
pub const TOOL_DISPLAY: &str = "fisk_ai.tool.display";
