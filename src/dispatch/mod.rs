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
//! Validation happens before the gate on every surface: an operator is never asked about a call that cannot run,
//! and no tool ever receives input that fails its schema.
//!
//! ```
//! use fisk_ai::async_trait;
//! use fisk_ai::dispatch::{Approval, Gated, Outcome, Surface, dispatch};
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
//!         Approval::Declined(ToolOutput::error(format!("{} needs approval", call.display)))
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

pub use check::Refusal;
#[cfg(feature = "mcp")]
pub(crate) use check::parse_unique;

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

/// A surface's answer for a gated call.
#[derive(Debug)]
pub enum Approval<H> {
    /// Run it.
    Approved,
    /// Do not run it; the caller reads this result (a decline, a denial, a timeout).
    Declined(ToolOutput),
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
    let Some(selected) = tools.get(name) else {
        return Outcome::Refused(Refusal::UnknownTool { name: name.to_owned() });
    };
    let arguments = match check::check(selected.spec(), input) {
        Ok(arguments) => arguments,
        Err(refusal) => return Outcome::Refused(refusal),
    };
    let policy = surface.policy();
    // Steps 4a (POL-2..4): the hook narrows what selection and validation allowed; a rewrite is checked again.
    let (rewritten, arguments, asked) = match &policy {
        None => (None, arguments, false),
        Some(p) => match consult(p, selected, arguments).await {
            Ok(consulted) => consulted,
            Err(outcome) => return outcome.into(),
        },
    };
    let input = rewritten.as_ref().unwrap_or(input);
    let tool = surface.instance(selected).clone();
    // Step 5: a call that cannot be prepared is refused as invalid, before anyone is asked to approve it.
    let prepared = match tool.prepare(input, &arguments) {
        Ok(prepared) => prepared,
        Err(error) => {
            let command = selected.spec().kind() == crate::tool::ToolKind::Command;
            return Outcome::Refused(Refusal::Invalid { tool: selected.spec().name().to_owned(), error, command });
        }
    };
    if let Some(trigger) = selected.gate_trigger().or(asked.then_some("policy")) {
        let display = prepared.display();
        let (rewritten, policy_ask) = (rewritten.is_some(), asked && selected.gate_trigger().is_none());
        let gated = Gated { tool: selected, input, arguments: &arguments, display, trigger, rewritten, policy_ask };
        match surface.approve(&gated).await {
            Approval::Approved => {}
            Approval::Declined(out) => return Outcome::Declined(out),
            Approval::Halt(h) => return Outcome::Halted(h),
        }
    }
    if surface.cancelled() {
        return Outcome::Cancelled;
    }
    let out = surface.run(Ready { tool: &tool, input, prepared }).await;
    // POL-5: the hook sees the result and may replace it before the caller or any record does.
    match &policy {
        Some(p) => {
            let call = policy_call(p, selected, &arguments);
            // A panicking hook withholds the result rather than passing it on unchecked.
            let after = AssertUnwindSafe(p.hook.after(&call, &out)).catch_unwind().await;
            Outcome::Ran(match after {
                Ok(replaced) => replaced.unwrap_or(out),
                Err(_) => ToolOutput::error("the result was withheld: the policy hook failed internally"),
            })
        }
        None => Outcome::Ran(out),
    }
}

/// What a hook's verdict ends a call with before the gate.
enum Stopped {
    Denied(ToolOutput),
    Refused(Refusal),
}

impl<H> From<Stopped> for Outcome<H> {
    fn from(stopped: Stopped) -> Self {
        match stopped {
            Stopped::Denied(out) => Outcome::Declined(out),
            Stopped::Refused(refusal) => Outcome::Refused(refusal),
        }
    }
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
) -> Result<(Option<ToolInput>, serde_json::Value, bool), Stopped> {
    // A panicking hook denies (POL-7).
    let verdict = AssertUnwindSafe(p.hook.before(&policy_call(p, selected, &arguments)))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Verdict::Deny("the policy hook failed internally".to_owned()));
    match verdict {
        Verdict::Allow => Ok((None, arguments, false)),
        Verdict::Ask => Ok((None, arguments, true)),
        Verdict::Rewrite(value) => {
            let input = ToolInput::from_value(&value);
            let arguments = check::check(selected.spec(), &input).map_err(Stopped::Refused)?;
            Ok((Some(input), arguments, false))
        }
        Verdict::Deny(reason) => Err(Stopped::Denied(crate::policy::denied(&reason))),
    }
}
