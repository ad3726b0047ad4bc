//! EXEC-17 on Linux: the subreaper setting, the spawn marker, the sweep (kill in passes) and the reaper.

use super::CALL_MARKER;
use super::table::{self, Entry, Procs};
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once};
use std::time::{Duration, Instant};

/// A sweep stops after this many passes even if descendants keep appearing (a fork bomb racing the kills).
const PASSES: usize = 16;
/// How long killed processes are waited for, in the background, before they are left to the host (one stuck in
/// uninterruptible sleep). The same bound as EXEC-10's teardown.
const REAP_WITHIN: Duration = Duration::from_secs(10);

static SUBREAPER: Once = Once::new();
static PROC_UNREADABLE: Once = Once::new();
static SPAWNS: AtomicU64 = AtomicU64::new(0);
/// How many reaping threads are running, for [`settle`].
static REAPING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// Become a subreaper (once), then mark `cmd` with a fresh spawn id, which is returned.
pub(super) fn prepare(cmd: &mut std::process::Command) -> Arc<str> {
    SUBREAPER.call_once(|| {
        // Process-wide and for good: the `crate::exec` documentation says what that means to a host.
        if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
            tracing::warn!(
                target: "fisk_ai::exec",
                error = %e,
                "cannot become a child subreaper: a descendant whose parent exits goes to init and may outlive its call"
            );
        }
    });
    // Unique among the live processes: no other process has our pid, and the counter never repeats in ours.
    let id: Arc<str> = format!("{}-{}", std::process::id(), SPAWNS.fetch_add(1, Ordering::Relaxed)).into();
    // An agent running inside another agent's call keeps the outer ids, so the outer agent still finds our
    // children's orphans when this agent dies.
    let value = match std::env::var(CALL_MARKER) {
        Ok(outer) if !outer.is_empty() => format!("{outer}:{id}"),
        _ => id.to_string(),
    };
    cmd.env(CALL_MARKER, value);
    id
}

/// One spawn: its marker, and the child as it was when it started (pid and start time), so a later pid reuse is
/// never mistaken for it.
#[derive(Debug, Clone)]
pub(super) struct Lineage {
    marker: Arc<str>,
    child: Option<Entry>,
}

impl Lineage {
    /// The lineage of the child leading group `pgid` (its pid), spawned after the boot clock read `before`; made
    /// right after the spawn, while the child cannot have been reaped yet.
    pub(super) fn new(pgid: Option<Pid>, marker: Arc<str>, before: table::BootClock) -> Self {
        Lineage { marker, child: pgid.and_then(|p| table::spawned(p.as_raw(), before)) }
    }

    /// Every process attributable to this spawn now: the child while it is still ours, this process's children
    /// that carry the marker or belong to the child's group (orphans reparented to us), and everything below
    /// those.
    fn attribute(&self, me: i32, procs: &Procs) -> Vec<Entry> {
        self.attribute_among(&procs.children(me), procs, &mut |pid| table::carries(pid, &self.marker))
    }

    /// [`attribute`](Self::attribute) given this process's children, `mine`, and how to tell whether a child
    /// carries this spawn's marker (so a batch reads each child's environment once).
    fn attribute_among(&self, mine: &[Entry], procs: &Procs, carries: &mut dyn FnMut(i32) -> bool) -> Vec<Entry> {
        // Nothing started before the child can descend from it: the host's older children are passed over
        // without reading their environment.
        let born = self.child.map_or(0, |c| c.start);
        let mut roots = Vec::new();
        // Read after `mine`, and only when a group member needs it (see `group_is_ours`).
        let mut ours: Option<bool> = None;
        for e in mine.iter().filter(|e| e.start >= born) {
            let is_child = self.child.is_some_and(|c| e.same(&c));
            // A member of the child's group other than its leader: the group id cannot be reused while it has
            // members, so this is the child's group, unless the child's pid now names another process, which then
            // leads a group of the same id that is not ours.
            let in_group = self.child.is_some_and(|c| e.pgrp == c.pid && e.pid != c.pid)
                && *ours.get_or_insert_with(|| self.group_is_ours());
            // A zombie's environment is gone: it can only match by group.
            if is_child || in_group || (!e.zombie && carries(e.pid)) {
                roots.push(*e);
            }
        }
        below(roots, procs)
    }

