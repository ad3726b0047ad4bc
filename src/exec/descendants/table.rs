//! This process's view of `/proc` (Linux): who parents whom, in which group, whether exited, since when, and
//! which spawn marker a process inherited.

use super::CALL_MARKER;
use std::collections::HashMap;
use std::io::{self, Read};
use std::path::Path;
use std::sync::OnceLock;

/// How much of a process's environment is searched for the marker. Past this a process reads as unmarked, as if
/// it had cleared its environment, which it could do anyway.
const ENVIRON_LIMIT: u64 = 1 << 20;

/// One process, as `/proc/PID/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgrp: i32,
    /// Exited and waiting to be reaped (or being torn down): it cannot fork, and its environment is gone.
    pub(super) zombie: bool,
    /// Start time in clock ticks after boot: with the pid, it names one process even across pid reuse.
    pub(super) start: u64,
}

impl Entry {
    /// Whether `other` is this same process (pid and start time).
    pub(super) fn same(&self, other: &Entry) -> bool {
        self.pid == other.pid && self.start == other.start
    }
}

/// Parse `/proc/<pid>/stat`. `None` when it is not in the expected shape (a process that vanished mid-read).
pub(super) fn parse_stat(pid: i32, text: &[u8]) -> Option<Entry> {
    let rest = after_comm(text)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?;
    Some(Entry {
        pid,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        zombie: matches!(*state, "Z" | "X" | "x"),
        start: fields.get(19)?.parse().ok()?,
    })
}

/// The fields of a `stat` line after the command name. The name is parenthesised and may itself hold spaces and
/// parentheses, so the fields start after the last `)`. It is whatever bytes the process chose, UTF-8 or not (the
/// name of the file it ran, or `prctl(PR_SET_NAME)`): reading the line as text would fail on such a name and hide
/// the process, and everything below it, from the sweeps. The fields themselves are ASCII.
fn after_comm(stat: &[u8]) -> Option<&str> {
    let at = stat.iter().rposition(|&b| b == b')')?;
    std::str::from_utf8(&stat[at + 1..]).ok()
}

/// The process `pid` now, if it exists.
pub(super) fn stat(pid: i32) -> Option<Entry> {
    let text = read_small(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// A small `/proc` file (a `stat` line, a `children` list), as bytes, in one read where it fits: `read_to_string`
/// on a file that reports no size starts at 32 bytes and doubles, six reads for a `stat` line, and the sweeps read
/// such files for every child of the process, a few times a second on a busy server.
fn read_small(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(1024);
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The pids in a `children` file (decimal numbers separated by spaces).
fn pids_in(children: &[u8]) -> impl Iterator<Item = i32> + '_ {
    children.split(u8::is_ascii_whitespace).filter_map(|p| std::str::from_utf8(p).ok()?.parse::<i32>().ok())
}

/// A reading of the boot clock (`CLOCK_BOOTTIME`, in nanoseconds), the clock the kernel dates a process's start
/// with.
#[derive(Debug, Clone, Copy)]
pub(super) struct BootClock(u64);

impl BootClock {
    pub(super) fn now() -> Self {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
        let ns = u64::try_from(t.tv_sec).unwrap_or(0).saturating_mul(1_000_000_000);
        BootClock(ns.saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0)))
    }

    /// The clock tick this reading falls in, as `/proc/PID/stat` counts start times, how far into it and how long
    /// a tick is (in nanoseconds); `None` where a tick is not a whole number of nanoseconds.
    fn tick(self) -> Option<(u64, u64, u64)> {
        static NS_PER_TICK: OnceLock<Option<u64>> = OnceLock::new();
        let per = (*NS_PER_TICK.get_or_init(|| {
            let hz = rustix::param::clock_ticks_per_second();
            (hz > 0 && 1_000_000_000 % hz == 0).then(|| 1_000_000_000 / hz)
        }))?;
        Some((self.0 / per, self.0 % per, per))
    }
}

/// The tick a process forked between the readings `before` and `after` started in: when both fall in one tick, at
/// least [`EDGE`] from its ends (the kernel's reading of the same clock may round a nanosecond differently).
fn tick_between(before: BootClock, after: BootClock) -> Option<u64> {
    let ((start, into, per), (end, into_end, _)) = (before.tick()?, after.tick()?);
    (start == end && into >= EDGE && per - into_end > EDGE).then_some(start)
}

