//! The lexical tier's own index (KNOW-2, KNOW-23): postings kept in the database beside the passages, scored with
//! BM25 exactly as FTS5's `bm25(chunks_fts, 2.0, 1.0)` scored them before, in a fraction of the time.
//!
//! FTS5 calls its `bm25()` once per matching row through its extension API, and counts each word's matches by a
//! second pass over its postings; at 50,000 passages a query with a common word took tens of milliseconds. Here a
//! word's postings are one row per segment, each a packed list of (passage, title count, text count, passage
//! length), so a query reads a few blobs and adds scores into one array.
//!
//! - **Segments.** Each indexing batch writes its passages' postings as a new segment, in the batch's transaction.
//!   Removing a file marks its passages dead (`lex_dead`) and takes them out of the totals; passage ids are never
//!   reused (`AUTOINCREMENT`), so a mark can only name the passage it was made for.
//! - **Merging.** At the start and the end of an index run and after a removal, more than [`MAX_SEGMENTS`] segments
//!   are merged into one (all but the largest), and once more than [`MAX_DEAD`] passages are dead every segment is
//!   rewritten without them.
//! - **Reading.** A search reads inside one transaction (`KnowledgeBase::with_reader`), so the totals and the
//!   postings come from the same commit.

use super::words;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::{HashMap, HashSet};