    /// Whether `found` (this spawn's processes) still holds a member of the child's group, so that killing the
    /// group cannot reach another group that reused the id. Every member is the child or below it, or an orphan
    /// of it, so all are in `found`.
    fn group_alive(&self, pgid: Pid, found: &[Entry]) -> bool {
        let pgid = pgid.as_raw();
        found.iter().any(|e| !e.zombie && e.pgrp == pgid && (e.pid != pgid || self.child.is_some_and(|c| e.same(&c))))
            && self.group_is_ours()
    }

    /// Whether the child exists but `/proc` cannot show it (mounted with `hidepid`, a child that became another
    /// user): its group is then killed without the membership check `/proc` cannot make, as EXEC-10 always did.
    /// A pid `/proc` does not show and `kill(pid, 0)` finds is the child's: a reused pid of this user's would be
    /// shown, and another user's process cannot be signalled anyway.
    fn hidden(&self) -> bool {
        self.child.is_some_and(|c| {
            table::stat(c.pid).is_none() && kill(Pid::from_raw(c.pid), None) != Err(nix::errno::Errno::ESRCH)
        })
    }

    /// Whether the group named by the child's pid can still be the child's: no other process holds that pid now.
    /// The kernel keeps a pid from reuse while a group of that id has members, so once the pid names a process
    /// that is not the child (another start time), the child's group is gone and the id is another group's.
    /// Read after the processes it judges, so a reuse that happened before them is seen.
    fn group_is_ours(&self) -> bool {
        self.child.is_some_and(|c| table::stat(c.pid).is_none_or(|now| now.same(&c)))
    }
}

/// `roots` and every process below them, each once.
fn below(roots: Vec<Entry>, procs: &Procs) -> Vec<Entry> {
    let mut seen: HashSet<i32> = HashSet::new();
    let mut out = Vec::new();
    let mut todo = roots;
    while let Some(e) = todo.pop() {
        if seen.insert(e.pid) {
            // A zombie has no children: they were reparented when it exited.
            if !e.zombie {
                todo.extend(procs.children(e.pid));
            }
            out.push(e);
        }
    }
    out
}

/// The sweeps of calls whose child exited normally (`sweeper`), checked against one read of this process's
/// children. Every live child's marker is read once, right after that read and before any full sweep runs, and
/// kept only as which of the batch's spawn ids it holds. A lineage gets the full [`sweep`] (which reads `/proc`
/// afresh) when something is attributed to it, when its child's start could not be read at spawn, or when one of
/// this process's children young enough to be its descendant could not have its marker read (it exited meanwhile,
/// and what it parented is now ours, not in the read). Without a readable `/proc`: each group kill.
pub(super) fn sweep_after_exit(batch: &[super::Sweep]) {
    let Ok(me) = i32::try_from(std::process::id()) else { return };
    let procs = match Procs::read() {
        Ok(procs) => procs,
        Err(_) => return batch.iter().for_each(super::Sweep::run),
    };
    // Every child of a batch's call has exited, so what is left of its lineage was adopted (see `Procs::adopted`).
    let mine = procs.adopted(me).unwrap_or_else(|| procs.children(me));
    // Only a child started no earlier than one of the batch's can descend from it (`attribute_among` asks about
    // no other): the host's long-lived children (a NATS server, stdio MCP servers) are not read batch after batch.
    let earliest = batch.iter().map(|s| s.lineage.child.map_or(0, |c| c.start)).min().unwrap_or(0);
    // pid -> which lineages of the batch its marker names; `None`: unreadable now.
    let holds: HashMap<i32, Option<Vec<bool>>> = mine
        .iter()
        .filter(|e| !e.zombie && e.start >= earliest)
        .map(|e| {
            let named = table::marker_of(e.pid).ok().map(|value| {
                let value = value.unwrap_or_default();
                batch.iter().map(|s| table::holds(&value, &s.lineage.marker)).collect()
            });
            (e.pid, named)
        })
        .collect();
    for (i, s) in batch.iter().enumerate() {
        let lineage = &s.lineage;
        let born = lineage.child.map_or(0, |c| c.start);
        let unreadable = mine.iter().any(|e| e.start >= born && holds.get(&e.pid).is_some_and(Option::is_none));
        let mut carries = |pid: i32| holds.get(&pid).and_then(Option::as_ref).is_some_and(|named| named[i]);
        if lineage.child.is_none() || unreadable || !lineage.attribute_among(&mine, &procs, &mut carries).is_empty() {
            sweep(s.pgid, lineage);
        }
    }
}

