//! The MCP request handler: lifecycle logging, `tools/list`, and `tools/call` with input checks, confirmation,
//! the concurrency bound and the per-call timeout (MCP-5..19).

use super::auth::Caller;
use super::confirm::{self, INPUT_KEY};
use super::events::{Denial, GatedBehavior, McpEvent};
pub(crate) use super::shared::{InFlight, Shared, caller_of};
use super::tasks::Owner;
use crate::config::{ConfirmOverMcp, format_duration};
use crate::dispatch::{Answer, Approval, AuditScope, Gated, Outcome, Ready, Refusal, Surface, SurfacePolicy, dispatch};
use crate::gate::{PROMPT_LIMIT, sanitize};
use crate::policy::SurfaceKind;
use crate::select::SelectedTool;
use crate::telemetry;
use crate::tool::{CallContext, ToolInput, ToolOutput};
use crate::warning::Warning;
use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities, ContentBlock,
    DiscoverResult, ElicitRequest, ElicitRequestParams, ElicitResult, GetTaskParams, GetTaskResult,
    InitializeRequestParams, InitializeResult, InputRequest, InputRequests, InputRequiredResult, ListToolsResult,
    PaginatedRequestParams, ServerConfig, Tool as McpTool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer, ServiceError};
use rmcp::task_manager::TaskContext;
use rmcp::{ErrorData as McpError, ServerHandler};
use std::sync::Arc;
use std::time::Duration;
use tracing::{Instrument, Span};

/// A tool that ignores its [`CallContext`] deadline is abandoned this long after it.
const BACKSTOP_GRACE: Duration = Duration::from_secs(1);

/// One handler per request or session; a cheap handle on [`Shared`].
#[derive(Clone)]
pub(crate) struct Handler(pub(crate) Arc<Shared>);

fn text_result(out: ToolOutput) -> CallToolResponse {
    let is_error = out.is_error();
    let content = vec![ContentBlock::text(out.into_content())];
    if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) }.into()
}

/// A result of a tool that declares an output schema (TYPED-1, TYPED-2): a normal result carries its JSON as
/// `structuredContent` beside the same JSON as text, for clients that do not read typed results. A command's
/// envelope is built from its facts, never re-parsed; a built-in's JSON text is parsed once. Error results carry
/// text only, as the specification allows.
fn typed_result(name: &str, out: ToolOutput) -> CallToolResponse {
    if out.is_error() {
        return text_result(out);
    }
    let structured = match (out.exec_report(), out.exec_output()) {
        (Some(report), Some(output)) => {
            let mut map = serde_json::Map::with_capacity(4);
            map.insert("command".to_owned(), report.command.clone().into());
            map.insert("exit_code".to_owned(), report.exit_code.into());
            map.insert("output".to_owned(), output.into());
            if report.truncated {
                map.insert("truncated".to_owned(), true.into());
            }
            Some(serde_json::Value::Object(map))
        }
        _ => serde_json::from_str::<serde_json::Value>(out.content()).ok().filter(serde_json::Value::is_object),
    };
    let Some(structured) = structured else {
        // A tool that broke its own declaration. A success without `structuredContent` would break the declared
        // schema, which validating clients reject; an error result needs none, and still carries the text.
        tracing::warn!(target: "fisk_ai::serve::mcp", tool = name, "a result that is not a JSON object against the tool's output schema");
        let text =
            format!("tool {name:?} declares an output schema, but its result is not a JSON object: {}", out.content());
        return error_result(text);
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(out.into_content())]);
    result.structured_content = Some(structured);
    result.into()
}

fn error_result(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text.into())]).into()
}

/// Whether the request runs on the 2026-07-28 lifecycle, where the server may not send requests to the client and
/// approval is an `InputRequiredResult` round instead of `elicitation/create`.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// The `mcp.request` span of one request (see [`telemetry`]).
fn request_span(method: &str, tool: Option<&str>, context: &RequestContext<RoleServer>) -> Span {
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let session = parts.and_then(|p| p.headers.get(super::http::SESSION_HEADER)).and_then(|v| v.to_str().ok());
    let protocol = context.protocol_version();
    let span = telemetry::mcp_span(method, tool, session, &context.id, protocol.as_ref().map(|v| v.as_str()));
    if let Some(c) = parts.and_then(|p| p.extensions.get::<Arc<Caller>>()) {
        telemetry::caller(&span, c.subject(), c.client_id());
    }
    #[cfg(feature = "otel")]
    super::caller_trace::continue_caller_trace(&span, context, parts);
    span
}

