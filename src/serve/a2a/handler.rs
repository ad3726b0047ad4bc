//! One request on either endpoint: the A2A-10 intake checks, then discovery's card or a tool call through the one
//! dispatch path with nobody to approve.

use super::card::CardBody;
use super::events::{A2aEvent, A2aEventSink};
use crate::config::format_duration;
use crate::dispatch::{Answer, Approval, AuditScope, Gated, Outcome, Ready, Refusal, Surface, SurfacePolicy, dispatch};
use crate::gate::sanitize;
use crate::nats::wire::{self, ExecResult, MessageKind, Rejection, ToolReply, ToolReplyBody};
use crate::policy::SurfaceKind;
use crate::select::Toolset;
use crate::tool::{CallContext, ToolOutput};
use async_nats::service::Request;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// A command that ignores its deadline still gets its reply this long after it.
const BACKSTOP_GRACE: Duration = Duration::from_secs(1);

/// Longest display line reaching the server's log.
const DISPLAY_LIMIT: usize = 2000;

/// What every request handler shares.
pub(crate) struct Shared {
    /// The harness's policy hook (POL-1).
    pub(crate) policy: Option<Arc<dyn crate::policy::PolicyHook>>,
    /// The harness's audit trail (AUD-1).
    pub(crate) audit: Option<Arc<crate::audit::AuditTrail>>,
    pub(crate) identity: String,
    pub(crate) tools: Toolset,
    pub(crate) card: CardBody,
    pub(crate) tool_timeout: Duration,
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) events: Arc<dyn A2aEventSink>,
    /// Cancelled when the grace period after a shutdown has passed: calls still running are stopped.
    pub(crate) calls_cancel: CancellationToken,
    /// Places for admitted calls waiting for a slot (`expose.agent.a2a.queue`, A2A-14).
    pub(crate) waiting: Arc<Semaphore>,
    /// The connection's inbox prefix with its trailing dot (`_INBOX.` or the context's own, A2A-15).
    pub(crate) inbox_prefix: String,
    /// `expose.agent.a2a.any_reply_subject`.
    pub(crate) any_reply_subject: bool,
}

/// A tool request that passed intake.
pub(crate) type Call = wire::Inbound;

impl Shared {
    /// Answer a discovery request (or refuse it, A2A-10). A publish without a reply subject is dropped.
    pub(crate) async fn discovery(&self, request: &Request) {
        if !self.answerable(request, "discovery") {
            return;
        }
        let decoded = MessageKind::DiscoveryRequest
            .decode(&request.message.payload)
            .and_then(wire::typed::<wire::DiscoveryRequest>);
        match decoded {
            Ok(message) => respond(request, self.card.reply(&message.header, &self.identity)).await,
            Err(rejection) => self.reject(request, "discovery", &rejection).await,
        }
    }

    /// A2A-10 then the unknown-tool check, both before a slot is taken. `None` when the request was answered.
    pub(crate) async fn intake(&self, request: &Request) -> Option<Call> {
        // Nobody could read the result, so nothing runs: a plain publish takes no slot and starts no command.
        if !self.answerable(request, "tool") {
            return None;
        }
        let call = match wire::tool_request(&request.message.payload) {
            Ok(call) => call,
            Err(rejection) => {
                self.reject(request, "tool", &rejection).await;
                return None;
            }
        };
        let Some(tool) = self.tools.get(&call.name) else {
            let output = format!("tool {:?} is not available", call.name);
            self.record_refusal(&call, &output);
            respond(request, self.reply(&call, ToolReplyBody { is_error: true, output, exec: None })).await;
            return None;
        };
        // A key given twice in the input: refused in band, naming it, as every surface refuses it (EXEC-3).
        if let Some(key) = &call.duplicate {
            let output = Refusal::duplicate(tool.spec(), key).to_string();
            self.record_refusal(&call, &output);
            respond(request, self.reply(&call, error(output))).await;
            return None;
        }
        Some(call)
    }

