//! Per-call cgroups (SBX-4): `processes` and `memory` enforced by the pids and memory controllers, which bind
//! root too (`RLIMIT_NPROC` does not), and which make "end every descendant of the call" exact: whatever a child
//! does (`setsid`, double forks, a cleared environment), it stays in its call's cgroup.
//!
//! Making and removing a cgroup costs more than the rest of a confined spawn, so an emptied group is kept for the
//! next call (a few per confinement; its limits are the same), and what it ran into is counted from where the call
//! found its counters. Groups are kept only for a confinement whose children cannot write to cgroupfs (Landlock
//! rules granting no write beneath or above any cgroup mount): any other child could change settings a reuse does
//! not rewrite (`memory.memsw.limit_in_bytes`, `memory.oom_control`), in its own group or, by path, in a pooled
//! one. A group is checked again when it is taken from the pool (the OOM killer on, the swap limit and the modes
//! as made), and removed instead of reused if anything else changed it meanwhile.
//!
//! Each call gets `<our cgroup>/fisk-ai-<pid>/call-<n>` in each controller's cgroup v1 hierarchy (this process's
//! own cgroup there, from `/proc/self/cgroup`); the child moves itself in before `exec` by writing `0` to the
//! group's `cgroup.procs` (opened by the parent). When the call ends every process left in it is killed, each
//! one this process ends up parenting is reaped (`killed`), and the group removed. cgroup v2 is not built yet: its "no internal processes" rule needs a delegated subtree this
//! process would have to leave, so a v2-only machine uses the rlimit fallbacks (and refuses `processes` as root).

use super::killed::Killed;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
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

/// How many emptied groups a confinement keeps for reuse: enough for the usual concurrency of calls.
const POOLED: usize = 8;

