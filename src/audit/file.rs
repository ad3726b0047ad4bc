//! The file sink (AUD-4): JSON lines in a 0600 file, every record fsynced, rotated by size with the chain continued.
//!
//! Records are written under one lock, so the chain has one order. Durable appends are handed to a writer thread,
//! which writes those that arrived together and syncs once (group commit): every caller's records are durable when
//! its append returns. Settled records (what is already over, AUD-10) are written by their caller under the lock,
//! acknowledged once written, and synced by the writer thread outside the lock: its sync waits up to 5 ms for the
//! next records (a sequential caller's next call), so one sync covers both. A lock
//! file keeps a second process from writing the same trail, which would fork the chain. A rotated file is renamed
//! `<file>.<seq of its first record, 20 digits>`, and the new file's first record links to the rotated one's last.

use super::record::{Chain, Entry};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

/// How long settled records may wait for durable ones to share their sync (AUD-10): a sequential caller's next
/// call comes sooner, so each call then costs one sync instead of two. After a crash, the endings of calls that were
/// over within this moment can be missing, never a record of a call before it ran.
const SETTLED_LINGER: std::time::Duration = std::time::Duration::from_millis(5);

/// The default size a file may reach before it is rotated: 64 MiB.
pub const DEFAULT_ROTATE_BYTES: u64 = 64 << 20;

/// The longest record line read back when a trail is reopened or verified.
pub(crate) const MAX_LINE: usize = 16 << 20;

type Done = tokio::sync::oneshot::Sender<std::result::Result<(), String>>;

/// What the writer thread is asked to do.
enum Job {
    /// Write the records, sync them, answer.
    Durable { entries: Vec<Entry>, done: Done },
    /// Write settled records that would rotate the file (which syncs twice, kept off the caller's task), answer,
    /// then sync them.
    Settled { entries: Vec<Entry>, done: Done },
    /// Settled records were written by their caller: sync them.
    Sync,
}

/// JSON lines in a file (AUD-4). See the [module docs](super).
///
/// ```no_run
/// use fisk_ai::audit::{AuditTrail, FileSink};
/// use std::sync::Arc;
///
/// let sink = FileSink::open("/var/log/fisk/audit.jsonl", 64 << 20)?;
/// let trail = AuditTrail::new(Arc::new(sink)).agent("ops");
/// # let _ = trail;
/// # Ok::<(), fisk_ai::Error>(())
/// ```
pub struct FileSink {
    path: PathBuf,
    writer: Arc<Mutex<Writer>>,
    /// `None` only while dropping.
    jobs: Option<mpsc::Sender<Job>>,
    syncer: Option<std::thread::JoinHandle<()>>,
}

impl Drop for FileSink {
    /// The writer thread finishes what it was given (syncing every record written) before this returns, and the
    /// trail's lock is released with the sink, so the trail can be opened again at once.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(syncer) = self.syncer.take() {
            let _ = syncer.join();
        }
    }
}

impl std::fmt::Debug for FileSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSink").field("path", &self.path).finish_non_exhaustive()
    }
}

impl FileSink {
    /// Open (or create, 0600, in a 0700 directory when it is missing) the trail at `path`, continuing its chain,
    /// rotating when a file would grow past `rotate_bytes`.
    ///
    /// # Errors
    ///
    /// An audit error naming the file: it cannot be created or locked (another process writes it), it is not a
    /// regular file of this user's, group or others may read or write it, or its last record is incomplete.
    pub fn open(path: impl Into<PathBuf>, rotate_bytes: u64) -> Result<Self> {
        let path = path.into();
        let writer = Writer::open(&path, rotate_bytes.max(1))?;
        Self::start(path, writer)
    }

    fn start(path: PathBuf, writer: Writer) -> Result<Self> {
        let writer = Arc::new(Mutex::new(writer));
        let (jobs, rx) = mpsc::channel();
        let shared = writer.clone();
        let syncer = std::thread::Builder::new()
            .name("fisk-audit".to_owned())
            .spawn(move || serve(&shared, &rx))
            .map_err(|e| Error::audit(format!("audit file {}: cannot start its writer: {e}", path.display())))?;
        Ok(FileSink { path, writer, jobs: Some(jobs), syncer: Some(syncer) })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&self, why: &str) -> Error {
        Error::audit(format!("audit file {}: {why}", self.path.display()))
    }

