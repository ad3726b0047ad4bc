//! The operator's side of an index (`knowledge sources|stats|show|rm|reset|doctor`, KNOW-13).

use super::KnowledgeBase;
use super::search::Hit;
use super::store::{self, sql};
use crate::error::{Error, Result};
use std::time::{Duration, Instant};

/// One indexed file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceFile {
    /// As cited.
    pub path: String,
    /// Where it was read from.
    pub absolute: String,
    /// Its size in bytes when indexed.
    pub size: u64,
    /// Its passages.
    pub chunks: u64,
    /// When it was indexed, Unix milliseconds.
    pub indexed_at_ms: i64,
}

/// The size and pins of an index.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IndexStats {
    /// Files indexed.
    pub files: u64,
    /// Passages.
    pub chunks: u64,
    /// Passages with a vector.
    pub vectors: u64,
    /// Bytes of source indexed.
    pub source_bytes: u64,
    /// The database's size on disk (with its write-ahead log).
    pub disk_bytes: u64,
    /// What the index is pinned to.
    pub pins: super::Pins,
    /// Why the configuration cannot use this index, when it cannot (`--reindex` fixes it).
    pub mismatch: Option<String>,
}

/// What `knowledge doctor` found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DoctorReport {
    /// The index's state, or why it cannot be used.
    pub index: std::result::Result<Option<IndexStats>, String>,
    /// The embedder's answer to one real request: its dimension and how long it took; `None` without one.
    pub embedder: Option<std::result::Result<(usize, Duration), String>>,
}

