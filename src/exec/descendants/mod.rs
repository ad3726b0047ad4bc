//! No descendant outlives its call (EXEC-17).
//!
//! EXEC-10's process-group kill misses a descendant that left the child's group: a grandchild that called
//! `setsid()` (or `setpgid()`) keeps running after the call, the server or the introspection that started it. So on
//! Linux every child the crate starts is also ended by lineage:
//!
//! - Before the first child starts, this process becomes a *child subreaper* (`PR_SET_CHILD_SUBREAPER`), once and
//!   for the rest of its life: a descendant whose parent exits is reparented to this process instead of to init, so
//!   it can still be found.
//! - Every child gets [`CALL_MARKER`] in its environment, naming that one spawn. Descendants inherit it across
//!   fork, exec, `setsid()` and double forks, which is what ties an orphan reparented to this process back to the
//!   call it came from.
//! - When the call ends (normally, at its deadline, cancelled, over its output cap or dropped), when a stdio MCP
//!   server's connection ends or the server exits, and when introspection ends: the child's group is killed, then
//!   every remaining descendant is killed with SIGKILL in passes, each pass walking `/proc` again, until a pass
//!   finds nobody new (bounded). A descendant is a process below the child (while the child lives), or a child of
//!   this process that carries the spawn's marker or is a member of the child's group, and every process below
//!   those.
//! - The killed processes this process ends up parenting are reaped, each by its own pid after checking it is the
//!   same process (pid and start time) and a zombie. Never `waitpid(-1)`: that would steal the exit status of a
//!   host's own children. The direct child is left to the tokio handle that owns it.
//!
//! What that means to a host embedding the crate, and what it cannot catch: see the [`crate::exec`] docs.
//!
//! Elsewhere than Linux there is no subreaper and no `/proc` walk: only the group kill (EXEC-10).

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod sweeper;
#[cfg(target_os = "linux")]
mod table;

#[cfg(not(target_os = "linux"))]
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The environment variable that ties a child's descendants to the one spawn that started them (EXEC-17).
///
/// Set on Linux on every child the crate starts (command tools, introspection, stdio MCP servers): a
/// `:`-separated list of spawn ids, this spawn's last, after any the agent itself inherited, so an agent nested
/// inside another stays attributable to both.
pub const CALL_MARKER: &str = "FISK_AI_CALL";

/// What identifies one spawn's lineage before the child exists: its marker, and the boot clock read just before
/// the spawn. [`Marker::prepare`] must run right before the spawn so the subreaper setting and the marker are in
/// place when the child forks, and the clock reading precedes the fork.
#[derive(Debug, Clone)]
pub(crate) struct Marker {
    #[cfg(target_os = "linux")]
    id: std::sync::Arc<str>,
    #[cfg(target_os = "linux")]
    before: table::BootClock,
}

impl Marker {
    /// Make this process a subreaper (once), mark `cmd`'s environment with a fresh spawn id, and read the clock.
    #[cfg(target_os = "linux")]
    pub(crate) fn prepare(cmd: &mut std::process::Command) -> Marker {
        let id = linux::prepare(cmd);
        Marker { id, before: table::BootClock::now() }
    }

    /// Nothing: no subreaper, no marker, elsewhere than Linux.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn prepare(_cmd: &mut std::process::Command) -> Marker {
        Marker {}
    }
}

/// Everything needed to end one child's lineage; cheap to clone, so a task watching the child can end it too.
#[derive(Debug, Clone)]
pub(crate) struct Sweep {
    pgid: Option<Pid>,
    #[cfg(target_os = "linux")]
    lineage: linux::Lineage,
}

impl Sweep {
    #[cfg(target_os = "linux")]
    fn new(pgid: Option<Pid>, marker: Marker) -> Self {
        Sweep { pgid, lineage: linux::Lineage::new(pgid, marker.id, marker.before) }
    }

    #[cfg(not(target_os = "linux"))]
    fn new(pgid: Option<Pid>, _marker: Marker) -> Self {
        Sweep { pgid }
    }

    /// Kill the group and every remaining descendant, and reap what this process parents (EXEC-10, EXEC-17).
    /// Safe to run more than once.
    #[cfg(target_os = "linux")]
    pub(crate) fn run(&self) {
        linux::sweep(self.pgid, &self.lineage);
    }

    /// Kill the group (EXEC-10): the only lineage known elsewhere than Linux.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn run(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (group already gone) is fine.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

/// Wait, blocking and at most `within`, until every queued after-exit sweep has run (those not yet taken run here)
/// and every killed descendant this process was left parenting is reaped, so a server that stops its calls and
/// then exits leaves neither a daemon nor a zombie to whoever adopts it next (a subreaper that never waits for
/// it). Whether all were; `true` at once elsewhere than Linux, where nothing is reaped here.
#[cfg(feature = "mcp")]
pub(crate) fn settle(within: std::time::Duration) -> bool {
    // The gathered sweeps first: one of them may leave killed descendants to reap.
    #[cfg(target_os = "linux")]
    return {
        let until = std::time::Instant::now() + within;
        sweeper::settle(until) && linux::settle(until.saturating_duration_since(std::time::Instant::now()))
    };
    #[cfg(not(target_os = "linux"))]
    {
        let _ = within;
        true
    }
}

/// Ends a child's whole lineage when told to or when dropped, so an abandoned call leaves nothing running.
#[derive(Debug)]
pub(crate) struct Descendants {
    sweep: Sweep,
    ended: bool,
}

impl Descendants {
    /// Guard the child with `pid` (`None`: already gone), started with `marker`, leading its own process group.
    pub(crate) fn new(pid: Option<u32>, marker: Marker) -> Self {
        let pgid = pid.and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
        Descendants { sweep: Sweep::new(pgid, marker), ended: false }
    }

    /// A handle that ends the same lineage, for a task that sees the child exit (a stdio MCP server's).
    #[cfg(feature = "mcp")]
    pub(crate) fn sweep(&self) -> Sweep {
        self.sweep.clone()
    }

    /// Kill the child's group and every remaining descendant now. Later calls, and the drop, do nothing more:
    /// once a sweep finds nobody new, nothing attributed is left that could fork.
    pub(crate) fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.sweep.run();
        }
    }
}

impl Descendants {
    /// [`end`](Self::end), off the caller's path: after a normal exit the child is gone and its output closed, so
    /// what is left to end is only a descendant that left the group and closed its output. On Linux the sweep
    /// (reading `/proc`) is queued, and a blocking task of the runtime checks the sweeps of the calls that end
    /// within milliseconds against one read of `/proc` (`sweeper`); elsewhere the group kill runs here.
    pub(crate) fn end_soon(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        #[cfg(target_os = "linux")]
        sweeper::post(self.sweep.clone());
        #[cfg(not(target_os = "linux"))]
        self.sweep.run();
    }
}

impl Drop for Descendants {
    fn drop(&mut self) {
        self.end();
    }
}