    /// Write settled `entries` in this task when the lock is free and no rotation is due: whether they were.
    fn write_here(&self, entries: &[Entry]) -> Result<bool> {
        let mut writer = match self.writer.try_lock() {
            Ok(writer) => writer,
            // The trail breaks, and the write below is refused.
            Err(std::sync::TryLockError::Poisoned(poisoned)) => broken_by_panic(poisoned),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(false),
        };
        writer.write_unless_rotating(entries).map_err(|why| self.fail(&why))
    }

    /// Give the writer thread the job `make` builds, and wait for its answer.
    async fn hand_over(&self, make: impl FnOnce(Done) -> Job) -> Result<()> {
        let (done, rx) = tokio::sync::oneshot::channel();
        let jobs = self.jobs.as_ref().ok_or_else(|| self.fail("it is closed"))?;
        jobs.send(make(done)).map_err(|_| self.fail("its writer stopped"))?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(self.fail(&why)),
            Err(_) => Err(self.fail("its writer stopped")),
        }
    }
}

#[async_trait]
impl super::AuditSink for FileSink {
    /// Handed to the writer thread, which writes the records of every append waiting, syncs once (group commit)
    /// and answers each.
    async fn append(&self, entries: &[Entry]) -> Result<()> {
        self.hand_over(|done| Job::Durable { entries: entries.to_vec(), done }).await
    }

    /// Written here, under the writer's lock (sealing and one `write` into the page cache, no sync), so nothing
    /// waits on a thread hand-off; the writer thread is told to sync them. Records that would rotate the file, or
    /// that find the lock held (the writer thread may be rotating, which syncs twice), are handed to the writer
    /// thread instead, so an async task never waits on the disk.
    async fn append_settled(&self, entries: &[Entry]) -> Result<()> {
        let jobs = self.jobs.as_ref().ok_or_else(|| self.fail("it is closed"))?;
        if self.write_here(entries)? {
            return jobs.send(Job::Sync).map_err(|_| self.fail("its writer stopped"));
        }
        self.hand_over(|done| Job::Settled { entries: entries.to_vec(), done }).await
    }

    fn describe(&self) -> String {
        format!("file {}", self.path.display())
    }
}

/// The writer. A panic while it was held (a host's tracing subscriber, say) may have left the chain ahead of the
/// file, so a poisoned lock breaks the trail: nothing more is written.
fn lock(writer: &Mutex<Writer>) -> std::sync::MutexGuard<'_, Writer> {
    writer.lock().unwrap_or_else(broken_by_panic)
}

/// The writer behind a poisoned lock, its trail broken.
fn broken_by_panic(
    poisoned: std::sync::PoisonError<std::sync::MutexGuard<'_, Writer>>,
) -> std::sync::MutexGuard<'_, Writer> {
    let mut w = poisoned.into_inner();
    w.broken.get_or_insert_with(|| "a writer panicked; restart to reopen it".to_owned());
    w
}

