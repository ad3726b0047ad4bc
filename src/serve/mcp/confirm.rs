//! Confirmation over MCP (MCP-8..13): who is asked, the elicitation form, and how an answer is judged.
//!
//! Fail closed everywhere: only an `accept` whose content has `approve` equal to `true` runs the command. The
//! `requestState` a 2026-07-28 client echoes is never trusted to mean anything: it is an unguessable, single-use,
//! expiring key to a pending call (kept by [`pending`](super::pending)), and the approval must come back for that
//! same tool with the same arguments.

use super::events::{Denial, GatedBehavior};
use crate::config::{ConfirmOverMcp, format_duration};
use rmcp::model::{ClientCapabilities, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::Value;
use std::time::Duration;

/// How long a client's user has to answer an approval request (MCP-10).
pub const DEFAULT_CONFIRM_TIMEOUT: Duration = Duration::from_secs(120);
/// The single required boolean of the approval form (MCP-10).
pub(crate) const APPROVE: &str = "approve";
/// The key of the approval request inside a 2026-07-28 `InputRequiredResult`.
pub(crate) const INPUT_KEY: &str = "approval";

/// Whether a client declared form elicitation (MCP-9). No capabilities (a call before initialization) means no.
pub(crate) fn can_elicit(caps: Option<&ClientCapabilities>) -> bool {
    // A capability with neither `form` nor `url` is form-only (the 2025-06-18 shape).
    caps.and_then(|c| c.elicitation.as_ref()).is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// What happens to a gated call of a client (MCP-8).
pub(crate) fn behavior(mode: ConfirmOverMcp, capable: bool) -> GatedBehavior {
    match (mode, capable) {
        (ConfirmOverMcp::Never, _) => GatedBehavior::RunUngated,
        (_, true) => GatedBehavior::Asked,
        (ConfirmOverMcp::Auto, false) => GatedBehavior::RunUngated,
        (_, false) => GatedBehavior::Refused,
    }
}

/// The approval form: one required boolean `approve`, defaulting to false.
pub(crate) fn form_schema() -> Result<ElicitationSchema, &'static str> {
    ElicitationSchema::builder()
        .required_bool_property(APPROVE, |b| {
            b.title("Approve").description("Run this command now? Only an explicit yes runs it.").with_default(false)
        })
        .build()
}

/// The approval message (MCP-10): the server, the resolved command line and the triggering tag. `display` is
/// already quoted and sanitized; the tag comes from the application, and is sanitized here as the terminal gate
/// does (GATE-8).
pub(crate) fn message(identity: &str, display: &str, trigger: &str) -> String {
    let trigger = crate::gate::sanitize(trigger, crate::gate::PROMPT_LIMIT);
    format!("{identity} asks for approval to run (gated by tag {trigger}):\n\n{display}\n\nApprove running it?")
}

/// MCP-11: only `accept` with `approve: true` approves; everything else is a denial of the right kind.
pub(crate) fn judge(result: &ElicitResult) -> Result<(), Denial> {
    match result.action {
        ElicitationAction::Accept => match result.content.as_ref().and_then(|c| c.get(APPROVE)) {
            Some(Value::Bool(true)) => Ok(()),
            _ => Err(Denial::Refused),
        },
        ElicitationAction::Decline => Err(Denial::Refused),
        ElicitationAction::Cancel => Err(Denial::Dismissed),
        #[allow(unreachable_patterns)]
        _ => Err(Denial::Failed),
    }
}

/// The error result text of a denial (MCP-11, MCP-12): it says the command did not run and why, and tells the
/// model not to retry.
pub(crate) fn denial_text(
    why: Denial,
    name: &str,
    display: &str,
    trigger: &str,
    timeout: Duration,
    detail: Option<&str>,
) -> String {
    let head = format!("The command `{display}` did not run");
    match why {
        Denial::Refused => {
            format!("{head}: the user refused to approve it. This was the user's decision; do not retry this call.")
        }
        Denial::Dismissed => format!(
            "{head}: the approval prompt was closed without a decision. Do not retry it unless the user asks you to."
        ),
        Denial::TimedOut => format!(
            "{head}: nobody answered the approval request within {}. Do not retry it unless the user asks you to.",
            format_duration(timeout)
        ),
        Denial::Failed => format!(
            "{head}: the approval request failed{}. Do not retry it unless the user asks you to.",
            detail.map(|d| format!(" ({d})")).unwrap_or_default()
        ),
        Denial::CannotAsk => format!(
            "{head}: tool \"{name}\" needs approval (tag {trigger}) and this client cannot be asked (it did not \
             declare elicitation support). Do not retry; use a client that supports elicitation."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ElicitationAction;
    use serde_json::json;

    #[test]
    fn mcp_11_only_accept_with_approve_true_approves() {
        let accept = |c: Value| ElicitResult::new(ElicitationAction::Accept).with_content(c);
        assert_eq!(judge(&accept(json!({"approve": true}))), Ok(()));
        assert_eq!(judge(&accept(json!({"approve": false}))), Err(Denial::Refused));
        assert_eq!(judge(&accept(json!({"approve": "true"}))), Err(Denial::Refused));
        assert_eq!(judge(&accept(json!({}))), Err(Denial::Refused));
        assert_eq!(judge(&ElicitResult::new(ElicitationAction::Accept)), Err(Denial::Refused));
        assert_eq!(judge(&ElicitResult::new(ElicitationAction::Decline)), Err(Denial::Refused));
        assert_eq!(judge(&ElicitResult::new(ElicitationAction::Cancel)), Err(Denial::Dismissed));
    }

    #[test]
    fn mcp_8_behavior_per_mode_and_capability() {
        use ConfirmOverMcp::*;
        assert_eq!(behavior(Always, true), GatedBehavior::Asked);
        assert_eq!(behavior(Always, false), GatedBehavior::Refused);
        assert_eq!(behavior(Auto, true), GatedBehavior::Asked);
        assert_eq!(behavior(Auto, false), GatedBehavior::RunUngated);
        assert_eq!(behavior(Never, true), GatedBehavior::RunUngated);
        assert_eq!(behavior(Never, false), GatedBehavior::RunUngated);
    }
}