/// How far from a tick's ends a reading must be for [`tick_between`] to date a spawn by it.
const EDGE: u64 = 1_000;

/// The child `pid` this process has just spawned as the leader of its own group, after the boot clock read
/// `before`: as `/proc/PID/stat` shows it, without reading it when the spawn began and ended within one clock tick.
///
/// The kernel dates a process's start with the boot clock when it forks, and `stat` shows that date in clock
/// ticks, so a fork between two readings of the same tick started in that tick: the entry is exact. Reading `stat`
/// here instead costs the call's latency: it can wait on the child while it maps its libraries. A spawn across a
/// tick boundary (rarely: a tick is 10 ms, a spawn about a tenth of one) reads it.
pub(super) fn spawned(pid: i32, before: BootClock) -> Option<Entry> {
    match (tick_between(before, BootClock::now()), i32::try_from(std::process::id())) {
        (Some(start), Ok(me)) => Some(Entry { pid, ppid: me, pgrp: pid, zombie: false, start }),
        _ => stat(pid),
    }
}

/// Who parents whom, read from `/proc` on demand: from each task's `children` file where the kernel has them
/// (cheap: only this process's children and the subtrees walked are read), else from one scan of every process.
pub(super) struct Procs {
    /// `None`: read `children` files as needed. `Some`: every process, by parent, from one scan.
    scanned: Option<HashMap<i32, Vec<Entry>>>,
}

impl Procs {
    /// A fresh view. An error only when `/proc` cannot be read at all.
    pub(super) fn read() -> io::Result<Procs> {
        static CHILDREN_FILES: OnceLock<bool> = OnceLock::new();
        // The main thread's tid is the pid. Kernels without CONFIG_PROC_CHILDREN lack the file.
        let files = *CHILDREN_FILES
            .get_or_init(|| Path::new(&format!("/proc/self/task/{}/children", std::process::id())).exists());
        if files {
            // Fail here, not silently later, when /proc is gone.
            std::fs::metadata("/proc/self/task")?;
            return Ok(Procs { scanned: None });
        }
        Ok(Procs { scanned: Some(scan()?) })
    }

    /// The children this process (`me`) adopted, read from the main thread's `children` file alone. The kernel
    /// hands a subreaper's orphans to the first live thread of its group, which is the main thread while it
    /// lives; so once a call's child has exited, everything left of its lineage that is this process's child is
    /// here, and the files of the other threads (the children of calls still running) need not be read. `None`
    /// where that cannot be relied on: no `children` files, or a main thread that has exited (orphans then go to
    /// another thread); the caller reads every thread's then.
    pub(super) fn adopted(&self, me: i32) -> Option<Vec<Entry>> {
        if self.scanned.is_some() {
            return None;
        }
        let task = format!("/proc/{me}/task/{me}");
        let main = read_small(format!("{task}/stat")).ok()?;
        // The state follows the command's closing parenthesis: `Z` or `X` once the thread has exited.
        let state = after_comm(&main).and_then(|rest| rest.trim_start().chars().next())?;
        if matches!(state, 'Z' | 'X' | 'x') {
            return None;
        }
        let text = read_small(format!("{task}/children")).ok()?;
        let mut pids: Vec<i32> = pids_in(&text).collect();
        pids.sort_unstable();
        pids.dedup();
        Some(pids.into_iter().filter_map(stat).filter(|e| e.ppid == me).collect())
    }