/// A denial's [`DECLINE_REASON`](telemetry::DECLINE_REASON).
fn denial_reason(why: Denial) -> &'static str {
    match why {
        Denial::Refused => "refused",
        Denial::Dismissed => "dismissed",
        Denial::TimedOut => "timed_out",
        Denial::Failed => "failed",
        Denial::CannotAsk => "cannot_ask",
    }
}

impl Shared {
    fn gated_behavior(&self, caps: Option<&ClientCapabilities>) -> GatedBehavior {
        if self.tools.gated_count() == 0 {
            GatedBehavior::NoneGated
        } else {
            confirm::behavior(self.confirm, confirm::can_elicit(caps))
        }
    }

    fn connected(
        &self,
        client: Option<String>,
        protocol: &str,
        caps: Option<&ClientCapabilities>,
        context: &RequestContext<RoleServer>,
    ) {
        let caller = caller_of(context);
        self.events.emit(&McpEvent::ClientConnected {
            client: client.as_deref(),
            protocol,
            elicitation: confirm::can_elicit(caps),
            gated: self.gated_behavior(caps),
            caller: caller.as_deref(),
        });
    }

    /// The denial text of a gated call, logged as a denial.
    fn denial(
        &self,
        why: Denial,
        call: (&SelectedTool, &str),
        caller: Option<&Caller>,
        detail: Option<&str>,
    ) -> String {
        let (tool, display) = call;
        let name = tool.spec().name();
        // Inside the call's `execute_tool` span.
        telemetry::tool_declined(&Span::current(), denial_reason(why));
        self.events.emit(&McpEvent::Denied { name, display, why, caller });
        let trigger = tool.gate_trigger().unwrap_or_default();
        confirm::denial_text(why, name, display, trigger, self.confirm_timeout, detail)
    }

