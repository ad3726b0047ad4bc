//! LOOP-10 on the agent surface: one tool call through the [dispatch path](crate::dispatch), with the agent's
//! approver (GATE-6..14: recorded answers, allowances, the `ConfirmGate`, the journal) and events.

use super::{Dispatch, Ended, Run};
use crate::agent::events::RunEvent;
use crate::agent::search::{self, Route, SEARCH_TOOLS};
use crate::dispatch::{self, Answer, Approval, AuditScope, Gated, Outcome, Ready, Refusal, Surface, SurfacePolicy};
use crate::gate::{ConfirmRequest, Decision, DeclineReason, Remember, call_digest, declined};
use crate::llm::Block;
use crate::policy::SurfaceKind;
use crate::select::SelectedTool;
use crate::session::{ConfirmChoice, ConfirmRecord, Payload};
use crate::telemetry;
use crate::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput};
use crate::warning::Warning;
use async_trait::async_trait;
use std::sync::Arc;
use tracing::{Instrument, Span};

/// What ends a call at the agent's gate instead of a result.
pub(super) enum Halt {
    /// The approval prompt was interrupted (GATE-12).
    Abort,
    /// The answer could not be journaled (SESS-33).
    Failed(Ended),
}

/// The agent as a dispatch surface, for one call.
struct AgentSurface<'r, 'a> {
    run: &'r mut Run<'a>,
    id: &'r str,
}

#[async_trait]
impl Surface for AgentSurface<'_, '_> {
    type Halt = Halt;

    /// Selection decided that this tool may run and how it is gated; per-run state lives in the run's instance.
    fn instance<'t>(&'t self, selected: &'t SelectedTool) -> &'t Arc<dyn Tool> {
        let name = selected.spec().name();
        self.run.run_tools.iter().find(|t| t.spec().name() == name).unwrap_or(selected.tool())
    }

    /// GATE-6 order: a recorded answer for this call (GATE-14), the allowance (for the tool, or for these exact
    /// arguments: EXACT-1), no operator, cancelled, ask.
    async fn approve(&mut self, call: &Gated<'_>) -> Approval<Halt> {
        let (run, id) = (&mut *self.run, self.id);
        let name = call.tool.spec().name();
        let recorded = run.answers.get(id).copied();
        // The input is digested only when an exact allowance could match or be given.
        let digest = || call_digest(call.arguments, call.display);
        // POL-3: a policy's ask is never covered by a tool-wide allowance, only by one for these exact arguments.
        let tool_wide = !call.policy_ask && run.approvals.is_allowed(name);
        if recorded.is_none() {
            if tool_wide {
                return Approval::Approved(Answer::Allowance);
            }
            if run.approvals.has_exact(name) && run.approvals.is_allowed_exact(name, &digest()) {
                return Approval::Approved(Answer::AllowanceExact);
            }
        }
        let gate = &run.inner.gate;
        let refusal = match recorded {
            Some(ConfirmChoice::Once | ConfirmChoice::Always | ConfirmChoice::AlwaysExact) => Ok(Answer::Recorded),
            Some(_) => Err(DeclineReason::Operator),
            None if !gate.can_ask() => Err(DeclineReason::NoOperator),
            None if run.cancel.is_cancelled() => Err(DeclineReason::Cancelled),
            None => match ask(run, id, call, name, digest).await {
                Ok(refusal) => refusal,
                Err(halt) => return Approval::Halt(halt),
            },
        };
        match refusal {
            Err(reason) => {
                let (why, answer) = match reason {
                    DeclineReason::Operator => ("operator", Answer::Declined),
                    DeclineReason::NoOperator => ("no_operator", Answer::NoHuman),
                    DeclineReason::Cancelled => ("cancelled", Answer::Cancelled),
                };
                // Inside the call's `execute_tool` span.
                telemetry::tool_declined(&Span::current(), why);
                Approval::Declined(answer, declined(reason))
            }
            Ok(answer) => Approval::Approved(answer),
        }
    }

    /// POL-1: the harness's hook, for the model's calls, made for the local user who runs the agent (as in the
    /// audit trail).
    fn policy(&self) -> Option<SurfacePolicy> {
        let hook = self.run.inner.policy.clone()?;
        Some(SurfacePolicy::new(hook, SurfaceKind::Agent, Some(crate::audit::local_user())))
    }

