//! Building the index (KNOW-4, KNOW-5): unchanged files (size, mtime, then content hash) are skipped, changed ones
//! are re-chunked and re-embedded (reusing the vector of any passage already in the index), deleted ones removed.

use super::KnowledgeBase;
use super::chunk::{self, Chunk};
use super::embed::{self, Embedder};
use super::files::{self, Found, Skipped};
use super::lexical;
use super::store::{self, Pins, Writer, sql};
use crate::error::{Error, Result};
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;

/// Bytes of source read, chunked and embedded per batch; one transaction each.
const BATCH_BYTES: u64 = 4 << 20;

/// How an index run goes.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct IndexOptions {
    /// Report what would change, and write nothing.
    pub dry_run: bool,
    /// Start from an empty index (after a chunker or model change).
    pub reindex: bool,
}

impl IndexOptions {
    /// The defaults: write, incrementally.
    pub fn new() -> Self {
        Self::default()
    }

    /// Set [`dry_run`](Self::dry_run).
    #[must_use]
    pub fn dry_run(mut self, on: bool) -> Self {
        self.dry_run = on;
        self
    }

    /// Set [`reindex`](Self::reindex).
    #[must_use]
    pub fn reindex(mut self, on: bool) -> Self {
        self.reindex = on;
        self
    }
}

/// What an index run did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexReport {
    /// Files (re)indexed.
    pub indexed: usize,
    /// Files found unchanged.
    pub unchanged: usize,
    /// Files removed from the index (deleted, renamed away, or now unreadable).
    pub removed: usize,
    /// Passages written.
    pub chunks: usize,
    /// Bytes of source read.
    pub bytes: u64,
    /// Passages whose vector came from the embedder (the rest reused one already stored).
    pub embedded: usize,
    /// Files left out, with the reason: the first [`MAX_SKIPPED_LISTED`](super::MAX_SKIPPED_LISTED).
    pub skipped: Vec<Skipped>,
    /// Files left out beyond those listed in [`skipped`](Self::skipped).
    pub skipped_unlisted: usize,
    /// The walk stopped at its limit ([`MAX_WALK_ENTRIES`](super::MAX_WALK_ENTRIES) entries or
    /// [`MAX_FILES`](super::MAX_FILES) files) before seeing every file, so files missing from it were not removed.
    pub walk_truncated: bool,
    /// Whether nothing was written.
    pub dry_run: bool,
}

impl fmt::Display for IndexReport {
    /// The one summary line (`indexed N files (M unchanged, K removed)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.dry_run { "would index" } else { "indexed" };
        write!(f, "{verb} {} files ({} unchanged, {} removed)", self.indexed, self.unchanged, self.removed)
    }
}

/// Told about an index run as it goes (a progress bar). Every method has a default that does nothing.
///
/// ```
/// use fisk_ai::knowledge::IndexProgress;
///
/// struct Dots;
///
/// impl IndexProgress for Dots {
///     fn file(&self, _path: &str) {
///         eprint!(".");
///     }
/// }
/// # let _ = Dots;
/// ```
pub trait IndexProgress: Send + Sync {
    /// The number of files to look at.
    fn start(&self, _files: usize) {}
    /// One file looked at (indexed or unchanged).
    fn file(&self, _path: &str) {}
}

/// No progress reporting.
impl IndexProgress for () {}

struct Stored {
    size: u64,
    mtime_ns: i64,
    hash: String,
}

/// What [`KnowledgeBase::plan`] found: the writer (none when dry), the files the index holds and those on disk.
struct Planned {
    writer: Option<Writer>,
    stored: HashMap<String, Stored>,
    found: Vec<Found>,
    report: IndexReport,
    dimension: Option<usize>,
}

/// An index run between batches: the writer, the files still to look at, and the vectors' dimension once known.
struct Run {
    writer: Option<Writer>,
    queue: std::collections::VecDeque<Found>,
    dimension: Option<usize>,
}

/// A changed file, chunked, ready to write.
struct Prepared {
    found: Found,
    /// Bytes read.
    bytes: u64,
    hash: String,
    chunks: Vec<Chunk>,
    vectors: Vec<Option<Vec<u8>>>,
}

enum Looked {
    Unchanged(Found),
    /// The same content under a new mtime: the row's mtime is refreshed so the next run skips it unread.
    Touched(Found),
    Changed(Prepared),
    Unreadable(Found, String),
}

