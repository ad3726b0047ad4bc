//! The processes a call's cgroups still held when the call ended: killed through pidfds, then reaped (SBX-4).
//!
//! A process that left the child's session and cleared its environment is tied to its call only by its cgroup, so
//! only the cgroup's end finds it. Killed, it becomes a zombie of this process, which is a child subreaper (see
//! `crate::exec`), and nobody else would ever collect it: a server running many such calls would fill the process
//! table. Each is held by a pidfd from the moment it is killed, so the signal and the reaping reach that very
//! process even if its pid is reused meanwhile, and `waitid(P_PIDFD)` reaps nothing else. What is reaped is what was
//! in the call's cgroup: never the call's direct child, whose handle reaps it (it is spared), and never a host's
//! child unless the call's own processes moved it into their group, which only a root child that Landlock lets
//! write to cgroupfs (a profile without `fs` rules) can do, and such a child could as well kill it.

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, pidfd_open, pidfd_send_signal, waitid};
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// At most this many pidfds are held at once by all the calls of this process together, so calls that left crowds
/// behind cannot take the agent's descriptors; processes beyond are killed without one held, and their reaping is
/// left to whoever adopts them.
const HELD: usize = 256;
/// How many pidfds the calls of this process hold now.
static HELD_NOW: AtomicUsize = AtomicUsize::new(0);
static NO_PIDFD_WAIT: Once = Once::new();
/// How long [`Killed::reap`] waits for the killed to exit and be reparented here.
const REAP_WITHIN: Duration = Duration::from_millis(500);

/// What one call's end killed, by pid.
#[derive(Debug, Default)]
pub(super) struct Killed {
    held: HashMap<i32, Held>,
    /// The call's direct child: its owner reaps it.
    spared: Option<i32>,
}

impl Killed {
    /// Spare `pid` (the call's direct child) from reaping; it is still killed.
    pub(super) fn spare(&mut self, pid: i32) {
        self.spared = Some(pid);
    }

    /// Kill `pid`, listed in the group: through the pidfd already held for it, else a fresh one.
    pub(super) fn kill(&mut self, pid: i32) {
        let Some(raw) = Pid::from_raw(pid) else { return };
        if let Some(held) = self.held.get(&pid) {
            match pidfd_send_signal(&held.0, Signal::KILL) {
                // The held process is reaped and a new one listed under its pid: that one is killed below.
                Err(Errno::SRCH) => drop(self.held.remove(&pid)),
                _ => return,
            }
        }
        match pidfd_open(raw, PidfdFlags::empty()) {
            Ok(fd) => {
                // ESRCH: it exited and was reaped since the listing.
                let _ = pidfd_send_signal(&fd, Signal::KILL);
                if Some(pid) != self.spared
                    && let Some(held) = Held::take(fd)
                {
                    self.held.insert(pid, held);
                }
            }
            // Gone already.
            Err(Errno::SRCH) => {}
            // No descriptor to spare (or no pidfds in this kernel): killed by pid as before, and not reaped here.
            Err(_) => {
                let _ = rustix::process::kill_process(raw, Signal::KILL);
            }
        }
    }

