//! The file backend (SESS-26..30): `<dir>/<id>.json` (JSON lines, mode 0600) and `<dir>/<id>.lock`, in a
//! directory created with mode 0700.

use super::SessionId;
use super::append::AppendGuard;
use super::record::JournalRecord;
use super::store::{JournalWriter, SessionEntry, SessionStore};
use crate::config::SessionOptions;
use crate::error::{Error, Result};
use async_trait::async_trait;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{ErrorKind as IoKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Journals as JSON-lines files in one directory.
///
/// ```no_run
/// use fisk_ai::session::FileSessionStore;
///
/// # fn demo() -> fisk_ai::Result<()> {
/// let store = FileSessionStore::new(FileSessionStore::default_dir()?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FileSessionStore {
    dir: PathBuf,
}

impl FileSessionStore {
    /// Journals in `dir` (created, mode 0700, when the first session is).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileSessionStore { dir: dir.into() }
    }

    /// `$XDG_STATE_HOME/fisk-ai/runs`, falling back to `~/.local/state/fisk-ai/runs` (SESS-26). Never the working
    /// directory.
    ///
    /// # Errors
    ///
    /// A session error when neither `XDG_STATE_HOME` nor `HOME` is an absolute path.
    pub fn default_dir() -> Result<PathBuf> {
        state_home("session").map(|home| home.join("runs"))
    }

    /// The directory SESS-26 picks from `harness.sessions.options` and the store base: `options.directory`
    /// (relative means under the store base when there is one), else `<store base>/runs`, else
    /// [`default_dir`](Self::default_dir).
    ///
    /// # Errors
    ///
    /// As [`default_dir`](Self::default_dir), when neither `options.directory` nor a store base is given.
    pub fn from_config(options: &SessionOptions, store_base: Option<&Path>) -> Result<Self> {
        let dir = match (options.directory.as_deref().filter(|d| !d.as_os_str().is_empty()), store_base) {
            (Some(d), Some(base)) if d.is_relative() => base.join(d),
            (Some(d), _) => d.to_path_buf(),
            (None, Some(base)) => base.join("runs"),
            (None, None) => Self::default_dir()?,
        };
        Ok(Self::new(dir))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The journal file of `id`.
    pub fn journal_path(&self, id: &SessionId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn lock_path(&self, id: &SessionId) -> PathBuf {
        self.dir.join(format!("{id}.lock"))
    }

    /// Refuse a directory other users can write to: they could swap or remove journals under a running session.
    fn check_dir(&self) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(&self.dir).map_err(|e| io_error(&self.dir, "inspect", e))?;
        if meta.permissions().mode() & 0o002 != 0 {
            return Err(Error::session(format!(
                "the session directory {} is writable by every user; restrict it (chmod 700) or pick another with a \
                 state directory",
                self.dir.display()
            )));
        }
        Ok(())
    }

    /// Take `id`'s lock without waiting (SESS-29).
    fn lock(&self, id: &SessionId) -> Result<Flock<File>> {
        self.check_dir()?;
        let path = self.lock_path(id);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(NOFOLLOW)
            .open(&path)
            .map_err(|e| io_error(&path, "open the lock file", e))?;
        Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
            if errno == nix::errno::Errno::EWOULDBLOCK {
                Error::session(format!("session {id} is already locked by another run ({})", path.display()))
            } else {
                Error::session(format!("cannot lock {}: {errno}", path.display()))
            }
        })
    }
}

/// Journal and lock files are never opened through a symlink planted in the session directory.
const NOFOLLOW: i32 = nix::fcntl::OFlag::O_NOFOLLOW.bits();

/// `$XDG_STATE_HOME/fisk-ai`, falling back to `~/.local/state/fisk-ai`: where the sessions' and the pins' default
/// directories are. `what` names the store for the error.
pub(crate) fn state_home(what: &str) -> Result<PathBuf> {
    if let Some(state) = std::env::var_os("XDG_STATE_HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        return Ok(state.join("fisk-ai"));
    }
    match std::env::var_os("HOME").map(PathBuf::from).filter(|p| p.is_absolute()) {
        Some(home) => Ok(home.join(".local/state/fisk-ai")),
        None => Err(Error::session(format!(
            "cannot place the {what} directory: neither XDG_STATE_HOME nor HOME is set to an absolute path; pass a \
             state directory"
        ))),
    }
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::session(format!("cannot {what} {}: {e}", path.display())).with_source(e)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::session(format!("session storage task failed: {e}")))?
}