impl KnowledgeBase {
    /// Index the configured paths (KNOW-4): the single writer (a second is refused), incremental, pinned.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Knowledge`](crate::ErrorKind::Knowledge) when another indexer holds the lock, the index was
    /// built with another chunker or model (asking for `--reindex`), the embedder fails (indexing never degrades),
    /// or the database cannot be written.
    pub async fn index(&self, options: IndexOptions, progress: &dyn IndexProgress) -> Result<IndexReport> {
        let kb = self.clone();
        let dry = options.dry_run;
        let planned = blocking(move || kb.plan(options)).await??;
        let mut report = IndexReport { dry_run: dry, ..planned.report };
        progress.start(planned.found.len());
        let seen: Vec<String> = planned.found.iter().map(|f| f.rel.clone()).collect();
        let stored = std::sync::Arc::new(planned.stored);
        let mut run = Run { writer: planned.writer, queue: planned.found.into(), dimension: planned.dimension };
        while !run.queue.is_empty() {
            run = self.batch(run, &stored, &mut report, progress).await?;
        }
        // A walk cut short did not see every file: a file it missed is not thereby deleted.
        let removed: Vec<String> = match report.walk_truncated {
            true => Vec::new(),
            false => stored.keys().filter(|k| seen.binary_search(k).is_err()).cloned().collect(),
        };
        report.removed += removed.len();
        if let Some(w) = run.writer {
            let dir = self.directory().to_path_buf();
            blocking(move || finish(&w, &removed).map_err(|e| sql(&store::db_path(&dir), e))).await??;
        }
        Ok(report)
    }

    /// Lock, check the pins, and list what is on disk and in the index. A dry run takes no lock and opens nothing
    /// for writing. A `--reindex` empties the index inside one transaction that lasts the whole run: readers keep
    /// the old index until the new one commits, and a failed rebuild leaves the old one as it was.
    fn plan(&self, options: IndexOptions) -> Result<Planned> {
        let dir = self.directory();
        let wanted = self.pins();
        let (writer, stored, dimension) = if options.dry_run {
            let conn = store::open_reader(dir)?;
            let stored = match &conn {
                Some(c) if !options.reindex => load_stored(c).map_err(|e| sql(&store::db_path(dir), e))?,
                _ => HashMap::new(),
            };
            (None, stored, None)
        } else {
            let w = store::open_writer(dir)?;
            let db = store::db_path(dir);
            let pins = store::read_pins(&w.conn).map_err(|e| sql(&db, e))?;
            if let Some(why) = pins.as_ref().and_then(|p| p.mismatch(&wanted))
                && !options.reindex
            {
                return Err(Error::knowledge(format!(
                    "the index in {} was built differently: {why}; run `knowledge index --reindex` to rebuild it",
                    dir.display()
                )));
            }
            if options.reindex {
                w.conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| sql(&db, e))?;
                store::clear(&w.conn).map_err(|e| sql(&db, e))?;
            } else {
                // Segments left by runs that failed before their end are merged now.
                in_transaction(&w.conn, || lexical::maintain(&w.conn)).map_err(|e| sql(&db, e))?;
            }
            let keep_dim = pins.filter(|_| !options.reindex).and_then(|p| p.dimension);
            let pins = Pins { dimension: keep_dim, ..wanted };
            // Pins that already read so are not written again: an idle `watch` cycle writes nothing.
            if store::read_pins(&w.conn).map_err(|e| sql(&db, e))?.as_ref() != Some(&pins) {
                store::write_pins(&w.conn, &pins).map_err(|e| sql(&db, e))?;
            }
            let stored = load_stored(&w.conn).map_err(|e| sql(&db, e))?;
            (Some(w), stored, keep_dim)
        };
        let mut skipped = files::Skips::default();
        for s in self.unresolved() {
            skipped.push(s.path.clone(), s.reason.clone());
        }
        let found = files::discover(self.roots(), &mut skipped);
        let report = IndexReport {
            skipped: skipped.listed,
            skipped_unlisted: skipped.more,
            walk_truncated: skipped.truncated,
            ..IndexReport::default()
        };
        Ok(Planned { writer, stored, found, report, dimension })
    }

    /// Read, chunk, embed and write the next batch: files are read until [`BATCH_BYTES`] of them have been, so a
    /// batch is bounded by what was actually read, not by the sizes listed before.
    async fn batch(
        &self,
        run: Run,
        stored: &std::sync::Arc<HashMap<String, Stored>>,
        report: &mut IndexReport,
        progress: &dyn IndexProgress,
    ) -> Result<Run> {
        let Run { writer, mut queue, mut dimension } = run;
        let stored_c = stored.clone();
        let (writer, queue, looked) = blocking(move || {
            let mut looked: Vec<Looked> = Vec::new();
            let mut read = 0;
            while read < BATCH_BYTES {
                let Some(f) = queue.pop_front() else { break };
                let (l, bytes) = look(f, &stored_c);
                read += bytes;
                looked.push(l);
            }
            let looked = match &writer {
                Some(w) => reuse_vectors(&w.conn, looked),
                None => Ok(looked),
            };
            (writer, queue, looked)
        })
        .await?;
        let mut looked = looked.map_err(|e| sql(&store::db_path(self.directory()), e))?;
        tally(&looked, stored, report, progress);
        let Some(writer) = writer else { return Ok(Run { writer: None, queue, dimension }) };
        if let Some(embedder) = self.embedder() {
            let prefix = self.pins().document_prefix;
            report.embedded += self.embed_missing(embedder.as_ref(), &mut looked, &prefix, &mut dimension).await?;
        }
        let dir = self.directory().to_path_buf();
        let pin = dimension.filter(|_| self.embedder().is_some());
        let writer = blocking(move || {
            write_batch(&writer.conn, &looked, pin).map_err(|e| sql(&store::db_path(&dir), e))?;
            Ok::<_, Error>(writer)
        })
        .await??;
        Ok(Run { writer: Some(writer), queue, dimension })
    }

    /// Embed every passage that has no vector yet (KNOW-6: a failure here fails the run, loudly).
    /// `dimension` is the index's (or the run's, once a vector came back): every vector must have it.
    async fn embed_missing(
        &self,
        embedder: &dyn Embedder,
        looked: &mut [Looked],
        prefix: &str,
        dimension: &mut Option<usize>,
    ) -> Result<usize> {
        let mut wanted: Vec<(usize, usize, String)> = Vec::new();
        for (i, l) in looked.iter().enumerate() {
            if let Looked::Changed(p) = l {
                for (j, c) in p.chunks.iter().enumerate() {
                    if p.vectors[j].is_none() {
                        let title = c.title(p.found.rel.rsplit('/').next().unwrap_or(&p.found.rel));
                        wanted.push((i, j, format!("{}{}", prefix.replace("{title}", &title), c.text)));
                    }
                }
            }
        }
        let mut done = 0;
        for part in wanted.chunks(embed::BATCH) {
            let texts: Vec<String> = part.iter().map(|(_, _, t)| t.clone()).collect();
            let vectors = embedder.embed(&texts).await.map_err(|e| {
                let why = crate::gate::sanitize(&e.to_string(), 500);
                Error::knowledge(format!(
                    "indexing needs the embedder and it failed, so nothing more was indexed: {why}"
                ))
            })?;
            let got = vectors.first().map_or(0, Vec::len);
            if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != got) || got == 0 {
                return Err(Error::knowledge(format!(
                    "the embedder returned {} vectors of mixed or zero dimensions for {} passages",
                    vectors.len(),
                    texts.len()
                )));
            }
            match *dimension.get_or_insert(got) {
                d if d == got => {}
                d => {
                    return Err(Error::knowledge(format!(
                        "the embedder returned vectors of {got} dimensions but the index holds {d}; run `knowledge \
                         index --reindex` if the model changed"
                    )));
                }
            }
            for ((i, j, _), v) in part.iter().zip(vectors) {
                if let Looked::Changed(p) = &mut looked[*i] {
                    p.vectors[*j] = Some(embed::to_blob(&embed::normalize(v)));
                }
            }
            done += part.len();
        }
        Ok(done)
    }
}

