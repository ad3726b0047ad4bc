//! A run with an output schema (OUT-1, OUT-6..OUT-8): the final turn's answer is validated here, whatever the
//! provider did to constrain it; one repair turn is allowed, then the run fails with the validation errors.

use super::{Ended, Next, Run, ended};
use crate::agent::events::RunEvent;
use crate::agent::outcome::TerminalReason;
use crate::agent::{Inner, RunOptions};
use crate::error::{Error, Result};
use crate::llm::{Block, FINAL_ANSWER_TOOL, Message, OutputSchema};
use crate::session::{Payload, UserRecord};

/// OUT-2: the provider asks for the answer under [`FINAL_ANSWER_TOOL`], so a selected tool of that name would be
/// shadowed; refused before anything runs.
pub(in crate::agent) fn check(inner: &Inner, options: &RunOptions) -> Result<()> {
    if options.output.is_some() && inner.callable.get(FINAL_ANSWER_TOOL).is_some() {
        return Err(Error::config(format!(
            "a tool is named \"{FINAL_ANSWER_TOOL}\", the name a run with an output schema asks for its final \
             answer under: rename or deselect that tool, or run without an output schema"
        )));
    }
    Ok(())
}

/// The answer of a final turn, its last text block, and the narration before it (e.g. a preamble to the final
/// tool's call), each trimmed.
fn answer_of(message: Option<&Message>) -> (String, String) {
    let texts: Vec<&str> = message
        .into_iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::Text { text } if !text.trim().is_empty() => Some(text.trim()),
            _ => None,
        })
        .collect();
    match texts.split_last() {
        Some((answer, before)) => ((*answer).to_owned(), before.join("\n\n")),
        None => (String::new(), String::new()),
    }
}

/// The user message of the repair turn (OUT-7): what is wrong, one line each.
fn repair_prompt(errors: &[String]) -> String {
    let mut text = "Your final answer is not valid against the required output schema:\n".to_owned();
    for e in errors {
        text.push_str("- ");
        text.push_str(e);
        text.push('\n');
    }
    text.push_str("Give your whole final answer again, corrected, in the required form.");
    text
}

impl Run<'_> {
    /// A final turn (no tool calls, not paused) of a run with `schema`: the answer accepted (OUT-6), a repair
    /// turn asked for (OUT-7, counted against the budgets like any turn), or the run failed (OUT-8).
    pub(super) fn structured(&mut self, schema: &OutputSchema) -> Next {
        let (answer, narration) = answer_of(self.messages.last());
        if !narration.is_empty() {
            self.emit(RunEvent::Assistant { text: &narration, terminal: false });
        }
        let errors = match schema.validate(&answer) {
            Ok(value) => {
                self.emit(RunEvent::Assistant { text: &answer, terminal: true });
                self.output = Some(value);
                return Next::End(Ended { reason: TerminalReason::Completed, answer: Some(answer), error: None });
            }
            Err(errors) => errors,
        };
        // A rejected answer is shown as narration, never as the run's answer.
        if !answer.is_empty() {
            self.emit(RunEvent::Assistant { text: &answer, terminal: false });
        }
        if self.repaired {
            return ended_invalid(&errors);
        }
        self.repaired = true;
        self.over_budget().map_or_else(|| Next::Repair(repair_prompt(&errors)), Next::End)
    }

    /// The repair turn's user message joins the conversation, journaled as `session.user` like a follow-up.
    pub(super) async fn repair(&mut self, prompt: String) -> std::result::Result<(), Ended> {
        let message = match self.record(Payload::User(UserRecord::new(Message::user(prompt)))).await? {
            Payload::User(u) => u.message,
            _ => return Err(ended(TerminalReason::Error, "internal error: the journal returned another record")),
        };
        self.messages.push(message);
        Ok(())
    }
}

fn ended_invalid(errors: &[String]) -> Next {
    Next::End(ended(
        TerminalReason::Error,
        format!("the final answer is not valid against the output schema: {}", errors.join("; ")),
    ))
}
