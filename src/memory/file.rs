//! The file backend (MEM-19..21): one `<key>.md` file per entry in one directory.

use super::format::{decode, header_complete};
use super::rules::{is_valid_key, validate_key};
use super::{CreateOutcome, Entry, MemoryError, MemoryRecord, MemoryStore, OverwriteOutcome, Stored};
use crate::config::MemoryOptions;
use async_trait::async_trait;
use nix::fcntl::OFlag;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The most bytes read from one entry file. Records the tools write are at most about 69 KB; a bigger file was
/// written by hand and is refused rather than loaded whole.
const READ_LIMIT: u64 = 1 << 20;
/// How much of a file listing reads first: enough for any header the tools write.
const HEAD_BYTES: u64 = 16 << 10;
/// The prefix of staging files (MEM-20); listing skips them because they do not end in `.md`.
const TEMP_PREFIX: &str = ".memtmp-";

/// A memory store keeping each entry in the file `<key>.md` of one directory (MEM-19..21).
///
/// - Constructing the store does no I/O; the directory is created (mode `0700`) on the first write, and listing or
///   reading a missing directory finds nothing.
/// - Writes stage the record in a `.memtmp-*` file in the same directory. A create hard-links it to `<key>.md`,
///   which fails if the key exists, so of two racing creators exactly one wins; an overwrite renames it over
///   `<key>.md`, so readers never see a partial value. Overwrites are last-writer-wins: there are no revisions and
///   no read-before-update guard (MEM-21).
/// - Reads refuse symbolic links and anything that is not a regular file. Listing skips non-regular entries, names
///   not ending in `.md`, and stems that are not valid keys.
///
/// Several processes may share a directory.
///
/// ```
/// use fisk_ai::config::MemoryOptions;
/// use fisk_ai::memory::FileMemoryStore;
/// use std::path::Path;
///
/// let store = FileMemoryStore::from_config(&MemoryOptions::default(), "ops", None, Path::new("/srv/agent"));
/// assert_eq!(store.dir(), Path::new("/srv/agent/memory/ops"));
/// ```
#[derive(Debug, Clone)]
pub struct FileMemoryStore {
    dir: PathBuf,
}

impl FileMemoryStore {
    /// A store in `dir`, used as given (a relative path is relative to the process working directory at each
    /// call). No I/O happens until the first call.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileMemoryStore { dir: dir.into() }
    }

    /// A store for `harness.memory.options` (MEM-19): `options.directory`, default `memory/<identity>`; a
    /// relative directory is joined to `store_base` when set, else to `working_dir`; an absolute one is used
    /// as-is. No I/O happens here, so `info` can build the tools without touching the disk.
    pub fn from_config(options: &MemoryOptions, identity: &str, store_base: Option<&Path>, working_dir: &Path) -> Self {
        Self::new(Self::resolve_dir(options, identity, store_base, working_dir))
    }

    /// The directory [`from_config`](Self::from_config) would use.
    pub fn resolve_dir(
        options: &MemoryOptions,
        identity: &str,
        store_base: Option<&Path>,
        working_dir: &Path,
    ) -> PathBuf {
        let dir = options.directory.clone().unwrap_or_else(|| Path::new("memory").join(identity));
        if dir.is_absolute() { dir } else { store_base.unwrap_or(working_dir).join(dir) }
    }

    /// The directory holding the entries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry_path(&self, key: &str) -> Result<PathBuf, MemoryError> {
        validate_key(key)?;
        Ok(self.dir.join(format!("{key}.md")))
    }
}

#[async_trait]
impl MemoryStore for FileMemoryStore {
    async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
        let dir = self.dir.clone();
        blocking(move || list(&dir)).await
    }

    async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
        let path = self.entry_path(key)?;
        blocking(move || read(&path)).await
    }

    async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
        let path = self.entry_path(key)?;
        let (dir, value) = (self.dir.clone(), record.encode());
        blocking(move || create(&dir, &path, &value)).await
    }

    async fn overwrite(
        &self,
        key: &str,
        record: &MemoryRecord,
        _expected: Option<u64>,
    ) -> Result<OverwriteOutcome, MemoryError> {
        let path = self.entry_path(key)?;
        let (dir, value) = (self.dir.clone(), record.encode());
        blocking(move || overwrite(&dir, &path, &value)).await
    }

    async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
        let path = self.entry_path(key)?;
        blocking(move || delete(&path)).await
    }

    async fn count(&self) -> Result<usize, MemoryError> {
        let dir = self.dir.clone();
        blocking(move || scan(&dir).map(|keys| keys.len())).await
    }

    fn backend(&self) -> &str {
        "file"
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, MemoryError> + Send + 'static,
) -> Result<T, MemoryError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(MemoryError::backend(format!("the memory file task failed: {e}"))))
}

fn io_error(what: impl std::fmt::Display, path: &Path, e: io::Error) -> MemoryError {
    MemoryError::backend_with(format!("cannot {what} {}", path.display()), e)
}

