//! The one call path (DESIGN §4.1): every surface (the agent loop, the MCP server, a2a) runs a tool call through
//! [`dispatch`], which takes it through the same steps in the same order:
//!
//! 1. lookup in the [`Toolset`];
//! 2. parse the input once (a duplicate key at any depth is refused);
//! 3. the required check (TOOL-18..21);
//! 4. full schema validation, naming the property (EXEC-3);
//! 5. the display line, with whatever the call reuses built once ([`Tool::prepare`]: a command's argv);
//! 6. for a gated tool, the surface's approver ([`Surface::approve`]): the agent's `ConfirmGate` with its
//!    allowances and journal, MCP elicitation, or a refusal;
//! 7. a cancellation check;
//! 8. the call, with a panicking tool turned into an error result;
//! 9. the [`Outcome`], which the surface turns into its own result shape and events.
//!
//! When the surface has an [audit trail](crate::audit) ([`Surface::audit`]), each step leaves its record, and the
//! records up to `run` are durable before the call starts: a trail that cannot be written refuses the call
//! ([`Refusal::Unrecorded`]).
//!
//! Validation happens before the gate on every surface: an operator is never asked about a call that cannot run,
//! and no tool ever receives input that fails its schema.
//!
//! ```
//! use fisk_ai::async_trait;
//! use fisk_ai::dispatch::{Answer, Approval, Gated, Outcome, Surface, dispatch};
//! use fisk_ai::select::Selection;
//! use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! struct Echo(ToolSpec);
//!
//! #[async_trait]
//! impl Tool for Echo {
//!     fn spec(&self) -> &ToolSpec {
//!         &self.0
//!     }
//!     async fn call(&self, input: &ToolInput, _ctx: &CallContext) -> ToolOutput {
//!         ToolOutput::success(input.as_str())
//!     }
//! }
//!
//! /// A surface with nobody to ask: gated calls are declined.
//! struct Batch;
//!
//! #[async_trait]
//! impl Surface for Batch {
//!     type Halt = ();
//!     async fn approve(&mut self, call: &Gated<'_>) -> Approval<()> {
//!         Approval::Declined(Answer::NoHuman, ToolOutput::error(format!("{} needs approval", call.display)))
//!     }
//! }
//!
//! # futures::executor::block_on(async {
//! let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
//! let echo = Arc::new(Echo(ToolSpec::new("echo", ToolKind::Custom, schema))) as Arc<dyn Tool>;
//! let tools = Selection::new().apply(vec![echo]).unwrap();
//!
//! let ok = ToolInput::from_json(r#"{"text": "hi"}"#).unwrap();
//! let Outcome::Ran(out) = dispatch(&mut Batch, &tools, "echo", &ok).await else { panic!() };
//! assert_eq!(out.content(), r#"{"text": "hi"}"#);
//!
//! let bad = ToolInput::from_json(r#"{"text": 5}"#).unwrap();
//! let Outcome::Refused(why) = dispatch(&mut Batch, &tools, "echo", &bad).await else { panic!() };
//! assert!(why.to_string().contains("property \"text\""));
//! # });
//! ```

mod check;

pub use crate::audit::{Answer, AuditScope};
pub use check::Refusal;
#[cfg(feature = "mcp")]
pub(crate) use check::parse_unique;

use crate::audit::{Event, Recorder};
use crate::policy::{PolicyCall, PolicyHook, SurfaceKind, Verdict};
use crate::select::{SelectedTool, Toolset};
use crate::tool::{CallContext, Prepared, Tool, ToolInput, ToolOutput};
use async_trait::async_trait;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// A gated call waiting for the surface's approval (step 6). Its input has passed every check.
#[derive(Debug)]
#[non_exhaustive]
pub struct Gated<'a> {
    /// The selected tool, with its gating decision.
    pub tool: &'a SelectedTool,
    /// The validated input.
    pub input: &'a ToolInput,
    /// The same input, parsed (an empty or `null` input is `{}`): what a gate deciding on arguments reads.
    pub arguments: &'a serde_json::Value,
    /// The operator's line ([`Tool::prepare`]), not yet sanitized.
    pub display: &'a str,
    /// The tag that gates the tool (GATE-2), or `policy` when a [policy hook](crate::policy) asked for approval.
    pub trigger: &'a str,
    /// Whether a policy hook rewrote the input (POL-4): the operator's line shows the rewritten call, and a gate
    /// should say so.
    pub rewritten: bool,
    /// Whether a policy hook asked for approval of a call its tool's tags do not gate (POL-3): a surface must ask a
    /// human or decline, never run it under an "ungated" setting or a tool-wide allowance.
    pub policy_ask: bool,
}