    /// Reap every held process that is a zombie of this process, waiting a little for the killed to finish
    /// exiting: a process leaves `cgroup.procs` just before it is reparented. A process still running after the
    /// wait (stuck in the kernel) is left, with a warning; one that another process reaped is simply gone.
    pub(super) fn reap(self) {
        let mut pending: Vec<(i32, Held)> = self.held.into_iter().collect();
        let until = Instant::now() + REAP_WITHIN;
        let mut pause = Duration::from_millis(1);
        loop {
            pending.retain(|(pid, held)| !settled(*pid, &held.0));
            if pending.is_empty() || Instant::now() >= until {
                break;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        // Told apart by the pidfd: readable once the process has exited.
        let (exited, running): (Vec<_>, Vec<_>) = pending.iter().partition(|(_, held)| exited(&held.0));
        if !running.is_empty() {
            let pids: Vec<i32> = running.iter().map(|(pid, _)| *pid).collect();
            tracing::warn!(target: "fisk_ai::sandbox", ?pids, "killed processes of a call's cgroup still run (stuck in the kernel?); not reaped");
        }
        if !exited.is_empty() {
            let pids: Vec<i32> = exited.iter().map(|(pid, _)| *pid).collect();
            tracing::debug!(target: "fisk_ai::sandbox", ?pids, "killed processes of a call's cgroup exited with a parent other than this process; left to it");
        }
    }
}

/// Whether the process behind `fd` needs no more waiting: reaped now, or already reaped by another.
fn settled(pid: i32, fd: &OwnedFd) -> bool {
    match waitid(WaitId::PidFd(fd.as_fd()), WaitIdOptions::EXITED | WaitIdOptions::NOHANG) {
        // Reaped now.
        Ok(Some(_)) => true,
        // Our child, still exiting.
        Ok(None) => false,
        // Not (yet) our child: gone if no process holds its pid any more, else its parent is still exiting and it
        // comes to us.
        Err(Errno::CHILD) => {
            Pid::from_raw(pid).is_none_or(|p| rustix::process::test_kill_process(p) == Err(Errno::SRCH))
        }
        Err(Errno::INTR) => false,
        // `P_PIDFD` is Linux 5.4+; `pidfd_open` 5.3.
        Err(Errno::INVAL) => {
            NO_PIDFD_WAIT.call_once(|| {
                tracing::warn!(target: "fisk_ai::sandbox", "this kernel cannot wait on a pidfd (Linux 5.4+): processes a call's cgroup killed are left to whoever adopts them");
            });
            true
        }
        Err(_) => true,
    }
}

/// Whether the process behind `fd` has exited (its pidfd polls readable).
fn exited(fd: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let now = Timespec { tv_sec: 0, tv_nsec: 0 };
    poll(&mut fds, Some(&now)).is_ok_and(|n| n > 0) && fds[0].revents().contains(PollFlags::IN)
}

/// A pidfd counted against [`HELD`].
#[derive(Debug)]
struct Held(OwnedFd);

impl Held {
    /// `fd`, counted, if the budget has room; else `None` (and `fd` is closed).
    fn take(fd: OwnedFd) -> Option<Held> {
        let taken = HELD_NOW.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < HELD).then_some(n + 1));
        // Built only when counted: a `Held` dropped uncounted would give back a count it never took.
        match taken {
            Ok(_) => Some(Held(fd)),
            Err(_) => None,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD_NOW.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    fn state(pid: i32) -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).map(str::to_owned)
    }

    #[test]
    fn sbx_4_what_a_calls_end_kills_is_reaped_but_the_spared_child_is_left_to_its_handle() {
        let mut orphan = Command::new("sleep").arg("30").spawn().unwrap();
        let mut direct = Command::new("sleep").arg("30").spawn().unwrap();
        let (o, d) = (i32::try_from(orphan.id()).unwrap(), i32::try_from(direct.id()).unwrap());
        let mut killed = Killed::default();
        killed.spare(d);
        killed.kill(o);
        killed.kill(d);
        // Killed twice, as a listing that still shows a dying process does: the held pidfd is used again.
        killed.kill(o);
        killed.reap();
        assert_eq!(state(o), None, "the killed process is reaped, not left a zombie");
        // The spared one is killed, and its status is still there for its owner.
        let status = direct.wait().unwrap();
        assert_eq!(status.signal(), Some(9));
        // The reaped one's status is gone: its handle finds no child.
        assert!(orphan.wait().is_err());
        assert_eq!(HELD_NOW.load(Ordering::Acquire), 0, "every pidfd is given back");

        // With the budget taken (by other calls' ends), a process is still killed, but held and reaped no more.
        let budget: Vec<Held> =
            std::iter::from_fn(|| Held::take(std::fs::File::open("/dev/null").unwrap().into())).collect();
        assert_eq!(budget.len(), HELD);
        let mut over = Command::new("sleep").arg("30").spawn().unwrap();
        let mut killed = Killed::default();
        killed.kill(i32::try_from(over.id()).unwrap());
        assert!(killed.held.is_empty());
        killed.reap();
        assert_eq!(over.wait().unwrap().signal(), Some(9), "killed, and left to its parent");
        drop(budget);
        assert_eq!(HELD_NOW.load(Ordering::Acquire), 0);
    }
}
