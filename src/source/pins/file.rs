//! Pins as one JSON file per server in the state directory (PIN-5).

use super::Pins;
use super::store::{PinStore, validate_server_key};
use crate::error::{Error, Result};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::fs::{DirBuilder, OpenOptions};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A pin file larger than this is refused rather than read: about 150,000 tools.
const MAX_FILE: u64 = 32 << 20;
const NOFOLLOW: i32 = nix::fcntl::OFlag::O_NOFOLLOW.bits();
const NONBLOCK: i32 = nix::fcntl::OFlag::O_NONBLOCK.bits();

/// Owned by this process's user, and writable by nobody else.
fn owned_privately(path: &Path, what: &str, meta: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(Error::source_failed(format!(
            "the {what} {} belongs to uid {}, not to this user (uid {me}); pins another user can change are not used",
            path.display(),
            meta.uid()
        )));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(Error::source_failed(format!(
            "the {what} {} is writable by its group or every user; restrict it (chmod go-w)",
            path.display()
        )));
    }
    Ok(())
}

/// Pins as `<dir>/<server key>.json` (mode 0600) in a directory created with mode 0700.
///
/// Writes go to a temporary file that is then renamed over the old one, so a reader never sees half a file; a first
/// pin is linked into place, so when two runs pin a server at once the first wins and the second compares against
/// it. A directory every user can write to is refused (another user could swap the pins).
///
/// ```no_run
/// use fisk_ai::source::pins::FilePinStore;
///
/// # fn demo() -> fisk_ai::Result<()> {
/// // $XDG_STATE_HOME/fisk-ai/pins/ops (or ~/.local/state/fisk-ai/pins/ops)
/// let store = FilePinStore::new(FilePinStore::default_dir("ops", None)?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FilePinStore {
    dir: PathBuf,
}

/// The file's shape; `version` lets a later format be told apart.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinFile {
    version: u32,
    server: String,
    tools: Pins,
}

