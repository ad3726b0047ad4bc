//! KNOW-23: the index's own lexical postings rank exactly as SQLite FTS5's `bm25()` did (the same word splitting,
//! Porter stemming and scores), checked against a real FTS5 table over the same passages, and stay exact through
//! incremental edits, removals and segment merges.
#![cfg(feature = "knowledge")]

mod common;

use fisk_ai::knowledge::{IndexOptions, KnowledgeBase, Tier, fts_query};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

/// The benches' corpus (44 packaged documentation files) and its 123 questions.
fn bench_corpus() -> std::path::PathBuf {
    common::root().join("benches/data/knowledge")
}

fn questions() -> Vec<String> {
    let text = std::fs::read_to_string(bench_corpus().join("queries.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut qs: Vec<String> = v.as_array().unwrap().iter().map(|q| q["query"].as_str().unwrap().to_owned()).collect();
    // Single common words and stemming-sensitive forms, beside the questions.
    qs.extend(["file", "the", "configuration configured configuring", "Installing packages", "É"].map(String::from));
    qs
}

/// FTS5 as the index used it before: the same passages under the same rowids, `porter unicode61`.
fn fts5_over(index_dir: &Path) -> (Connection, HashMap<i64, String>) {
    let db = Connection::open_with_flags(index_dir.join("index.sqlite3"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let fts = Connection::open_in_memory().unwrap();
    fts.execute_batch("CREATE VIRTUAL TABLE f USING fts5(title, text, tokenize = 'porter unicode61')").unwrap();
    let mut citations = HashMap::new();
    let mut stmt = db.prepare("SELECT id, title, text, path, ordinal FROM chunks").unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let id: i64 = r.get(0).unwrap();
        let (title, text): (String, String) = (r.get(1).unwrap(), r.get(2).unwrap());
        fts.execute("INSERT INTO f (rowid, title, text) VALUES (?1, ?2, ?3)", rusqlite::params![id, title, text])
            .unwrap();
        citations.insert(id, format!("{}#{}", r.get::<_, String>(3).unwrap(), r.get::<_, i64>(4).unwrap()));
    }
    (fts, citations)
}

/// The top 20 by FTS5's bm25, as (citation, score).
fn fts5_top(fts: &Connection, citations: &HashMap<i64, String>, query: &str) -> Vec<(String, f64)> {
    let Some(q) = fts_query(query) else { return Vec::new() };
    let mut stmt = fts
        .prepare_cached("SELECT rowid, bm25(f, 2.0, 1.0) AS s FROM f WHERE f MATCH ?1 ORDER BY s, rowid LIMIT 20")
        .unwrap();
    let rows = stmt.query_map([q], |r| Ok((r.get::<_, i64>(0)?, -r.get::<_, f64>(1)?))).unwrap();
    rows.map(|r| r.unwrap()).map(|(id, s)| (citations[&id].clone(), s)).collect()
}

async fn ours(kb: &KnowledgeBase, query: &str) -> Vec<(String, f64)> {
    let found = kb.search_with(query, Some(20), Tier::Lexical).await.unwrap().expect("built");
    found.hits.into_iter().map(|h| (h.citation, h.score)).collect()
}

/// Every question ranks the same passages in the same order with the same scores as FTS5 over `dir`'s index.
async fn assert_ranks_as_fts5(kb: &KnowledgeBase, index_dir: &Path, at_least: usize) {
    let (fts, citations) = fts5_over(index_dir);
    let mut compared = 0;
    for q in questions() {
        let (want, got) = (fts5_top(&fts, &citations, &q), ours(kb, &q).await);
        let names = |l: &[(String, f64)]| l.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>();
        assert_eq!(names(&got), names(&want), "ranking for {q:?}");
        for ((c, a), (_, b)) in got.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "score of {c} for {q:?}: {a} against FTS5's {b}");
        }
        compared += want.len();
    }
    assert!(compared >= at_least, "the questions found passages to compare ({compared})");
}

#[tokio::test]
async fn know_23_lexical_ranking_is_fts5_bm25_score_for_score() {
    let dir = tempfile::tempdir().unwrap();
    let kb = KnowledgeBase::new(dir.path().join("idx")).with_path("corpus", bench_corpus());
    let report = kb.index(IndexOptions::new(), &()).await.unwrap();
    assert!(report.chunks > 1_000, "{report:?}");
    assert_ranks_as_fts5(&kb, &dir.path().join("idx"), 2_000).await;
}

/// Rename, rewrite, delete and add files over many runs (each run a new segment, removals marking passages dead,
/// merges past the segment bound and past the dead bound): the ranking is still exactly FTS5's over what is left.
#[tokio::test]
async fn know_23_incremental_edits_removals_and_merges_keep_the_ranking_exact() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    common::fs::copy_dir(&bench_corpus().join("corpus"), &corpus);
    let kb = KnowledgeBase::new(dir.path().join("idx")).with_path("corpus", dir.path());
    kb.index(IndexOptions::new(), &()).await.unwrap();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    collect(&corpus, &mut files);
    files.sort();
    assert!(files.len() > 20);
    // Twelve runs, each changing one file: more segments than the bound, so at least one merge.
    for (i, f) in files.iter().take(12).enumerate() {
        let text = std::fs::read_to_string(f).unwrap();
        std::fs::write(f, format!("# Edited {i}\n\nconfiguration restart backup {i}\n\n{text}")).unwrap();
        kb.index(IndexOptions::new(), &()).await.unwrap();
    }
    // Then most files go away, past the dead bound, and a new one arrives.
    for f in files.iter().skip(12).take(files.len() - 16) {
        std::fs::remove_file(f).unwrap();
    }
    std::fs::write(corpus.join("new.md"), "# Restart\n\nRestarting the configured backup server.\n").unwrap();
    kb.index(IndexOptions::new(), &()).await.unwrap();
    assert_ranks_as_fts5(&kb, &dir.path().join("idx"), 500).await;
    // Thirteen runs left at most 8 segments plus the last run's, and the mass removal (past 1,024 dead passages)
    // rewrote them all without the dead.
    let db = writable(dir.path());
    let count = |q: &str| db.query_row(q, [], |r| r.get::<_, i64>(0)).unwrap();
    assert!(count("SELECT count(*) FROM lex_segments") <= 9);
    assert_eq!(count("SELECT count(*) FROM lex_dead"), 0);
    // And a remove through the admin path.
    kb.remove("corpus/new.md").await.unwrap();
    assert_ranks_as_fts5(&kb, &dir.path().join("idx"), 500).await;
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            collect(&e.path(), out);
        } else if e.path().extension().is_some_and(|x| x == "md" || x == "txt") {
            out.push(e.path());
        }
    }
}

