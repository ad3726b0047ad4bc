//! The processes a call's cgroups still held when the call ended: killed through pidfds, then reaped (SBX-4).
//!
//! A process that left the child's session and cleared its environment is tied to its call only by its cgroup, so
//! only the cgroup's end finds it. Killed, it becomes a zombie of this process, which is a child subreaper (see
//! `crate::exec`), and nobody else would ever collect it: a server running many such calls would fill the process
//! table. Each is held by a pidfd from the moment it is killed, so the signal and the reaping reach that very
//! process even if its pid is reused meanwhile, and `waitid(P_PIDFD)` reaps nothing else: never a host's child, and
//! never the call's direct child, whose handle reaps it (it is spared).

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, pidfd_open, pidfd_send_signal, waitid};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// At most this many pidfds are held at once, so a call that left a crowd behind cannot take the agent's
/// descriptors; those beyond are killed by pid, and their reaping is left to whoever adopts them.
const HELD: usize = 256;
/// How long [`Killed::reap`] waits for the killed to exit and be reparented here.
const REAP_WITHIN: Duration = Duration::from_millis(500);

/// What one call's end killed, by pid.
#[derive(Debug, Default)]
pub(super) struct Killed {
    held: HashMap<i32, OwnedFd>,
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
        if let Some(fd) = self.held.get(&pid) {
            match pidfd_send_signal(fd, Signal::KILL) {
                // The held process is reaped and a new one listed under its pid: that one is killed below.
                Err(Errno::SRCH) => drop(self.held.remove(&pid)),
                _ => return,
            }
        }
        match pidfd_open(raw, PidfdFlags::empty()) {
            Ok(fd) => {
                // ESRCH: it exited and was reaped since the listing.
                let _ = pidfd_send_signal(&fd, Signal::KILL);
                if self.held.len() < HELD && Some(pid) != self.spared {
                    self.held.insert(pid, fd);
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
        let mut pending: Vec<(i32, OwnedFd)> = self.held.into_iter().collect();
        let until = Instant::now() + REAP_WITHIN;
        let mut pause = Duration::from_millis(1);
        loop {
            pending.retain(|(pid, fd)| !settled(*pid, fd));
            if pending.is_empty() || Instant::now() >= until {
                break;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(50));
        }
        if !pending.is_empty() {
            let pids: Vec<i32> = pending.iter().map(|(pid, _)| *pid).collect();
            tracing::warn!(target: "fisk_ai::sandbox", ?pids, "killed processes of a call's cgroup did not exit in time; not reaped");
        }
    }
}

/// Whether the process behind `fd` needs no more waiting: reaped now, or already reaped by another.
fn settled(pid: i32, fd: &OwnedFd) -> bool {
    match waitid(WaitId::PidFd(std::os::fd::AsFd::as_fd(fd)), WaitIdOptions::EXITED | WaitIdOptions::NOHANG) {
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
        Err(_) => true,
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
    }
}