/// The writer thread: write the records of the appends that arrived together, in order; answer the settled ones;
/// sync once (with any settled records written since the last sync); answer the durable ones. The sync runs outside
/// the lock, so settled records are written meanwhile.
fn serve(writer: &Mutex<Writer>, jobs: &mpsc::Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        let mut batch = vec![job];
        batch.extend(jobs.try_iter());
        // Only settled records to sync: the next call's durable records usually follow within a moment, and one sync
        // then covers both. Waited for once and briefly, and not at all once the sink is dropped.
        if batch.iter().all(|j| matches!(j, Job::Sync))
            && let Ok(next) = jobs.recv_timeout(SETTLED_LINGER)
        {
            batch.push(next);
            batch.extend(jobs.try_iter());
        }
        let (mut durable, mut settled, mut entries) = (Vec::new(), Vec::new(), Vec::new());
        for job in batch {
            match job {
                Job::Durable { entries: e, done } => {
                    entries.extend(e);
                    durable.push(done);
                }
                Job::Settled { entries: e, done } => {
                    entries.extend(e);
                    settled.push(done);
                }
                Job::Sync => {}
            }
        }
        let (file, written) = {
            let mut w = lock(writer);
            let written = if entries.is_empty() { Ok(()) } else { w.write(entries.iter()) };
            (w.take_unsynced(), written)
        };
        for done in settled {
            let _ = done.send(written.clone());
        }
        // Whatever the write did: settled records acknowledged earlier are in the file too.
        let synced = file.map_or(Ok(()), |f| sync(writer, &f));
        let mut result = written.and(synced);
        if result.is_ok() {
            // A second guard: only this thread syncs, but should any other sync of the same file take a writeback
            // error first (the kernel reports it once), the trail it broke says so. Not reachable from a test.
            if let Some(why) = lock(writer).broken.clone() {
                result = Err(why);
            }
        }
        for done in durable {
            let _ = done.send(result.clone());
        }
    }
    // Every job is answered; anything written since (nothing, unless a send failed) is synced before the end.
    let file = lock(writer).take_unsynced();
    if let Some(f) = file {
        let _ = sync(writer, &f);
    }
}

/// Sync `file`. A failure breaks the trail: settled records already acknowledged may not be on disk, so the next
/// append is refused (AUD-6) instead of a call run with a trail whose state is unknown.
fn sync(writer: &Mutex<Writer>, file: &File) -> std::result::Result<(), String> {
    let Err(e) = file.sync_data() else { return Ok(()) };
    let why = format!("cannot sync it: {e}");
    let path = {
        let mut w = lock(writer);
        w.broken.get_or_insert_with(|| format!("an earlier write failed ({why}); restart to reopen it"));
        w.path.clone()
    };
    tracing::error!(target: "fisk_ai::telemetry", "audit file {}: {why}", path.display());
    Err(why)
}

struct Writer {
    path: PathBuf,
    /// Shared with the writer thread while it syncs, outside the lock.
    file: Arc<File>,
    /// Whether records were written since the file was last synced.
    unsynced: bool,
    size: u64,
    /// The seq of the current file's first record, which names it when rotated.
    first: Option<u64>,
    chain: Chain,
    rotate_bytes: u64,
    /// Held for the writer's life: a second writer would fork the chain.
    _lock: File,
    /// Once a write failed, nothing more is written: the chain's state is no longer known.
    broken: Option<String>,
}

/// How long a held trail lock is waited for before another writer is assumed.
const LOCK_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Take the trail's lock. A lock can be held for a moment by a child this process has just forked, whose copy of
/// the descriptor lives until it execs (a sink reopened while a tool starts), so a held lock is retried briefly
/// before it is taken for another writer.
fn take_lock(lock: &std::fs::File) -> std::result::Result<(), String> {
    let deadline = std::time::Instant::now() + LOCK_GRACE;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Err("another process is writing this trail".to_owned()),
            Err(std::fs::TryLockError::Error(e)) => return Err(format!("cannot lock it: {e}")),
        }
    }
}

