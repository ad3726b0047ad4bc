//! Per-call cgroups (SBX-4): `processes` and `memory` enforced by the pids and memory controllers, which bind
//! root too (`RLIMIT_NPROC` does not), and which make "end every descendant of the call" exact: whatever a child
//! does (`setsid`, double forks, a cleared environment), it stays in its call's cgroup.
//!
//! Each call gets `<our cgroup>/fisk-ai-<pid>/call-<n>` in each controller's cgroup v1 hierarchy (this process's
//! own cgroup there, from `/proc/self/cgroup`); the child moves itself in before `exec` by writing `0` to the
//! group's `cgroup.procs` (opened by the parent). When the call ends every process left in it is killed and the
//! group removed. cgroup v2 is not built yet: its "no internal processes" rule needs a delegated subtree this
//! process would have to leave, so a v2-only machine uses the rlimit fallbacks (and refuses `processes` as root).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One controller's directory for one confinement's calls, removed when the confinement and its last call are
/// gone.
#[derive(Debug)]
struct Base {
    controller: &'static str,
    dir: PathBuf,
}

impl Drop for Base {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Tells apart the confinements of one process.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// The per-call cgroups of a confinement.
#[derive(Debug)]
pub(super) struct Cgroups {
    pids: Option<(Arc<Base>, u64)>,
    memory: Option<(Arc<Base>, u64)>,
    next: AtomicU64,
}

impl Cgroups {
    /// Set up the controllers `processes` and `memory` need (those set); `Err` says why not, for the fallback.
    pub(super) fn new(processes: Option<u64>, memory: Option<u64>) -> Result<Cgroups, String> {
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let pids = processes.map(|n| base("pids", seq).map(|b| (Arc::new(b), n))).transpose()?;
        let memory = memory.map(|n| base("memory", seq).map(|b| (Arc::new(b), n))).transpose()?;
        Ok(Cgroups { pids, memory, next: AtomicU64::new(0) })
    }

    /// Whether `processes` is enforced here.
    pub(super) fn has_pids(&self) -> bool {
        self.pids.is_some()
    }

    /// Whether `memory` is enforced here.
    pub(super) fn has_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// A new call's groups, limited, with the `cgroup.procs` files its child writes itself into.
    pub(super) fn call(&self) -> io::Result<CallGroup> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut group = CallGroup::default();
        for (base, limit, file) in [(&self.pids, "pids.max"), (&self.memory, "memory.limit_in_bytes")]
            .iter()
            .filter_map(|(b, file)| b.as_ref().map(|(base, limit)| (base, *limit, *file)))
        {
            let dir = base.dir.join(format!("call-{n}"));
            std::fs::create_dir(&dir)?;
            group.dirs.push((base.controller, dir.clone()));
            group.bases.push(Arc::clone(base));
            std::fs::write(dir.join(file), limit.to_string())?;
            if base.controller == "memory" {
                // Swap counts too where the kernel accounts it, so the limit cannot be dodged by swapping.
                let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), limit.to_string());
            }
            group.procs.push(std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs"))?);
        }
        Ok(group)
    }
}

/// This process's directory for `controller`'s call groups, created: `Err` when there is no v1 hierarchy for it or
/// it is not writable.
fn base(controller: &'static str, seq: u64) -> Result<Base, String> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| format!("cannot read mounts: {e}"))?;
    let mount = mounts
        .lines()
        .filter_map(|l| l.split_once(" - "))
        .find(|(_, fs)| {
            let mut f = fs.split(' ');
            f.next() == Some("cgroup") && f.nth(1).is_some_and(|o| o.split(',').any(|o| o == controller))
        })
        .and_then(|(pre, _)| pre.split(' ').nth(4))
        .ok_or_else(|| format!("no cgroup v1 hierarchy has the {controller} controller"))?;
    let own =
        std::fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let path = own
        .lines()
        .filter_map(|l| l.split(':').nth(1).zip(l.splitn(3, ':').nth(2)))
        .find(|(controllers, _)| controllers.split(',').any(|c| c == controller))
        .map(|(_, p)| p.trim_start_matches('/'))
        .ok_or_else(|| format!("this process is in no {controller} cgroup"))?;
    let parent = Path::new(mount).join(path);
    remove_stale(&parent);
    let dir = parent.join(format!("fisk-ai-{}-{seq}", std::process::id()));
    match std::fs::create_dir(&dir) {
        Ok(()) => Ok(Base { controller, dir }),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Base { controller, dir }),
        Err(e) => Err(format!("cannot create {}: {e}", dir.display())),
    }
}

/// Removes the empty directories of agent processes that are gone (killed before they could remove them).
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("fisk-ai-")).and_then(|r| r.split('-').next()) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            // Only an empty group can be removed; a group with a live call is left alone.
            if let Ok(calls) = std::fs::read_dir(entry.path()) {
                for call in calls.flatten().filter(|c| c.path().is_dir()) {
                    let _ = std::fs::remove_dir(call.path());
                }
            }
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// One call's cgroups; dropping it kills what is left in them and removes them.
#[derive(Debug, Default)]
pub(crate) struct CallGroup {
    dirs: Vec<(&'static str, PathBuf)>,
    procs: Vec<File>,
    /// Kept so the confinement's directories outlive this call's.
    bases: Vec<Arc<Base>>,
}

impl CallGroup {
    /// The `cgroup.procs` files the child writes `0` to (moving itself in); taken once, for the child.
    pub(super) fn take_procs(&mut self) -> Vec<File> {
        std::mem::take(&mut self.procs)
    }

    /// Which limit the call ran into, if any: the pids controller refused a fork, or the memory controller had to
    /// reclaim or kill at its limit.
    pub(crate) fn explain(&self) -> Option<String> {
        let count = |dir: &Path, file: &str, key: &str| -> u64 {
            let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
            text.lines()
                .filter_map(|l| l.split_once(' '))
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0)
        };
        for (controller, dir) in &self.dirs {
            match *controller {
                "pids" if count(dir, "pids.events", "max") > 0 => {
                    return Some("it reached its process limit (limits.processes); further forks failed".into());
                }
                "memory" if count(dir, "memory.oom_control", "oom_kill") > 0 => {
                    return Some("it was killed at its memory limit (limits.memory)".into());
                }
                _ => {}
            }
        }
        None
    }

    /// Kill every process still in the groups and remove them. Bounded: a process stuck in the kernel is left for
    /// the group to be removed later by the host (the directory stays, empty of our doing).
    fn end(&mut self) {
        for _ in 0..100 {
            let mut any = false;
            for (_, dir) in &self.dirs {
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    any = true;
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL);
                }
            }
            if !any {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        for (_, dir) in &self.dirs {
            for _ in 0..20 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

impl Drop for CallGroup {
    fn drop(&mut self) {
        if !self.dirs.is_empty() {
            self.end();
        }
    }
}

/// Move the calling process (the child, after fork) into each group: async-signal-safe, a `write(2)` per file.
pub(super) fn join(procs: &[File]) -> io::Result<()> {
    for mut f in procs {
        f.write_all(b"0")?;
    }
    Ok(())
}
