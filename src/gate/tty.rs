//! Terminal plumbing shared by [`TerminalGate`](super::TerminalGate) and the terminal `Prompter` behind the
//! `ask_human_*` tools (SPEC §10 GATE-7/9/12, §11 HITL-7/10, OVR-3).
//!
//! Every terminal prompt goes through [`ask`], which:
//! - asks nobody unless stdin and stderr are both terminals ([`reachable`]);
//! - writes the blank line that separates a prompt from earlier output (HITL-10), on stderr, never stdout (CLI-5);
//! - runs the blocking dialoguer prompt on a thread of its own, so no runtime worker blocks on a key press;
//! - shows one prompt at a time per process, so concurrent calls never interleave on the terminal or steal keys;
//! - keeps Ctrl-C at the prompt from reaching the rest of the process (see below);
//! - folds every way a prompt ends into an [`Answer`], so callers map failures to "no" without inspecting
//!   `io::Error` kinds.
//!
//! Ctrl-C: while it reads a key, console (dialoguer's terminal layer) puts the terminal in raw mode, so Ctrl-C
//! arrives as a byte; console then returns `Interrupted` *and* raises SIGINT on the reading thread. Left alone, that
//! signal would kill a host with no handler, or trip a host's own Ctrl-C cancellation, instead of ending the run
//! through the gate's `Abort` (GATE-12). The prompt thread therefore blocks SIGINT for its whole life: the raised
//! signal stays pending on that thread and is discarded when the thread exits, while a SIGINT sent to the process
//! (for example `kill -INT`) is still delivered to the other threads as before.

use dialoguer::console::Term;
use nix::sys::signal::{SigSet, Signal};
use std::io::{self, IsTerminal};
use std::sync::Mutex;
use tokio::sync::oneshot;

/// Whether an operator can be asked: stdin and stderr are both terminals (GATE-6, HITL-7).
pub(crate) fn reachable() -> bool {
    io::stdin().is_terminal() && io::stderr().is_terminal()
}

/// How a terminal prompt ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer<T> {
    /// The operator answered.
    Given(T),
    /// Ctrl-C, Esc or `q` (dialoguer's quit keys), or end of input on the terminal: the operator wants out.
    /// The gate turns this into `Decision::Abort` (GATE-12); the prompter into a negative outcome (HITL-7).
    Interrupted,
    /// stdin or stderr is not a terminal, so nobody was asked.
    NoTerminal,
    /// Anything else (an I/O error, a panic inside the prompt, a thread that could not start), with a short reason.
    Failed(String),
}

/// Serializes prompts process-wide: two prompts drawing at once would garble the screen and split the key presses.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Run `prompt` on the operator's terminal and report how it ended.
///
/// `prompt` draws on the stderr `Term` it is given and returns `Ok(Some(answer))`, or `Ok(None)` when the operator
/// quit (dialoguer's `interact_on_opt` on Esc/`q`). The blank separating line has already been written. Returns
/// [`Answer::NoTerminal`] without running `prompt` when [`reachable`] is false.
///
/// If the returned future is dropped (the run was cancelled), a prompt that already shows keeps waiting for one
/// key press, and its answer is discarded; a prompt still queued behind another one is never shown.
pub(crate) async fn ask<T, F>(prompt: F) -> Answer<T>
where
    T: Send + 'static,
    F: FnOnce(&Term) -> io::Result<Option<T>> + Send + 'static,
{
    if !reachable() {
        return Answer::NoTerminal;
    }
    let (tx, rx) = oneshot::channel();
    let spawned = std::thread::Builder::new().name("fisk-ai-prompt".into()).spawn(move || {
        // Only this thread: the SIGINT console raises on Ctrl-C stays pending here and dies with the thread.
        let _ = SigSet::from(Signal::SIGINT).thread_block();
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if tx.is_closed() {
            return; // The caller went away while queued: show nothing.
        }
        let term = Term::stderr();
        let result = term.write_line("").and_then(|()| prompt(&term));
        if !matches!(result, Ok(Some(_))) {
            // dialoguer hides the cursor while a prompt runs and leaves it hidden when the prompt fails.
            let _ = term.show_cursor();
        }
        let _ = tx.send(classify(result));
    });
    if let Err(e) = spawned {
        return Answer::Failed(format!("cannot start the prompt thread: {e}"));
    }
    // A closed channel means the prompt panicked (the sender was dropped during unwinding).
    rx.await.unwrap_or_else(|_| Answer::Failed("the prompt panicked".into()))
}

/// Map a prompt's result to an [`Answer`].
fn classify<T>(result: io::Result<Option<T>>) -> Answer<T> {
    match result {
        Ok(Some(answer)) => Answer::Given(answer),
        Ok(None) => Answer::Interrupted,
        // console reports Ctrl-C as `Interrupted` and a closed terminal as `UnexpectedEof`.
        Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::UnexpectedEof) => Answer::Interrupted,
        // dialoguer's "not a terminal".
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Answer::NoTerminal,
        Err(e) => Answer::Failed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: io::ErrorKind) -> io::Result<Option<u8>> {
        Err(io::Error::new(kind, "x"))
    }

    #[test]
    fn gate_12_interrupt_quit_and_end_of_input_are_interruptions() {
        assert_eq!(classify(Ok(Some(1u8))), Answer::Given(1));
        assert_eq!(classify::<u8>(Ok(None)), Answer::Interrupted);
        assert_eq!(classify(err(io::ErrorKind::Interrupted)), Answer::Interrupted);
        assert_eq!(classify(err(io::ErrorKind::UnexpectedEof)), Answer::Interrupted);
    }

    #[test]
    fn gate_6_other_failures_are_never_answers() {
        assert_eq!(classify(err(io::ErrorKind::NotConnected)), Answer::NoTerminal);
        assert!(matches!(classify(err(io::ErrorKind::BrokenPipe)), Answer::Failed(_)));
        assert!(matches!(classify(err(io::ErrorKind::Other)), Answer::Failed(_)));
    }
}
