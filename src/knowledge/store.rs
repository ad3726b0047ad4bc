//! The index on disk (KNOW-7, KNOW-8): one SQLite database (`index.sqlite3`, mode 0600) in a 0700 directory, the
//! lexical tier's postings (`lexical`) and vectors as little-endian `f32` blobs, a single writer behind
//! `index.lock`, and the pins that keep one chunking and one embedding model per index.

use crate::error::{Error, Result};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::fs::{DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The database file inside the index directory.
pub const DB_FILE: &str = "index.sqlite3";
/// The writer's lock file inside the index directory.
pub const LOCK_FILE: &str = "index.lock";
/// The layout of the tables; a different one asks for a reset and a new index. Layout 1 ranked with an FTS5 table;
/// layouts 2 and 3 keep their own postings (KNOW-23), 3 with words folded by SQLite's tables (2 used Rust's, for
/// one commit, and would miss words outside ASCII).
const SCHEMA: &str = "3";

const CREATE: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, abs TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL, chunks INTEGER NOT NULL, indexed_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, ordinal INTEGER NOT NULL, title TEXT NOT NULL,
    headings TEXT NOT NULL, line_start INTEGER NOT NULL, line_end INTEGER NOT NULL, text TEXT NOT NULL,
    text_hash TEXT NOT NULL, vector BLOB, tokens INTEGER NOT NULL, UNIQUE (path, ordinal));
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks (text_hash);
";

/// What an index was built with. Searching or adding to it with anything else would mix two chunkings or two
/// vector spaces, so a mismatch asks for `--reindex` (KNOW-8).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pins {
    /// The chunker's version.
    pub chunker: String,
    /// How tokens are estimated.
    pub tokenizer: String,
    /// The embedding model, when the index has vectors.
    pub model: Option<String>,
    /// The vectors' dimension, once the first is stored.
    pub dimension: Option<usize>,
    /// The query prefix the vectors were made for.
    pub query_prefix: String,
    /// The passage prefix the vectors were made with.
    pub document_prefix: String,
}

impl Pins {
    /// The first way `self` (the index's) differs from `wanted` (the configuration's), dimension aside.
    pub(crate) fn mismatch(&self, wanted: &Pins) -> Option<String> {
        let pairs = [
            ("the chunker", Some(&self.chunker), Some(&wanted.chunker)),
            ("the tokenizer", Some(&self.tokenizer), Some(&wanted.tokenizer)),
            ("the embedding model", self.model.as_ref(), wanted.model.as_ref()),
            ("the query prefix", Some(&self.query_prefix), Some(&wanted.query_prefix)),
            ("the document prefix", Some(&self.document_prefix), Some(&wanted.document_prefix)),
        ];
        pairs.into_iter().find(|(_, a, b)| a != b).map(|(what, a, b)| {
            let show = |v: Option<&String>| v.map_or_else(|| "none".to_owned(), |s| format!("{s:?}"));
            format!("{what} is {} in the index but {} in the configuration", show(a), show(b))
        })
    }
}

/// Create the index directory with mode 0700 (and its parents), or check the one there: a directory, not a link,
/// owned by this user, that nobody else can write.
pub(crate) fn ensure_dir(dir: &Path) -> Result<()> {
    check_ancestors(dir)?;
    if !dir.exists() {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::knowledge(format!("cannot create the index directory {}: {e}", dir.display())))?;
    }
    check_dir(dir)
}

/// Every existing directory above `dir` must be one only this user or root can change entries in (or, like `/tmp`,
/// sticky): otherwise another user could swap the index directory, or one of its parents, for their own.
fn check_ancestors(dir: &Path) -> Result<()> {
    let me = nix::unistd::geteuid().as_raw();
    let absolute = std::path::absolute(dir)
        .map_err(|e| Error::knowledge(format!("cannot resolve the index directory {}: {e}", dir.display())))?;
    // The path as written, and where its deepest existing parent really is: a link in the path leads to
    // directories the written path does not name.
    let real = absolute.ancestors().skip(1).find_map(|p| p.canonicalize().ok());
    let written = absolute.ancestors().skip(1);
    for parent in written.chain(real.iter().flat_map(|r| r.ancestors())) {
        let Ok(meta) = std::fs::metadata(parent) else { continue };
        let mode = meta.permissions().mode();
        let shared = mode & 0o022 != 0 && mode & 0o1000 == 0;
        if (meta.uid() != me && meta.uid() != 0) || shared {
            return Err(Error::knowledge(format!(
                "the index directory {} lies under {}, which {} (mode {:o}); choose a directory only you can change",
                dir.display(),
                parent.display(),
                if shared { "other users can write without the sticky bit" } else { "belongs to another user" },
                mode & 0o7777
            )));
        }
    }
    Ok(())
}

pub(crate) fn check_dir(dir: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| Error::knowledge(format!("cannot inspect the index directory {}: {e}", dir.display())))?;
    if !meta.is_dir() {
        return Err(Error::knowledge(format!("the index directory {} is not a directory", dir.display())));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(Error::knowledge(format!(
            "the index directory {} belongs to uid {}, not to this user (uid {me})",
            dir.display(),
            meta.uid()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(Error::knowledge(format!(
            "the index directory {} is open to its group or other users (mode {:o}); it must be 0700 (chmod 700)",
            dir.display(),
            meta.permissions().mode() & 0o777
        )));
    }
    Ok(())
}

/// The writer's hold on an index: the lock and the connection. Dropping it releases the lock.
pub(crate) struct Writer {
    pub(crate) conn: Connection,
    _lock: File,
}

/// Take the single-writer lock and open (creating) the database. A second writer is refused at once.
pub(crate) fn open_writer(dir: &Path) -> Result<Writer> {
    open_locked(dir, lock(dir)?)
}

/// Take the single-writer lock (creating the directory); held while the file lives. A reset needs only this: an
/// index of another layout must still be removable.
pub(crate) fn lock(dir: &Path) -> Result<File> {
    ensure_dir(dir)?;
    let lock_path = dir.join(LOCK_FILE);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lock_path)
        .map_err(|e| Error::knowledge(format!("cannot open the lock file {}: {e}", lock_path.display())))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(Error::knowledge(format!(
                "another indexer is writing the index in {} (it holds {}); wait for it to finish",
                dir.display(),
                lock_path.display()
            )));
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(Error::knowledge(format!("cannot lock {}: {e}", lock_path.display())));
        }
    }
    Ok(lock)
}