    fn request(&self, display: &str, trigger: &str) -> ElicitRequestParams {
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: confirm::message(&self.identity, display, trigger),
            requested_schema: self.form.clone(),
        }
    }

    /// Protocols up to 2025-11-25: ask with `elicitation/create` and wait, bounded by the confirmation timeout.
    async fn ask_legacy(
        &self,
        context: &RequestContext<RoleServer>,
        display: &str,
        trigger: &str,
    ) -> Result<(), (Denial, Option<String>)> {
        let params = self.request(display, trigger);
        let asked = context.peer.create_elicitation_with_timeout(params, Some(self.confirm_timeout));
        let answer = tokio::select! {
            r = tokio::time::timeout(self.confirm_timeout, asked) => r,
            _ = context.ct.cancelled() => return Err((Denial::Failed, Some("the call was cancelled".to_owned()))),
            _ = self.calls_cancel.cancelled() => {
                return Err((Denial::Failed, Some("the server is shutting down".to_owned())));
            }
        };
        match answer {
            Ok(Ok(result)) => confirm::judge(&result).map_err(|d| (d, None)),
            Ok(Err(ServiceError::Timeout { .. })) | Err(_) => Err((Denial::TimedOut, None)),
            Ok(Err(e)) => Err((Denial::Failed, Some(e.to_string()))),
        }
    }

    /// Protocol 2026-07-28, second round: the echoed state must name a pending call of this tool with these
    /// arguments, and the answer under [`INPUT_KEY`] must be an explicit approval.
    async fn judge_modern(
        &self,
        request: &CallToolRequestParams,
        state: &str,
        caller: Option<&Caller>,
    ) -> Result<(), (Denial, Option<String>)> {
        let caller = caller.map(super::auth::Principal::of);
        let args = request.arguments.as_ref();
        self.pending.close(state, &request.name, args, caller.as_ref()).await?;
        let Some(answer) = request.input_responses.as_ref().and_then(|r| r.get(INPUT_KEY)) else {
            return Err((Denial::Failed, Some("no answer was sent".to_owned())));
        };
        match serde_json::from_value::<ElicitResult>(answer.clone()) {
            Ok(result) => confirm::judge(&result).map_err(|d| (d, None)),
            Err(e) => Err((Denial::Failed, Some(format!("the answer is not an elicitation result: {e}")))),
        }
    }

    /// A task's approval (TASK-5): the same form, asked in the task's own `input_required` round and answered with
    /// `tasks/update`, bounded by the confirmation timeout.
    async fn ask_task(&self, task: &TaskContext, display: &str, trigger: &str) -> Result<(), (Denial, Option<String>)> {
        let request = InputRequest::Elicitation(ElicitRequest::new(self.request(display, trigger)));
        let answer = tokio::select! {
            r = tokio::time::timeout(self.confirm_timeout, task.request_input(INPUT_KEY, request)) => r,
            () = self.calls_cancel.cancelled() => {
                return Err((Denial::Failed, Some("the server is shutting down".to_owned())));
            }
        };
        match answer {
            Ok(Ok(value)) => match serde_json::from_value::<ElicitResult>(value) {
                Ok(result) => confirm::judge(&result).map_err(|d| (d, None)),
                Err(e) => Err((Denial::Failed, Some(format!("the answer is not an elicitation result: {e}")))),
            },
            Ok(Err(_)) => Err((Denial::Failed, Some("the task was cancelled".to_owned()))),
            Err(_) => Err((Denial::TimedOut, None)),
        }
    }

    /// Run an approved call: the slot is taken only now (MCP-13), the deadline covers only the run (MCP-17).
    async fn run(
        &self,
        call: Ready<'_>,
        display: &str,
        context: &RequestContext<RoleServer>,
        task: Option<&TaskContext>,
    ) -> ToolOutput {
        let request_ct = &context.ct;
        let name = call.name().to_owned();
        let caller = caller_of(context);
        let caller = caller.as_deref();
        // Biased: once shutdown or the client cancelled, a free slot never wins the race.
        let permit = tokio::select! {
            biased;
            _ = self.calls_cancel.cancelled() => None,
            _ = request_ct.cancelled() => None,
            p = self.slots.clone().acquire_owned() => p.ok(),
        };
        let Some(_permit) = permit else {
            if request_ct.is_cancelled() {
                self.events.emit(&McpEvent::Cancelled { name: &name, display, caller });
            }
            return ToolOutput::cancelled(format!("the call of \"{name}\" was cancelled before it ran"));
        };
        self.events.emit(&McpEvent::ToolCall { name: &name, display, caller });
        let token = self.calls_cancel.child_token();
        let mut ctx = CallContext::new().with_timeout(self.tool_timeout).with_cancel(token.clone());
        let reporter = super::progress::Reporter::new(context, call.tool().spec(), task);
        if let Some(tail) = reporter.as_ref().and_then(super::progress::Reporter::tail) {
            ctx = ctx.with_output_tail(tail);
        }
        // PROG-1: reports stop when this is dropped, before the result goes out.
        let _reporting = reporter.map(super::progress::Reporter::start);
        // Dropping a command's call kills its process group, so every early exit below leaves nothing running.
        tokio::select! {
            out = call.run(ctx) => out,
            _ = request_ct.cancelled() => {
                self.events.emit(&McpEvent::Cancelled { name: &name, display, caller });
                ToolOutput::cancelled(format!("the call of \"{name}\" was cancelled by the client"))
            }
            _ = token.cancelled() => ToolOutput::cancelled(format!("the call of \"{name}\" was stopped: the server is shutting down")),
            _ = tokio::time::sleep(self.tool_timeout.saturating_add(BACKSTOP_GRACE)) => {
                let why = "the tool did not finish within tool_timeout and was stopped";
                telemetry::tool_timeout(self.tool_timeout, why);
                ToolOutput::timed_out(format!(
                    "tool \"{name}\" did not finish within {} and was stopped",
                    format_duration(self.tool_timeout)
                ))
            }
        }
    }

    /// MCP-5..19 through the one dispatch path, in the call's `execute_tool` span; `task` when it runs as one.
    pub(crate) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        task: Option<&TaskContext>,
    ) -> CallToolResponse {
        let tool = self.tools.get(&request.name);
        let kind = tool.map(|t| t.spec().kind());
        let span = telemetry::tool_span(&request.name, None, kind, tool.is_some_and(SelectedTool::is_gated));
        if let Some(c) = caller_of(&context) {
            telemetry::caller(&span, c.subject(), c.client_id());
        }
        self.call_in(&span, request, context, task).instrument(span.clone()).await
    }

    /// Checks, then the MCP approver, then the bounded run.
    async fn call_in(
        &self,
        span: &Span,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        task: Option<&TaskContext>,
    ) -> CallToolResponse {
        // Rendered once from the client's arguments; every check and the tool read the same text.
        let input = match &request.arguments {
            Some(args) => ToolInput::from_map(args),
            None => ToolInput::empty(),
        };
        // A key the client repeated, found by the transport before JSON-RPC decoding kept only the last.
        let refused = super::arguments::of(&context);
        if let (Some(super::arguments::RefusedArguments(error)), Some(tool)) = (refused, self.tools.get(&request.name))
        {
            let refusal = Refusal::of_input(tool.spec(), error.clone());
            telemetry::tool_refused(span, &refusal);
            let text = refusal.to_string();
            crate::audit::refused(audit_scope(self, &context), &request.name, input.as_str(), &text).await;
            return error_result(text);
        }
        let mut surface = McpSurface { shared: self, request: &request, context: &context, task, display: None };
        let outcome = dispatch(&mut surface, &self.tools, &request.name, &input).await;
        match outcome {
            Outcome::Refused(refusal) => {
                telemetry::tool_refused(span, &refusal);
                match refusal {
                    Refusal::UnknownTool { name } => {
                        error_result(format!("unknown tool \"{name}\"; tools/list names the tools this server offers"))
                    }
                    refusal => error_result(refusal.to_string()),
                }
            }
            Outcome::Declined(out) => text_result(out),
            Outcome::Halted(response) => {
                telemetry::tool_ended(span, "halted");
                response
            }
            Outcome::Cancelled => {
                telemetry::tool_ended(span, "cancelled");
                error_result(format!("the call of \"{}\" was cancelled before it ran", request.name))
            }
            // CANCEL-1: the client gave up on it; whatever came back is not what it asked for.
            Outcome::Ran(out) if context.ct.is_cancelled() => {
                telemetry::tool_ended(span, "cancelled");
                text_result(out)
            }
            Outcome::Ran(out) => {
                telemetry::tool_ran(span, &out);
                let typed = self.tools.position(&request.name).is_some_and(|i| self.listing.typed(i));
                if typed { typed_result(&request.name, out) } else { text_result(out) }
            }
        }
    }

    /// MCP-8..12: how a gated call is approved on this request's session.
    async fn approve(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        task: Option<&TaskContext>,
        gated: &Gated<'_>,
        display: &str,
    ) -> Approval<CallToolResponse> {
        let (tool, trigger) = (gated.tool, gated.trigger);
        // MCP-9: a legacy session's capabilities are the ones it negotiated at initialize, not per-request
        // metadata; a 2026-07-28 client declares them with each request.
        let negotiated = context.peer.peer_info();
        let capabilities = match (&negotiated, is_modern(context)) {
            (Some(info), false) => Some(info.capabilities.clone()),
            (None, false) => None,
            (_, true) => context.client_capabilities(),
        };
        let caller = caller_of(context);
        let denied = |(why, detail): (Denial, Option<String>)| {
            let text = self.denial(why, (tool, display), caller.as_deref(), detail.as_deref());
            let answer = match why {
                Denial::Refused => Answer::Declined,
                Denial::Dismissed => Answer::Cancelled,
                Denial::TimedOut => Answer::TimedOut,
                Denial::Failed => Answer::Failed,
                Denial::CannotAsk => Answer::NoHuman,
            };
            Approval::Declined(answer, ToolOutput::error(text))
        };
        let behavior = match self.gated_behavior(capabilities.as_ref()) {
            // POL-3: a policy's ask is a human's approval or nothing: never run ungated.
            _ if gated.policy_ask => {
                match confirm::behavior(self.confirm, confirm::can_elicit(capabilities.as_ref())) {
                    GatedBehavior::Asked => GatedBehavior::Asked,
                    _ => GatedBehavior::Refused,
                }
            }
            other => other,
        };
        match behavior {
            GatedBehavior::Asked if let Some(task) = task => self
                .ask_task(task, display, trigger)
                .await
                .map_or_else(denied, |()| Approval::Approved(Answer::Accepted)),
            GatedBehavior::Asked if is_modern(context) => match request.request_state.as_deref() {
                None => Approval::Halt(self.ask_modern(request, (tool, display), caller.as_deref(), trigger).await),
                Some(state) => self
                    .judge_modern(request, state, caller.as_deref())
                    .await
                    .map_or_else(denied, |()| Approval::Approved(Answer::Accepted)),
            },
            GatedBehavior::Asked => self
                .ask_legacy(context, display, trigger)
                .await
                .map_or_else(denied, |()| Approval::Approved(Answer::Accepted)),
            GatedBehavior::Refused => denied((Denial::CannotAsk, None)),
            GatedBehavior::RunUngated | GatedBehavior::NoneGated => {
                if self.confirm == ConfirmOverMcp::Auto {
                    let warning = Warning::UngatedOverMcp {
                        tool: tool.spec().name().to_owned(),
                        command: display.to_owned(),
                        tag: trigger.to_owned(),
                    };
                    telemetry::warning(&warning, false);
                    self.events.emit(&McpEvent::Warning(&warning));
                }
                Approval::Approved(Answer::Ungated)
            }
        }
    }

    /// Protocol 2026-07-28, first round: record the call server-side and ask for approval in an
    /// `InputRequiredResult` whose state is only the record's key.
    async fn ask_modern(
        &self,
        request: &CallToolRequestParams,
        call: (&SelectedTool, &str),
        caller: Option<&Caller>,
        trigger: &str,
    ) -> CallToolResponse {
        let display = call.1;
        let owner = caller.map(super::auth::Principal::of);
        let key = match self.pending.open(&request.name, request.arguments.as_ref(), owner.as_ref()).await {
            Ok(key) => key,
            Err(why) => return error_result(self.denial(Denial::Failed, call, caller, Some(why))),
        };
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(self.request(display, trigger))),
        );
        InputRequiredResult::new(Some(requests), Some(key)).into()
    }
}