/// Run blocking index work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::knowledge(format!("the index task failed: {e}")))
}

fn load_stored(conn: &rusqlite::Connection) -> rusqlite::Result<HashMap<String, Stored>> {
    let mut stmt = conn.prepare("SELECT path, size, mtime_ns, hash FROM files")?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, Stored { size: r.get::<_, i64>(1)? as u64, mtime_ns: r.get(2)?, hash: r.get(3)? }))
    })?;
    rows.collect()
}

/// Look at one file, and the bytes read doing so.
fn look(f: Found, stored: &HashMap<String, Stored>) -> (Looked, u64) {
    let old = stored.get(&f.rel);
    if old.is_some_and(|o| o.size == f.size && o.mtime_ns == f.mtime_ns) {
        return (Looked::Unchanged(f), 0);
    }
    let text = match files::read_text(&f) {
        Ok(t) => t,
        Err(why) => return (Looked::Unreadable(f, why), 0),
    };
    let bytes = text.len() as u64;
    let hash = hex(&Sha256::digest(text.as_bytes()));
    if old.is_some_and(|o| o.hash == hash) {
        return (Looked::Touched(f), bytes);
    }
    let chunks = chunk::chunk_markdown(&text);
    let vectors = vec![None; chunks.len()];
    (Looked::Changed(Prepared { found: f, bytes, hash, chunks, vectors }), bytes)
}