impl Writer {
    fn open(path: &Path, rotate_bytes: u64) -> Result<Self> {
        let fail = |why: String| Error::audit(format!("audit file {}: {why}", path.display()));
        let dir = parent(path);
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        }
        let lock = open_private(&sibling(path, "lock"), false).map_err(&fail)?;
        take_lock(&lock).map_err(&fail)?;
        check_dir(dir).map_err(&fail)?;
        let mut file = open_private(path, true).map_err(&fail)?;
        // The file (and the lock) may have just been made: their names must survive a crash like the records.
        sync_dir(dir).map_err(&fail)?;
        recover_tail(&mut file).map_err(&fail)?;
        let size = file.metadata().map_err(|e| fail(e.to_string()))?.len();
        let (chain, first) = if size == 0 {
            // A rotation that stopped after the rename leaves an empty file: the chain goes on from the last one.
            let chain = match rotated(path).map_err(&fail)?.last() {
                Some(last) => tail_chain(&mut File::open(last).map_err(|e| fail(e.to_string()))?)
                    .map_err(|why| Error::audit(format!("audit file {}: {why}", last.display())))?,
                None => Chain::genesis(),
            };
            (chain, None)
        } else {
            let chain = tail_chain(&mut file).map_err(&fail)?;
            (chain, Some(first_seq(&mut file).map_err(&fail)?))
        };
        let file = Arc::new(file);
        Ok(Writer {
            path: path.to_owned(),
            file,
            unsynced: false,
            size,
            first,
            chain,
            rotate_bytes,
            _lock: lock,
            broken: None,
        })
    }

    /// The file to sync, if anything was written since the last time it was taken.
    fn take_unsynced(&mut self) -> Option<Arc<File>> {
        std::mem::take(&mut self.unsynced).then(|| self.file.clone())
    }

    /// Write `entries` unless that would rotate the file: whether they were written (not synced: [`serve`]
    /// syncs). A failure breaks the trail.
    fn write_unless_rotating(&mut self, entries: &[Entry]) -> std::result::Result<bool, String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        let mut chain = self.chain.clone();
        let first = chain.next_seq();
        let mut buf = Vec::new();
        for entry in entries {
            buf.extend_from_slice(&chain.seal(entry));
            buf.push(b'\n');
        }
        if self.size + buf.len() as u64 > self.rotate_bytes {
            return Ok(false);
        }
        if let Err(why) = self.put(&buf) {
            self.broken = Some(format!("an earlier write failed ({why}); restart to reopen it"));
            return Err(why);
        }
        self.chain = chain;
        self.first.get_or_insert(first);
        Ok(true)
    }

    /// Write `entries` (not synced: [`serve`] syncs). A failure breaks the trail: the chain's state is no longer
    /// known.
    fn write<'e>(&mut self, entries: impl Iterator<Item = &'e Entry>) -> std::result::Result<(), String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        let result = self.write_entries(entries);
        if let Err(why) = &result {
            self.broken = Some(format!("an earlier write failed ({why}); restart to reopen it"));
        }
        result
    }

    fn write_entries<'e>(&mut self, entries: impl Iterator<Item = &'e Entry>) -> std::result::Result<(), String> {
        let mut buf = Vec::new();
        for entry in entries {
            let seq = self.chain.next_seq();
            let line = self.chain.seal(entry);
            let grown = self.size + (buf.len() + line.len() + 1) as u64;
            if self.size + buf.len() as u64 > 0 && grown > self.rotate_bytes {
                self.put(&buf)?;
                buf.clear();
                self.rotate()?;
            }
            self.first.get_or_insert(seq);
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        self.put(&buf)
    }

    fn put(&mut self, bytes: &[u8]) -> std::result::Result<(), String> {
        (&*self.file).write_all(bytes).map_err(|e| format!("cannot write it: {e}"))?;
        self.size += bytes.len() as u64;
        self.unsynced |= !bytes.is_empty();
        Ok(())
    }

    /// Rename the full file after its first record's seq, and start an empty one.
    fn rotate(&mut self) -> std::result::Result<(), String> {
        self.file.sync_data().map_err(|e| format!("cannot sync it: {e}"))?;
        let first = self.first.unwrap_or(self.chain.next_seq());
        let to = sibling(&self.path, &format!("{first:020}"));
        // Never over an existing file: that would drop records from the chain.
        if std::fs::symlink_metadata(&to).is_ok() {
            return Err(format!("cannot rotate it: {} exists already", to.display()));
        }
        std::fs::rename(&self.path, &to).map_err(|e| format!("cannot rotate it to {}: {e}", to.display()))?;
        self.file = Arc::new(open_private(&self.path, true)?);
        File::open(parent(&self.path))
            .and_then(|d| d.sync_all())
            .map_err(|e| format!("cannot sync its directory: {e}"))?;
        self.size = 0;
        self.first = None;
        Ok(())
    }
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The trail's directory must be a directory of this user's that nobody else may write (or they could swap files).
fn check_dir(dir: &Path) -> std::result::Result<(), String> {
    let meta = std::fs::metadata(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() || mode & 0o022 != 0 {
        return Err(format!(
            "{} must be a directory of this user's that group and others cannot write (it has mode {mode:03o}, uid {})",
            dir.display(),
            meta.uid()
        ));
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> std::result::Result<(), String> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| format!("cannot sync {}: {e}", dir.display()))
}

/// Cut an incomplete last line (a write that a crash or a full disk stopped midway). A record that something waited
/// on is acknowledged only once its whole line, newline included, is synced, so cutting loses none of those: only a
/// settled record (the ending of a call that was over in the moment before the crash) can be lost. It is logged.
fn recover_tail(file: &mut File) -> std::result::Result<(), String> {
    let len = file.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8];
    file.seek(SeekFrom::Start(len - 1)).and_then(|_| file.read_exact(&mut last)).map_err(|e| e.to_string())?;
    if last == *b"\n" {
        return Ok(());
    }
    let start = len.saturating_sub(MAX_LINE as u64 + 1);
    file.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
    let mut tail = Vec::new();
    file.take(len - start).read_to_end(&mut tail).map_err(|e| e.to_string())?;
    if tail.ends_with(b"\n") {
        return Ok(());
    }
    let keep = match memchr::memrchr(b'\n', &tail) {
        Some(at) => start + at as u64 + 1,
        None if start == 0 => 0,
        None => return Err(format!("its last line is longer than {MAX_LINE} bytes")),
    };
    file.set_len(keep)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot cut its incomplete last line: {e}"))?;
    tracing::warn!(
        target: "fisk_ai::telemetry",
        "audit file: cut an incomplete last line of {} bytes (a write that never completed)",
        len - keep
    );
    Ok(())
}

/// `<path>.<suffix>`.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// The rotated files of the trail at `path`, oldest first.
pub(crate) fn rotated(path: &Path) -> std::result::Result<Vec<PathBuf>, String> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return Ok(Vec::new()) };
    let dir = parent(path);
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    let mut found: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name();
            let seq = file.to_str()?.strip_prefix(name)?.strip_prefix('.')?;
            (seq.len() == 20 && seq.bytes().all(|b| b.is_ascii_digit())).then(|| Some((seq.parse().ok()?, e.path())))?
        })
        .collect();
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