    /// AUD-1: the local operator's calls, by session and tool-use id.
    fn audit(&self) -> Option<AuditScope> {
        let trail = self.run.inner.audit.clone()?;
        let session = self.run.checkpoint.as_ref().map(|c| c.id.to_string());
        let scope = AuditScope::new(trail, SurfaceKind::Agent).caller(Some(crate::audit::local_user()));
        Some(scope.session(session).request(Some(self.id.to_owned())))
    }

    /// Never spawn for a cancelled run (the loop ends at its next check).
    fn cancelled(&self) -> bool {
        self.run.cancel.is_cancelled()
    }

    async fn run(&mut self, call: Ready<'_>) -> ToolOutput {
        let spec = call.tool().spec();
        let (kind, origin) = (spec.kind(), spec.origin());
        if self.run.inner.trace_content {
            telemetry::content_tool_display(call.display());
        }
        self.run.emit(RunEvent::ToolCall { id: self.id, name: call.name(), kind, origin, display: call.display() });
        call.run(CallContext::new().with_cancel(self.run.cancel.child_token())).await
    }
}

/// Ask the gate, journal the answer (GATE-13: before the command runs or the denial is recorded), and remember an
/// allowance; the answer, or what refuses the call.
async fn ask(
    run: &mut Run<'_>,
    id: &str,
    call: &Gated<'_>,
    name: &str,
    digest: impl Fn() -> String,
) -> Result<Result<Answer, DeclineReason>, Halt> {
    let remember = run.inner.config.harness.approvals.remember;
    // POL-4: the operator approves the rewritten call and is told it was rewritten.
    let line = if call.rewritten {
        format!("{} (input rewritten by a policy)", call.display)
    } else {
        call.display.to_owned()
    };
    let session = run.checkpoint.as_ref().map(|c| c.id.to_string());
    let req = ConfirmRequest::new(name, call.tool.spec().display_path(), &line, call.trigger)
        .with_input(call.arguments.clone())
        .with_remember(remember)
        .with_call(session.as_deref(), id);
    let choice = match run.inner.gate.confirm(&req).await {
        Decision::Once => ConfirmChoice::Once,
        // EXACT-2: under `remember: exact` an answer for any arguments covers only these.
        Decision::ForConversation if remember == Remember::Tool => ConfirmChoice::Always,
        Decision::ForConversation | Decision::ForConversationExact => ConfirmChoice::AlwaysExact,
        Decision::Abort => return Err(Halt::Abort),
        _ => ConfirmChoice::Decline,
    };
    let exact = (choice == ConfirmChoice::AlwaysExact).then(digest);
    if run.checkpointed() {
        let mut answer = ConfirmRecord::answer(choice, id, name, call.display, call.trigger);
        if let Some(digest) = &exact {
            answer = answer.with_input_digest(digest.clone());
        }
        run.record(Payload::Confirm(answer)).await.map_err(Halt::Failed)?;
    }
    match (choice, exact) {
        (ConfirmChoice::Once, _) => Ok(Ok(Answer::Once)),
        (ConfirmChoice::Always, _) => {
            run.approvals.allow(name);
            run.emit(RunEvent::Allowed { name, command: &req.command });
            Ok(Ok(Answer::Conversation))
        }
        (ConfirmChoice::AlwaysExact, Some(digest)) => {
            run.approvals.allow_exact(name, digest);
            run.emit(RunEvent::AllowedExact { name, command: &req.command });
            Ok(Ok(Answer::Exact))
        }
        _ => Ok(Err(DeclineReason::Operator)),
    }
}