impl FilePinStore {
    /// Pins in `dir` (created when the first server is pinned).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FilePinStore { dir: dir.into() }
    }

    /// `<store base>/pins/<identity>` when the host gives a store base (the CLI's `--state-dir`), else
    /// `$XDG_STATE_HOME/fisk-ai/pins/<identity>`, falling back to `~/.local/state/fisk-ai/pins/<identity>`. The
    /// identity keeps two agents that both name a server `docs` from sharing its pins.
    ///
    /// # Errors
    ///
    /// When neither a store base nor `XDG_STATE_HOME` nor `HOME` gives an absolute directory.
    pub fn default_dir(identity: &str, store_base: Option<&Path>) -> Result<PathBuf> {
        let base = match store_base {
            Some(base) => base.to_path_buf(),
            None => crate::session::state_home("pin")?,
        };
        Ok(base.join("pins").join(identity))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, server: &str) -> Result<PathBuf> {
        validate_server_key(server)?;
        Ok(self.dir.join(format!("{server}.json")))
    }

    fn read(&self, server: &str) -> Result<Option<Pins>> {
        let path = self.path(server)?;
        if self.dir.exists() {
            self.check_dir()?;
        }
        // Non-blocking, so a FIFO planted in place of the file cannot hang the open; then it must be a regular file
        // of this user that nobody else can write.
        let file = match OpenOptions::new().read(true).custom_flags(NOFOLLOW | NONBLOCK).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == IoKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, "open", e)),
        };
        let meta = file.metadata().map_err(|e| io_error(&path, "inspect", e))?;
        owned_privately(&path, "pin file", &meta)?;
        if !meta.is_file() {
            return Err(Error::source_failed(format!("pin file {} is not a regular file", path.display())));
        }
        let mut bytes = Vec::new();
        file.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| io_error(&path, "read", e))?;
        if bytes.len() as u64 > MAX_FILE {
            return Err(Error::source_failed(format!(
                "pin file {} is over {} MiB; it is not read",
                path.display(),
                MAX_FILE >> 20
            )));
        }
        let parsed: PinFile = serde_json::from_slice(&bytes).map_err(|e| {
            Error::source_failed(format!(
                "pin file {} is not a pin file (line {}, column {}): {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        if parsed.version != 1 || parsed.server != server {
            return Err(Error::source_failed(format!(
                "pin file {} holds version {} pins of {:?}, not version 1 pins of {server:?}",
                path.display(),
                parsed.version,
                crate::gate::sanitize(&parsed.server, 200)
            )));
        }
        super::store::check_stored(&parsed.tools, &format!("pin file {}", path.display()))?;
        Ok(Some(parsed.tools))
    }

    /// Write `pins` to a fresh temporary file in the directory; its path.
    fn stage(&self, server: &str, pins: &Pins) -> Result<PathBuf> {
        self.prepare_dir()?;
        let body = serde_json::to_vec_pretty(&PinFile { version: 1, server: server.to_owned(), tools: pins.clone() })
            .map_err(|e| Error::source_failed(format!("cannot encode the pins of {server}: {e}")))?;
        let tmp = self.dir.join(format!(".{server}.{}.{}.tmp", std::process::id(), unique()));
        let mut file = (OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(NOFOLLOW))
            .open(&tmp)
            .map_err(|e| io_error(&tmp, "create", e))?;
        let written = file.write_all(&body).and_then(|()| file.sync_all());
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_error(&tmp, "write", e));
        }
        Ok(tmp)
    }

    fn prepare_dir(&self) -> Result<()> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| io_error(&self.dir, "create", e))?;
        self.check_dir()
    }

    /// Pins in a directory another user owns or can write to could be swapped under the check: refused.
    fn check_dir(&self) -> Result<()> {
        let meta = std::fs::symlink_metadata(&self.dir).map_err(|e| io_error(&self.dir, "inspect", e))?;
        if !meta.is_dir() {
            return Err(Error::source_failed(format!("the pin directory {} is not a directory", self.dir.display())));
        }
        owned_privately(&self.dir, "pin directory", &meta)
    }

    fn write(&self, server: &str, pins: &Pins, first: bool) -> Result<bool> {
        let path = self.path(server)?;
        // Never write what a read would refuse.
        super::store::check_stored(pins, &format!("the pins of {server}"))?;
        let tmp = self.stage(server, pins)?;
        let placed = if first {
            // A hard link fails when the name exists: the atomic "create only if absent".
            match std::fs::hard_link(&tmp, &path) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == IoKind::AlreadyExists => Ok(false),
                Err(e) => Err(io_error(&path, "create", e)),
            }
        } else {
            std::fs::rename(&tmp, &path).map(|()| true).map_err(|e| io_error(&path, "replace", e))
        };
        let _ = std::fs::remove_file(&tmp);
        placed
    }

    fn list(&self) -> Result<Vec<String>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == IoKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&self.dir, "list", e)),
        };
        let mut keys = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&self.dir, "list", e))?;
            let name = entry.file_name();
            let Some(key) = name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
            if validate_server_key(key).is_ok() {
                keys.push(key.to_owned());
            }
        }
        keys.sort();
        Ok(keys)
    }
}

/// A per-process counter, so two writers in one process never share a temporary name.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::source_failed(format!("cannot {what} pin file {}: {e}", path.display())).with_source(e)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::source_failed(format!("pin storage task failed: {e}")))?
}

#[async_trait]
impl PinStore for FilePinStore {
    fn describe(&self) -> String {
        format!("pin directory {}", self.dir.display())
    }

    async fn load(&self, server: &str) -> Result<Option<Pins>> {
        let (store, server) = (self.clone(), server.to_owned());
        blocking(move || store.read(&server)).await
    }

    async fn save(&self, server: &str, pins: &Pins) -> Result<()> {
        let (store, server, pins) = (self.clone(), server.to_owned(), pins.clone());
        blocking(move || store.write(&server, &pins, false).map(drop)).await
    }

    async fn create(&self, server: &str, pins: &Pins) -> Result<bool> {
        let (store, server, pins) = (self.clone(), server.to_owned(), pins.clone());
        blocking(move || store.write(&server, &pins, true)).await
    }

    async fn forget(&self, server: &str) -> Result<bool> {
        let path = self.path(server)?;
        blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == IoKind::NotFound => Ok(false),
            Err(e) => Err(io_error(&path, "remove", e)),
        })
        .await
    }

    async fn servers(&self) -> Result<Vec<String>> {
        let store = self.clone();
        blocking(move || store.list()).await
    }
}