/// Open (creating) the database under a lock [`lock`] took.
fn open_locked(dir: &Path, lock: File) -> Result<Writer> {
    let db = db_path(dir);
    // Created 0600 before SQLite opens it; SQLite gives its -wal and -shm files the database's mode.
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&db)
        .map_err(|e| Error::knowledge(format!("cannot create {}: {e}", db.display())))?;
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| sql(&db, e))?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
        .map_err(|e| sql(&db, e))?;
    // A layout-1 index has no `tokens` column: check its layout before creating anything in it.
    check_layout(&conn, dir)?;
    conn.execute_batch(CREATE).map_err(|e| sql(&db, e))?;
    conn.execute_batch(super::lexical::CREATE).map_err(|e| sql(&db, e))?;
    if meta(&conn, "schema").map_err(|e| sql(&db, e))?.is_none() {
        set_meta(&conn, "schema", SCHEMA).map_err(|e| sql(&db, e))?;
    }
    Ok(Writer { conn, _lock: lock })
}

/// Open the database read-only (the agent's side, KNOW-7); `None` when no index was ever built there.
pub(crate) fn open_reader(dir: &Path) -> Result<Option<Connection>> {
    let db = db_path(dir);
    if !db.exists() {
        return Ok(None);
    }
    check_ancestors(dir)?;
    check_dir(dir)?;
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| sql(&db, e))?;
    // An index whose first build never committed has no pins yet: not built.
    let built = conn
        .query_row("SELECT 1 FROM sqlite_master WHERE name = 'meta'", [], |_| Ok(()))
        .optional()
        .map_err(|e| sql(&db, e))?
        .is_some()
        && meta(&conn, "chunker").map_err(|e| sql(&db, e))?.is_some();
    if built {
        check_layout(&conn, dir)?;
    }
    Ok(built.then_some(conn))
}

/// Refuse an index written with another table layout (KNOW-8), naming it and what to run.
fn check_layout(conn: &Connection, dir: &Path) -> Result<()> {
    let db = db_path(dir);
    let has_meta = conn
        .query_row("SELECT 1 FROM sqlite_master WHERE name = 'meta'", [], |_| Ok(()))
        .optional()
        .map_err(|e| sql(&db, e))?;
    let layout = match has_meta {
        Some(()) => meta(conn, "schema").map_err(|e| sql(&db, e))?,
        None => None,
    };
    match layout {
        Some(v) if v != SCHEMA => Err(Error::knowledge(format!(
            "the index in {} has table layout {v}, this version reads and writes {SCHEMA}; run `knowledge reset \
             --force` then `knowledge index`",
            dir.display()
        ))),
        _ => Ok(()),
    }
}

/// The database's path in `dir`.
pub(crate) fn db_path(dir: &Path) -> PathBuf {
    dir.join(DB_FILE)
}

pub(crate) fn sql(db: &Path, e: rusqlite::Error) -> Error {
    Error::knowledge(format!("knowledge index {}: {e}", db.display()))
}

pub(crate) fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional()
}

pub(crate) fn set_meta(conn: &Connection, key: &str, value: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2",
        params![key, value],
    )
    .map(drop)
}

/// The pins an index holds; `None` before its first build committed.
pub(crate) fn read_pins(conn: &Connection) -> rusqlite::Result<Option<Pins>> {
    let Some(chunker) = meta(conn, "chunker")? else { return Ok(None) };
    Ok(Some(Pins {
        chunker,
        tokenizer: meta(conn, "tokenizer")?.unwrap_or_default(),
        model: meta(conn, "model")?,
        dimension: meta(conn, "dimension")?.and_then(|d| d.parse().ok()),
        query_prefix: meta(conn, "query_prefix")?.unwrap_or_default(),
        document_prefix: meta(conn, "document_prefix")?.unwrap_or_default(),
    }))
}

pub(crate) fn write_pins(conn: &Connection, pins: &Pins) -> rusqlite::Result<()> {
    set_meta(conn, "chunker", &pins.chunker)?;
    set_meta(conn, "tokenizer", &pins.tokenizer)?;
    match &pins.model {
        Some(m) => set_meta(conn, "model", m)?,
        None => drop(conn.execute("DELETE FROM meta WHERE key = 'model'", [])?),
    }
    if let Some(d) = pins.dimension {
        set_meta(conn, "dimension", &d.to_string())?;
    }
    set_meta(conn, "query_prefix", &pins.query_prefix)?;
    set_meta(conn, "document_prefix", &pins.document_prefix)
}

/// Empty every table (a `--reindex`), keeping the file and its mode.
pub(crate) fn clear(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("DELETE FROM chunks; DELETE FROM files; DELETE FROM meta WHERE key <> 'schema';")?;
    conn.execute_batch(super::lexical::CLEAR)
}