/// The records of a journal's bytes and how many bytes they span. A final line without its newline that does not
/// parse is a torn write and is dropped (SESS-30): every record is written as one line ending in `\n`, so a whole
/// line never lacks it. Any other unparsable line, the last one included, is corruption or an unsupported record,
/// and is never silently dropped.
fn parse(path: &Path, bytes: &[u8]) -> Result<(Vec<JournalRecord>, usize)> {
    let mut records = Vec::new();
    let mut start = 0;
    let mut good = 0;
    let mut line_no = 0;
    while start < bytes.len() {
        line_no += 1;
        let (end, next) = match bytes[start..].iter().position(|b| *b == b'\n') {
            Some(i) => (start + i, start + i + 1),
            None => (bytes.len(), bytes.len()),
        };
        let torn = end == bytes.len();
        match JournalRecord::from_json(&bytes[start..end]) {
            Ok(r) => {
                records.push(r);
                good = next;
            }
            Err(_) if torn => break,
            Err(e) => {
                return Err(Error::session(format!("the journal {}:{line_no} is corrupt: {e}", path.display())));
            }
        }
        start = next;
    }
    Ok((records, good))
}

fn read_journal(path: &Path, id: &SessionId) -> Result<Vec<u8>> {
    let read = || -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut bytes = Vec::new();
        OpenOptions::new().read(true).custom_flags(NOFOLLOW).open(path)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    read().map_err(|e| match e.kind() {
        IoKind::NotFound => Error::session(format!("no session {id} (looked for {})", path.display())),
        _ => io_error(path, "read", e),
    })
}

#[async_trait]
impl SessionStore for FileSessionStore {
    fn backend(&self) -> &str {
        "file"
    }

    async fn create(&self, id: &SessionId) -> Result<Box<dyn JournalWriter>> {
        let store = self.clone();
        let id = id.clone();
        blocking(move || {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&store.dir)
                .map_err(|e| io_error(&store.dir, "create the session directory", e))?;
            let lock = store.lock(&id)?;
            let path = store.journal_path(&id);
            // Under the lock, an empty journal is one whose creator died before its first record: reclaim it.
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(NOFOLLOW)
                .open(&path)
                .map_err(|e| io_error(&path, "create", e))?;
            let len = file.metadata().map_err(|e| io_error(&path, "inspect", e))?.len();
            if len > 0 {
                // Only a torn first record (no whole line) may be reclaimed; anything else is a session.
                let bytes = read_journal(&path, &id)?;
                if !matches!(parse(&path, &bytes), Ok((records, _)) if records.is_empty()) {
                    return Err(Error::session(format!("session {id} already exists ({})", path.display())));
                }
                file.set_len(0).map_err(|e| io_error(&path, "reset", e))?;
            }
            let writer = FileJournal {
                file: Arc::new(file),
                lock: Arc::new(lock),
                guard: AppendGuard::new(0),
                path,
                dir: Some(store.dir),
            };
            Ok(Box::new(writer) as Box<dyn JournalWriter>)
        })
        .await
    }

    async fn open(&self, id: &SessionId) -> Result<(Vec<JournalRecord>, Box<dyn JournalWriter>)> {
        let store = self.clone();
        let id = id.clone();
        blocking(move || {
            let path = store.journal_path(&id);
            // Fail on a missing session before creating a lock file for it.
            if !path.exists() {
                return Err(Error::session(format!("no session {id} (looked for {})", path.display())));
            }
            let lock = store.lock(&id)?;
            let bytes = read_journal(&path, &id)?;
            let (records, good) = parse(&path, &bytes)?;
            if records.is_empty() {
                return Err(Error::session(format!(
                    "session {id} holds no records: its run stopped before it began; start it again with --checkpoint \
                     --name {id}"
                )));
            }
            let file = OpenOptions::new()
                .append(true)
                .custom_flags(NOFOLLOW)
                .open(&path)
                .map_err(|e| io_error(&path, "open", e))?;
            // Cut a torn tail so the next record starts on a line of its own.
            if good < bytes.len() || (good > 0 && bytes[good - 1] != b'\n') {
                file.set_len(good as u64).map_err(|e| io_error(&path, "truncate the torn tail of", e))?;
                if good > 0 && bytes[good - 1] != b'\n' {
                    (&file).write_all(b"\n").map_err(|e| io_error(&path, "repair", e))?;
                }
                file.sync_data().map_err(|e| io_error(&path, "sync", e))?;
            }
            let guard = AppendGuard::new(records.last().map_or(0, |r| r.seq));
            let writer = FileJournal { file: Arc::new(file), lock: Arc::new(lock), guard, path, dir: None };
            Ok((records, Box::new(writer) as Box<dyn JournalWriter>))
        })
        .await
    }

    async fn read(&self, id: &SessionId) -> Result<Vec<JournalRecord>> {
        let path = self.journal_path(id);
        let id = id.clone();
        blocking(move || {
            let bytes = read_journal(&path, &id)?;
            Ok(parse(&path, &bytes)?.0)
        })
        .await
    }

    async fn list(&self) -> Result<Vec<SessionEntry>> {
        let dir = self.dir.clone();
        blocking(move || {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == IoKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(io_error(&dir, "list", e)),
            };
            let mut out = Vec::new();
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
                let Ok(id) = SessionId::new(id) else { continue };
                let updated = entry.metadata().ok().and_then(|m| m.modified().ok());
                out.push(SessionEntry::new(id, updated));
            }
            Ok(out)
        })
        .await
    }

    async fn remove(&self, id: &SessionId) -> Result<()> {
        let store = self.clone();
        let id = id.clone();
        blocking(move || {
            if !store.dir.exists() {
                return Ok(());
            }
            // Never pull a journal from under a running writer.
            let _lock = store.lock(&id).map_err(|e| {
                Error::session(format!("cannot remove session {id}: {e}; stop the run that holds it first"))
            })?;
            for path in [store.journal_path(&id), store.lock_path(&id)] {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == IoKind::NotFound => {}
                    Err(e) => return Err(io_error(&path, "remove", e)),
                }
            }
            Ok(())
        })
        .await
    }
}