/// The keys of the regular `<key>.md` files in `dir`, unsorted; a missing directory holds none.
fn scan(dir: &Path) -> Result<Vec<String>, MemoryError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("list the memory directory", dir, e)),
    };
    let mut keys = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error("list the memory directory", dir, e))?;
        let Ok(name) = entry.file_name().into_string() else { continue };
        let Some(key) = name.strip_suffix(".md") else { continue };
        if !is_valid_key(key) {
            continue;
        }
        // `file_type` does not follow symbolic links.
        match entry.file_type() {
            Ok(t) if t.is_file() => keys.push(key.to_owned()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("inspect", &entry.path(), e)),
        }
    }
    Ok(keys)
}

fn list(dir: &Path) -> Result<Vec<Entry>, MemoryError> {
    let mut keys = scan(dir)?;
    keys.sort_unstable();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let path = dir.join(format!("{key}.md"));
        match read_description(&path) {
            Ok(Some(description)) => out.push(Entry { key, description }),
            // Removed or replaced by something that is not a regular file since the scan.
            Ok(None) => {}
            // Listed anyway so the model can see the key; reading it reports the problem.
            Err(_) => out.push(Entry { key, description: String::new() }),
        }
    }
    Ok(out)
}

/// An entry file opened for reading, or why not.
enum Opened {
    Missing,
    Refused(&'static str),
    File(File),
}

fn open_entry(path: &Path) -> io::Result<Opened> {
    // O_NOFOLLOW refuses a symbolic link; O_NONBLOCK keeps a FIFO from blocking the open.
    let flags = (OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits();
    let file = match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Opened::Missing),
        Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) => {
            return Ok(Opened::Refused("is a symbolic link"));
        }
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Ok(Opened::Refused("is not a regular file"));
    }
    Ok(Opened::File(file))
}

fn read(path: &Path) -> Result<Option<Stored>, MemoryError> {
    let file = match open_entry(path).map_err(|e| io_error("read memory entry", path, e))? {
        Opened::Missing => return Ok(None),
        Opened::Refused(why) => {
            return Err(MemoryError::backend(format!(
                "refusing to read memory entry {}: it {why}; entries must be regular files",
                path.display()
            )));
        }
        Opened::File(file) => file,
    };
    let mut buf = Vec::new();
    file.take(READ_LIMIT + 1).read_to_end(&mut buf).map_err(|e| io_error("read memory entry", path, e))?;
    if buf.len() as u64 > READ_LIMIT {
        return Err(MemoryError::backend(format!(
            "refusing to read memory entry {}: it is larger than {READ_LIMIT} bytes",
            path.display()
        )));
    }
    Ok(Some(Stored::decode(&String::from_utf8_lossy(&buf), None)))
}

/// The description of the entry at `path`, reading only as much as its header needs; `None` when there is no
/// regular file there.
fn read_description(path: &Path) -> io::Result<Option<String>> {
    let mut file = match open_entry(path)? {
        Opened::Missing | Opened::Refused(_) => return Ok(None),
        Opened::File(file) => file,
    };
    let mut buf = Vec::new();
    (&mut file).take(HEAD_BYTES).read_to_end(&mut buf)?;
    if buf.len() as u64 == HEAD_BYTES && !header_complete(&String::from_utf8_lossy(&buf)) {
        file.take(READ_LIMIT - HEAD_BYTES).read_to_end(&mut buf)?;
    }
    Ok(Some(decode(&String::from_utf8_lossy(&buf)).0))
}

/// Create the directory (mode 0700, MEM-19) if needed and write `value` to a new staging file in it.
fn stage(dir: &Path, value: &str) -> Result<PathBuf, MemoryError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io_error("create the memory directory", dir, e))?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let mut attempt = 0;
    let (path, mut file) = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{TEMP_PREFIX}{}-{n}-{nanos}", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(&path)
        {
            Ok(file) => break (path, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(io_error("create a staging file in", dir, e)),
        }
    };
    if let Err(e) = file.write_all(value.as_bytes()).and_then(|()| file.sync_all()) {
        let _ = fs::remove_file(&path);
        return Err(io_error("write", &path, e));
    }
    Ok(path)
}

fn create(dir: &Path, path: &Path, value: &str) -> Result<CreateOutcome, MemoryError> {
    let temp = stage(dir, value)?;
    let linked = fs::hard_link(&temp, path);
    let _ = fs::remove_file(&temp);
    match linked {
        Ok(()) => Ok(CreateOutcome::Created { revision: None }),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let existing_description = read_description(path).ok().flatten().filter(|d| !d.is_empty());
            Ok(CreateOutcome::Exists { existing_description })
        }
        Err(e) => Err(io_error("create memory entry", path, e)),
    }
}

fn overwrite(dir: &Path, path: &Path, value: &str) -> Result<OverwriteOutcome, MemoryError> {
    let temp = stage(dir, value)?;
    if let Err(e) = fs::rename(&temp, path) {
        let _ = fs::remove_file(&temp);
        return Err(io_error("replace memory entry", path, e));
    }
    Ok(OverwriteOutcome::Written { revision: None })
}

fn delete(path: &Path) -> Result<bool, MemoryError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {}
        // Only regular files are entries; anything else under the name is not ours to remove.
        Ok(_) => return Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io_error("inspect memory entry", path, e)),
    }
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_error("delete memory entry", path, e)),
    }
}
