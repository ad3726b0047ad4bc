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

/// The answer of a final turn: its last text block (text before it is narration, e.g. a preamble to the final
/// tool's call), and the text shown as narration when it is rejected.
fn answer_of(message: Option<&Message>) -> (String, String) {
    let Some(message) = message else { return (String::new(), String::new()) };
    let last = message.content.iter().rev().find_map(|b| match b {
        Block::Text { text } if !text.trim().is_empty() => Some(text.trim().to_owned()),
        _ => None,
    });
    (last.unwrap_or_default(), message.text())
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
        let (answer, text) = answer_of(self.messages.last());
        match schema.validate(&answer) {
            Ok(value) => {
                self.emit(RunEvent::Assistant { text: &answer, terminal: true });
                self.output = Some(value);
                Next::End(Ended { reason: TerminalReason::Completed, answer: Some(answer), error: None })
            }
            Err(errors) if !self.repaired => {
                self.repaired = true;
                if !text.is_empty() {
                    self.emit(RunEvent::Assistant { text: &text, terminal: false });
                }
                self.over_budget().map_or_else(|| Next::Repair(repair_prompt(&errors)), Next::End)
            }
            Err(errors) => ended_invalid(&errors),
        }
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