impl Run<'_> {
    /// LOOP-10 for one call, then its result journaled (SESS-8) before the next call starts.
    pub(super) async fn dispatch(&mut self, id: &str, name: &str, input: &ToolInput) -> Dispatch {
        // A cancelled checkpointed run stops between calls without recording anything for this one, so a resume
        // runs it; nothing is spawned with an already-cancelled token.
        if self.checkpointed() && self.cancel.is_cancelled() {
            return Dispatch::Cancelled;
        }
        self.stats.tool_calls += 1;
        // Client-side search: a `call_tool` is the named tool's call from here on (validation, gate, journal,
        // trace and statistics are the real tool's).
        let routed = if self.inner.client_search { search::route(name, input) } else { Route::Direct };
        let (name, input) = match &routed {
            Route::Direct => (name, input),
            Route::To { name, input } => (name.as_str(), input),
            Route::Bad(text) => {
                let span = telemetry::tool_span(name, Some(id), None, false);
                telemetry::tool_ended(&span, "refused");
                crate::audit::refused(AgentSurface { run: self, id }.audit(), name, input.as_str(), text).await;
                self.emit(RunEvent::ToolRefused { id, name, reason: text });
                return self.finish_call(Block::tool_result(id, text.clone(), true), false).instrument(span).await;
            }
        };
        let selected = self.inner.callable.get(name);
        let kind = selected.map(|t| t.spec().kind());
        let span = telemetry::tool_span(name, Some(id), kind, selected.is_some_and(|t| t.is_gated()));
        let routed = matches!(routed, Route::To { .. });
        self.dispatch_in(&span, id, name, input, routed).instrument(span.clone()).await
    }

    /// [`dispatch`](Self::dispatch) once the call is routed, inside its `execute_tool` span.
    async fn dispatch_in(&mut self, span: &Span, id: &str, name: &str, input: &ToolInput, routed: bool) -> Dispatch {
        if self.inner.trace_content {
            telemetry::content_tool_arguments(input);
        }
        let kind = self.inner.callable.get(name).map(|t| t.spec().kind());
        let remote = kind == Some(ToolKind::Imported);
        if remote {
            self.stats.remote_tool_calls += 1;
        }
        let toolset = &self.inner.callable;
        let outcome = dispatch::dispatch(&mut AgentSurface { run: self, id }, toolset, name, input).await;
        let block = match outcome {
            Outcome::Refused(refusal) => {
                telemetry::tool_refused(span, &refusal);
                self.refused(&refusal);
                let text = match refusal {
                    Refusal::UnknownTool { name } if routed => {
                        format!("unknown tool \"{name}\": call_tool runs only tools that {SEARCH_TOOLS} finds")
                    }
                    refusal => refusal.to_string(),
                };
                self.emit(RunEvent::ToolRefused { id, name, reason: &text });
                Block::tool_result(id, text, true)
            }
            Outcome::Declined(out) => {
                self.emit(RunEvent::ToolDeclined { id, name, reason: out.content() });
                Block::tool_result(id, out.into_content(), false)
            }
            Outcome::Halted(halt) => {
                telemetry::tool_ended(span, "halted");
                return match halt {
                    Halt::Abort => Dispatch::Abort,
                    Halt::Failed(end) => Dispatch::Failed(end),
                };
            }
            Outcome::Cancelled => {
                telemetry::tool_ended(span, "cancelled");
                if self.checkpointed() {
                    return Dispatch::Cancelled;
                }
                Block::tool_result(id, format!("not run: {}", self.cancel_text()), true)
            }
            Outcome::Ran(output) => {
                telemetry::tool_ran(span, &output);
                // A call cut short by cancellation is not a result: a resume runs it again (at most once, SESS-15).
                if self.cancel.is_cancelled() && self.checkpointed() {
                    return Dispatch::Cancelled;
                }
                if self.inner.trace_content {
                    telemetry::content_tool_result(output.content());
                }
                let kind = kind.unwrap_or(ToolKind::Custom);
                self.emit(RunEvent::ToolResult { id, name, kind, output: &output });
                let is_error = output.is_error();
                Block::tool_result(id, output.into_content(), is_error)
            }
        };
        self.finish_call(block, remote).await
    }

    /// SESS-8: the call's result is journaled before the next call starts.
    async fn finish_call(&mut self, block: Block, remote: bool) -> Dispatch {
        match self.record_result(block, remote).await {
            Ok(block) => Dispatch::Result(block),
            Err(end) => Dispatch::Failed(end),
        }
    }

    /// TOOL-21, LOOP-10, EXEC-3: the operator hears about a refused call; it has no call or result event.
    fn refused(&self, refusal: &Refusal) {
        let w = match refusal {
            Refusal::UnknownTool { name } => Warning::UnknownTool { name: name.clone() },
            Refusal::Missing(m) => Warning::MissingRequired { tool: m.tool.clone(), missing: m.missing.clone() },
            Refusal::Invalid { tool, error, .. } => {
                Warning::InvalidArguments { tool: tool.clone(), reason: error.to_string() }
            }
            Refusal::Unrecorded { tool, reason } => {
                Warning::AuditUnwritten { tool: tool.clone(), error: reason.clone() }
            }
        };
        self.emit(RunEvent::Warning(&w));
    }
}