/// Kill the group (when it still has members) and every attributable process, pass after pass until a pass
/// finds nobody new; then reap what this process parents. Without a readable `/proc`: the group kill alone.
pub(super) fn sweep(pgid: Option<Pid>, lineage: &Lineage) {
    let Ok(me) = i32::try_from(std::process::id()) else { return };
    let mut killed: HashMap<i32, Entry> = HashMap::new();
    for pass in 0..PASSES {
        let procs = match Procs::read() {
            Ok(procs) => procs,
            Err(e) => return blind_group_kill(pgid, &e),
        };
        let found = lineage.attribute(me, &procs);
        // Without the child's start time (unreadable at spawn), or with a child `/proc` does not show, the group is
        // killed as EXEC-10 always did.
        if pass == 0
            && let Some(pgid) =
                pgid.filter(|&p| lineage.child.is_none() || lineage.group_alive(p, &found) || lineage.hidden())
        {
            // ESRCH (the group emptied meanwhile) is fine.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        // Zombies are reaped too: a group member that exited on its own after the child did.
        for e in found.iter().filter(|e| e.zombie) {
            killed.entry(e.pid).or_insert(*e);
        }
        let fresh: Vec<Entry> = found.into_iter().filter(|e| !e.zombie && !killed.contains_key(&e.pid)).collect();
        if fresh.is_empty() {
            return reap(me, lineage, killed.into_values().collect());
        }
        for e in fresh {
            // ESRCH (it exited meanwhile) is fine; EPERM (it changed uid) leaves it to the host.
            let _ = kill(Pid::from_raw(e.pid), Signal::SIGKILL);
            killed.insert(e.pid, e);
        }
    }
    tracing::warn!(
        target: "fisk_ai::exec",
        child = lineage.child.map(|c| c.pid),
        spawn = %lineage.marker,
        "descendants kept appearing after {PASSES} kill passes; some may outlive their call"
    );
    reap(me, lineage, killed.into_values().collect());
}

/// `/proc` cannot be listed: kill the group as EXEC-10 always did, and say once why descendants that left it
/// cannot be found.
fn blind_group_kill(pgid: Option<Pid>, error: &std::io::Error) {
    PROC_UNREADABLE.call_once(|| {
        tracing::warn!(
            target: "fisk_ai::exec",
            error = %error,
            "cannot list /proc: descendants that leave a child's process group may outlive their call"
        );
    });
    if let Some(pgid) = pgid {
        let _ = killpg(pgid, Signal::SIGKILL);
    }
}

/// Reap every process of `killed` this process parents, now if it is already a zombie, else from a background
/// thread for up to [`REAP_WITHIN`]: a process killed while its parent lived is reparented here when that parent
/// dies. The direct child is its tokio handle's to reap.
fn reap(me: i32, lineage: &Lineage, killed: Vec<Entry>) {
    let child = lineage.child.map(|c| c.pid);
    let mut pending: Vec<Entry> = killed.into_iter().filter(|e| Some(e.pid) != child).collect();
    pending.retain(|e| !reaped(me, e));
    if pending.is_empty() {
        return;
    }
    *REAPING.0.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    let spawned = std::thread::Builder::new().name("fisk-ai-reap".into()).spawn(move || {
        let _done = Reaping;
        let until = Instant::now() + REAP_WITHIN;
        let mut pause = Duration::from_millis(5);
        while !pending.is_empty() && Instant::now() < until {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(200));
            pending.retain(|e| !reaped(me, e));
        }
        if !pending.is_empty() {
            let pids: Vec<i32> = pending.iter().map(|e| e.pid).collect();
            tracing::warn!(target: "fisk_ai::exec", ?pids, "killed descendants did not exit within 10s; not reaped");
        }
    });
    if let Err(e) = spawned {
        // The closure, and with it the guard that would have counted the thread out, never ran.
        drop(Reaping);
        tracing::warn!(target: "fisk_ai::exec", error = %e, "cannot start the reaping thread; killed descendants may stay zombies");
    }
}