/// The tables; created by the writer.
pub(crate) const CREATE: &str = "
CREATE TABLE IF NOT EXISTS lex_terms (
    term BLOB NOT NULL, segment INTEGER NOT NULL, postings BLOB NOT NULL, PRIMARY KEY (term, segment)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lex_segments (id INTEGER PRIMARY KEY, bytes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS lex_dead (id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS lex_stats (
    one INTEGER PRIMARY KEY CHECK (one = 1), passages INTEGER NOT NULL, tokens INTEGER NOT NULL);
INSERT OR IGNORE INTO lex_stats (one, passages, tokens) VALUES (1, 0, 0);
";

/// Empty the lexical tables (a `--reindex` or a reset).
pub(crate) const CLEAR: &str = "
DELETE FROM lex_terms; DELETE FROM lex_segments; DELETE FROM lex_dead;
UPDATE lex_stats SET passages = 0, tokens = 0;
";

/// A title word counts twice a text word, as `bm25(chunks_fts, 2.0, 1.0)` weighed them.
const TITLE_WEIGHT: f64 = 2.0;
const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Segments kept before an index run's end merges them.
pub(crate) const MAX_SEGMENTS: usize = 8;
/// Dead passages kept before every segment is rewritten without them: a search reads them all, so they stay few.
pub(crate) const MAX_DEAD: i64 = 1024;
/// The widest passage-id range scored in an array; past it (ids far apart after much churn, or a damaged index),
/// a map, whose size follows the postings actually read. 2^22 slots are 32 MiB, the most a damaged total can make
/// a search allocate up front; a million live passages would be needed to reach it legitimately.
const MAX_DENSE: i64 = 1 << 22;

/// One passage's words, counted: made before its row is written, so the row can hold its length.
pub(crate) struct Counted {
    terms: HashMap<Vec<u8>, (u32, u32)>,
    /// Title and text words together: BM25's passage length.
    pub(crate) tokens: u32,
}

impl Counted {
    /// Split, fold, stem and count the words of a passage's title and text.
    pub(crate) fn new(title: &str, text: &str) -> Self {
        let mut terms: HashMap<Vec<u8>, (u32, u32)> = HashMap::new();
        let mut tokens = 0u32;
        let mut count = |t: &[u8], title: bool| {
            tokens = tokens.saturating_add(1);
            let e = match terms.get_mut(t) {
                Some(e) => e,
                None => terms.entry(t.to_vec()).or_default(),
            };
            if title { e.0 = e.0.saturating_add(1) } else { e.1 = e.1.saturating_add(1) }
        };
        words::each_term(title, |t| count(t, true));
        words::each_term(text, |t| count(t, false));
        Counted { terms, tokens }
    }
}

/// The postings of one batch, written as one segment.
#[derive(Default)]
pub(crate) struct Segment {
    terms: HashMap<Vec<u8>, (i64, Vec<u8>)>,
    passages: i64,
    tokens: i64,
}

impl Segment {
    /// Add passage `id`; ids rise within a segment.
    pub(crate) fn add(&mut self, id: i64, counted: Counted) {
        self.passages += 1;
        self.tokens += i64::from(counted.tokens);
        for (term, (title, text)) in counted.terms {
            let (last, bytes) = self.terms.entry(term).or_default();
            put_posting(bytes, *last, (id, title, text, counted.tokens));
            *last = id;
        }
    }

    /// Store the segment and add its passages to the totals.
    pub(crate) fn write(self, conn: &Connection) -> rusqlite::Result<()> {
        if self.passages == 0 {
            return Ok(());
        }
        let bytes: usize = self.terms.values().map(|(_, b)| b.len()).sum();
        conn.execute("INSERT INTO lex_segments (bytes) VALUES (?1)", [bytes as i64])?;
        let segment = conn.last_insert_rowid();
        let mut insert = conn.prepare_cached("INSERT INTO lex_terms (term, segment, postings) VALUES (?1, ?2, ?3)")?;
        for (term, (_, postings)) in &self.terms {
            insert.execute(params![term, segment, postings])?;
        }
        conn.execute(
            "UPDATE lex_stats SET passages = passages + ?1, tokens = tokens + ?2",
            params![self.passages, self.tokens],
        )
        .map(drop)
    }
}

/// Mark the passages of `path` dead and take them out of the totals; call before their rows are deleted.
pub(crate) fn forget(conn: &Connection, path: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE lex_stats SET passages = passages - (SELECT count(*) FROM chunks WHERE path = ?1), \
         tokens = tokens - (SELECT coalesce(sum(tokens), 0) FROM chunks WHERE path = ?1)",
        [path],
    )?;
    conn.execute("INSERT OR IGNORE INTO lex_dead (id) SELECT id FROM chunks WHERE path = ?1", [path]).map(drop)
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One posting after the one for passage `last` (0 for the first): the id as a step from it, then the counts.
fn put_posting(out: &mut Vec<u8>, last: i64, (id, title, text, len): Posting) {
    put(out, (id - last) as u64);
    put(out, u64::from(title));
    put(out, u64::from(text));
    put(out, u64::from(len));
}

fn get(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// One posting: passage id, title count, text count, passage length.
type Posting = (i64, u32, u32, u32);

/// Decode a postings blob into `out`, leaving out dead passages; `None` when it is malformed.
fn decode(bytes: &[u8], dead: &HashSet<i64>, out: &mut Vec<Posting>) -> Option<()> {
    let (mut at, mut id) = (0usize, 0i64);
    let small = |v: u64| u32::try_from(v).ok();
    while at < bytes.len() {
        let delta = get(bytes, &mut at).filter(|d| *d > 0)?;
        id = id.checked_add(i64::try_from(delta).ok()?)?;
        let title = small(get(bytes, &mut at)?)?;
        let text = small(get(bytes, &mut at)?)?;
        let len = small(get(bytes, &mut at)?)?;
        if !dead.contains(&id) {
            out.push((id, title, text, len));
        }
    }
    Some(())
}

fn malformed(term: &[u8]) -> rusqlite::Error {
    let why =
        format!("malformed postings for the term {:?}; run `knowledge index --reindex`", String::from_utf8_lossy(term));
    rusqlite::Error::FromSqlConversionFailure(0, Type::Blob, why.into())
}

fn dead_set(conn: &Connection) -> rusqlite::Result<HashSet<i64>> {
    let mut stmt = conn.prepare_cached("SELECT id FROM lex_dead")?;
    let ids = stmt.query_map([], |r| r.get(0))?;
    ids.collect()
}

/// The `limit` best passages for `query` by BM25, best first, ties to the smaller id. Call inside a transaction.
pub(crate) fn search(conn: &Connection, query: &str, limit: usize) -> rusqlite::Result<Vec<(i64, f64)>> {
    let terms = words::query_terms(query);
    let stats = conn.query_row("SELECT passages, tokens FROM lex_stats", [], |r| Ok((r.get(0)?, r.get(1)?)));
    let (passages, tokens): (i64, i64) = stats.optional()?.unwrap_or((0, 0));
    if terms.is_empty() || passages <= 0 || limit == 0 {
        return Ok(Vec::new());
    }
    let (n, avgdl) = (passages as f64, tokens as f64 / passages as f64);
    let dead = dead_set(conn)?;
    // Two subqueries: SQLite answers a lone min() or max() from the key's ends, but scans the table for both at once.
    let span: Option<(i64, i64)> =
        conn.query_row("SELECT (SELECT min(id) FROM chunks), (SELECT max(id) FROM chunks)", [], |r| {
            Ok(r.get::<_, Option<i64>>(0)?.zip(r.get(1)?))
        })?;
    let mut scores = Scores::new(span, passages);
    let mut stmt = conn.prepare_cached("SELECT postings FROM lex_terms WHERE term = ?1")?;
    let mut list: Vec<Posting> = Vec::new();
    for term in &terms {
        list.clear();
        let mut rows = stmt.query([term])?;
        while let Some(row) = rows.next()? {
            decode(row.get_ref(0)?.as_blob()?, &dead, &mut list).ok_or_else(|| malformed(term))?;
        }
        if list.is_empty() {
            continue;
        }
        let hits = list.len() as f64;
        // FTS5's bm25(), operation for operation, so the scores (and the ties) are the ones it gave.
        let idf = ((n - hits + 0.5) / (hits + 0.5)).ln();
        let idf = if idf <= 0.0 { 1e-6 } else { idf };
        for &(id, title, text, len) in &list {
            let f = TITLE_WEIGHT * f64::from(title) + f64::from(text);
            let d = f64::from(len);
            scores.add(id, idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / avgdl))));
        }
    }
    Ok(scores.best(limit))
}

/// Scores by passage: an array over the id range when it is dense (the usual case), a map otherwise.
enum Scores {
    Dense {
        base: i64,
        score: Vec<f64>,
        touched: Vec<u32>,
    },
    /// The live id range (none: no passage), and the scores.
    Sparse(Option<(i64, i64)>, HashMap<i64, f64>),
}

impl Scores {
    fn new(span: Option<(i64, i64)>, passages: i64) -> Self {
        let limit = passages.saturating_mul(4).saturating_add(4096).min(MAX_DENSE);
        match span.and_then(|(lo, hi)| Some((lo, hi.checked_sub(lo)?))) {
            Some((lo, width)) if (0..limit).contains(&width) => {
                Scores::Dense { base: lo, score: vec![0.0; width as usize + 1], touched: Vec::new() }
            }
            _ => Scores::Sparse(span, HashMap::new()),
        }
    }

    fn add(&mut self, id: i64, s: f64) {
        match self {
            Scores::Dense { base, score, touched } => {
                // A posting outside the live id range names a passage already gone; it cannot rank.
                let Some(slot) = id.checked_sub(*base).and_then(|i| usize::try_from(i).ok()) else { return };
                let Some(v) = score.get_mut(slot) else { return };
                if *v == 0.0 {
                    touched.push(slot as u32);
                }
                *v += s;
            }
            // As above: outside the live range, a passage already gone.
            Scores::Sparse(span, map) => {
                if span.is_some_and(|(lo, hi)| (lo..=hi).contains(&id)) {
                    *map.entry(id).or_default() += s;
                }
            }
        }
    }

    fn best(self, limit: usize) -> Vec<(i64, f64)> {
        let mut all: Vec<(i64, f64)> = match self {
            Scores::Dense { base, score, touched } => {
                touched.into_iter().map(|slot| (base + i64::from(slot), score[slot as usize])).collect()
            }
            Scores::Sparse(_, map) => map.into_iter().collect(),
        };
        let order = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if all.len() > limit {
            all.select_nth_unstable_by(limit, order);
            all.truncate(limit);
        }
        all.sort_unstable_by(order);
        all
    }
}

/// Keep reading fast: merge segments past [`MAX_SEGMENTS`] (all but the largest), and rewrite every segment without
/// the dead passages once there are more than [`MAX_DEAD`] of them. Called at the start and the end of an index run
/// (so runs that failed midway still get merged) and after a removal, inside a transaction.
pub(crate) fn maintain(conn: &Connection) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare("SELECT id FROM lex_segments ORDER BY bytes DESC, id")?;
    let segments: Vec<i64> = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    drop(stmt);
    let dead: i64 = conn.query_row("SELECT count(*) FROM lex_dead", [], |r| r.get(0))?;
    if dead > MAX_DEAD || (segments.is_empty() && dead > 0) {
        merge(conn, &segments)?;
        return conn.execute("DELETE FROM lex_dead", []).map(drop);
    }
    if segments.len() > MAX_SEGMENTS {
        merge(conn, &segments[1..])?;
    }
    Ok(())
}