/// Appends to one file journal while holding its lock.
struct FileJournal {
    file: Arc<File>,
    /// Shared with an in-flight write, so the lock outlives it even if the writer is dropped mid-append.
    lock: Arc<Flock<File>>,
    /// A write or sync that failed leaves the file's tail unknown, so nothing more is appended (SESS-33).
    guard: AppendGuard,
    path: PathBuf,
    /// The directory to sync after the first record of a new journal (SESS-28).
    dir: Option<PathBuf>,
}

#[async_trait]
impl JournalWriter for FileJournal {
    async fn append(&mut self, record: &JournalRecord) -> Result<()> {
        if !self.guard.admit(record.seq, || self.path.display().to_string())? {
            return Ok(());
        }
        let mut line = record.to_json();
        line.push(b'\n');
        let file = self.file.clone();
        let lock = self.lock.clone();
        let path = self.path.clone();
        let dir = self.dir.take();
        let written = blocking(move || {
            let _held = lock;
            // One write of the whole line, then a sync: a crash leaves at most a torn final line.
            (&*file).write_all(&line).map_err(|e| io_error(&path, "append to", e))?;
            file.sync_data().map_err(|e| io_error(&path, "sync", e))?;
            if let Some(dir) = dir {
                File::open(&dir).and_then(|d| d.sync_all()).map_err(|e| io_error(&dir, "sync", e))?;
            }
            Ok(())
        })
        .await;
        self.guard.settle(record.seq, written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_drops_only_a_torn_final_line() {
        let meta = br#"{"seq":1,"protocol":"io.choria.fisk-ai.v1.session.terminal","terminal":{"reason":"completed"}}"#;
        let mut bytes = meta.to_vec();
        bytes.extend_from_slice(b"\n{\"seq\":2,\"proto");
        let (records, good) = parse(Path::new("j.json"), &bytes).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(good, meta.len() + 1);

        let mut interior = meta.to_vec();
        interior.extend_from_slice(b"\nnot json\n");
        interior.extend_from_slice(meta);
        interior.push(b'\n');
        let err = parse(Path::new("j.json"), &interior).unwrap_err();
        assert!(err.to_string().contains("j.json:2 is corrupt"), "{err}");

        // A whole final line (newline-terminated) of an unknown protocol is not a torn write: never dropped.
        let mut future = meta.to_vec();
        future.extend_from_slice(b"\n{\"seq\":2,\"protocol\":\"io.choria.fisk-ai.v1.session.future\",\"future\":{}}\n");
        let err = parse(Path::new("j.json"), &future).unwrap_err();
        assert!(err.to_string().contains("j.json:2") && err.to_string().contains("unsupported"), "{err}");
    }
}
