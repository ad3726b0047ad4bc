//! Knowledge (issue 33, KNOW-14): indexing throughput, search latency at 1,000 and 50,000 passages (lexical and
//! fused), and retrieval quality on documentation shipped in Debian packages (`benches/data/knowledge`, see its
//! SOURCES.md), with 123 questions whose answers were checked by hand.
//!
//! Figures are printed as ratios against a baseline measured in the same run:
//! - indexing: against reading and chunking the same files without writing anything;
//! - search: against the bare FTS5 query the index ran before it kept its own postings (`MATCH` and `bm25`, top 5
//!   with their text) over an FTS5 table of the same passages, built in the same run (KNOW-23).
//!
//! The fused tier uses a FAKE embedder (feature hashing of words and character trigrams, in process): its latency
//! is the vector scan and the fusion, never a model; its quality is marked as such.

#[path = "../tests/common/fs.rs"]
mod fs;

#[path = "common/fake_embedder.rs"]
mod fake_embedder;

use criterion::Criterion;
use fake_embedder::FakeEmbedder;
use fisk_ai::knowledge::{IndexOptions, KnowledgeBase, Tier, chunk_markdown, fts_query};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(serde::Deserialize)]
struct Case {
    query: String,
    path: String,
    line: u32,
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data/knowledge")
}

fn cases() -> Vec<Case> {
    serde_json::from_str(&std::fs::read_to_string(data().join("queries.json")).unwrap()).unwrap()
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            files(&e.path(), out);
        } else {
            out.push(e.path());
        }
    }
}

