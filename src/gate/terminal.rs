//! The terminal confirmation gate (feature `terminal`): a dialoguer select on stderr.

use super::tty::{self, Answer};
use super::{ConfirmGate, ConfirmRequest, Decision, PROMPT_LIMIT, Remember, sanitize};
use async_trait::async_trait;
use dialoguer::Select;
use tokio_util::sync::CancellationToken;

/// The longest command path named inside the third option, so the option stays one line on a normal terminal.
const OPTION_COMMAND_LIMIT: usize = 60;

/// Asks the operator on the terminal before each gated call (SPEC §10).
///
/// The prompt is drawn on stderr (GATE-7, CLI-5): a blank line, a header naming the command path and the triggering
/// tag, the resolved command line (sanitized, GATE-8), then three options in this order, the first preselected so
/// a reflexive Enter declines (GATE-9):
///
/// ```text
///
/// Approval needed for "stream rm" (tagged ai:confirm)
///   nats stream rm ORDERS --force
/// Your choice:
/// > No, decline
///   Yes, run this call once
///   Yes, and don't ask again for "stream rm" in this conversation (any arguments)
/// ```
///
/// Choosing the third option prints `Won't ask again for "stream rm" in this conversation.` (GATE-11).
///
/// Nothing but an explicit choice approves:
/// - stdin or stderr not a terminal ([`can_ask`](ConfirmGate::can_ask) is false): [`Decision::Decline`] without
///   asking (GATE-6, GATE-16);
/// - Ctrl-C, Esc or `q` at the prompt, or the terminal closing: [`Decision::Abort`] (GATE-12);
/// - any other failure, including a panic inside the prompt: [`Decision::Decline`].
///
/// Ctrl-C at the prompt is consumed by the prompt: it does not reach the host's own SIGINT handling, so the run
/// ends through the `Abort` decision rather than as a cancellation. Prompts run on their own thread, one at a time
/// per process.
///
/// A signal sent to the process (SIGTERM, `kill -INT`) reaches the host's handlers, not the prompt. A host that
/// wants it to end the prompt like Ctrl-C gives the gate a token with [`with_interrupt`](Self::with_interrupt) and
/// cancels it from its handler: the prompt on screen ends, nothing runs, and the decision is [`Decision::Abort`].
///
/// ```no_run
/// use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision, TerminalGate};
///
/// # async fn demo() {
/// let gate = TerminalGate::stderr();
/// if gate.can_ask() {
///     let req = ConfirmRequest::new("stream_rm", "stream rm", "nats stream rm ORDERS --force", "ai:confirm");
///     match gate.confirm(&req).await {
///         Decision::Once | Decision::ForConversation => println!("approved"),
///         Decision::Abort => println!("interrupted: end the run"),
///         _ => println!("declined"),
///     }
/// }
/// # }
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "terminal")))]
#[derive(Debug, Clone)]
pub struct TerminalGate {
    // Private so later options (another stream, a theme) do not break construction.
    interrupt: Option<CancellationToken>,
}

impl TerminalGate {
    /// A gate that draws its prompts on stderr and reads the operator's keys from the terminal.
    #[must_use]
    pub fn stderr() -> Self {
        TerminalGate { interrupt: None }
    }

    /// End every prompt as if Ctrl-C were pressed ([`Decision::Abort`]) once `token` is cancelled, for example from
    /// the host's SIGTERM handler (GATE-12). A prompt on screen is taken down and the terminal restored; a prompt
    /// asked after the token was cancelled is never shown. Needs a tokio runtime with IO and time enabled.
    ///
    /// ```no_run
    /// use fisk_ai::gate::TerminalGate;
    /// use fisk_ai::tool::CancellationToken;
    ///
    /// # async fn demo() -> std::io::Result<()> {
    /// let stop_prompts = CancellationToken::new();
    /// let gate = TerminalGate::stderr().with_interrupt(stop_prompts.clone());
    /// let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    /// tokio::spawn(async move {
    ///     term.recv().await;
    ///     stop_prompts.cancel();
    /// });
    /// # let _ = gate;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_interrupt(mut self, token: CancellationToken) -> Self {
        self.interrupt = Some(token);
        self
    }
}

#[async_trait]
impl ConfirmGate for TerminalGate {
    /// True only when stdin and stderr are both terminals.
    fn can_ask(&self) -> bool {
        tty::reachable()
    }

    async fn confirm(&self, req: &ConfirmRequest) -> Decision {
        // Sanitized again: the request's fields are public and may have been changed after `ConfirmRequest::new`.
        let command = sanitize(&req.command, PROMPT_LIMIT);
        let header = format!("Approval needed for \"{command}\" (tagged {})", sanitize(&req.trigger, PROMPT_LIMIT));
        let line = format!("  {}", sanitize(&req.command_line, PROMPT_LIMIT));
        let short = sanitize(&req.command, OPTION_COMMAND_LIMIT);
        // EXACT-3: each option says the scope it grants. Under `remember: exact` the tool-wide one is not offered;
        // otherwise it keeps its place (2), so an operator's habit still means what it meant.
        let mut options = vec!["No, decline".to_owned(), "Yes, run this call once".to_owned()];
        let mut scopes = vec![Decision::Decline, Decision::Once];
        if req.remember == Remember::Tool {
            options.push(format!("Yes, and don't ask again for \"{short}\" in this conversation (any arguments)"));
            scopes.push(Decision::ForConversation);
        }
        options.push(format!(
            "Yes, and don't ask again for \"{short}\" with exactly these arguments in this conversation"
        ));
        scopes.push(Decision::ForConversationExact);
        let notices = scopes.clone();
        let answer = tty::ask_until(
            move |term| {
                term.write_line(&header)?;
                term.write_line(&line)?;
                let choice =
                    Select::new().with_prompt("Your choice").items(&options).default(0).interact_on_opt(term)?;
                // The choice stands even if this notice cannot be written.
                let _ = match choice.and_then(|i| notices.get(i)) {
                    Some(Decision::ForConversation) => {
                        term.write_line(&format!("Won't ask again for \"{short}\" in this conversation."))
                    }
                    Some(Decision::ForConversationExact) => term.write_line(&format!(
                        "Won't ask again for \"{short}\" with these arguments in this conversation."
                    )),
                    _ => Ok(()),
                };
                Ok(choice)
            },
            self.interrupt.as_ref(),
        )
        .await;
        match answer {
            Answer::Given(i) => scopes.get(i).copied().unwrap_or(Decision::Decline),
            Answer::Interrupted => Decision::Abort,
            Answer::NoTerminal => Decision::Decline,
            Answer::Failed(reason) => {
                tracing::warn!(%reason, "approval prompt failed; declining");
                Decision::Decline
            }
        }
    }
}
