//! The terminal prompter (feature `terminal`): dialoguer prompts on stderr.

use super::{Answer, Prompter};
use crate::gate::tty;
use async_trait::async_trait;
use dialoguer::{Confirm, Input, Select};

/// Asks the operator on the terminal: the line-oriented prompter of OVR-3 behind the `ask_human_*` tools.
///
/// Each prompt is drawn on stderr after a blank line that separates it from earlier output (HITL-10, CLI-5),
/// and reads keys from the terminal:
///
/// ```text
///
/// Delete the ORDERS stream? [y/N]
///
/// Which stream?:
///   ORDERS
///   EVENTS
///
/// Stream name [ORDERS]:
/// ```
///
/// - [`confirm`](Prompter::confirm): `y` answers yes and `n` no; Enter alone answers no (HITL-7).
/// - [`select`](Prompter::select): nothing is preselected, so Enter alone does nothing until the operator moves
///   to an option (the first Down highlights the first option); Enter or Space then chooses it (HITL-7).
/// - [`input`](Prompter::input): a line of text; Enter on an empty line accepts the default when there is one,
///   otherwise answers the empty string.
///
/// Nothing but an explicit answer counts:
/// - stdin or stderr not a terminal ([`can_ask`](Prompter::can_ask) is false): [`Answer::Unavailable`] without
///   drawing anything;
/// - Ctrl-C, or the terminal closing, at any prompt, and Esc or `q` at a confirm or select prompt:
///   [`Answer::Interrupted`];
/// - any other failure, including a panic inside the prompt: [`Answer::Failed`].
///
/// The texts are shown as given: callers sanitize model-written text first (the `ask_human_*` tools do, HITL-9).
/// Ctrl-C at a prompt is consumed by the prompt and does not reach the host's own SIGINT handling. Prompts run on
/// their own thread, one at a time per process, shared with [`TerminalGate`](crate::gate::TerminalGate).
///
/// ```no_run
/// use fisk_ai::operator::{Answer, Prompter, TerminalPrompter, hitl_tools};
/// use std::sync::Arc;
///
/// # async fn demo() {
/// let prompter = TerminalPrompter::stderr();
/// if prompter.can_ask() {
///     match prompter.confirm("Delete the ORDERS stream?").await {
///         Answer::Given(true) => println!("yes"),
///         _ => println!("no"),
///     }
/// }
/// let tools = hitl_tools(Arc::new(prompter));
/// # let _ = tools;
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "terminal")))]
#[derive(Debug, Clone)]
pub struct TerminalPrompter {
    // Private so later options (another stream, a theme) do not break construction.
    _private: (),
}

impl TerminalPrompter {
    /// A prompter that draws on stderr and reads the operator's keys from the terminal.
    #[must_use]
    pub fn stderr() -> Self {
        TerminalPrompter { _private: () }
    }
}

/// Map the terminal plumbing's outcome to the prompter's.
fn answer<T>(outcome: tty::Answer<T>) -> Answer<T> {
    match outcome {
        tty::Answer::Given(value) => Answer::Given(value),
        tty::Answer::Interrupted => Answer::Interrupted,
        tty::Answer::NoTerminal => Answer::Unavailable,
        tty::Answer::Failed(reason) => Answer::Failed(reason),
    }
}

#[async_trait]
impl Prompter for TerminalPrompter {
    /// True only when stdin and stderr are both terminals.
    fn can_ask(&self) -> bool {
        tty::reachable()
    }

    async fn confirm(&self, question: &str) -> Answer<bool> {
        let question = question.to_owned();
        answer(
            tty::ask(move |term| Ok(Confirm::new().with_prompt(question).default(false).interact_on_opt(term)?)).await,
        )
    }

    async fn select(&self, question: &str, options: &[String]) -> Answer<usize> {
        if options.is_empty() {
            return Answer::Failed("no options to choose from".into());
        }
        let question = question.to_owned();
        let options = options.to_vec();
        // No `.default(..)`: dialoguer then preselects nothing.
        answer(
            tty::ask(move |term| Ok(Select::new().with_prompt(question).items(&options).interact_on_opt(term)?)).await,
        )
    }

    async fn input(&self, question: &str, default: Option<&str>) -> Answer<String> {
        let question = question.to_owned();
        let default = default.map(str::to_owned);
        answer(
            tty::ask(move |term| {
                let mut prompt = Input::<String>::new().with_prompt(question).allow_empty(true);
                if let Some(default) = default {
                    prompt = prompt.default(default);
                }
                Ok(Some(prompt.interact_text_on(term)?))
            })
            .await,
        )
    }
}
