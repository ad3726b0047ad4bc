//! Searching (KNOW-2, KNOW-6): BM25 for words OR-ed together (the index's own postings, KNOW-23), cosine over the
//! stored unit vectors, and reciprocal rank fusion of the two; a search whose embedder is down falls back to words
//! alone, and says so.

use super::KnowledgeBase;
use super::embed::{self, Embedder};
use super::store::{self, sql};
use super::words::query_words;
use crate::error::{Error, Result};
use rusqlite::Connection;
use std::collections::HashMap;

/// The reciprocal rank fusion constant (KNOW-6): a passage at rank r in a list scores `1 / (RRF_K + r)`.
pub const RRF_K: f64 = 60.0;

/// Which rankings a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Tier {
    /// BM25 over the words only.
    Lexical,
    /// The vectors only (needs an embedder).
    Vector,
    /// Both, fused by reciprocal rank.
    Fused,
}

impl Tier {
    /// Its name as results show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Lexical => "lexical",
            Tier::Vector => "vector",
            Tier::Fused => "fused",
        }
    }
}

/// One passage found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Hit {
    /// `<relpath>#<ordinal>`: how the passage is cited, and what `knowledge show` takes.
    pub citation: String,
    /// The file, as cited.
    pub path: String,
    /// The passage's place in its file, from 1.
    pub ordinal: u32,
    /// The heading path (`Runbook > Restart`), or the file's name.
    pub title: String,
    /// The headings above the passage, outermost first.
    pub headings: Vec<String>,
    /// First line, 1-based.
    pub line_start: u32,
    /// Last line, inclusive.
    pub line_end: u32,
    /// Higher is better; comparable within one search only.
    pub score: f64,
    /// The passage's rank among the words' matches, from 1, when it is one.
    pub lexical_rank: Option<usize>,
    /// The passage's rank among the nearest vectors, from 1, when it is one.
    pub vector_rank: Option<usize>,
    /// The passage as written.
    pub text: String,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SearchResults {
    /// Best first.
    pub hits: Vec<Hit>,
    /// The rankings actually used (lexical when the embedder was down).
    pub tier: Tier,
    /// What the caller should know: the embedder was unreachable, say.
    pub warnings: Vec<String>,
}

/// The FTS5 query for the same words a search ranks by (KNOW-2): each word quoted, the words OR-ed, function words
/// left out when anything else remains. Quotes, operators (`AND`, `NEAR`, `*`, `^`, column filters) and punctuation
/// are never interpreted. `None` when the text has no word. The index no longer uses FTS5 (KNOW-23); this is for
/// a host that queries an FTS5 table of its own the way the index ranks.
pub fn fts_query(text: &str) -> Option<String> {
    let words = query_words(text);
    // Only letters and digits remain, so the quotes need no escaping.
    (!words.is_empty()).then(|| words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" OR "))
}