/// One group's directories, one per controller.
type Dirs = Vec<(&'static str, PathBuf)>;

/// A group's files per directory, kept open while it is pooled, so a reused group is limited, counted, checked and
/// joined without a path lookup in cgroupfs.
#[derive(Debug)]
struct Held {
    limit: File,
    counter: Option<File>,
    procs: File,
    /// The directory itself, for its mode.
    dir: File,
    /// `memory.memsw.limit_in_bytes` where the kernel has it, with the value it read back when the group was made.
    memsw: Option<(File, u64)>,
    /// The mode, owner and group of the directory, the limit file and `cgroup.procs` when the group was made.
    modes: [(u32, u32, u32); 3],
    /// Which controller's group this is.
    controller: &'static str,
}

impl Held {
    fn modes(dir: &File, limit: &File, procs: &File) -> [(u32, u32, u32); 3] {
        [dir, limit, procs]
            .map(|f| rustix::fs::fstat(f).map_or((u32::MAX, 0, 0), |st| (st.st_mode, st.st_uid, st.st_gid)))
    }

    /// Whether the group is as it was made, in what its limit rewrite does not restore, and empty. Only calls whose
    /// children cannot write to cgroupfs return a group to the pool, but another process with root's rights could
    /// have changed it since: the OOM killer turned off, the swap limit raised, a file or the directory opened to
    /// others, a process moved in. Anything unreadable counts as changed.
    fn unchanged(&self) -> bool {
        let oom_on = self.controller != "memory"
            || self.counter.as_ref().is_some_and(|f| {
                read_text(f)
                    .lines()
                    .any(|l| l.split_once(' ').is_some_and(|(k, v)| k == "oom_kill_disable" && v.trim() == "0"))
            });
        let memsw = self.memsw.as_ref().is_none_or(|(f, made)| read_text(f).trim().parse::<u64>().ok() == Some(*made));
        let empty = list_procs(&self.dir).is_ok_and(|procs| procs.trim().is_empty());
        oom_on && memsw && empty && Held::modes(&self.dir, &self.limit, &self.procs) == self.modes
    }
}

/// A cgroupfs file's text, read from its start through the open file (cgroupfs regenerates it for each read).
fn read_text(file: &File) -> String {
    let mut buf = [0u8; 1024];
    let n = std::os::unix::fs::FileExt::read_at(file, &mut buf, 0).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// The group's `cgroup.procs`, opened beneath its held directory (one lookup, not a path walk) and read whole, up
/// to 1 MiB (what is beyond is read in the next round, once the processes listed first are gone).
fn list_procs(dir: &File) -> io::Result<String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::openat(dir, "cgroup.procs", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let file = File::from(fd);
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.len() < 1 << 20 {
        match std::os::unix::fs::FileExt::read_at(&file, &mut buf, out.len() as u64)? {
            0 => return Ok(String::from_utf8_lossy(&out).into_owned()),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
    // Cut at the cap: the last line may be half a pid, which must not be killed as a whole one.
    let whole = out.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    Ok(String::from_utf8_lossy(&out[..whole]).into_owned())
}

/// Emptied groups kept for the next calls, with their open files.
type Pool = Arc<Mutex<Vec<(Dirs, Vec<Held>)>>>;

/// The per-call cgroups of a confinement.
#[derive(Debug)]
pub(super) struct Cgroups {
    pids: Option<(Arc<Base>, u64)>,
    memory: Option<(Arc<Base>, u64)>,
    next: AtomicU64,
    pool: Pool,
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        let pooled = std::mem::take(&mut *self.pool.lock().unwrap_or_else(PoisonError::into_inner));
        for (dirs, held) in pooled {
            // Closed before the directories go.
            drop(held);
            for (_, dir) in dirs {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

impl Cgroups {
    /// Set up the controllers `processes` and `memory` need (those set); `Err` says why not, for the fallback.
    pub(super) fn new(processes: Option<u64>, memory: Option<u64>) -> Result<Cgroups, String> {
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let pids = processes.map(|n| base("pids", seq).map(|b| (Arc::new(b), n))).transpose()?;
        let memory = memory.map(|n| base("memory", seq).map(|b| (Arc::new(b), n))).transpose()?;
        Ok(Cgroups { pids, memory, next: AtomicU64::new(0), pool: Pool::default() })
    }

    /// The limit file and value of `controller`.
    fn limit(&self, controller: &str) -> (&'static str, u64) {
        match (controller, &self.pids, &self.memory) {
            ("pids", Some((_, n)), _) => ("pids.max", *n),
            (_, _, Some((_, n))) => ("memory.limit_in_bytes", *n),
            // Unreachable: a group has a directory only for a controller that is set.
            _ => ("pids.max", 1),
        }
    }

    /// Whether `processes` is enforced here.
    pub(super) fn has_pids(&self) -> bool {
        self.pids.is_some()
    }

    /// Whether `memory` is enforced here.
    pub(super) fn has_memory(&self) -> bool {
        self.memory.is_some()
    }

    /// A call's groups (an emptied one from the pool, else new ones, limited), with the `cgroup.procs` files its
    /// child writes itself into.
    ///
    /// With `poolable` false (the child could write to cgroupfs), the group is removed after the call, never
    /// reused.
    pub(super) fn call(&self, poolable: bool) -> io::Result<CallGroup> {
        let reused = loop {
            let Some((dirs, held)) = self.pool.lock().unwrap_or_else(PoisonError::into_inner).pop() else { break None };
            if held.iter().all(Held::unchanged) {
                break Some((dirs, held));
            }
            tracing::warn!(groups = ?dirs, "a pooled per-call cgroup was changed while it waited; removing it");
            // Dropped without a pool: its processes (if any got in) are killed and it is removed.
            let mut stale = CallGroup::default();
            stale.dirs = dirs;
            stale.held = held;
            drop(stale);
        };
        let mut group = CallGroup::default();
        group.pool = poolable.then(|| Arc::clone(&self.pool));
        group.bases.extend(self.pids.iter().chain(&self.memory).map(|(b, _)| Arc::clone(b)));
        if let Some((dirs, held)) = reused {
            // Owned by the group first, so a failure below still ends and removes it.
            group.dirs = dirs;
            group.held = held;
            for ((controller, _), h) in group.dirs.iter().zip(&group.held) {
                // Written again, though only a call that could not write cgroupfs returns a group to the pool.
                let (_, limit) = self.limit(controller);
                std::os::unix::fs::FileExt::write_all_at(&h.limit, limit.to_string().as_bytes(), 0)?;
                group.baseline.push(h.counter.as_ref().map_or(0, |f| read_counter(controller, f)));
                group.procs.push(h.procs.try_clone()?);
            }
            group.complete = true;
            return Ok(group);
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        for (base, limit, file) in [(&self.pids, "pids.max"), (&self.memory, "memory.limit_in_bytes")]
            .iter()
            .filter_map(|(b, file)| b.as_ref().map(|(base, limit)| (base, *limit, *file)))
        {
            let dir = base.dir.join(format!("call-{n}"));
            if group.dirs.iter().any(|(_, d)| *d == dir) {
                // Both controllers on one hierarchy: one group, both limits. Never pooled: its one set of held files
                // is the pids controller's, so a reuse would neither rewrite nor check the memory settings.
                std::fs::write(dir.join(file), limit.to_string())?;
                if base.controller == "memory" {
                    let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), limit.to_string());
                }
                group.pool = None;
                continue;
            }
            std::fs::create_dir(&dir)?;
            group.dirs.push((base.controller, dir.clone()));
            group.baseline.push(0);
            std::fs::write(dir.join(file), limit.to_string())?;
            if base.controller == "memory" {
                // Swap counts too where the kernel accounts it, so the limit cannot be dodged by swapping.
                let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), limit.to_string());
            }
            group.procs.push(std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs"))?);
        }
        for (controller, dir) in &group.dirs {
            let write = |f: &str| std::fs::OpenOptions::new().write(true).open(dir.join(f));
            let (limit, _) = self.limit(controller);
            // Counted as 0 where the kernel has no such file, as `counter` does.
            let counter = std::fs::File::open(dir.join(counter_source(controller).0)).ok();
            let memsw = (*controller == "memory")
                .then(|| std::fs::File::open(dir.join("memory.memsw.limit_in_bytes")).ok())
                .flatten()
                .and_then(|f| read_text(&f).trim().parse::<u64>().ok().map(|v| (f, v)));
            let (limit, procs, dir) = (write(limit)?, write("cgroup.procs")?, File::open(dir)?);
            let modes = Held::modes(&dir, &limit, &procs);
            group.held.push(Held { limit, counter, procs, dir, memsw, modes, controller });
        }
        group.complete = true;
        Ok(group)
    }
}

/// Every cgroup (v1 or v2) mount point, from `/proc/self/mountinfo`: a write grant beneath or above one of them
/// lets a child change a group's settings.
pub(super) fn mounts() -> Vec<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| l.split_once(" - "))
        .filter(|(_, fs)| matches!(fs.split(' ').next(), Some("cgroup" | "cgroup2")))
        .filter_map(|(pre, _)| pre.split(' ').nth(4).map(PathBuf::from))
        .collect()
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
    /// The directories' open files, pooled with them.
    held: Vec<Held>,
    /// Kept so the confinement's directories outlive this call's.
    bases: Vec<Arc<Base>>,
    /// Each directory's limit counter when the call began (a reused group's count goes on).
    baseline: Vec<u64>,
    /// Where the emptied groups go back to.
    pool: Option<Pool>,
    /// Whether every controller's group was made and limited (only such a group is reused).
    complete: bool,
    /// Already handed to the blocking pool: if the task is dropped unrun (a runtime shutting down), end here.
    detached: bool,
    /// What the end killed, to be reaped.
    killed: Killed,
}

/// The count of the limit `controller` reports hitting: forks the pids controller refused, kills the memory
/// controller made.
fn counter(controller: &str, dir: &Path) -> u64 {
    let text = std::fs::read_to_string(dir.join(counter_source(controller).0)).unwrap_or_default();
    parse_counter(controller, &text)
}

/// The file that counts `controller`'s limit hits, and the key of that count in it.
fn counter_source(controller: &str) -> (&'static str, &'static str) {
    if controller == "pids" { ("pids.events", "max") } else { ("memory.oom_control", "oom_kill") }
}

/// [`counter`], read from the open file.
fn read_counter(controller: &str, file: &File) -> u64 {
    parse_counter(controller, &read_text(file))
}

fn parse_counter(controller: &str, text: &str) -> u64 {
    let key = counter_source(controller).1;
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

impl CallGroup {
    /// The call's direct child is `pid`: killed with the rest at the end, but left to its handle to reap.
    pub(crate) fn spare(&mut self, pid: u32) {
        if let Ok(pid) = i32::try_from(pid) {
            self.killed.spare(pid);
        }
    }

    /// The `cgroup.procs` files the child writes `0` to (moving itself in); taken once, for the child.
    pub(super) fn take_procs(&mut self) -> Vec<File> {
        std::mem::take(&mut self.procs)
    }

    /// Which limit the call ran into, if any: the pids controller refused a fork, or the memory controller had to
    /// reclaim or kill at its limit.
    pub(crate) fn explain(&self) -> Option<String> {
        let hit = |i: usize, controller: &str, dir: &Path| {
            // Through the group's open counter file where it has one, without a path lookup in cgroupfs.
            let now = match self.held.get(i).map(|h| h.counter.as_ref()) {
                Some(Some(file)) => read_counter(controller, file),
                Some(None) => 0,
                None => counter(controller, dir),
            };
            now > self.baseline.get(i).copied().unwrap_or(0)
        };
        self.dirs.iter().enumerate().find(|(i, (c, d))| hit(*i, c, d)).map(|(_, (controller, _))| {
            if *controller == "pids" {
                "it reached its process limit (limits.processes); further forks failed".to_owned()
            } else {
                "it was killed at its memory limit (limits.memory)".to_owned()
            }
        })
    }

    /// Kill every process still in the groups and remove them. Bounded: a process stuck in the kernel is left for
    /// the group to be removed later by the host (the directory stays, empty of our doing).
    fn end(&mut self) {
        // Groups the call's processes made inside its own (a root child without `fs` rules can) are emptied and
        // removed too, deepest first, and such a group is never reused.
        let mut all = Vec::new();
        // cgroupfs counts a directory's subdirectories in its link count (2 + subdirectories): a group whose open
        // directory says 2 has none, and is not walked.
        let flat = self.held.len() == self.dirs.len()
            && self.held.iter().all(|h| rustix::fs::fstat(&h.dir).is_ok_and(|st| st.st_nlink == 2));
        for (_, dir) in &self.dirs {
            if flat {
                all.push(dir.clone());
            } else {
                subgroups(dir, &mut all, 0);
            }
        }
        let nested = all.len() > self.dirs.len();
        for _ in 0..100 {
            let mut any = false;
            for (i, dir) in all.iter().enumerate() {
                // Opened afresh each round: cgroup v1 builds a descriptor's pid list once and serves later reads from
                // it for a second, so a held descriptor would list processes that are gone and miss new ones.
                let listed = match self.held.get(i).filter(|_| flat) {
                    Some(h) => list_procs(&h.dir),
                    None => std::fs::read_to_string(dir.join("cgroup.procs")),
                };
                let procs = match listed {
                    Ok(text) => text,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
                    // Unreadable is not empty: it is killed again next round, and never pooled.
                    Err(_) => {
                        any = true;
                        continue;
                    }
                };
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    any = true;
                    self.killed.kill(pid);
                }
            }
            if !any {
                // Emptied: back to the pool while the confinement lives and the pool has room.
                if let Some(pool) = self.pool.take().filter(|p| self.complete && !nested && Arc::strong_count(p) > 1) {
                    let mut pooled = pool.lock().unwrap_or_else(PoisonError::into_inner);
                    if pooled.len() < POOLED && self.held.len() == self.dirs.len() {
                        pooled.push((std::mem::take(&mut self.dirs), std::mem::take(&mut self.held)));
                        drop(pooled);
                        return std::mem::take(&mut self.killed).reap();
                    }
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.held.clear();
        std::mem::take(&mut self.killed).reap();
        for dir in all.iter().rev() {
            for _ in 0..20 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.dirs.clear();
    }
}

/// `dir` and every cgroup beneath it, parents first; bounded in depth.
fn subgroups(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    out.push(dir.to_path_buf());
    if depth == 8 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            subgroups(&entry.path(), out, depth + 1);
        }
    }
}

impl Drop for CallGroup {
    /// Killing what is left and removing the group touch cgroupfs and may wait: on a runtime, that happens on its
    /// blocking pool, never on an async thread.
    fn drop(&mut self) {
        if self.dirs.is_empty() {
            return;
        }
        if self.detached {
            self.end();
            return;
        }
        let mut rest = CallGroup {
            dirs: std::mem::take(&mut self.dirs),
            procs: std::mem::take(&mut self.procs),
            held: std::mem::take(&mut self.held),
            bases: std::mem::take(&mut self.bases),
            baseline: std::mem::take(&mut self.baseline),
            pool: self.pool.take(),
            complete: self.complete,
            detached: true,
            killed: std::mem::take(&mut self.killed),
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || rest.end())),
            Err(_) => rest.end(),
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