/// Rewrite `chosen` as one segment, leaving out dead passages.
fn merge(conn: &Connection, chosen: &[i64]) -> rusqlite::Result<()> {
    if chosen.is_empty() {
        return Ok(());
    }
    let dead = dead_set(conn)?;
    let chosen_set: HashSet<i64> = chosen.iter().copied().collect();
    let mut merged: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut term: Vec<u8> = Vec::new();
    let mut list: Vec<Posting> = Vec::new();
    // Rows come in key order, (term, segment): one term's segments side by side.
    let mut stmt = conn.prepare("SELECT term, segment, postings FROM lex_terms ORDER BY term, segment")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        if !chosen_set.contains(&row.get::<_, i64>(1)?) {
            continue;
        }
        let this = row.get_ref(0)?.as_blob()?;
        if this != term.as_slice() {
            flush(&term, &mut list, &mut merged)?;
            term = this.to_vec();
        }
        decode(row.get_ref(2)?.as_blob()?, &dead, &mut list).ok_or_else(|| malformed(&term))?;
    }
    flush(&term, &mut list, &mut merged)?;
    drop(rows);
    drop(stmt);
    // Segment ids are integers this function read from the table: nothing to quote.
    let ids = chosen.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    conn.execute_batch(&format!(
        "DELETE FROM lex_terms WHERE segment IN ({ids}); DELETE FROM lex_segments WHERE id IN ({ids});"
    ))?;
    if merged.is_empty() {
        return Ok(());
    }
    let bytes: usize = merged.iter().map(|(_, p)| p.len()).sum();
    conn.execute("INSERT INTO lex_segments (bytes) VALUES (?1)", [bytes as i64])?;
    let segment = conn.last_insert_rowid();
    let mut insert = conn.prepare_cached("INSERT INTO lex_terms (term, segment, postings) VALUES (?1, ?2, ?3)")?;
    for (term, postings) in &merged {
        insert.execute(params![term, segment, postings])?;
    }
    Ok(())
}