/// Whether `e` needs no more waiting: gone (its parent reaped it, or the pid now names another process), or a
/// zombie of ours that is reaped now. Only that one pid is waited for, after checking it is that same process
/// and already a zombie, so no status the host waits for is ever taken.
fn reaped(me: i32, e: &Entry) -> bool {
    match table::stat(e.pid) {
        None => true,
        Some(now) if now.start != e.start => true,
        Some(now) if now.zombie && now.ppid == me => reap_zombie(e),
        Some(_) => false,
    }
}

/// Reap `e`, found a zombie of this process. Through a pidfd opened after that look and checked against `e` again
/// after it is open, so what is reaped is `e` even if another reaper (a call's cgroup end) took it meanwhile and its
/// pid went to a new process; by pid where pidfds are missing (before Linux 5.4). Whether `e` needs no more
/// waiting.
fn reap_zombie(e: &Entry) -> bool {
    use rustix::process::{PidfdFlags, WaitId, WaitIdOptions, pidfd_open, waitid};
    let Some(pid) = rustix::process::Pid::from_raw(e.pid) else { return true };
    let fd = match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        // Reaped meanwhile.
        Err(rustix::io::Errno::SRCH) => return true,
        Err(_) => {
            return !matches!(waitpid(Pid::from_raw(e.pid), Some(WaitPidFlag::WNOHANG)), Ok(WaitStatus::StillAlive));
        }
    };
    if table::stat(e.pid).is_none_or(|now| now.start != e.start) {
        // The pid names another process now: `e` is gone.
        return true;
    }
    match waitid(WaitId::PidFd(std::os::fd::AsFd::as_fd(&fd)), WaitIdOptions::EXITED | WaitIdOptions::NOHANG) {
        Ok(None) => false,
        // `P_PIDFD` is Linux 5.4+, `pidfd_open` 5.3: by pid, as checked just now.
        Err(rustix::io::Errno::INVAL) => {
            !matches!(waitpid(Pid::from_raw(e.pid), Some(WaitPidFlag::WNOHANG)), Ok(WaitStatus::StillAlive))
        }
        Ok(Some(_)) | Err(_) => true,
    }
}

/// Counts a reaping thread out when it ends, however it ends.
struct Reaping;

impl Drop for Reaping {
    fn drop(&mut self) {
        let mut running = REAPING.0.lock().unwrap_or_else(|p| p.into_inner());
        *running = running.saturating_sub(1);
        REAPING.1.notify_all();
    }
}

/// Block until no reaping thread is running, or `within` passes. Whether they all finished.
#[cfg(feature = "mcp")]
pub(super) fn settle(within: Duration) -> bool {
    let running = REAPING.0.lock().unwrap_or_else(|p| p.into_inner());
    let (running, _) = REAPING.1.wait_timeout_while(running, within, |n| *n > 0).unwrap_or_else(|p| p.into_inner());
    *running == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    fn pid_of(child: &std::process::Child) -> i32 {
        i32::try_from(child.id()).unwrap()
    }

    #[test]
    fn exec_17_a_group_whose_leader_pid_was_reused_is_not_the_calls() {
        // The process that now holds the call's child's pid leads its own group, and a member of that group is
        // this process's child, as an orphan of it reparented here would be.
        let mut leader = Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let mut member = Command::new("sleep").arg("30").process_group(pid_of(&leader)).spawn().unwrap();
        let (now, m) = (table::stat(pid_of(&leader)).unwrap(), table::stat(pid_of(&member)).unwrap());
        assert_eq!(m.pgrp, now.pid);
        let procs = Procs::read().unwrap();
        let nobody_marked = &mut |_: i32| false;
        // The call's child as it was: the same pid, started earlier, since exited and its pid reused.
        let reused = Lineage { marker: "0-0".into(), child: Some(Entry { start: now.start - 1, ..now }) };
        assert!(reused.attribute_among(&[m], &procs, nobody_marked).is_empty(), "another group's member");
        assert!(!reused.group_alive(Pid::from_raw(now.pid), &[m]), "the group kill would reach another group");
        // The control: the same processes when the leader is the call's child are the call's.
        let own = Lineage { marker: "0-0".into(), child: Some(now) };
        let found = own.attribute_among(&[m], &procs, nobody_marked);
        assert!(found.iter().any(|e| e.same(&m)), "{found:?}");
        assert!(own.group_alive(Pid::from_raw(now.pid), &found));
        for child in [&mut leader, &mut member] {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}