/// Reciprocal rank fusion of ranked lists of ids (KNOW-6): each id scores the sum of `1 / (k + rank)` over the
/// lists it is in, ranks from 1. Best first; ties go to the smaller id, so the order is deterministic.
pub fn reciprocal_rank_fusion(lists: &[&[i64]], k: f64) -> Vec<(i64, f64)> {
    let mut scores: HashMap<i64, f64> = HashMap::new();
    for list in lists {
        for (i, id) in list.iter().enumerate() {
            *scores.entry(*id).or_default() += 1.0 / (k + (i + 1) as f64);
        }
    }
    let mut out: Vec<(i64, f64)> = scores.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

pub(crate) fn lexical(conn: &Connection, query: &str, limit: usize) -> rusqlite::Result<Vec<(i64, f64)>> {
    super::lexical::search(conn, query, limit)
}

/// The nearest stored vectors to `query` (a unit vector) by a full scan.
pub(crate) fn nearest(conn: &Connection, query: &[f32], limit: usize) -> rusqlite::Result<Vec<(i64, f64)>> {
    let mut stmt = conn.prepare_cached("SELECT id, vector FROM chunks WHERE vector IS NOT NULL")?;
    let mut rows = stmt.query([])?;
    let mut scored: Vec<(i64, f64)> = Vec::new();
    while let Some(r) = rows.next()? {
        let blob = r.get_ref(1)?.as_blob()?;
        if let Some(s) = embed::dot_blob(query, blob) {
            scored.push((r.get(0)?, f64::from(s)));
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limit);
    Ok(scored)
}

pub(crate) fn load_hit(conn: &Connection, id: i64, score: f64) -> rusqlite::Result<Hit> {
    let mut stmt = conn.prepare_cached(
        "SELECT path, ordinal, title, headings, line_start, line_end, text FROM chunks WHERE id = ?1",
    )?;
    stmt.query_row([id], |r| {
        let path: String = r.get(0)?;
        let ordinal: u32 = r.get(1)?;
        let headings: String = r.get(3)?;
        Ok(Hit {
            citation: format!("{path}#{ordinal}"),
            path,
            ordinal,
            title: r.get(2)?,
            headings: serde_json::from_str(&headings).unwrap_or_default(),
            line_start: r.get(4)?,
            line_end: r.get(5)?,
            score,
            lexical_rank: None,
            vector_rank: None,
            text: r.get(6)?,
        })
    })
}

/// Rank and load: one list alone, or both fused. Call inside a read transaction ([`KnowledgeBase::with_reader`]).
pub(crate) fn rank(
    conn: &Connection,
    query: &str,
    vector: Option<&[f32]>,
    tier: Tier,
    top_k: usize,
) -> rusqlite::Result<Vec<Hit>> {
    let depth = (top_k * 5).max(50);
    let words = if tier == Tier::Vector { Vec::new() } else { lexical(conn, query, depth)? };
    let near = match vector {
        Some(v) if tier != Tier::Lexical => nearest(conn, v, depth)?,
        _ => Vec::new(),
    };
    let ids = |l: &[(i64, f64)]| l.iter().map(|(id, _)| *id).collect::<Vec<_>>();
    let (w_ids, n_ids) = (ids(&words), ids(&near));
    let ranked: Vec<(i64, f64)> = match tier {
        Tier::Lexical => words,
        Tier::Vector => near,
        Tier::Fused => reciprocal_rank_fusion(&[&w_ids, &n_ids], RRF_K),
    };
    let position = |l: &[i64], id: i64| l.iter().position(|x| *x == id).map(|p| p + 1);
    ranked
        .into_iter()
        .take(top_k)
        .map(|(id, score)| {
            let mut hit = load_hit(conn, id, score)?;
            hit.lexical_rank = position(&w_ids, id);
            hit.vector_rank = position(&n_ids, id);
            Ok(hit)
        })
        .collect()
}

impl KnowledgeBase {
    /// Search with the tier the configuration allows (fused with embeddings, else lexical), `top_k` passages
    /// (the configured default when `None`, at most 20). `Ok(None)`: no index was ever built here.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Knowledge`](crate::ErrorKind::Knowledge) when the index was built with another chunker, model
    /// or prefixes (asking for `--reindex`), or cannot be read. An embedder that is down is not an error: the
    /// search falls back to words, with a warning.
    pub async fn search(&self, query: &str, top_k: Option<usize>) -> Result<Option<SearchResults>> {
        let tier = if self.embedder().is_some() { Tier::Fused } else { Tier::Lexical };
        self.search_with(query, top_k, tier).await
    }

    /// [`search`](Self::search) with the tier chosen: [`Tier::Vector`] and [`Tier::Fused`] need an embedder.
    ///
    /// # Errors
    ///
    /// As [`search`](Self::search); also a vector tier asked of a knowledge base without an embedder.
    pub async fn search_with(&self, query: &str, top_k: Option<usize>, tier: Tier) -> Result<Option<SearchResults>> {
        let top_k = top_k.unwrap_or(self.top_k()).clamp(1, crate::config::MAX_KNOWLEDGE_TOP_K as usize);
        let mut warnings = Vec::new();
        let mut used = tier;
        let vector = match (tier, self.embedder()) {
            (Tier::Lexical, _) => None,
            (_, None) => return Err(Error::knowledge("a vector search needs harness.knowledge.embeddings")),
            (_, Some(e)) => match self.embed_query(e.as_ref(), query).await {
                Ok(v) => Some(v),
                Err(e) => {
                    // KNOW-6: words alone are still worth returning; the caller is told why.
                    // A host's embedder may say anything; the warning reaches the model and the terminal.
                    let why = crate::gate::sanitize(&e.to_string(), 300);
                    warnings.push(format!("embeddings unavailable, lexical results only: {why}"));
                    used = Tier::Lexical;
                    None
                }
            },
        };
        let kb = self.clone();
        let query = query.to_owned();
        let permit = self.inner.permits.clone().acquire_owned().await;
        let found = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            kb.rank_blocking(&query, vector.as_deref(), used, top_k)
        })
        .await
        .map_err(|e| Error::knowledge(format!("the search task failed: {e}")))??;
        Ok(found.map(|(hits, degraded)| {
            if let Some(why) = degraded {
                warnings.push(why);
                used = Tier::Lexical;
            }
            SearchResults { hits, tier: used, warnings }
        }))
    }

    async fn embed_query(&self, embedder: &dyn Embedder, query: &str) -> Result<Vec<f32>> {
        let text = format!("{}{query}", self.pins().query_prefix);
        let mut vectors = embedder.embed(&[text]).await?;
        let v = vectors.pop().filter(|_| vectors.is_empty()).ok_or_else(|| Error::knowledge("no query vector"))?;
        Ok(embed::normalize(v))
    }

    /// The hits, and why the vectors were left out when the query vector does not fit the index.
    fn rank_blocking(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        tier: Tier,
        top_k: usize,
    ) -> Result<Option<(Vec<Hit>, Option<String>)>> {
        let db = store::db_path(self.directory());
        self.with_reader(|conn, pins| {
            if let Some(why) = pins.mismatch(&self.pins()) {
                return Err(Error::knowledge(format!(
                    "the index in {} was built differently: {why}; run `knowledge index --reindex`",
                    self.directory().display()
                )));
            }
            // The configured model answered with another dimension: the endpoint changed under the index. Its
            // vectors cannot be compared, the words still can.
            if let (Some(v), Some(d)) = (vector, pins.dimension)
                && v.len() != d
            {
                let why = format!(
                    "embeddings unavailable, lexical results only: the embedder returned {} dimensions but the index \
                     holds {d} (run `knowledge index --reindex` if the model changed)",
                    v.len()
                );
                let hits = rank(conn, query, None, Tier::Lexical, top_k).map_err(|e| sql(&db, e))?;
                return Ok((hits, Some(why)));
            }
            rank(conn, query, vector, tier, top_k).map(|h| (h, None)).map_err(|e| sql(&db, e))
        })
    }
}
