//! The file sink (AUD-4): JSON lines in a 0600 file, fsynced per write, rotated by size with the chain continued.
//!
//! One writer thread owns the file, so the chain has one order; records that arrive while it syncs are written
//! together and synced once (group commit), and every caller's records are durable when its append returns. Settled
//! records (what is already over, AUD-10) are acknowledged once written and synced right after, as soon as the
//! writer has nothing more to write, or together with the next records that must be durable. A lock
//! file keeps a second process from writing the same trail, which would fork the chain. A rotated file is renamed
//! `<file>.<seq of its first record, 20 digits>`, and the new file's first record links to the rotated one's last.

use super::record::{Chain, Entry};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// The default size a file may reach before it is rotated: 64 MiB.
pub const DEFAULT_ROTATE_BYTES: u64 = 64 << 20;

/// The longest record line read back when a trail is reopened or verified.
pub(crate) const MAX_LINE: usize = 16 << 20;

struct Job {
    entries: Vec<Entry>,
    /// Whether the caller waits until the records are synced; settled records are acknowledged once written.
    durable: bool,
    done: tokio::sync::oneshot::Sender<std::result::Result<(), String>>,
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
    /// `None` only while dropping.
    jobs: Option<mpsc::Sender<Job>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Drop for FileSink {
    /// The writer finishes what it was given and releases the trail's lock before this returns, so the trail can
    /// be opened again at once.
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
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
        let (jobs, rx) = mpsc::channel();
        let writer =
            std::thread::Builder::new()
                .name("fisk-audit".to_owned())
                .spawn(move || drop(writer.serve(&rx)))
                .map_err(|e| Error::audit(format!("audit file {}: cannot start its writer: {e}", path.display())))?;
        Ok(FileSink { path, jobs: Some(jobs), writer: Some(writer) })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl FileSink {
    async fn send(&self, entries: &[Entry], durable: bool) -> Result<()> {
        let (done, rx) = tokio::sync::oneshot::channel();
        let fail = |why: &str| Error::audit(format!("audit file {}: {why}", self.path.display()));
        let jobs = self.jobs.as_ref().ok_or_else(|| fail("it is closed"))?;
        jobs.send(Job { entries: entries.to_vec(), durable, done }).map_err(|_| fail("its writer stopped"))?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err(fail(&why)),
            Err(_) => Err(fail("its writer stopped")),
        }
    }
}

#[async_trait]
impl super::AuditSink for FileSink {
    async fn append(&self, entries: &[Entry]) -> Result<()> {
        self.send(entries, true).await
    }

    async fn append_settled(&self, entries: &[Entry]) -> Result<()> {
        self.send(entries, false).await
    }

    fn describe(&self) -> String {
        format!("file {}", self.path.display())
    }
}

struct Writer {
    path: PathBuf,
    file: File,
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
        Ok(Writer { path: path.to_owned(), file, size, first, chain, rotate_bytes, _lock: lock, broken: None })
    }

    /// Write each batch of jobs that arrived together, sync once, answer each. Settled records written without a
    /// sync are synced as soon as nothing else is waiting, and before the writer stops.
    fn serve(mut self, jobs: &mpsc::Receiver<Job>) -> Self {
        let mut unsynced = false;
        loop {
            let job = if unsynced {
                match jobs.try_recv() {
                    Ok(job) => job,
                    Err(waiting) => {
                        self.sync();
                        unsynced = false;
                        if waiting == mpsc::TryRecvError::Disconnected {
                            return self;
                        }
                        continue;
                    }
                }
            } else {
                let Ok(job) = jobs.recv() else { return self };
                job
            };
            let mut batch = vec![job];
            batch.extend(jobs.try_iter());
            let durable = batch.iter().any(|job| job.durable);
            let result = self.write(&batch, durable);
            unsynced = result.is_ok() && !durable;
            for job in batch {
                let _ = job.done.send(result.clone());
            }
        }
    }

