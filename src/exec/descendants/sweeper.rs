//! The sweeps after a normal exit (EXEC-17), off every call's path and gathered.
//!
//! After a child exited and its output closed, what may be left of its lineage is a descendant that left the group
//! and closed its output (a daemon). Finding one means reading this process's children from `/proc`, about thirty
//! system calls, and it used to run once per call on the async runtime's blocking pool: a blocking-thread wake-up
//! and a read of `/proc` per call, about a tenth of a server's CPU per call. Now sweeps are queued, and one
//! *drainer* at a time, itself a blocking task, waits [`GATHER`], takes every queued sweep and checks them all
//! against one read of this process's children (`linux::sweep_after_exit`), running the full sweep (kills, further
//! passes, reaping) only for a lineage that may still have someone.
//!
//! The drainer is a blocking task of the caller's runtime, so a host whose `main` returns right after a call still
//! has that call's sweep run: dropping a runtime waits for its running blocking tasks. Without a runtime the sweep
//! runs on the caller's thread. A drainer that has been at one batch for over [`STUCK`] (a `/proc` read can block)
//! no longer holds the others back: the next sweep starts another. [`settle`] runs what is still queued and waits
//! for the rest.

use super::Sweep;
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a drainer waits for more sweeps before it takes the queue.
pub(super) const GATHER: Duration = Duration::from_millis(10);
/// A drainer at one batch for longer than this is treated as stuck.
const STUCK: Duration = Duration::from_secs(1);

/// The queued sweeps, and since when the running drainer has been at it (`None`: no drainer).
struct Queue {
    sweeps: Vec<Sweep>,
    drainer: Option<Instant>,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue { sweeps: Vec::new(), drainer: None });
/// Sweeps posted and not yet run, for [`settle`].
static PENDING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// Run `sweep` soon on the runtime's blocking pool, gathered with others; here and now without a runtime.
pub(super) fn post(sweep: Sweep) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return sweep.run() };
    *PENDING.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    let mut queue = lock();
    queue.sweeps.push(sweep);
    let idle = queue.drainer.is_none_or(|since| since.elapsed() > STUCK);
    if idle {
        queue.drainer = Some(Instant::now());
        drop(queue);
        drop(runtime.spawn_blocking(drain));
    }
}

/// A drainer: gather, then take and sweep batches until the queue is empty.
fn drain() {
    std::thread::sleep(GATHER);
    loop {
        let batch = {
            let mut queue = lock();
            if queue.sweeps.is_empty() {
                queue.drainer = None;
                return;
            }
            queue.drainer = Some(Instant::now());
            std::mem::take(&mut queue.sweeps)
        };
        run(&batch);
    }
}

/// Sweep `batch`, counted out however it ends (a panic included, so [`settle`] never waits on it).
fn run(batch: &[Sweep]) {
    let _done = Done(batch.len());
    super::linux::sweep_after_exit(batch);
}

fn lock() -> std::sync::MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Counts `.0` sweeps as run when dropped.
struct Done(usize);

impl Drop for Done {
    fn drop(&mut self) {
        let mut pending = PENDING.0.lock().unwrap_or_else(PoisonError::into_inner);
        *pending = pending.saturating_sub(self.0);
        PENDING.1.notify_all();
    }
}

/// Run every queued sweep here, then block until every posted sweep has run, or `until` passes. Whether they all
/// ran.
#[cfg(feature = "mcp")]
pub(super) fn settle(until: Instant) -> bool {
    let batch = std::mem::take(&mut lock().sweeps);
    if !batch.is_empty() {
        run(&batch);
    }
    let pending = PENDING.0.lock().unwrap_or_else(PoisonError::into_inner);
    let within = until.saturating_duration_since(Instant::now());
    let (pending, _) =
        PENDING.1.wait_timeout_while(pending, within, |n| *n > 0).unwrap_or_else(PoisonError::into_inner);
    *pending == 0
}