/// Who calls on this request, for its records: the token's subject and client, the MCP session (HTTP) and the
/// JSON-RPC request id, each bounded (the client chose them).
pub(super) fn audit_scope(shared: &Shared, context: &RequestContext<RoleServer>) -> Option<AuditScope> {
    let trail = shared.audit.clone()?;
    let caller = caller_of(context);
    let http = context.extensions.get::<axum::http::request::Parts>();
    let session = http.and_then(|p| p.headers.get(super::http::SESSION_HEADER));
    let session = session.and_then(|v| v.to_str().ok()).map(|s| sanitize(s, 128));
    // Over stdio the client is whoever started this process: the local user. Over HTTP, the token's subject, or
    // nobody (an unauthenticated client has no identity to record).
    let subject = match (&caller, http) {
        (Some(c), _) => c.subject().map(str::to_owned),
        (None, None) => Some(crate::audit::local_user()),
        (None, Some(_)) => None,
    };
    let scope = AuditScope::new(trail, SurfaceKind::Mcp)
        .caller(subject)
        .client(caller.as_ref().and_then(|c| c.client_id()).map(str::to_owned))
        .session(session);
    Some(scope.request(Some(sanitize(&context.id.to_string(), 128))))
}

/// One `tools/call` request as a dispatch surface.
struct McpSurface<'a> {
    shared: &'a Shared,
    request: &'a CallToolRequestParams,
    context: &'a RequestContext<RoleServer>,
    /// The task the call runs as, if any.
    task: Option<&'a TaskContext>,
    /// The display line, sanitized once (GATE-8): it reaches the client and the server log.
    display: Option<String>,
}