    /// Run an admitted call holding `permit`, and answer it.
    pub(crate) async fn call(&self, request: &Request, call: Call, permit: OwnedSemaphorePermit) {
        // The schema holds the name to [a-zA-Z0-9_-]; only its length is the peer's choice.
        let caller = sanitize(&call.sender, 128);
        let request_id = sanitize(&call.request, 128);
        let mut surface = A2aSurface { shared: self, caller: &caller, request: &request_id };
        let outcome = dispatch(&mut surface, &self.tools, &call.name, &call.input).await;
        drop(permit);
        let body = match outcome {
            Outcome::Ran(out) => body(out),
            Outcome::Refused(Refusal::UnknownTool { name }) => error(format!("tool {name:?} is not available")),
            Outcome::Refused(refusal) => error(refusal.to_string()),
            Outcome::Declined(out) => error(out.into_content()),
            Outcome::Halted(never) => match never {},
            Outcome::Cancelled => {
                error(format!("the call of {:?} was stopped: the server is shutting down", call.name))
            }
        };
        respond(request, self.reply(&call, body)).await;
    }

    /// A2A-15: whether `request` may be answered, and so run. A plain publish (no reply subject) is dropped; a reply
    /// subject outside the connection's inbox prefix is refused unseen, unless `any_reply_subject` is on: publishing
    /// a reply onto another agent's tool subject would be a request this server forged for the sender.
    fn answerable(&self, request: &Request, endpoint: &'static str) -> bool {
        let Some(reply) = request.message.reply.as_deref() else { return false };
        if self.any_reply_subject || reply.starts_with(&self.inbox_prefix) {
            return true;
        }
        let shown = sanitize(reply, 256);
        self.events.emit(&A2aEvent::ReplyRefused { endpoint, reply_subject: &shown });
        crate::telemetry::a2a_reply_refused(endpoint, &shown, &self.inbox_prefix);
        false
    }

    /// AUD-1: `call`, refused before the dispatch path saw it, recorded (`requested`, then `refused` with
    /// `reason`) off the intake loop, so a flood of refusals never stalls other requests on the trail.
    fn record_refusal(&self, call: &Call, reason: &str) {
        let Some(trail) = self.audit.clone() else { return };
        let caller = sanitize(&call.sender, 128);
        let scope = AuditScope::new(trail, SurfaceKind::A2a).caller(Some(caller));
        let scope = scope.request(Some(sanitize(&call.request, 128)));
        let (name, input, reason) = (call.name.clone(), call.input.clone(), reason.to_owned());
        tokio::spawn(async move { crate::audit::refused(Some(scope), &name, input.as_str(), &reason).await });
    }

    /// A2A-14: no slot and no place in the queue: the framework's `503` error reply at once, never a silent drop.
    pub(crate) async fn refuse_busy(&self, request: &Request, call: Call) {
        let description = format!("busy, retry: every slot and queue place is taken; {:?} was not run", call.name);
        self.record_refusal(&call, &description);
        self.events.emit(&A2aEvent::Rejected { endpoint: "tool", code: 503, description: &description });
        crate::telemetry::a2a_busy(&call.name);
        let error = async_nats::service::error::Error { status: description, code: 503 };
        if let Err(e) = request.respond(Err(error)).await {
            tracing::debug!("a2a: the 503 reply could not be sent: {e}");
        }
    }

    /// A call admitted as the server began shutting down: answered, never run.
    pub(crate) async fn refuse_stopping(&self, request: &Request, call: Call) {
        let output = format!("the call of {:?} was not run: the server is shutting down", call.name);
        self.record_refusal(&call, &output);
        respond(request, self.reply(&call, error(output))).await;
    }

    /// The encoded reply; one over the limit peers accept (a huge resolved command line) becomes an error reply
    /// saying so, since the caller would refuse it anyway (A2A-10).
    fn reply(&self, to: &Call, body: ToolReplyBody) -> Vec<u8> {
        let header = wire::Header::reply_to(MessageKind::ToolReply, to.origin(), &self.identity);
        let reply = ToolReply { header, body };
        let bytes = wire::encode(&reply);
        if bytes.len() <= wire::MAX_MESSAGE_BYTES {
            return bytes;
        }
        let why = format!(
            "the reply would be {} bytes, over the {} bytes peers accept",
            bytes.len(),
            wire::MAX_MESSAGE_BYTES
        );
        wire::encode(&ToolReply { header: reply.header, body: error(why) })
    }

