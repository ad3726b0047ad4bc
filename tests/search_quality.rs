//! The search-quality evaluation in its short CI form (issue Ecosystem part 3): the set loads, names only tools
//! the natscli tree has, and scores. No threshold is asserted here; the figures live in the CHANGELOG and come
//! from `cargo bench --bench search_quality`.

#[cfg(feature = "knowledge")]
#[path = "../benches/common/fake_embedder.rs"]
mod fake_embedder;
#[path = "../benches/common/search_quality.rs"]
mod search_quality;

use fisk_ai::agent::search::Ranker;
use std::collections::HashSet;

#[test]
fn searchq_1_the_set_has_at_least_150_requests_each_naming_a_natscli_tool() {
    let set = search_quality::natscli_toolset();
    let cases = search_quality::load_cases();
    assert!(cases.len() >= 150, "only {} requests", cases.len());
    for case in &cases {
        assert!(!case.query.trim().is_empty(), "an empty query for {}", case.tool);
        assert!(set.get(&case.tool).is_some(), "{:?} names {}, which natscli does not have", case.query, case.tool);
    }
    // Spread over the tree, not a few commands.
    let tools: HashSet<&str> = cases.iter().map(|c| c.tool.as_str()).collect();
    assert!(tools.len() * 2 >= set.len(), "only {} of {} tools are asked for", tools.len(), set.len());
}

#[test]
fn searchq_2_the_set_scores_with_figures_between_0_and_1() {
    let set = search_quality::natscli_toolset();
    let cases = search_quality::load_cases();
    let s = search_quality::score(&Ranker::new(&set), &cases);
    // Printed for the CI log (`--nocapture`); the recorded figures come from the bench.
    println!("recall@1 {:.3}  recall@5 {:.3}  MRR {:.3}", s.recall_at_1, s.recall_at_5, s.mrr);
    if std::env::var_os("SEARCHQ_MISSES").is_some() {
        for m in &s.misses {
            println!("{m:?}");
        }
    }
    assert_eq!(s.cases, cases.len());
    let holdout = search_quality::load_holdout();
    for case in &holdout {
        assert!(
            set.get(&case.tool).is_some(),
            "the held-out {:?} names {}, which natscli lacks",
            case.query,
            case.tool
        );
    }
    let h = search_quality::score(&Ranker::new(&set), &holdout);
    println!("held out: recall@1 {:.3}  recall@5 {:.3}  MRR {:.3}", h.recall_at_1, h.recall_at_5, h.mrr);
    if std::env::var_os("SEARCHQ_MISSES").is_some() {
        for m in &h.misses {
            println!("held out {m:?}");
        }
    }
    assert_eq!(h.cases, holdout.len());
    for (name, v) in [("recall@1", s.recall_at_1), ("recall@5", s.recall_at_5), ("MRR", s.mrr)] {
        assert!((0.0..=1.0).contains(&v), "{name} {v}");
    }
    // recall@1 <= MRR <= recall@depth, and recall@1 <= recall@5, whatever the ranking.
    assert!(s.recall_at_1 <= s.mrr + 1e-9 && s.recall_at_1 <= s.recall_at_5 + 1e-9);
}

/// The hybrid tier over the same set with the FAKE embedder: it runs every search fused (none left to the words for
/// a failing embedder) and scores; no threshold, the figures are the bench's.
#[cfg(feature = "knowledge")]
#[test]
fn searchq_3_the_hybrid_tier_scores_the_set_with_the_fake_embedder() {
    use fisk_ai::agent::search::ToolEmbeddings;
    let set = search_quality::natscli_toolset();
    let cases = search_quality::load_cases();
    let hybrid = Ranker::hybrid(&set, ToolEmbeddings::new(std::sync::Arc::new(fake_embedder::FakeEmbedder)));
    let s = search_quality::score(&hybrid, &cases);
    println!("hybrid (FAKE embedder): recall@1 {:.3}  recall@5 {:.3}  MRR {:.3}", s.recall_at_1, s.recall_at_5, s.mrr);
    assert_eq!((s.cases, s.degraded), (cases.len(), 0));
    assert!(s.recall_at_1 <= s.mrr + 1e-9 && s.recall_at_1 <= s.recall_at_5 + 1e-9);
}
