//! What a request's session journal says (WORK-8, WORK-9): whether it ended, its result when it did, and whether
//! it belongs to the request at all.

use super::Shared;
use super::wire::{ResultStats, RunResult};
use crate::agent::{RunStats, TerminalReason};
use crate::error::Result;
use crate::llm::Role;
use crate::session::{Journal, SessionId};

/// A session as a request finds it.
pub(super) enum Found {
    /// No such session: the request is new.
    New,
    /// A session another request started: its prompt is not this request's.
    Foreign,
    /// The session ended: its result, read back.
    Ended(RunResult),
    /// The session is open or suspended: resume it.
    Open,
}

/// Look the request's session up. A session is the request's when one of its user messages is the request's
/// prompt, word for word: a redelivered request always matches, an id reused for other work or a `session` naming
/// someone else's run does not.
pub(super) async fn find(shared: &Shared, id: &str, session: &SessionId, prompt: &str) -> Result<Found> {
    if !shared.sessions.exists(session).await? {
        return Ok(Found::New);
    }
    let journal = Journal::fold(shared.sessions.read(session).await?)?;
    let own = journal.messages.iter().any(|m| m.role == Role::User && m.text() == prompt);
    if !own {
        return Ok(Found::Foreign);
    }
    if journal.terminal.as_ref().is_some_and(|t| t.reason != TerminalReason::Suspended) {
        return Ok(Found::Ended(result_of(shared, id, &journal)));
    }
    Ok(Found::Open)
}

/// WORK-9: the result of a session that ended, from its journal.
fn result_of(shared: &Shared, id: &str, journal: &Journal) -> RunResult {
    let mut stats = RunStats::new(shared.agent.model());
    stats.llm_calls = journal.llm_calls;
    stats.tool_calls = journal.tool_calls;
    stats.remote_tool_calls = journal.remote_tool_calls;
    stats.usage = journal.usage;
    stats.compactions = journal.compactions;
    let (reason, message) = match journal.terminal.as_ref() {
        Some(t) => (t.reason, t.message.clone()),
        None => (TerminalReason::Error, Some("the session has not ended".to_owned())),
    };
    let answer = (reason == TerminalReason::Completed)
        .then(|| journal.messages.iter().rev().find(|m| m.role == Role::Assistant).map(|m| m.text()))
        .flatten()
        .filter(|t| !t.trim().is_empty());
    let mut result = RunResult::refused(id, message.as_deref().unwrap_or_default());
    result.outcome = reason.as_str().to_owned();
    result.error = message.map(|m| crate::gate::sanitize(&m, super::wire::MAX_ERROR_CHARS));
    result.answer = answer;
    result.stats = Some(ResultStats { latency_ms: 0, ..ResultStats::of(&stats) });
    result.cost = shared.agent.cost_of(&journal.usage).map(crate::llm::Cost::usd);
    result
}
