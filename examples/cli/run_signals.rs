//! `run`'s signal handling (SESS-24, GATE-12): what SIGINT and SIGTERM stop during a run.

use crate::run::Stderr;
use fisk_ai::tool::CancellationToken;
use std::sync::Arc;

/// What a signal can stop.
pub(crate) struct Tokens {
    pub(crate) cancel: CancellationToken,
    pub(crate) suspend: CancellationToken,
    /// Ends an approval prompt on screen (and any later one) as Ctrl-C at the prompt would.
    pub(crate) prompts: CancellationToken,
}

/// SESS-24: with a checkpoint the first SIGINT or a SIGTERM asks for a suspend at the next boundary and a second
/// SIGINT aborts; without one either signal cancels the run (killing a running tool's process group). Either signal
/// also ends an approval prompt that is waiting for the operator, as Ctrl-C at the prompt does (GATE-12): nothing
/// runs, and a checkpointed run ends suspended, resumable, with the same call asked again on resume.
pub(crate) fn watch(checkpointed: bool, tokens: Tokens, err: Arc<Stderr>) -> std::io::Result<()> {
    let Tokens { cancel, suspend, prompts } = tokens;
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        loop {
            let interrupt = tokio::select! {
                Some(()) = int.recv() => true,
                Some(()) = term.recv() => false,
                else => return,
            };
            // The prompt would otherwise keep waiting for a key while the run is asked to stop.
            prompts.cancel();
            if cancel.is_cancelled() {
                // Cancelling did not end the run in time: another interrupt leaves at once, and `exit` runs no
                // destructor, so the stdio MCP servers are ended here (MCPI-17).
                fisk_ai::source::mcp::kill_servers_now();
                std::process::exit(130);
            }
            if !checkpointed || (interrupt && suspend.is_cancelled()) {
                cancel.cancel();
                continue;
            }
            if !suspend.is_cancelled() {
                suspend.cancel();
                err.line("notice: suspending after the current step; press Ctrl-C again to abort");
            }
        }
    });
    Ok(())
}