/// The policy hook a surface consults (POL-1), with who is calling and where.
#[derive(Clone)]
#[non_exhaustive]
pub struct SurfacePolicy {
    /// The hook.
    pub hook: Arc<dyn PolicyHook>,
    /// The caller, when the surface knows one (an OAuth subject, a peer's identity).
    pub caller: Option<String>,
    /// The surface.
    pub surface: SurfaceKind,
}

impl SurfacePolicy {
    /// `hook` on `surface`, for `caller`.
    pub fn new(hook: Arc<dyn PolicyHook>, surface: SurfaceKind, caller: Option<String>) -> Self {
        SurfacePolicy { hook, caller, surface }
    }
}

impl std::fmt::Debug for SurfacePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SurfacePolicy").field("caller", &self.caller).field("surface", &self.surface).finish()
    }
}

/// A surface's answer for a gated call, and how it was given (the [`Answer`] the audit trail records).
#[derive(Debug)]
pub enum Approval<H> {
    /// Run it.
    Approved(Answer),
    /// Do not run it; the caller reads this result (a decline, a denial, a timeout).
    Declined(Answer, ToolOutput),
    /// End the call with something of the surface's own instead of a result (an aborted run, a journal failure,
    /// an MCP `InputRequiredResult` round).
    Halt(H),
}

/// A call that passed every check and the gate, ready to run (step 8).
#[derive(Debug)]
pub struct Ready<'a> {
    tool: &'a Arc<dyn Tool>,
    input: &'a ToolInput,
    prepared: Prepared,
}

impl Ready<'_> {
    /// The tool's name.
    pub fn name(&self) -> &str {
        self.tool.spec().name()
    }

    /// The tool.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        self.tool
    }

    /// The operator's line.
    pub fn display(&self) -> &str {
        self.prepared.display()
    }

    /// Run the call with `ctx` (the prepared state is added to it). A panicking tool gives an error result.
    pub async fn run(self, ctx: CallContext) -> ToolOutput {
        let ctx = ctx.with_prepared(&self.prepared);
        match AssertUnwindSafe(self.tool.call(self.input, &ctx)).catch_unwind().await {
            Ok(out) => out,
            Err(_) => ToolOutput::error(format!("tool \"{}\" failed internally", self.tool.spec().name())),
        }
    }
}

/// How a dispatched call ended.
#[derive(Debug)]
pub enum Outcome<H> {
    /// Refused before the gate (steps 1-4): nobody was asked and nothing ran.
    Refused(Refusal),
    /// The surface declined it at the gate (step 6); nothing ran.
    Declined(ToolOutput),
    /// The surface halted it at the gate (step 6); nothing ran.
    Halted(H),
    /// The surface was cancelled before the call started (step 7); nothing ran.
    Cancelled,
    /// It ran (step 8).
    Ran(ToolOutput),
}

/// What differs between the agent, MCP, a2a and a host's own surface: how a gated call is approved, how
/// cancellation is seen, and how a call is run (its deadline, slots and events).
///
/// Only [`approve`](Surface::approve) is required; see the [module example](self).
#[async_trait]
pub trait Surface: Send {
    /// What [`Approval::Halt`] carries on this surface.
    type Halt: Send;

    /// The instance to call for a selected tool; the agent swaps in per-run instances (memory tools).
    fn instance<'t>(&'t self, selected: &'t SelectedTool) -> &'t Arc<dyn Tool> {
        selected.tool()
    }