impl KnowledgeBase {
    /// Every indexed file, by citation path; `None` when no index was built.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Knowledge`](crate::ErrorKind::Knowledge) when the index cannot be read.
    pub fn sources(&self) -> Result<Option<Vec<SourceFile>>> {
        let db = store::db_path(self.directory());
        self.with_reader(|conn, _| {
            let mut stmt = conn
                .prepare("SELECT path, abs, size, chunks, indexed_at FROM files ORDER BY path")
                .map_err(|e| sql(&db, e))?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(SourceFile {
                        path: r.get(0)?,
                        absolute: r.get(1)?,
                        size: r.get::<_, i64>(2)? as u64,
                        chunks: r.get::<_, i64>(3)? as u64,
                        indexed_at_ms: r.get(4)?,
                    })
                })
                .map_err(|e| sql(&db, e))?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| sql(&db, e))
        })
    }

    /// Counts, size and pins; `None` when no index was built.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Knowledge`](crate::ErrorKind::Knowledge) when the index cannot be read.
    pub fn stats(&self) -> Result<Option<IndexStats>> {
        let dir = self.directory().to_path_buf();
        let db = store::db_path(&dir);
        self.with_reader(|conn, pins| {
            let count = |q: &str| conn.query_row(q, [], |r| r.get::<_, i64>(0)).map(|n| n as u64);
            let pins = pins.clone();
            let disk = [store::DB_FILE, "index.sqlite3-wal"]
                .iter()
                .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
                .map(|m| m.len())
                .sum();
            Ok(IndexStats {
                files: count("SELECT count(*) FROM files").map_err(|e| sql(&db, e))?,
                chunks: count("SELECT count(*) FROM chunks").map_err(|e| sql(&db, e))?,
                vectors: count("SELECT count(*) FROM chunks WHERE vector IS NOT NULL").map_err(|e| sql(&db, e))?,
                source_bytes: count("SELECT coalesce(sum(size), 0) FROM files").map_err(|e| sql(&db, e))?,
                disk_bytes: disk,
                mismatch: pins.mismatch(&self.pins()),
                pins,
            })
        })
    }

    /// The passage a citation (`<relpath>#<ordinal>`) names; `Ok(None)` when the index has no such passage (or no
    /// index was built).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Knowledge`](crate::ErrorKind::Knowledge) for a citation without `#<number>`, or an index that
    /// cannot be read.
    pub fn show(&self, citation: &str) -> Result<Option<Hit>> {
        let (path, ordinal) = citation
            .rsplit_once('#')
            .and_then(|(p, n)| Some((p, n.parse::<u32>().ok()?)))
            .ok_or_else(|| Error::knowledge(format!("{citation:?} is not a citation: expected <path>#<number>")))?;
        let db = store::db_path(self.directory());
        let found = self.with_reader(|conn, _| {
            let id = conn
                .query_row(
                    "SELECT id FROM chunks WHERE path = ?1 AND ordinal = ?2",
                    rusqlite::params![path, ordinal],
                    |r| r.get::<_, i64>(0),
                )
                .map(Some)
                .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })
                .map_err(|e| sql(&db, e))?;
            id.map(|id| super::search::load_hit(conn, id, 0.0).map_err(|e| sql(&db, e))).transpose()
        })?;
        Ok(found.flatten())
    }

    /// Remove a file, or every file under a directory, from the index (as cited, or as its absolute path); the
    /// number of files removed. Takes the writer's lock.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Knowledge`](crate::ErrorKind::Knowledge) when another indexer holds the lock or the index cannot
    /// be written.
    pub async fn remove(&self, path: &str) -> Result<usize> {
        let kb = self.clone();
        let path = path.trim_end_matches('/').to_owned();
        tokio::task::spawn_blocking(move || {
            let w = store::open_writer(kb.directory())?;
            let db = store::db_path(kb.directory());
            // An exact, case-sensitive prefix (LIKE would read `%` and `_` as wildcards and ignore ASCII case).
            let under = format!("{path}/");
            let rels: Vec<String> = {
                let mut stmt = w
                    .conn
                    .prepare(
                        "SELECT path FROM files WHERE path = ?1 OR abs = ?1 \
                         OR substr(path, 1, length(?2)) = ?2 OR substr(abs, 1, length(?2)) = ?2",
                    )
                    .map_err(|e| sql(&db, e))?;
                let rows = stmt.query_map([&path, &under], |r| r.get(0)).map_err(|e| sql(&db, e))?;
                rows.collect::<rusqlite::Result<_>>().map_err(|e| sql(&db, e))?
            };
            let tx = w.conn.unchecked_transaction().map_err(|e| sql(&db, e))?;
            for rel in &rels {
                super::index::remove_one(&tx, rel).map_err(|e| sql(&db, e))?;
            }
            super::lexical::maintain(&tx).map_err(|e| sql(&db, e))?;
            tx.commit().map_err(|e| sql(&db, e))?;
            Ok(rels.len())
        })
        .await
        .map_err(|e| Error::knowledge(format!("the remove task failed: {e}")))?
    }

    /// Delete the index (the database and its write-ahead files), under the writer's lock.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Knowledge`](crate::ErrorKind::Knowledge) when another indexer holds the lock or a file cannot be
    /// removed.
    pub fn reset(&self) -> Result<()> {
        let dir = self.directory();
        if !dir.exists() {
            return Ok(());
        }
        let _lock = store::lock(dir)?;
        for f in [store::DB_FILE, "index.sqlite3-wal", "index.sqlite3-shm"] {
            match std::fs::remove_file(dir.join(f)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::knowledge(format!("cannot remove {}: {e}", dir.join(f).display()))),
            }
        }
        Ok(())
    }

    /// Check the index and the embedder: one real embeddings request, timed.
    pub async fn doctor(&self) -> DoctorReport {
        let index = self.stats().map_err(|e| e.to_string());
        let embedder = match self.embedder() {
            None => None,
            Some(e) => {
                let started = Instant::now();
                Some(match e.embed(&["fisk-ai knowledge doctor".to_owned()]).await {
                    Ok(v) => Ok((v.first().map_or(0, Vec::len), started.elapsed())),
                    Err(e) => Err(crate::gate::sanitize(&e.to_string(), 500)),
                })
            }
        };
        DoctorReport { index, embedder }
    }
}
