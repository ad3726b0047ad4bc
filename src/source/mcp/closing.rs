//! Closing a stdio server the way the MCP transport specification asks (MCPI-17): close its stdin, wait for it
//! to exit, then `SIGTERM`, wait again, and only then kill its group and every descendant. A server given that
//! time flushes what it holds (a cache, a log, a lock it must release) instead of losing it to a `SIGKILL`.
//!
//! The wait happens off the dropping code's path, in a task of the runtime. Those tasks are counted here, so a
//! host that is about to exit can wait for them ([`wait_servers_closed`]); a task the runtime drops at shutdown
//! kills what it was closing, so nothing outlives the process either way.

use crate::exec::Descendants;
use crate::sandbox::CallGroup;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::sync::LazyLock;
use std::time::Duration;
use tokio::sync::watch;

/// How long a server has to exit once its stdin is closed, and again after `SIGTERM`.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// How many servers are being closed right now.
static CLOSING: LazyLock<watch::Sender<usize>> = LazyLock::new(|| watch::Sender::new(0));

/// Wait, at most `within`, until every stdio server whose tools were dropped has exited or been killed. Whether
/// all have.
///
/// A host calls it before it exits, after dropping its agents and harnesses, so that each server gets its grace
/// period (MCPI-17). A server still closing when the runtime shuts down is killed at once, as it would be
/// without this call.
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn demo() {
/// // ... the agent and its tools are dropped ...
/// if !fisk_ai::source::mcp::wait_servers_closed(Duration::from_secs(5)).await {
///     eprintln!("some MCP servers were still closing; they are killed at exit");
/// }
/// # }
/// ```
pub async fn wait_servers_closed(within: Duration) -> bool {
    let mut closing = CLOSING.subscribe();
    tokio::time::timeout(within, closing.wait_for(|n| *n == 0)).await.is_ok()
}

/// One server being closed: counted from its start to its end, including when the runtime drops it.
pub(super) struct Ending {
    pub(super) guard: Descendants,
    pub(super) group: Option<CallGroup>,
    pub(super) pgid: Option<Pid>,
    /// Becomes `true` once the server has exited and been reaped.
    pub(super) exited: watch::Receiver<bool>,
}

/// Decrements [`CLOSING`] when the closing ends, however it ends.
struct Counted;

impl Counted {
    fn new() -> Self {
        CLOSING.send_modify(|n| *n += 1);
        Counted
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        CLOSING.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Ending {
    /// Close in the background when a runtime is at hand; otherwise (a drop outside any runtime) kill now.
    pub(super) fn start(self) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let counted = Counted::new();
                runtime.spawn(async move {
                    self.run().await;
                    drop(counted);
                });
            }
            // The guard's drop kills the group and every descendant.
            Err(_) => drop(self),
        }
    }

    /// The specification's sequence. Its stdin is already closed: the session that owned the write half ended
    /// first.
    async fn run(mut self) {
        if !self.exits_within(GRACE).await
            && let Some(pgid) = self.pgid
        {
            tracing::debug!(target: "fisk_ai::source::mcp", pgid = pgid.as_raw(), "the server did not exit on EOF; SIGTERM");
            // ESRCH: it exited meanwhile.
            let _ = killpg(pgid, Signal::SIGTERM);
            if !self.exits_within(GRACE).await {
                tracing::debug!(target: "fisk_ai::source::mcp", pgid = pgid.as_raw(), "the server ignored SIGTERM; killed");
            }
        }
        // What is left (the server, or what it left running) is killed; the sweep reads /proc, so off the async
        // threads. The cgroup goes after it.
        let Ending { mut guard, group, .. } = self;
        let _ = tokio::task::spawn_blocking(move || {
            guard.end();
            drop(group);
        })
        .await;
    }

    async fn exits_within(&mut self, grace: Duration) -> bool {
        // A closed sender means the waiting task is gone, which it only is once the child was reaped.
        matches!(tokio::time::timeout(grace, self.exited.wait_for(|e| *e)).await, Ok(Ok(_)) | Ok(Err(_)))
    }
}