/// recall@5 and MRR (over the top 20) of `tier` on the question set.
async fn quality(kb: &KnowledgeBase, tier: Tier) -> (f64, f64, usize) {
    let cases = cases();
    let (mut at5, mut rr) = (0usize, 0f64);
    for c in &cases {
        let found = kb.search_with(&c.query, Some(20), tier).await.unwrap().unwrap();
        let rank = found.hits.iter().position(|h| h.path == c.path && h.line_start <= c.line && c.line <= h.line_end);
        if let Some(r) = rank {
            at5 += usize::from(r < 5);
            rr += 1.0 / (r + 1) as f64;
        }
    }
    (at5 as f64 / cases.len() as f64, rr / cases.len() as f64, cases.len())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// p50 and p99 of a search over the question mix, five rounds.
async fn latency(kb: &KnowledgeBase, tier: Tier) -> (Duration, Duration) {
    let cases = cases();
    let mut t = Vec::new();
    for _ in 0..5 {
        for c in &cases {
            let start = Instant::now();
            let found = kb.search_with(&c.query, Some(5), tier).await.unwrap();
            t.push(start.elapsed());
            std::hint::black_box(found);
        }
    }
    t.sort();
    (percentile(&t, 0.5), percentile(&t, 0.99))
}

/// The baseline: the FTS5 table the index used before (`porter unicode61`, the same passages under the same ids, in
/// a database file beside it) and its bare query, top 5 with their text.
fn raw_latency(root: &Path) -> (Duration, Duration) {
    let conn = rusqlite::Connection::open(root.join("fts5-baseline.sqlite3")).unwrap();
    let index = root.join("idx/index.sqlite3");
    conn.execute("ATTACH DATABASE ?1 AS idx", [index.to_str().unwrap()]).unwrap();
    conn.execute_batch(
        "CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT, ordinal INTEGER, title TEXT, text TEXT);
         INSERT INTO chunks SELECT id, path, ordinal, title, text FROM idx.chunks;
         CREATE VIRTUAL TABLE chunks_fts USING fts5(title, text, tokenize = 'porter unicode61');
         INSERT INTO chunks_fts (rowid, title, text) SELECT id, title, text FROM chunks;
         DETACH DATABASE idx;",
    )
    .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT c.path, c.ordinal, c.text FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid \
             WHERE chunks_fts MATCH ?1 ORDER BY bm25(chunks_fts, 2.0, 1.0) LIMIT 5",
        )
        .unwrap();
    let cases = cases();
    let mut t = Vec::new();
    for _ in 0..5 {
        for c in &cases {
            let q = fts_query(&c.query).unwrap();
            let start = Instant::now();
            let rows: Vec<(String, i64, String)> =
                stmt.query_map([q], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
            t.push(start.elapsed());
            std::hint::black_box(rows);
        }
    }
    t.sort();
    (percentile(&t, 0.5), percentile(&t, 0.99))
}

/// A knowledge base over `copies` copies of the corpus (each in its own directory, so every passage is distinct).
fn scaled(root: &Path, copies: usize, subset: Option<usize>) -> KnowledgeBase {
    let docs = root.join("docs");
    let mut all = Vec::new();
    files(&data().join("corpus"), &mut all);
    all.sort();
    if let Some(n) = subset {
        all.truncate(n);
    }
    for i in 0..copies {
        for f in &all {
            let rel = f.strip_prefix(data().join("corpus")).unwrap();
            let to = docs.join(format!("copy{i}")).join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(f, &to).unwrap();
        }
    }
    KnowledgeBase::new(root.join("idx")).with_path("docs", root)
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn report() {
    let corpus = data().join("corpus");
    let mut all = Vec::new();
    files(&corpus, &mut all);
    let bytes: u64 = all.iter().map(|f| f.metadata().unwrap().len()).sum();

    // Quality.
    let dir = tempfile::tempdir().unwrap();
    fs::copy_dir(&corpus, &dir.path().join("corpus"));
    let lexical = KnowledgeBase::new(dir.path().join("lex")).with_path("corpus", dir.path());
    let r = lexical.index(IndexOptions::new(), &()).await.unwrap();
    let (r5, mrr, n) = quality(&lexical, Tier::Lexical).await;
    println!("knowledge quality: {} files, {} passages, {n} questions", r.indexed, r.chunks);
    println!("knowledge quality lexical:                 recall@5 {r5:.3}  MRR {mrr:.3}");
    let fused = lexical.clone().with_embedder(Arc::new(FakeEmbedder), "", "");
    let fused = KnowledgeBase::new(dir.path().join("fused")).with_path("corpus", dir.path()).with_embedder(
        fused.embedder().unwrap().clone(),
        "",
        "{title}: ",
    );
    fused.index(IndexOptions::new(), &()).await.unwrap();
    let (f5, fmrr, _) = quality(&fused, Tier::Fused).await;
    println!("knowledge quality fused (FAKE embedder):   recall@5 {f5:.3}  MRR {fmrr:.3}");
    let (v5, vmrr, _) = quality(&fused, Tier::Vector).await;
    println!("knowledge quality vector (FAKE embedder):  recall@5 {v5:.3}  MRR {vmrr:.3}");

    // Indexing throughput against reading and chunking alone.
    let mut floor = Vec::new();
    let mut ours = Vec::new();
    for round in 0..3 {
        let start = Instant::now();
        let mut chunks = 0;
        for f in &all {
            chunks += chunk_markdown(&std::fs::read_to_string(f).unwrap()).len();
        }
        std::hint::black_box(chunks);
        floor.push(start.elapsed());
        let kb = KnowledgeBase::new(dir.path().join(format!("t{round}"))).with_path("corpus", dir.path());
        let start = Instant::now();
        kb.index(IndexOptions::new(), &()).await.unwrap();
        ours.push(start.elapsed());
    }
    floor.sort();
    ours.sort();
    let mbs = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    println!(
        "knowledge index lexical: {:.1} MB/s ({:.2} MB in {}); read+chunk alone {:.1} MB/s; ratio {:.2}x (target >= 5 MB/s)",
        mbs(ours[1]),
        bytes as f64 / 1e6,
        ms(ours[1]),
        mbs(floor[1]),
        ours[1].as_secs_f64() / floor[1].as_secs_f64()
    );

    // Latency at two sizes.
    for (label, copies, subset) in [("1,000", 1, Some(8)), ("50,000", 0, None)] {
        let root = tempfile::tempdir().unwrap();
        let copies = if copies == 0 { (50_000 / r.chunks.max(1)) + 1 } else { copies };
        let kb = scaled(root.path(), copies, subset);
        let started = Instant::now();
        let built = kb.index(IndexOptions::new(), &()).await.unwrap();
        let took = started.elapsed();
        let (p50, p99) = latency(&kb, Tier::Lexical).await;
        let (b50, b99) = raw_latency(root.path());
        println!(
            "knowledge search {label} ({} passages, {:.1} MB indexed at {:.1} MB/s): lexical p50 {} p99 {} | FTS5 before p50 {} p99 {} | ratio p50 {:.2}x p99 {:.2}x",
            built.chunks,
            built.bytes as f64 / 1e6,
            built.bytes as f64 / 1e6 / took.as_secs_f64(),
            ms(p50),
            ms(p99),
            ms(b50),
            ms(b99),
            p50.as_secs_f64() / b50.as_secs_f64(),
            p99.as_secs_f64() / b99.as_secs_f64()
        );
        if label == "50,000" {
            let rt = tokio::runtime::Handle::current();
            let mut c = Criterion::default().configure_from_args().sample_size(20);
            let q = "create a unique temporary directory";
            assert!(!kb.search_with(q, Some(5), Tier::Lexical).await.unwrap().unwrap().hits.is_empty());
            c.bench_function("knowledge/lexical_search_50k", |b| {
                b.iter(|| {
                    tokio::task::block_in_place(|| rt.block_on(kb.search_with(q, Some(5), Tier::Lexical))).unwrap()
                })
            });
        }
        let fused = kb.clone().with_embedder(Arc::new(FakeEmbedder), "", "");
        fused.index(IndexOptions::new().reindex(true), &()).await.unwrap();
        let (f50, f99) = latency(&fused, Tier::Fused).await;
        println!(
            "knowledge search {label}: fused (FAKE embedder, 256 dims, full scan) p50 {} p99 {} | ratio to lexical p50 {:.2}x",
            ms(f50),
            ms(f99),
            f50.as_secs_f64() / p50.as_secs_f64()
        );
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(report());
}