/// Open `path` for appending (or reading, for the lock), created 0600; refused unless it is a regular file this
/// user owns that nobody else may read or write.
fn open_private(path: &Path, append: bool) -> std::result::Result<File, String> {
    let file = OpenOptions::new()
        .read(true)
        .append(append)
        .write(!append)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let meta = file.metadata().map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(format!("{} belongs to another user (uid {})", path.display(), meta.uid()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!("{} has mode {mode:03o}; the trail must be 0600 (chmod 600 it)", path.display()));
    }
    Ok(file)
}

/// The chain after the file's last record; the file must end with a complete line. Read backwards, a window that
/// doubles until it holds the whole last line.
fn tail_chain(file: &mut File) -> std::result::Result<Chain, String> {
    let len = file.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
    let mut window: u64 = 64 << 10;
    loop {
        let start = len.saturating_sub(window);
        file.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
        let mut tail = Vec::new();
        file.take(len - start).read_to_end(&mut tail).map_err(|e| e.to_string())?;
        let Some(body) = tail.strip_suffix(b"\n") else {
            return Err(
                "its last record is incomplete (no newline): verify it with `audit verify`, then move it aside"
                    .to_owned(),
            );
        };
        let line = match memchr::memrchr(b'\n', body) {
            Some(at) => &body[at + 1..],
            None if start == 0 => body,
            None if window > MAX_LINE as u64 => return Err(format!("its last line is longer than {MAX_LINE} bytes")),
            None => {
                window *= 4;
                continue;
            }
        };
        return Chain::after(line).map_err(|why| format!("its last line is {why}; verify it with `audit verify`"));
    }
}

/// The seq of the file's first record.
fn first_seq(file: &mut File) -> std::result::Result<u64, String> {
    use std::io::BufRead;
    file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let mut line = Vec::new();
    std::io::BufReader::new(file.take(MAX_LINE as u64)).read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
    let link: super::record::Link = serde_json::from_slice(line.strip_suffix(b"\n").unwrap_or(&line))
        .map_err(|e| format!("its first line is not an audit record: {e}"))?;
    Ok(link.seq)
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