/// Encode one term's merged postings, in id order, and start the next term. A passage in two segments can only
/// come from a damaged index: refused, rather than written as a step of 0 that no search could read.
fn flush(term: &[u8], list: &mut Vec<Posting>, out: &mut Vec<(Vec<u8>, Vec<u8>)>) -> rusqlite::Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    list.sort_unstable_by_key(|p| p.0);
    let mut bytes = Vec::with_capacity(list.len() * 5);
    let mut last = 0i64;
    for &posting in list.iter() {
        if posting.0 <= last {
            return Err(malformed(term));
        }
        put_posting(&mut bytes, last, posting);
        last = posting.0;
    }
    out.push((term.to_vec(), bytes));
    list.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_round_trip_and_skip_the_dead() {
        let mut bytes = Vec::new();
        let mut last = 0;
        for posting in [(3i64, 1u32, 0u32, 7u32), (4, 0, 2, 300), (1 << 40, 0, 1, u32::MAX)] {
            put_posting(&mut bytes, last, posting);
            last = posting.0;
        }
        let mut out = Vec::new();
        decode(&bytes, &HashSet::from([4]), &mut out).unwrap();
        assert_eq!(out, [(3, 1, 0, 7), (1 << 40, 0, 1, u32::MAX)]);
    }

    #[test]
    fn malformed_postings_are_refused_not_trusted() {
        let mut out = Vec::new();
        let none = HashSet::new();
        // Cut short, a zero step (ids must rise), a count past u32, a varint that never ends.
        for bad in [&[5u8, 1][..], &[0, 1, 1, 1], &[1, 1, 0xff, 0xff, 0xff, 0xff, 0x7f, 1], &[0xff; 12]] {
            assert!(decode(bad, &none, &mut out).is_none(), "{bad:?}");
        }
    }
}