    /// Sync settled records already acknowledged. A failure cannot be answered to them; it breaks the trail, so the
    /// next call is refused (AUD-6) instead of run with a trail whose state is unknown.
    fn sync(&mut self) {
        if self.broken.is_some() {
            return;
        }
        if let Err(e) = self.file.sync_data() {
            let why = format!("cannot sync it: {e}");
            tracing::error!(target: "fisk_ai::telemetry", "audit file {}: {why}", self.path.display());
            self.broken = Some(format!("an earlier write failed ({why}); restart to reopen it"));
        }
    }

    fn write(&mut self, batch: &[Job], durable: bool) -> std::result::Result<(), String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        let result = self.write_batch(batch, durable);
        if let Err(why) = &result {
            self.broken = Some(format!("an earlier write failed ({why}); restart to reopen it"));
        }
        result
    }

    fn write_batch(&mut self, batch: &[Job], durable: bool) -> std::result::Result<(), String> {
        let mut buf = Vec::new();
        for entry in batch.iter().flat_map(|job| &job.entries) {
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
        self.put(&buf)?;
        if durable {
            self.file.sync_data().map_err(|e| format!("cannot sync it: {e}"))?;
        }
        Ok(())
    }

    fn put(&mut self, bytes: &[u8]) -> std::result::Result<(), String> {
        self.file.write_all(bytes).map_err(|e| format!("cannot write it: {e}"))?;
        self.size += bytes.len() as u64;
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
        self.file = open_private(&self.path, true)?;
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
mod tests {
    use super::*;
    use crate::audit::Event;

    /// A writer over `file`, as [`Writer::open`] leaves one on an empty trail.
    fn writer(file: File, lock: File) -> Writer {
        let path = PathBuf::from("/dev/null");
        let chain = Chain::genesis();
        Writer { path, file, size: 0, first: None, chain, rotate_bytes: u64::MAX, _lock: lock, broken: None }
    }

    fn job(durable: bool) -> (Job, tokio::sync::oneshot::Receiver<std::result::Result<(), String>>) {
        let (done, rx) = tokio::sync::oneshot::channel();
        (Job { entries: vec![Entry::new(Event::Requested, "other", "t")], durable, done }, rx)
    }

    /// AUD-10: a settled record is acknowledged once written and synced when the writer is idle; when that sync
    /// fails (the kernel refuses `fdatasync` on `/dev/null`), the trail is broken and later appends are refused.
    /// Only settled appends are sent, which never sync themselves, so the failure can only be the idle sync's.
    #[test]
    fn aud_10_a_failed_sync_after_a_settled_write_refuses_later_appends() {
        let null = || OpenOptions::new().append(true).open("/dev/null").unwrap();
        let (jobs, rx) = mpsc::channel();
        let server = std::thread::spawn(move || drop(writer(null(), null()).serve(&rx)));
        let refused = (0..1000).find_map(|_| {
            let (settled, answer) = job(false);
            jobs.send(settled).unwrap();
            answer.blocking_recv().unwrap().err()
        });
        let why = refused.expect("the idle sync failed and broke the trail");
        assert!(why.starts_with("an earlier write failed (cannot sync it"), "{why}");
        drop(jobs);
        server.join().unwrap();
    }

    /// AUD-10: settled records written without a sync are synced before the writer stops: on `/dev/null` that
    /// sync fails, which leaves its mark on the writer it returns.
    #[test]
    fn aud_10_settled_records_are_synced_before_the_writer_stops() {
        let null = || OpenOptions::new().append(true).open("/dev/null").unwrap();
        let (jobs, rx) = mpsc::channel();
        let (settled, settled_rx) = job(false);
        jobs.send(settled).unwrap();
        drop(jobs);
        let stopped = writer(null(), null()).serve(&rx);
        assert_eq!(settled_rx.blocking_recv().unwrap(), Ok(()), "acknowledged once written");
        let why = stopped.broken.expect("the writer synced before it stopped, and the sync failed");
        assert!(why.contains("cannot sync it"), "{why}");
    }
}
