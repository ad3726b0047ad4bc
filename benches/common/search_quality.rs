//! The search-quality evaluation, shared by `benches/search_quality.rs` (which prints the figures) and
//! `tests/search_quality.rs` (which keeps the set loadable and scorable in CI): the natscli tool set, the
//! evaluation set of natural-language requests in `benches/data/search_quality.json`, and recall@1, recall@5 and
//! MRR of the real `search_tools` ranking over it.

use fisk_ai::Selection;
use fisk_ai::agent::search::Ranker;
use fisk_ai::select::Toolset;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use serde::Deserialize;

/// How deep the ranking is read for MRR: a right tool found later than this counts as not found (reciprocal
/// rank 0). The most `search_tools` ever returns is 20.
pub const MRR_DEPTH: usize = 20;

/// One request of the evaluation set and the one tool that answers it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// What an operator would type.
    pub query: String,
    /// The exact name of the right tool.
    pub tool: String,
}

/// The figures for one ranking over one set.
#[derive(Debug, Clone, Default)]
pub struct Scores {
    /// How many cases were scored.
    pub cases: usize,
    /// Share of cases whose right tool ranks first.
    pub recall_at_1: f64,
    /// Share of cases whose right tool is among the first five (what `search_tools` returns by default).
    pub recall_at_5: f64,
    /// Mean of 1/rank of the right tool (0 past [`MRR_DEPTH`]).
    pub mrr: f64,
    /// The cases whose right tool is not first: the query, the right tool, its rank (if within depth) and the
    /// first result.
    pub misses: Vec<(String, String, Option<usize>, Option<String>)>,
    /// Searches the hybrid tier left to the words alone (its embedder failed).
    pub degraded: usize,
}

/// The natscli tree from `tests/fixtures`, selected with no rules (all 221 leaves).
pub fn natscli_toolset() -> Toolset {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fisk/natscli.json"))
        .expect("the natscli fixture is readable");
    let model = AppModel::from_slice(&bytes).expect("the natscli fixture parses");
    let tools = FiskApp::new("nats").tools_from_model(model).expect("the natscli fixture loads").tools;
    Selection::new().apply(tools).expect("an empty selection applies")
}

/// The evaluation set.
pub fn load_cases() -> Vec<Case> {
    load("search_quality.json")
}

/// The held-out set: 40 requests written after the ranking was tuned on [`load_cases`] and never tuned on, so its
/// figures say how much of the gain is fitted to the evaluation set.
pub fn load_holdout() -> Vec<Case> {
    load("search_quality_holdout.json")
}

fn load(name: &str) -> Vec<Case> {
    let path = format!("{}/benches/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path} is not readable: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} does not parse: {e}"))
}

/// Score `ranker` over `cases`, each search run to its end on a current-thread runtime (the hybrid tier's embedder
/// is async).
pub fn score(ranker: &Ranker, cases: &[Case]) -> Scores {
    let mut s = Scores { cases: cases.len(), ..Scores::default() };
    if cases.is_empty() {
        return s;
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (mut hit1, mut hit5, mut rr) = (0usize, 0usize, 0.0f64);
    for case in cases {
        let (ranked, degraded) = rt.block_on(ranker.rank(&case.query, MRR_DEPTH));
        s.degraded += usize::from(degraded.is_some());
        let rank = ranked.iter().position(|n| *n == case.tool).map(|i| i + 1);
        match rank {
            Some(1) => hit1 += 1,
            _ => s.misses.push((case.query.clone(), case.tool.clone(), rank, ranked.first().cloned())),
        }
        if rank.is_some_and(|r| r <= 5) {
            hit5 += 1;
        }
        rr += rank.map_or(0.0, |r| 1.0 / r as f64);
    }
    let n = cases.len() as f64;
    s.recall_at_1 = hit1 as f64 / n;
    s.recall_at_5 = hit5 as f64 / n;
    s.mrr = rr / n;
    s
}