    /// The services framework's error reply: code 400 and the description (A2A-10).
    async fn reject(&self, request: &Request, endpoint: &'static str, rejection: &Rejection) {
        let description = rejection.to_string();
        self.events.emit(&A2aEvent::Rejected { endpoint, code: 400, description: &description });
        let error = async_nats::service::error::Error { status: description, code: 400 };
        if let Err(e) = request.respond(Err(error)).await {
            tracing::debug!("a2a: the 400 reply could not be sent: {e}");
        }
    }
}

async fn respond(request: &Request, bytes: Vec<u8>) {
    if let Err(e) = request.respond(Ok(bytes.into())).await {
        tracing::debug!("a2a: the reply could not be sent: {e}");
    }
}

fn error(output: String) -> ToolReplyBody {
    ToolReplyBody { is_error: true, output, exec: None }
}

/// A2A-9: a command that ran sends its captured text and what ran; anything else its text.
fn body(out: ToolOutput) -> ToolReplyBody {
    let is_error = out.is_error();
    match out.into_exec() {
        Ok((report, output)) => ToolReplyBody {
            is_error,
            output,
            exec: Some(ExecResult {
                command: report.command,
                exit_code: i64::from(report.exit_code),
                truncated: report.truncated,
            }),
        },
        Err(out) => ToolReplyBody { is_error, output: out.into_content(), exec: None },
    }
}

/// One tool request as a dispatch surface: gated tools are never served, so any approval is refused.
struct A2aSurface<'a> {
    shared: &'a Shared,
    caller: &'a str,
    request: &'a str,
}

#[async_trait]
impl Surface for A2aSurface<'_> {
    type Halt = std::convert::Infallible;

    /// POL-1: the harness's hook, with the calling peer's identity.
    fn policy(&self) -> Option<SurfacePolicy> {
        let hook = self.shared.policy.clone()?;
        Some(SurfacePolicy::new(hook, SurfaceKind::A2a, Some(self.caller.to_owned())))
    }

    /// AUD-1: the calling peer's identity (claimed, as the a2a protocol has it) and its request id.
    fn audit(&self) -> Option<AuditScope> {
        let trail = self.shared.audit.clone()?;
        let scope = AuditScope::new(trail, SurfaceKind::A2a).caller(Some(self.caller.to_owned()));
        Some(scope.request(Some(self.request.to_owned())))
    }

    async fn approve(&mut self, call: &Gated<'_>) -> Approval<Self::Halt> {
        Approval::Declined(
            Answer::NoHuman,
            ToolOutput::error(format!(
                "tool {:?} needs an operator's approval, which cannot be given over a2a",
                call.tool.spec().name()
            )),
        )
    }

    fn cancelled(&self) -> bool {
        self.shared.calls_cancel.is_cancelled()
    }

    async fn run(&mut self, call: Ready<'_>) -> ToolOutput {
        let name = call.name().to_owned();
        let display = sanitize(call.display(), DISPLAY_LIMIT);
        self.shared.events.emit(&A2aEvent::ToolCall { name: &name, display: &display, caller: self.caller });
        let timeout = self.shared.tool_timeout;
        let token = self.shared.calls_cancel.child_token();
        let ctx = CallContext::new().with_timeout(timeout).with_cancel(token.clone());
        // Dropping a command's call kills its process group, so the early exits leave nothing running.
        tokio::select! {
            out = call.run(ctx) => out,
            _ = token.cancelled() => {
                ToolOutput::cancelled(format!("the call of {name:?} was stopped: the server is shutting down"))
            }
            _ = tokio::time::sleep(timeout.saturating_add(BACKSTOP_GRACE)) => ToolOutput::timed_out(format!(
                "tool {name:?} did not finish within {} and was stopped",
                format_duration(timeout)
            )),
        }
    }
}
