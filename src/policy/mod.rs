//! Policy hooks (POL-1..8): rules of the host's own, consulted by the one dispatch path on every surface.
//!
//! A [`PolicyHook`] sees each call after its input passed the schema and before anyone is asked or anything runs,
//! with the tool, the parsed input, the caller and the surface, and returns a [`Verdict`]:
//! - [`Verdict::Allow`]: go on as without the hook (a gated tool is still gated);
//! - [`Verdict::Deny`]: the call does not run; the model or client reads the reason;
//! - [`Verdict::Ask`]: route the call to the surface's gate even if the tool is not gated;
//! - [`Verdict::Rewrite`]: run it with other input, which is validated against the schema again, shown in the
//!   operator's line and gated as the original would be.
//!
//! After the call it sees the result and may replace it ([`PolicyHook::after`]), to redact a secret the tool
//! printed. A hook can only narrow: `ai:deny`, selection and the gate have already decided, and no verdict
//! overturns them (a denied tool never reaches dispatch; an allowed gated call is still asked).
//!
//! `harness.policy: {command: [argv...], timeout}` builds a [`CommandPolicy`]: an external program asked with JSON
//! on stdin for each call.

mod command;

pub use command::CommandPolicy;

use crate::tool::ToolOutput;
use async_trait::async_trait;
use serde_json::Value;

/// Which surface a call came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SurfaceKind {
    /// The agent loop: the model called it.
    Agent,
    /// An MCP client, over HTTP or stdio.
    Mcp,
    /// Another agent over NATS.
    A2a,
    /// A host's own surface.
    Other,
}

impl SurfaceKind {
    /// `agent`, `mcp`, `a2a` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            SurfaceKind::Agent => "agent",
            SurfaceKind::Mcp => "mcp",
            SurfaceKind::A2a => "a2a",
            SurfaceKind::Other => "other",
        }
    }
}

/// One call as a hook sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PolicyCall<'a> {
    /// The tool's final name.
    pub tool: &'a str,
    /// The validated input, parsed (`{}` for none). Model or client text: never trust it.
    pub input: &'a Value,
    /// Who is calling: the verified OAuth subject (else client id) over MCP; over a2a the identity the peer
    /// claims in its request, which NATS does not verify (authorize on it only with NATS permissions that pin it);
    /// the local user who runs this process in an agent run and over MCP's stdio transport (the audit trail's
    /// caller there too); `None` in an unauthenticated MCP session over HTTP.
    pub caller: Option<&'a str>,
    /// The surface.
    pub surface: SurfaceKind,
    /// The tag that gates the tool, if it is gated.
    pub gated_by: Option<&'a str>,
}

/// A hook's decision on a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// Go on as without the hook.
    Allow,
    /// Do not run it; the caller reads this reason.
    Deny(String),
    /// Ask the surface's gate (the operator) before running it.
    Ask,
    /// Run it with this input instead (validated again; shown to the operator when the call is gated or asked).
    Rewrite(Value),
}

/// A host's own rules for tool calls.
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::policy::{PolicyCall, PolicyHook, Verdict};
/// use fisk_ai::tool::ToolOutput;
///
/// /// No deletes on Fridays, and no secrets in results.
/// struct Rules;
///
/// #[async_trait]
/// impl PolicyHook for Rules {
///     async fn before(&self, call: &PolicyCall<'_>) -> Verdict {
///         if call.tool.ends_with("_rm") {
///             return Verdict::Deny("deletes wait until Monday".into());
///         }
///         Verdict::Allow
///     }
///
///     async fn after(&self, _call: &PolicyCall<'_>, output: &ToolOutput) -> Option<ToolOutput> {
///         output.content().contains("BEGIN PRIVATE KEY").then(|| ToolOutput::error("[redacted: a private key]"))
///     }
/// }
/// ```
#[async_trait]
pub trait PolicyHook: Send + Sync {
    /// Decide on a call before it is gated or run. Any failure inside must come back as [`Verdict::Deny`].
    async fn before(&self, call: &PolicyCall<'_>) -> Verdict;

    /// See a call's result; `Some` replaces it (what the caller reads and what is recorded). The default keeps it.
    async fn after(&self, call: &PolicyCall<'_>, output: &ToolOutput) -> Option<ToolOutput> {
        let _ = (call, output);
        None
    }
}

/// The result a denied call returns: `{"allowed": false, "reason": "..."}`, a normal result as a gate's decline is
/// (GATE-10), so the model reads the reason rather than retrying an error.
pub fn denied(reason: &str) -> ToolOutput {
    let reason = format!("a policy denied this call: {}", crate::gate::sanitize(reason, 2000));
    ToolOutput::json(&serde_json::json!({"allowed": false, "reason": reason}))
}