/// Count a batch into the report, and tell the progress bar.
fn tally(looked: &[Looked], stored: &HashMap<String, Stored>, report: &mut IndexReport, progress: &dyn IndexProgress) {
    for l in looked {
        match l {
            Looked::Unchanged(f) | Looked::Touched(f) => {
                report.unchanged += 1;
                progress.file(&f.rel);
            }
            Looked::Changed(p) => {
                report.indexed += 1;
                report.chunks += p.chunks.len();
                report.bytes += p.bytes;
                progress.file(&p.found.rel);
            }
            Looked::Unreadable(f, why) => {
                // A file indexed before and unreadable now leaves the index.
                report.removed += usize::from(stored.contains_key(&f.rel));
                if report.skipped.len() < super::MAX_SKIPPED_LISTED {
                    report.skipped.push(Skipped { path: f.abs.clone(), reason: why.clone() });
                } else {
                    report.skipped_unlisted += 1;
                }
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text_hash(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// Take the vector of any passage with the same text already stored (a rename, an edit elsewhere in the file).
fn reuse_vectors(conn: &rusqlite::Connection, mut looked: Vec<Looked>) -> rusqlite::Result<Vec<Looked>> {
    let mut stmt = conn.prepare("SELECT vector FROM chunks WHERE text_hash = ?1 AND vector IS NOT NULL LIMIT 1")?;
    for l in &mut looked {
        if let Looked::Changed(p) = l {
            for (c, v) in p.chunks.iter().zip(p.vectors.iter_mut()) {
                *v = stmt.query_row([text_hash(&c.text)], |r| r.get::<_, Vec<u8>>(0)).optional()?;
            }
        }
    }
    drop(stmt);
    Ok(looked)
}

/// Run `f` in a transaction of its own, or inside the run-long one a `--reindex` holds.
fn in_transaction(conn: &rusqlite::Connection, f: impl FnOnce() -> rusqlite::Result<()>) -> rusqlite::Result<()> {
    if !conn.is_autocommit() {
        return f();
    }
    let tx = conn.unchecked_transaction()?;
    f()?;
    tx.commit()
}

fn write_batch(conn: &rusqlite::Connection, looked: &[Looked], dimension: Option<usize>) -> rusqlite::Result<()> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    in_transaction(conn, || {
        let mut segment = lexical::Segment::default();
        for l in looked {
            match l {
                Looked::Touched(f) => {
                    conn.execute("UPDATE files SET mtime_ns = ?2 WHERE path = ?1", params![f.rel, f.mtime_ns])?;
                }
                Looked::Unchanged(_) => {}
                Looked::Changed(p) => write_file(conn, p, now, &mut segment)?,
                Looked::Unreadable(f, _) => remove_one(conn, &f.rel)?,
            }
        }
        segment.write(conn)?;
        let wrote_vectors = looked.iter().any(|l| matches!(l, Looked::Changed(p) if !p.chunks.is_empty()));
        match dimension {
            Some(d) if wrote_vectors => store::set_meta(conn, "dimension", &d.to_string()),
            _ => Ok(()),
        }
    })
}

fn write_file(
    tx: &rusqlite::Connection,
    p: &Prepared,
    now: i64,
    segment: &mut lexical::Segment,
) -> rusqlite::Result<()> {
    let f = &p.found;
    remove_one(tx, &f.rel)?;
    let name = f.rel.rsplit('/').next().unwrap_or(&f.rel);
    for (i, (c, v)) in p.chunks.iter().zip(&p.vectors).enumerate() {
        let title = c.title(name);
        let headings = serde_json::to_string(&c.headings).unwrap_or_else(|_| "[]".into());
        let counted = lexical::Counted::new(&title, &c.text);
        let mut insert = tx.prepare_cached(
            "INSERT INTO chunks (path, ordinal, title, headings, line_start, line_end, text, text_hash, vector, \
             tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        insert.execute(params![
            f.rel,
            i as i64 + 1,
            title,
            headings,
            c.line_start as i64,
            c.line_end as i64,
            c.text,
            text_hash(&c.text),
            v,
            counted.tokens
        ])?;
        segment.add(tx.last_insert_rowid(), counted);
    }
    tx.execute(
        "INSERT INTO files (path, abs, size, mtime_ns, hash, chunks, indexed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![f.rel, f.abs.to_string_lossy(), f.size as i64, f.mtime_ns, p.hash, p.chunks.len() as i64, now],
    )?;
    Ok(())
}

pub(crate) fn remove_one(conn: &rusqlite::Connection, rel: &str) -> rusqlite::Result<()> {
    lexical::forget(conn, rel)?;
    conn.execute("DELETE FROM chunks WHERE path = ?1", [rel])?;
    conn.execute("DELETE FROM files WHERE path = ?1", [rel])?;
    Ok(())
}

/// Remove the files gone from disk, and commit a `--reindex`'s transaction.
fn finish(w: &Writer, rels: &[String]) -> rusqlite::Result<()> {
    in_transaction(&w.conn, || {
        rels.iter().try_for_each(|rel| remove_one(&w.conn, rel))?;
        lexical::maintain(&w.conn)
    })?;
    if !w.conn.is_autocommit() {
        w.conn.execute_batch("COMMIT")?;
    }
    Ok(())
}