    /// Step 6: approve a gated call.
    async fn approve(&mut self, call: &Gated<'_>) -> Approval<Self::Halt>;

    /// The policy hook to consult for calls on this surface (POL-1); none by default. A host's own surface built
    /// on a [`Harness`](crate::harness::Harness) must return [`Harness::policy`](crate::harness::Harness::policy)
    /// here, or the configured hook is not consulted on it.
    fn policy(&self) -> Option<SurfacePolicy> {
        None
    }

    /// The audit trail this surface's calls are recorded in, with who is calling (AUD-1); none by default. A host's
    /// own surface built on a [`Harness`](crate::harness::Harness) must return one made from
    /// [`Harness::audit`](crate::harness::Harness::audit) here, or its calls are not recorded.
    fn audit(&self) -> Option<AuditScope> {
        None
    }

    /// Step 7: whether the surface was cancelled; then nothing starts. Never cancelled by default.
    fn cancelled(&self) -> bool {
        false
    }

    /// Step 8: run an approved call. The default runs it with no deadline and no cancellation.
    async fn run(&mut self, call: Ready<'_>) -> ToolOutput {
        call.run(CallContext::new()).await
    }
}

/// Take the call of `name` with `input` through every step, on `surface`.
pub async fn dispatch<S: Surface + ?Sized>(
    surface: &mut S,
    tools: &Toolset,
    name: &str,
    input: &ToolInput,
) -> Outcome<S::Halt> {
    let mut rec = Recorder::start(surface.audit(), name, input.as_str());
    let Some(selected) = tools.get(name) else {
        return refuse(&mut rec, Refusal::UnknownTool { name: name.to_owned() }).await;
    };
    let arguments = match check::check(selected.spec(), input) {
        Ok(arguments) => arguments,
        Err(refusal) => return refuse(&mut rec, refusal).await,
    };
    rec.note(Event::Validated, |_| {});
    let policy = surface.policy();
    // Steps 4a (POL-2..4): the hook narrows what selection and validation allowed; a rewrite is checked again.
    let (rewritten, arguments, asked) = match &policy {
        None => (None, arguments, false),
        Some(p) => match consult(p, selected, arguments, &mut rec).await {
            Ok(consulted) => consulted,
            Err(Stopped::Refused(refusal)) => return refuse(&mut rec, refusal).await,
            Err(Stopped::Denied(out)) => {
                rec.settle().await;
                return Outcome::Declined(out);
            }
        },
    };
    let input = rewritten.as_ref().unwrap_or(input);
    let tool = surface.instance(selected).clone();
    // Step 5: a call that cannot be prepared is refused as invalid, before anyone is asked to approve it.
    let prepared = match tool.prepare(input, &arguments) {
        Ok(prepared) => prepared,
        Err(error) => {
            let command = selected.spec().kind() == crate::tool::ToolKind::Command;
            let tool = selected.spec().name().to_owned();
            return refuse(&mut rec, Refusal::Invalid { tool, error, command }).await;
        }
    };
    if let Some(trigger) = selected.gate_trigger().or(asked.then_some("policy")) {
        let display = prepared.display();
        // AUD-8: a command's line is its argv; any other tool's line quotes its input.
        let shown = (prepared.argv().is_some() || rec.includes_input()).then(|| display.to_owned());
        rec.note(Event::Gated, |e| (e.trigger, e.command) = (Some(trigger.to_owned()), shown));
        // Nobody is asked about a call that could not be recorded.
        if let Err(reason) = rec.flush().await {
            return Outcome::Refused(Refusal::Unrecorded { tool: selected.spec().name().to_owned(), reason });
        }
        let (rewritten, policy_ask) = (rewritten.is_some(), asked && selected.gate_trigger().is_none());
        let gated = Gated { tool: selected, input, arguments: &arguments, display, trigger, rewritten, policy_ask };
        match surface.approve(&gated).await {
            Approval::Approved(answer) => rec.note(Event::Approved, |e| e.answer = Some(answer)),
            Approval::Declined(answer, out) => {
                let reason = rec.includes_input().then(|| out.content().to_owned());
                rec.note(Event::Declined, |e| (e.answer, e.reason) = (Some(answer), reason));
                rec.settle().await;
                return Outcome::Declined(out);
            }
            Approval::Halt(h) => {
                rec.note(Event::Halted, |_| {});
                rec.settle().await;
                return Outcome::Halted(h);
            }
        }
    }
    if surface.cancelled() {
        rec.note(Event::Cancelled, |e| e.reason = Some("cancelled before it ran".to_owned()));
        rec.settle().await;
        return Outcome::Cancelled;
    }
    run(surface, (selected, &tool, input, &arguments), prepared, policy.as_ref(), &mut rec).await
}

/// Steps 8 and 9 once everything allowed the call: `run` recorded durably first (AUD-6), then the call, the
/// policy's look at the result, and how it ended.
async fn run<S: Surface + ?Sized>(
    surface: &mut S,
    (selected, tool, input, arguments): (&SelectedTool, &Arc<dyn Tool>, &ToolInput, &serde_json::Value),
    prepared: Prepared,
    policy: Option<&SurfacePolicy>,
    rec: &mut Recorder,
) -> Outcome<S::Halt> {
    if rec.is_on() {
        let argv = prepared.argv().map(<[String]>::to_vec);
        let program = prepared.program().map(|p| p.display().to_string());
        let shown = (argv.is_some() || rec.includes_input()).then(|| prepared.display().to_owned());
        rec.note(Event::Run, |e| (e.program, e.argv, e.command) = (program, argv, shown));
        if let Err(reason) = rec.flush().await {
            return Outcome::Refused(Refusal::Unrecorded { tool: selected.spec().name().to_owned(), reason });
        }
    }
    let out = surface.run(Ready { tool, input, prepared }).await;
    // How it ended, before a redaction replaces the result.
    let facts = (out.interrupted(), out.exec_report().map(|r| (r.exit_code, r.truncated)));
    // POL-5: the hook sees the result and may replace it before the caller or any record does.
    let out = match policy {
        Some(p) => {
            let call = policy_call(p, selected, arguments);
            // A panicking hook withholds the result rather than passing it on unchecked.
            let after = AssertUnwindSafe(p.hook.after(&call, &out)).catch_unwind().await;
            match after {
                Ok(None) => out,
                Ok(Some(replaced)) => {
                    rec.note(Event::Redacted, |_| {});
                    replaced
                }
                Err(_) => {
                    rec.note(Event::Redacted, |e| e.reason = Some("the policy hook failed internally".to_owned()));
                    ToolOutput::error("the result was withheld: the policy hook failed internally")
                }
            }
        }
        None => out,
    };
    if rec.is_on() {
        let (interrupted, exec) = facts;
        let event = match interrupted {
            Some(crate::tool::Interrupted::TimedOut) => Event::TimedOut,
            Some(_) => Event::Cancelled,
            None => Event::Finished,
        };
        // A command's timeout or cancellation text names its argv, recorded already; another tool's may quote input.
        let quotes = rec.includes_input() || selected.spec().kind() == crate::tool::ToolKind::Command;
        let reason = match interrupted {
            Some(_) if quotes => Some(out.content().to_owned()),
            Some(crate::tool::Interrupted::TimedOut) => Some("stopped by its deadline".to_owned()),
            Some(_) => Some("cancelled while it ran".to_owned()),
            None => None,
        };
        rec.note(event, |e| {
            (e.bytes, e.is_error) = (Some(out.content().len() as u64), Some(out.is_error()));
            (e.exit_code, e.truncated) = (exec.map(|x| x.0), exec.map(|x| x.1));
            e.reason = reason;
        });
        rec.settle().await;
    }
    Outcome::Ran(out)
}

/// Refuse the call before the gate, with its record.
async fn refuse<H>(rec: &mut Recorder, refusal: Refusal) -> Outcome<H> {
    // AUD-8: a schema error may quote the input; without `include_input` only what kind of refusal it was, and the
    // property, is kept.
    let reason = match &refusal {
        _ if rec.includes_input() => refusal.to_string(),
        Refusal::Invalid { error, .. } => match error.property() {
            Some(p) => format!("invalid arguments (property \"{p}\")"),
            None => "invalid arguments".to_owned(),
        },
        other => other.to_string(),
    };
    rec.note(Event::Refused, |e| e.reason = Some(reason));
    rec.settle().await;
    Outcome::Refused(refusal)
}

/// What a hook's verdict ends a call with before the gate.
enum Stopped {
    Denied(ToolOutput),
    Refused(Refusal),
}

fn policy_call<'a>(
    p: &'a SurfacePolicy,
    selected: &'a SelectedTool,
    arguments: &'a serde_json::Value,
) -> PolicyCall<'a> {
    PolicyCall {
        tool: selected.spec().name(),
        input: arguments,
        caller: p.caller.as_deref(),
        surface: p.surface,
        gated_by: selected.gate_trigger(),
    }
}

