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
//!
//! Interrupting from outside ([`ask_until`]): a host that wants SIGTERM (or anything else) to end a prompt the way
//! Ctrl-C does cancels a token. The prompt thread sits in console's `poll` on the terminal, which only a signal
//! handled *on that thread* can wake; a signal sent to the process may land on any thread. So the prompt thread
//! keeps [`WAKE`] (SIGURG) unblocked, a handler for it is installed through tokio, and the waiting side sends it to
//! exactly that thread (`pthread_kill`) until the prompt returns. The interrupted `poll` fails with `EINTR`, which
//! console reports like Ctrl-C (restoring the terminal first). SIGURG is used because its default action is to
//! ignore it and nothing else in a process like this sends it (Go's runtime picks it for the same reason), so
//! installing the handler changes nothing a host relies on.

use dialoguer::console::Term;
use nix::sys::pthread::{Pthread, pthread_kill, pthread_self};
use nix::sys::signal::{SigSet, Signal};
use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The signal that wakes a prompt thread out of its wait for a key (see the module notes).
const WAKE: Signal = Signal::SIGURG;
/// How often [`WAKE`] is re-sent while an interrupted prompt has not returned: a signal that arrives while the
/// thread is drawing rather than waiting wakes nothing, so it is sent again until one lands in the wait.
const WAKE_RETRY: Duration = Duration::from_millis(50);

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
    ask_until(prompt, None).await
}

/// [`ask`], ended as [`Answer::Interrupted`] when `interrupt` is cancelled, exactly as if Ctrl-C had been pressed:
/// a prompt on screen is woken and returns (the terminal restored), one still queued is never shown, and an answer
/// given in the same instant is discarded. An already cancelled token asks nothing. Waking needs a tokio runtime
/// with its IO and time drivers (as the agent loop has); outside a tokio runtime an interrupted prompt ends at the
/// next key press instead, still as [`Answer::Interrupted`].
pub(crate) async fn ask_until<T, F>(prompt: F, interrupt: Option<&CancellationToken>) -> Answer<T>
where
    T: Send + 'static,
    F: FnOnce(&Term) -> io::Result<Option<T>> + Send + 'static,
{
    if !reachable() {
        return Answer::NoTerminal;
    }
    if interrupt.is_some_and(CancellationToken::is_cancelled) {
        return Answer::Interrupted;
    }
    let can_wake = interrupt.is_some() && wake_handler_installed();
    let target = Arc::new(PromptThread::default());
    let (tx, mut rx) = oneshot::channel();
    let thread_target = target.clone();
    let spawned = std::thread::Builder::new().name("fisk-ai-prompt".into()).spawn(move || {
        // Only this thread: the SIGINT console raises on Ctrl-C stays pending here and dies with the thread.
        let _ = SigSet::from(Signal::SIGINT).thread_block();
        // Inherited masks may block it; the wake must reach this thread's wait.
        let _ = SigSet::from(WAKE).thread_unblock();
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if tx.is_closed() || !thread_target.enter() {
            return; // The caller went away, or the prompt was interrupted, while queued: show nothing.
        }
        let term = Term::stderr();
        let result = {
            // Left on drop, so a panicking prompt is never signalled after its thread is gone.
            let _showing = Showing(&thread_target);
            term.write_line("").and_then(|()| prompt(&term))
        };
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
    let panicked = |_| Answer::Failed("the prompt panicked".into());
    let Some(token) = interrupt else {
        return rx.await.unwrap_or_else(panicked);
    };
    tokio::select! {
        answer = &mut rx => return answer.unwrap_or_else(panicked),
        () = token.cancelled() => {}
    }
    if target.stop() {
        // On screen: wake it, and wait until it has returned so the terminal is back in its normal mode.
        if !can_wake {
            let _ = rx.await;
            return Answer::Interrupted;
        }
        loop {
            target.wake();
            tokio::select! {
                _ = &mut rx => break,
                () = tokio::time::sleep(WAKE_RETRY) => {}
            }
        }
    }
    Answer::Interrupted
}

/// The prompt thread while it shows a prompt, so it can be signalled, and never after it has stopped showing it:
/// a thread id is only valid while the thread runs, and the mutex keeps `leave` from passing a `wake` in progress.
#[derive(Default)]
struct PromptThread {
    state: Mutex<ThreadState>,
}

#[derive(Default)]
struct ThreadState {
    showing: Option<Pthread>,
    stopped: bool,
}

impl PromptThread {
    fn lock(&self) -> std::sync::MutexGuard<'_, ThreadState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// On the prompt thread, before drawing: false when the prompt was interrupted first.
    fn enter(&self) -> bool {
        let mut state = self.lock();
        if !state.stopped {
            state.showing = Some(pthread_self());
        }
        !state.stopped
    }

    /// On the prompt thread, once the prompt returned or panicked.
    fn leave(&self) {
        self.lock().showing = None;
    }

    /// Interrupt: no prompt starts after this. True when one is on screen.
    fn stop(&self) -> bool {
        let mut state = self.lock();
        state.stopped = true;
        state.showing.is_some()
    }

    /// Send [`WAKE`] to the thread if it still shows its prompt.
    fn wake(&self) {
        let state = self.lock();
        if let Some(thread) = state.showing {
            let _ = pthread_kill(thread, WAKE);
        }
    }
}

/// Marks the prompt thread as showing its prompt until dropped.
struct Showing<'a>(&'a PromptThread);

impl Drop for Showing<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// Install (once per process) a handler for [`WAKE`], without which the signal would be ignored and wake nothing.
/// tokio keeps a handler for the life of the process once registered, so the stream itself is not kept. Outside a
/// tokio runtime nothing is installed and the answer is false (asked again next time).
fn wake_handler_installed() -> bool {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.load(Ordering::Acquire) {
        return true;
    }
    let ok = tokio::runtime::Handle::try_current().is_ok()
        && tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(WAKE as i32)).is_ok();
    if ok {
        INSTALLED.store(true, Ordering::Release);
    }
    ok
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
    fn gate_12_an_interrupt_before_the_prompt_shows_keeps_it_from_showing() {
        let t = PromptThread::default();
        assert!(!t.stop(), "nothing on screen yet");
        assert!(!t.enter(), "a prompt interrupted while queued is never shown");
        t.wake(); // Nothing to signal: a no-op.
    }

    #[test]
    fn gate_12_an_interrupt_while_the_prompt_shows_is_told_to_wake_it_and_never_after_it_left() {
        let t = PromptThread::default();
        assert!(t.enter());
        {
            let _showing = Showing(&t);
            assert_eq!(t.lock().showing, Some(pthread_self()));
        }
        assert_eq!(t.lock().showing, None, "left on drop");
        assert!(!t.stop(), "the prompt already returned: nothing to wake");
        let shown = PromptThread::default();
        assert!(shown.enter());
        assert!(shown.stop(), "on screen: the caller must wake it and wait");
    }

    #[test]
    fn gate_6_other_failures_are_never_answers() {
        assert_eq!(classify(err(io::ErrorKind::NotConnected)), Answer::NoTerminal);
        assert!(matches!(classify(err(io::ErrorKind::BrokenPipe)), Answer::Failed(_)));
        assert!(matches!(classify(err(io::ErrorKind::Other)), Answer::Failed(_)));
    }
}
