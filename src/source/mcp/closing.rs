//! Closing a stdio server the way the MCP transport specification asks (MCPI-17): close its stdin, wait for it
//! to exit, then `SIGTERM`, wait again, and only then kill its group and every descendant. A server given that
//! time flushes what it holds (a cache, a log, a lock it must release) instead of losing it to a `SIGKILL`.
//!
//! The wait happens off the dropping code's path, in a task of the runtime. Every server started is registered
//! here until it is ended, so a host can wait for the closing ones ([`wait_servers_closed`], which kills what is
//! left when its time is up) or end them all at once on its way out ([`kill_servers_now`], for a path that skips
//! destructors, such as `std::process::exit`). A closing task the runtime drops at shutdown kills what it was
//! closing, so nothing outlives the process by way of a normal exit.

use crate::exec::{Descendants, Sweep};
use crate::sandbox::CallGroup;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// How long a server has to exit once its stdin is closed, and again after `SIGTERM`; also the longest wait for
/// the session to close its stdin.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// How many servers are being closed right now.
static CLOSING: LazyLock<watch::Sender<usize>> = LazyLock::new(|| watch::Sender::new(0));

/// Every stdio server started and not yet ended: its sweep, and whether it is closing.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);
/// Held for reading from a server's spawn until it is in [`LIVE`], and for writing by [`kill_servers_now`], so a
/// server started meanwhile is waited for and killed too, never missed between its spawn and its registration.
static SPAWNING: RwLock<()> = RwLock::new(());

/// Hold while starting a server, until it is registered (see [`SPAWNING`]).
pub(super) fn spawning() -> RwLockReadGuard<'static, ()> {
    SPAWNING.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Live {
    id: u64,
    sweep: Sweep,
    closing: bool,
    /// Set once the server was reaped: its after-exit sweep has run, and its group id may be anyone's now, so
    /// it is not swept again from here.
    reaped: Arc<AtomicBool>,
}

impl Live {
    fn sweep(&self) -> Option<Sweep> {
        (!self.reaped.load(Ordering::Acquire)).then(|| self.sweep.clone())
    }
}

/// Wait, at most `within`, until every stdio server whose tools were dropped has exited or been killed; kill
/// those still closing when the time is up (their group and every descendant). Whether all had ended by then.
///
/// A host calls it before it exits, after dropping its agents and harnesses, so that each server gets its grace
/// period (MCPI-17). Servers whose tools are still held are not touched.
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn demo() {
/// // ... the agent and its tools are dropped ...
/// if !fisk_ai::source::mcp::wait_servers_closed(Duration::from_secs(5)).await {
///     eprintln!("some MCP servers did not close in time and were killed");
/// }
/// # }
/// ```
pub async fn wait_servers_closed(within: Duration) -> bool {
    let mut closing = CLOSING.subscribe();
    if tokio::time::timeout(within, closing.wait_for(|n| *n == 0)).await.is_ok() {
        return true;
    }
    let late: Vec<Sweep> = lock().iter().filter(|l| l.closing).filter_map(Live::sweep).collect();
    // Reads /proc and reaps: off the async threads.
    let _ = tokio::task::spawn_blocking(move || late.iter().for_each(Sweep::run)).await;
    false
}

/// Kill every stdio server this process started and has not ended yet, closing or not, with its group and every
/// descendant, now and synchronously. A server another thread is starting at that moment is waited for (the
/// time of its spawn) and killed too. For a way out that skips destructors and the runtime's end (a second
/// Ctrl-C before `std::process::exit`), where the servers would otherwise be left to init.
///
/// ```no_run
/// fisk_ai::source::mcp::kill_servers_now();
/// std::process::exit(130);
/// ```
pub fn kill_servers_now() {
    // Waits for the servers being started right now to be registered.
    let _started = SPAWNING.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    let all: Vec<Sweep> = lock().iter().filter_map(Live::sweep).collect();
    all.iter().for_each(Sweep::run);
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Live>> {
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A server's entry in [`LIVE`], removed when dropped.
pub(super) struct Registered(u64);

/// Marks a registered server reaped; held by the task that waits for it.
pub(super) struct Reaped(Arc<AtomicBool>);

impl Reaped {
    pub(super) fn mark(&self) {
        self.0.store(true, Ordering::Release);
    }
}

impl Registered {
    pub(super) fn new(sweep: Sweep) -> (Self, Reaped) {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let reaped = Arc::new(AtomicBool::new(false));
        lock().push(Live { id, sweep, closing: false, reaped: Arc::clone(&reaped) });
        (Registered(id), Reaped(reaped))
    }

    fn closing(&self) {
        if let Some(l) = lock().iter_mut().find(|l| l.id == self.0) {
            l.closing = true;
        }
    }
}

#[cfg(test)]
impl Registered {
    pub(super) fn id(&self) -> u64 {
        self.0
    }
}

/// Whether the server registered as `id` is still in [`LIVE`].
#[cfg(test)]
pub(super) fn is_live(id: u64) -> bool {
    lock().iter().any(|l| l.id == id)
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock().retain(|l| l.id != self.0);
    }
}

/// One server, to be closed: counted while it closes, including when the runtime drops the closing.
pub(super) struct Ending {
    pub(super) guard: Descendants,
    pub(super) group: Option<CallGroup>,
    /// Asks the task that owns the child to send its group `SIGTERM` (while the child is unreaped, so its pid,
    /// and so its group's id, cannot be anyone else's).
    pub(super) terminate: Option<oneshot::Sender<()>>,
    /// Becomes `true` once the server has exited and been reaped.
    pub(super) exited: watch::Receiver<bool>,
    /// Becomes `true` once the session has closed the server's stdin.
    pub(super) stdin_closed: watch::Receiver<bool>,
    pub(super) registered: Registered,
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
                self.registered.closing();
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

    /// The specification's sequence, its first grace counted from when the session closed the server's stdin.
    async fn run(mut self) {
        let _ = tokio::time::timeout(GRACE, self.stdin_closed.wait_for(|c| *c)).await;
        if !self.exits_within(GRACE).await
            && let Some(terminate) = self.terminate.take()
        {
            tracing::debug!(target: "fisk_ai::source::mcp", "the server did not exit on EOF; SIGTERM");
            let _ = terminate.send(());
            if !self.exits_within(GRACE).await {
                tracing::debug!(target: "fisk_ai::source::mcp", "the server ignored SIGTERM; killed");
            }
        }
        // What is left (the server, or what it left running) is killed; the sweep reads /proc, so off the async
        // threads. The cgroup goes after it, then the registration.
        let Ending { mut guard, group, registered, .. } = self;
        let _ = tokio::task::spawn_blocking(move || {
            guard.end();
            drop(group);
            drop(registered);
        })
        .await;
    }

    async fn exits_within(&mut self, grace: Duration) -> bool {
        // A closed sender means the task that waited for the child is gone: it reaped it, or the runtime dropped
        // it (and `kill_on_drop` killed the child). Either way there is nothing left to ask to exit.
        matches!(tokio::time::timeout(grace, self.exited.wait_for(|e| *e)).await, Ok(Ok(_)) | Ok(Err(_)))
    }
}