    /// The processes whose parent is `pid` now; a process that vanishes while it is read is left out.
    pub(super) fn children(&self, pid: i32) -> Vec<Entry> {
        if let Some(scanned) = &self.scanned {
            return scanned.get(&pid).cloned().unwrap_or_default();
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
        let mut pids: Vec<i32> = Vec::new();
        for task in tasks.flatten() {
            // A child belongs to the thread that forked it (or to whichever thread it was reparented to).
            let Ok(text) = read_small(task.path().join("children")) else { continue };
            pids.extend(pids_in(&text));
        }
        pids.sort_unstable();
        pids.dedup();
        // The file is a snapshot: keep only what stat still shows as a child of `pid`.
        pids.into_iter().filter_map(stat).filter(|e| e.ppid == pid).collect()
    }
}

/// Every process visible in `/proc`, by parent; a process that vanishes while it is read is left out.
fn scan() -> io::Result<HashMap<i32, Vec<Entry>>> {
    let mut by_parent: HashMap<i32, Vec<Entry>> = HashMap::new();
    for dirent in std::fs::read_dir("/proc")? {
        let Ok(dirent) = dirent else { continue };
        let Some(pid) = dirent.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if let Some(entry) = stat(pid) {
            by_parent.entry(entry.ppid).or_default().push(entry);
        }
    }
    Ok(by_parent)
}

/// Whether process `pid` inherited the spawn id `id` in [`CALL_MARKER`]. False when its environment cannot be read
/// (gone, a zombie, another uid).
pub(super) fn carries(pid: i32, id: &str) -> bool {
    marker_of(pid).ok().flatten().is_some_and(|value| holds(&value, id))
}

/// The value of [`CALL_MARKER`] in process `pid`'s environment (`None`: it has none); an error when the environment
/// cannot be read (gone, a zombie, another uid).
pub(super) fn marker_of(pid: i32) -> io::Result<Option<Vec<u8>>> {
    let file = std::fs::File::open(format!("/proc/{pid}/environ"))?;
    let mut environ = Vec::new();
    file.take(ENVIRON_LIMIT).read_to_end(&mut environ)?;
    // A zombie's (or a kernel thread's) environment reads as empty, not as an error.
    if environ.is_empty() {
        return Err(io::ErrorKind::NotFound.into());
    }
    Ok(marker_value(&environ))
}

/// The value of [`CALL_MARKER`] in the NUL-separated `environ`. Set more than once (a raw `execve` can), the values
/// are joined with `:`, so an id in any of them counts.
fn marker_value(environ: &[u8]) -> Option<Vec<u8>> {
    let prefix = format!("{CALL_MARKER}=");
    let mut values = environ.split(|&b| b == 0).filter_map(|var| var.strip_prefix(prefix.as_bytes()));
    let mut joined = values.next()?.to_vec();
    for more in values {
        joined.push(b':');
        joined.extend_from_slice(more);
    }
    Some(joined)
}

/// Whether the `:`-separated marker `value` holds the spawn id `id` as a whole token.
pub(super) fn holds(value: &[u8], id: &str) -> bool {
    value.split(|&b| b == b':').any(|token| token == id.as_bytes())
}

/// Whether the NUL-separated `environ` sets [`CALL_MARKER`] to a `:`-separated list holding `id`.
#[cfg(test)]
fn marked(environ: &[u8], id: &str) -> bool {
    marker_value(environ).is_some_and(|value| holds(&value, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_17_stat_fields_are_read_after_the_last_parenthesis() {
        let line = "4242 (a) (b c) S 17 4240 4240 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3\n";
        let e = parse_stat(4242, line.as_bytes()).unwrap();
        assert_eq!((e.pid, e.ppid, e.pgrp, e.zombie, e.start), (4242, 17, 4240, false, 987_654));
        let zombie = line.replace(") S ", ") Z ");
        assert!(parse_stat(4242, zombie.as_bytes()).unwrap().zombie);
        assert_eq!(parse_stat(1, b"1 (cut short) S 0"), None);
        assert_eq!(parse_stat(1, b"no parenthesis"), None);
        // A name that is not UTF-8 (a process names itself with any bytes it likes) still reads.
        let odd = b"4242 (sl\xffe\xc3) S 17 4240 4240 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3\n";
        assert_eq!(parse_stat(4242, odd).map(|e| (e.ppid, e.start)), Some((17, 987_654)));
    }

    /// EXEC-17: a child that runs a file whose name is not UTF-8 has that name in `stat`; it is still found as this
    /// process's child, so the sweeps reach it and what it spawns.
    #[test]
    fn exec_17_a_child_named_in_bytes_that_are_not_utf8_is_still_found() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join(std::ffi::OsStr::from_bytes(b"sl\xffeep"));
        std::os::unix::fs::symlink("/bin/sleep", &link).unwrap();
        // argv[0] stays `sleep`, so a multi-call binary still sleeps; the kernel names the process by the file.
        let mut child = std::process::Command::new(&link).arg0("sleep").arg("30").spawn().unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let me = i32::try_from(std::process::id()).unwrap();
        // Until the exec has happened, /proc shows the parent's name; wait for the child's own.
        let named = (0..200).any(|_| {
            let raw = std::fs::read(format!("/proc/{pid}/stat")).unwrap_or_default();
            let done = raw.windows(3).any(|w| w == b"\xffee");
            if !done {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            done
        });
        let found = stat(pid);
        let listed = Procs::read().unwrap().children(me).iter().any(|e| e.pid == pid);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(named, "the child never showed its own name");
        assert_eq!(found.map(|e| e.ppid), Some(me));
        assert!(listed, "not among this process's children");
    }

    #[test]
    fn exec_17_the_marker_matches_a_whole_token_of_the_variable() {
        let env = b"PATH=/bin\0FISK_AI_CALL=7-1:99-3\0HOME=/root\0";
        assert!(marked(env, "99-3"));
        assert!(marked(env, "7-1"));
        assert!(!marked(env, "99-"), "a prefix of a token is not the token");
        assert!(!marked(env, "9-3"), "a suffix of a token is not the token");
        assert!(!marked(b"XFISK_AI_CALL=99-3\0", "99-3"), "another variable ending in the name");
        assert!(!marked(b"OTHER=FISK_AI_CALL=99-3\0", "99-3"), "the name inside another value");
        assert!(!marked(b"", "99-3"));
        assert!(marked(b"FISK_AI_CALL=1-1\0FISK_AI_CALL=99-3\0", "1-1"), "set twice: either value counts");
        assert!(marked(b"FISK_AI_CALL=1-1\0FISK_AI_CALL=99-3\0", "99-3"));
    }

    #[test]
    fn exec_17_a_child_dated_by_the_boot_clock_is_the_one_proc_shows() {
        use std::os::unix::process::CommandExt;
        let mut dated = 0;
        for _ in 0..50 {
            let before = BootClock::now();
            let mut child = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
            let pid = i32::try_from(child.id()).unwrap();
            let read = stat(pid).unwrap();
            let spawned = spawned(pid, before).unwrap();
            // Read right after `spawned`'s own reading: dated there too, bar a tick ending in between.
            dated += usize::from(tick_between(before, BootClock::now()).is_some());
            child.kill().unwrap();
            child.wait().unwrap();
            assert_eq!(spawned, read, "the entry made without /proc differs from /proc's");
        }
        assert!(dated > 0, "no spawn fell within one tick, so the dated path was never compared");
    }

    #[test]
    fn exec_17_a_spawn_is_dated_only_within_one_tick_and_away_from_its_edges() {
        let (_, _, per) = BootClock(0).tick().expect("a tick that is a whole number of nanoseconds here");
        let at = |tick: u64, into: u64| BootClock(tick * per + into);
        assert_eq!(tick_between(at(7, 2 * EDGE), at(7, per / 2)), Some(7));
        assert_eq!(tick_between(at(7, EDGE / 2), at(7, per / 2)), None, "too near the tick's start");
        assert_eq!(tick_between(at(7, 2 * EDGE), at(7, per - EDGE / 2)), None, "too near the tick's end");
        assert_eq!(tick_between(at(7, per - 2 * EDGE), at(8, 2 * EDGE)), None, "across a tick boundary");
    }

    #[test]
    fn exec_17_children_files_and_the_full_scan_agree_on_a_child() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let me = i32::try_from(std::process::id()).unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let started = stat(pid).unwrap();
        assert_eq!((started.ppid, started.zombie), (me, false));
        // The children files (this kernel has them) and the fallback scan.
        for procs in [Procs::read().unwrap(), Procs { scanned: Some(scan().unwrap()) }] {
            let found = procs.children(me);
            assert!(found.iter().any(|e| e.same(&started)), "{found:?}");
            assert!(procs.children(pid).is_empty());
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// `adopted` reads the main thread's list alone: a child another live thread forked is not in it (the
    /// integration tests show orphans are: a setsid grandchild of a call that ended normally is found and killed).
    #[test]
    fn exec_17_adopted_leaves_out_what_another_thread_forked() {
        let me = i32::try_from(std::process::id()).unwrap();
        // The forking thread must outlive the check: a thread's children go to the main thread when it exits.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let forker = std::thread::spawn(move || {
            tx.send(std::process::Command::new("sleep").arg("30").spawn().unwrap()).unwrap();
            let _ = wait.recv();
        });
        let mut child = rx.recv().unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let procs = Procs::read().unwrap();
        assert!(procs.children(me).iter().any(|e| e.pid == pid), "every thread's list has it");
        let adopted = procs.adopted(me).expect("this kernel has children files and the main thread lives");
        assert!(!adopted.iter().any(|e| e.pid == pid), "{adopted:?}");
        assert!(Procs { scanned: Some(scan().unwrap()) }.adopted(me).is_none(), "no files, no shortcut");
        drop(done);
        forker.join().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
