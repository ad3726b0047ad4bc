//! The sweeps after a normal exit (EXEC-17), off every call's path and gathered.
//!
//! After a child exited and its output closed, what may be left of its lineage is a descendant that left the group
//! and closed its output (a daemon). Finding one means reading this process's children from `/proc`, about thirty
//! system calls, and it used to run on the async runtime's blocking pool: one blocking-thread wake-up and one read
//! of `/proc` per call, about a tenth of the server's CPU per call. Here one thread, started on the first call and
//! gone after a minute without calls, waits [`GATHER`] after a first sweep arrives, takes every sweep posted
//! meanwhile, and checks them all against one read of this process's children (each child's environment read once),
//! running the full sweep (kills, further passes, reaping) only for a lineage that still has someone.
//!
//! A daemon of a finished call is therefore killed at most [`GATHER`] (plus the check) after the call ended.
//! [`settle`] waits until every posted sweep has run, so a server that stops waits for them.

use super::Sweep;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;
#[cfg(feature = "mcp")]
use std::time::Instant;

/// How long the thread waits after the first sweep of a batch for more to arrive.
pub(super) const GATHER: Duration = Duration::from_millis(10);
/// How long the thread stays without work before it ends (a later call starts another).
const IDLE: Duration = Duration::from_secs(60);

/// The running thread's queue, if one runs. Posting holds the lock while sending and the thread holds it while
/// deciding to end, so no sweep is ever posted to a thread that has decided to end.
static QUEUE: Mutex<Option<Sender<Sweep>>> = Mutex::new(None);
/// Sweeps posted and not yet run, for [`settle`].
static PENDING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// Run `sweep` soon on the sweeping thread; here and now if that thread cannot be started.
pub(super) fn post(sweep: Sweep) {
    *PENDING.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    let mut queue = QUEUE.lock().unwrap_or_else(PoisonError::into_inner);
    let sweep = match queue.as_ref() {
        Some(tx) => match tx.send(sweep) {
            Ok(()) => return,
            // The thread panicked: start another.
            Err(mpsc::SendError(sweep)) => sweep,
        },
        None => sweep,
    };
    let (tx, rx) = mpsc::channel();
    let started = std::thread::Builder::new().name("fisk-ai-sweep".into()).spawn(move || run(rx));
    match started {
        Ok(_) => {
            // A new channel's receiver is alive until the thread ends, and it ends only after taking the queue.
            let _ = tx.send(sweep);
            *queue = Some(tx);
        }
        Err(e) => {
            *queue = None;
            drop(queue);
            tracing::warn!(target: "fisk_ai::exec", error = %e, "cannot start the sweeping thread; sweeping on the caller's thread");
            sweep.run();
            done(1);
        }
    }
}

/// The sweeping thread: batches of sweeps, each checked against one view of this process's children.
fn run(rx: Receiver<Sweep>) {
    loop {
        let first = match rx.recv_timeout(IDLE) {
            Ok(sweep) => sweep,
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                let mut queue = QUEUE.lock().unwrap_or_else(PoisonError::into_inner);
                match rx.try_recv() {
                    Ok(sweep) => sweep,
                    Err(_) => {
                        *queue = None;
                        return;
                    }
                }
            }
        };
        std::thread::sleep(GATHER);
        let batch: Vec<Sweep> = std::iter::once(first).chain(rx.try_iter()).collect();
        // Counted out however the batch ends, so `settle` never waits on a batch that panicked.
        let _done = Done(batch.len());
        super::linux::sweep_after_exit(&batch);
    }
}

/// Counts `.0` sweeps as run when dropped.
struct Done(usize);

impl Drop for Done {
    fn drop(&mut self) {
        done(self.0);
    }
}

fn done(n: usize) {
    let mut pending = PENDING.0.lock().unwrap_or_else(PoisonError::into_inner);
    *pending = pending.saturating_sub(n);
    PENDING.1.notify_all();
}

/// Block until every posted sweep has run, or `until` passes. Whether they all ran.
#[cfg(feature = "mcp")]
pub(super) fn settle(until: Instant) -> bool {
    let pending = PENDING.0.lock().unwrap_or_else(PoisonError::into_inner);
    let within = until.saturating_duration_since(Instant::now());
    let (pending, _) =
        PENDING.1.wait_timeout_while(pending, within, |n| *n > 0).unwrap_or_else(PoisonError::into_inner);
    *pending == 0
}
