//! Conversations (LOOP-15, LOOP-16): a run given a [`Continuation`] does not end at its answer. After each turn
//! that ended `completed`, `max_iterations` or in an error other than the run's cancellation, the continuation
//! says what comes next: the end, a follow-up prompt, or a reset (the brief's `/clear`), with or without a prompt.
//!
//! - CONV-1: a follow-up joins the conversation as a user message (journaled as `session.user`, SESS-10) and
//!   extends the iteration cap by `llm.budget.max_iterations`. Token budgets stay whole-conversation. A turn the
//!   host cancels through [`Continuation::turn_cancel`] ends that turn only; the run's own cancellation, a `budget`
//!   or a `suspended` outcome ends the conversation.
//! - CONV-2: a reset clears the conversation and every remembered confirmation answer and re-bases the iteration
//!   cap; the system prompt and the tools stay. A reset without a prompt asks the continuation again before
//!   anything is journaled.
//! - CONV-3: on a checkpointed run a reset rotates the session: a new session starts whose first prompt is the
//!   reset's, linked to the old one by `session.reset` records; the old one ends `suspended` and stays resumable
//!   with its own answers. [`RunEvent::SessionRotated`](super::RunEvent::SessionRotated) names both.
//! - CONV-4: a chat session (started with a continuation) is journaled `interactive` and resumes only with one; a
//!   one-shot session resumes only without one (SESS-23).
//!
//! ```
//! use fisk_ai::agent::{NextStep, RunOptions, TurnEnd};
//! use std::sync::Mutex;
//!
//! // Two scripted follow-ups, then the end; a host reads them from its chat input instead.
//! let script = Mutex::new(vec!["and the consumers?".to_owned(), "/clear".to_owned()]);
//! let options = RunOptions::new().with_continuation(move |turn: &TurnEnd| {
//!     println!("{:?} after {} model calls", turn.reason, turn.turn.llm_calls);
//!     let line = script.lock().unwrap().pop();
//!     async move {
//!         match line.as_deref() {
//!             None => NextStep::End,
//!             Some("/clear") => NextStep::Reset(None),
//!             Some(prompt) => NextStep::FollowUp(prompt.to_owned()),
//!         }
//!     }
//! });
//! # let _ = options;
//! ```

use super::outcome::{RunStats, TerminalReason};
use crate::tool::CancellationToken;
use async_trait::async_trait;
use std::future::Future;

/// What a conversation does after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NextStep {
    /// The conversation ends with the last turn's outcome.
    End,
    /// Another user prompt in the same conversation (CONV-1).
    FollowUp(String),
    /// Clear the conversation (CONV-2): with a prompt, it starts the new conversation; without one, the
    /// continuation is asked again, with [`TurnEnd::cleared`] set.
    Reset(Option<String>),
}

/// How the last turn ended, as a [`Continuation`] is told.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TurnEnd {
    /// Why the turn ended.
    pub reason: TerminalReason,
    /// The answer, when there is one.
    pub answer: Option<String>,
    /// The error text, when the turn failed.
    pub error: Option<String>,
    /// This turn's counters (model calls, tool calls, tokens, wall time).
    pub turn: RunStats,
    /// The whole conversation's counters so far (resets included).
    pub total: RunStats,
    /// Set when the continuation is asked right after a reset without a prompt: no turn ran, and `reason`,
    /// `answer` and `error` repeat the turn before the reset.
    pub cleared: bool,
}

/// What a conversation asks after each turn (LOOP-15). Implemented for async closures taking `&TurnEnd`.
///
/// ```
/// use fisk_ai::agent::{Continuation, NextStep, TurnEnd};
/// use fisk_ai::async_trait;
/// use fisk_ai::tool::CancellationToken;
/// use std::sync::Mutex;
///
/// /// Follow-ups from a queue; each turn can be cancelled alone (Ctrl-C in a chat) through `current`.
/// struct Queue {
///     prompts: Mutex<Vec<String>>,
///     current: Mutex<Option<CancellationToken>>,
/// }
///
/// #[async_trait]
/// impl Continuation for Queue {
///     async fn next(&self, _turn: &TurnEnd) -> NextStep {
///         self.prompts.lock().unwrap().pop().map_or(NextStep::End, NextStep::FollowUp)
///     }
///
///     fn turn_cancel(&self, run: &CancellationToken) -> CancellationToken {
///         let turn = run.child_token();
///         *self.current.lock().unwrap() = Some(turn.clone());
///         turn
///     }
/// }
/// ```
#[async_trait]
pub trait Continuation: Send + Sync {
    /// The next step after `turn`.
    async fn next(&self, turn: &TurnEnd) -> NextStep;

    /// The token that cancels the turn about to start, asked before each turn. Cancelling it ends that turn (with
    /// the error "the turn was cancelled") and the continuation is asked what next; cancelling the run's token
    /// ends the conversation. The run's token by default; return a child of `run` to cancel turns one at a time.
    fn turn_cancel(&self, run: &CancellationToken) -> CancellationToken {
        run.clone()
    }
}

#[async_trait]
impl<F, Fut> Continuation for F
where
    F: Fn(&TurnEnd) -> Fut + Send + Sync,
    Fut: Future<Output = NextStep> + Send,
{
    async fn next(&self, turn: &TurnEnd) -> NextStep {
        self(turn).await
    }
}