/// A small index over the tests' own corpus.
async fn small() -> (tempfile::TempDir, KnowledgeBase) {
    let dir = tempfile::tempdir().unwrap();
    common::fs::copy_dir(&common::root().join("tests/fixtures/knowledge/corpus"), &dir.path().join("corpus"));
    let kb = KnowledgeBase::new(dir.path().join("idx")).with_path("corpus", dir.path());
    kb.index(IndexOptions::new(), &()).await.unwrap();
    (dir, kb)
}

fn writable(dir: &Path) -> Connection {
    Connection::open(dir.join("idx/index.sqlite3")).unwrap()
}

/// Damaged postings (another program, a disk fault) are an error naming the index and what to run, never a panic
/// or a wrong answer taken for a right one.
#[tokio::test]
async fn know_23_damaged_postings_are_refused_with_the_index_named() {
    let (dir, kb) = small().await;
    assert!(!ours(&kb, "restart").await.is_empty());
    let stem = b"restart".to_vec();
    for bad in [vec![0u8, 1, 1, 1], vec![5], vec![0xff; 11]] {
        writable(dir.path()).execute("UPDATE lex_terms SET postings = ?1 WHERE term = ?2", (&bad, &stem)).unwrap();
        let err = kb.search_with("restart", Some(5), Tier::Lexical).await.unwrap_err().to_string();
        assert!(err.contains("index.sqlite3") && err.contains("malformed postings"), "{err}");
        assert!(err.contains("--reindex"), "{err}");
    }
    // Other words still search.
    assert!(!ours(&kb, "backup").await.is_empty());
}

/// An index written by the FTS5 version (table layout 1) is refused for searching and for indexing, naming the
/// directory and the commands that rebuild it; `reset` then `index` works.
#[tokio::test]
async fn know_23_an_index_of_the_previous_layout_is_refused_until_rebuilt() {
    let (dir, kb) = small().await;
    writable(dir.path()).execute("UPDATE meta SET value = '1' WHERE key = 'schema'", []).unwrap();
    for err in [
        kb.search_with("restart", Some(5), Tier::Lexical).await.unwrap_err().to_string(),
        kb.index(IndexOptions::new(), &()).await.unwrap_err().to_string(),
    ] {
        assert!(err.contains("table layout 1") && err.contains("knowledge reset --force"), "{err}");
        assert!(err.contains(&dir.path().join("idx").display().to_string()), "{err}");
    }
    kb.reset().unwrap();
    kb.index(IndexOptions::new(), &()).await.unwrap();
    assert!(!ours(&kb, "restart").await.is_empty());
}

/// A reader kept from before a reset is not used on the new index.
#[tokio::test]
async fn know_23_a_reset_and_a_new_index_are_searched_fresh() {
    let (dir, kb) = small().await;
    assert!(!ours(&kb, "restart").await.is_empty());
    kb.reset().unwrap();
    for f in ["runbook.md", "guides"] {
        let p = dir.path().join("corpus").join(f);
        if p.is_dir() { std::fs::remove_dir_all(p).unwrap() } else { std::fs::remove_file(p).unwrap() }
    }
    std::fs::write(dir.path().join("corpus/other.md"), "# Zebra\n\nzebras only\n").unwrap();
    kb.index(IndexOptions::new(), &()).await.unwrap();
    assert!(ours(&kb, "restart").await.is_empty());
    assert_eq!(ours(&kb, "zebra").await.len(), 1);
}

/// Damaged totals and a passage id far from the rest (another program wrote the file) neither panic nor make a
/// search allocate by them: the stray range is scored in a map, and the same passages are found.
#[tokio::test]
async fn know_23_damaged_totals_and_id_ranges_neither_panic_nor_allocate_by_them() {
    let (dir, kb) = small().await;
    let names = |l: Vec<(String, f64)>| {
        let mut v: Vec<String> = l.into_iter().map(|(c, _)| c).collect();
        v.sort();
        v
    };
    let want = names(ours(&kb, "restart backup streams").await);
    assert!(want.len() >= 3, "{want:?}");
    let db = writable(dir.path());
    db.execute("UPDATE lex_stats SET passages = ?1", [i64::MAX]).unwrap();
    db.execute(
        "INSERT INTO chunks (id, path, ordinal, title, headings, line_start, line_end, text, text_hash, tokens) \
         VALUES (?1, 'stray.md', 1, 't', '[]', 1, 1, 'x', 'h', 1)",
        [i64::MAX - 1],
    )
    .unwrap();
    assert_eq!(names(ours(&kb, "restart backup streams").await), want);
    db.execute("UPDATE lex_stats SET passages = -5", []).unwrap();
    assert!(ours(&kb, "restart").await.is_empty(), "no live passage by the totals: nothing ranks");
}