/// Ask the hook before the gate: the input to run (rewritten, and validated again), its arguments, and whether the
/// hook asked for approval; or how the call ends.
async fn consult(
    p: &SurfacePolicy,
    selected: &SelectedTool,
    arguments: serde_json::Value,
    rec: &mut Recorder,
) -> Result<(Option<ToolInput>, serde_json::Value, bool), Stopped> {
    // A panicking hook denies (POL-7).
    let verdict = AssertUnwindSafe(p.hook.before(&policy_call(p, selected, &arguments)))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Verdict::Deny("the policy hook failed internally".to_owned()));
    match verdict {
        Verdict::Allow => {
            rec.policy("allow", None, None);
            Ok((None, arguments, false))
        }
        Verdict::Ask => {
            rec.policy("ask", None, None);
            Ok((None, arguments, true))
        }
        Verdict::Rewrite(value) => {
            let input = ToolInput::from_value(&value);
            rec.policy("rewrite", None, Some(input.as_str()));
            let arguments = check::check(selected.spec(), &input).map_err(Stopped::Refused)?;
            Ok((Some(input), arguments, false))
        }
        Verdict::Deny(reason) => {
            let out = crate::policy::denied(&reason);
            rec.policy("deny", Some(out.content()), None);
            Err(Stopped::Denied(out))
        }
    }
}