impl McpSurface<'_> {
    fn display(&mut self, raw: &str) -> String {
        self.display.get_or_insert_with(|| sanitize(raw, PROMPT_LIMIT)).clone()
    }
}

#[async_trait]
impl Surface for McpSurface<'_> {
    type Halt = CallToolResponse;

    /// POL-1: the harness's hook, with the token's subject (or client) as the caller; over stdio, as in the audit
    /// trail, the local user who started this process.
    fn policy(&self) -> Option<SurfacePolicy> {
        let hook = self.shared.policy.clone()?;
        let caller = match caller_of(self.context) {
            Some(c) => c.subject().or(c.client_id()).map(str::to_owned),
            None if self.context.extensions.get::<axum::http::request::Parts>().is_none() => {
                Some(crate::audit::local_user())
            }
            None => None,
        };
        Some(SurfacePolicy::new(hook, SurfaceKind::Mcp, caller))
    }

    /// AUD-1: the token's subject and client, the MCP session and the JSON-RPC request id.
    fn audit(&self) -> Option<AuditScope> {
        audit_scope(self.shared, self.context)
    }

    async fn approve(&mut self, call: &Gated<'_>) -> Approval<CallToolResponse> {
        // POL-4: a rewritten call says so wherever it is shown for approval.
        let rewritten;
        let raw = if call.rewritten {
            rewritten = format!("{} (input rewritten by a policy)", call.display);
            rewritten.as_str()
        } else {
            call.display
        };
        let display = self.display(raw);
        self.shared.approve(self.request, self.context, self.task, call, &display).await
    }

    async fn run(&mut self, call: Ready<'_>) -> ToolOutput {
        let display = self.display(call.display());
        self.shared.run(call, &display, self.context, self.task).await
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        self.0.info.clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let _span = request_span("initialize", None, &context).entered();
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        // Client-supplied text reaches the operator's terminal: sanitized (GATE-8).
        let client = sanitize(&format!("{} {}", request.client_info.name, request.client_info.version), 200);
        self.0.connected(Some(client), result.protocol_version.as_str(), Some(&request.capabilities), &context);
        Ok(result)
    }

    async fn discover(&self, context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        let _span = request_span("server/discover", None, &context).entered();
        let client = context.client_info().map(|c| sanitize(&format!("{} {}", c.name, c.version), 200));
        let protocol = context.protocol_version().map(|v| sanitize(v.as_str(), 64)).unwrap_or_default();
        self.0.connected(client, &protocol, context.client_capabilities().as_ref(), &context);
        Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), self.get_info()))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let _span = request_span("tools/list", None, &context).entered();
        let visible = self.0.visible(caller_of(&context));
        self.0.listing.page(request.as_ref().and_then(|r| r.cursor.as_deref()), visible.as_ref())
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.0.tools.position(name).and_then(|i| self.0.listing.tool(i))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let span = request_span("tools/call", Some(&request.name), &context);
        // Counted here as well as per HTTP request: a stdio session has no HTTP layer, and its end waits for calls.
        let _busy = self.0.in_flight.enter();
        // AUTH-5: a tool the caller's scopes do not cover is not there for this caller.
        if !self.0.shown(&request.name, caller_of(&context).as_deref()) {
            let text = format!("unknown tool \"{}\"; tools/list names the tools this server offers", request.name);
            if self.0.audit.is_some() {
                let input = request.arguments.as_ref().map_or_else(ToolInput::empty, ToolInput::from_map);
                crate::audit::refused(audit_scope(&self.0, &context), &request.name, input.as_str(), &text).await;
            }
            let _span = span.entered();
            return Ok(error_result(text));
        }
        if let Some(response) = super::tasks::start(&self.0, &request, &context).await {
            return Ok(response);
        }
        Ok(self.0.call(request, context, None).instrument(span).await)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let _span = request_span("tasks/get", None, &context).entered();
        self.0.tasks.get(&request.task_id, &Owner::of(&context)).map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let _span = request_span("tasks/update", None, &context).entered();
        self.0.tasks.update(&request.task_id, &Owner::of(&context), request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let _span = request_span("tasks/cancel", None, &context).entered();
        self.0.tasks.cancel(&request.task_id, &Owner::of(&context))
    }
}
