//! The ranking behind `search_tools`: BM25 over each tool's analysed, field-weighted words, then a bonus for the
//! tools whose command path the request names.
//!
//! **Why the path bonus:** on a CLI tree the command path is the answer. A request mentions the path's words
//! (`remove consumer X from stream Y`), while plain BM25 lets one rare word anywhere (a resource called `ORDERS`
//! against the `ordered` in one description) outrank a tool whose whole path was named. Counting the path
//! segments the request names, on top of the BM25 score, ranks the command the request spells out first and
//! leaves BM25 to order the rest.

use super::text;
use crate::tool::ToolSpec;
use bm25::{Document, SearchEngine, SearchEngineBuilder, Tokenizer};
use std::collections::HashSet;

/// How many times each part of a tool's text is indexed: a field weight, since BM25 counts repeats. The command
/// path names what a command does most precisely; the description explains it. Flag names and tags measurably
/// hurt (every command shares `json`, `force`, `scope:user`), so they are not indexed.
const PATH_WEIGHT: usize = 2;
const DESCRIPTION_WEIGHT: usize = 1;

/// Score added per path segment the request names.
const PATH_BONUS: f32 = 2.0;
/// Score added when the request names every segment of the path (`stream copy`, not only `stream`), so a
/// command spelled out in full beats a longer one that shares a word with the request.
const WHOLE_PATH_BONUS: f32 = 2.0;

/// How many BM25 matches are re-ranked with the path bonus: enough that a named path is never cut off, few enough
/// that a query matching every tool of a large tree stays cheap.
const POOL: usize = 100;

/// Shortest path word a longer request word may start with and still name it (`bench` in `benchmark`).
const MIN_PREFIX: usize = 5;

/// Words already analysed by [`text`] (documents when indexed, queries before searching), so the engine only
/// splits at spaces.
#[derive(Debug, Clone, Copy, Default)]
struct Analysed;

impl Tokenizer for Analysed {
    fn tokenize(&self, text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }
}

/// The searchable form of a set of tools, in their order (results are indexes into it).
pub(super) struct Index {
    engine: SearchEngine<usize, u32, Analysed>,
    /// Per tool, per path segment: the words that name it (its own and its abbreviation's).
    paths: Vec<Vec<Vec<String>>>,
    /// Every path word of [`MIN_PREFIX`] letters or more, for matching longer request words that start with one.
    /// A request word that is itself a path word is never read as a shorter one (`consumer` is not `consum`, the
    /// stem of `consume`).
    path_words: HashSet<String>,
}

impl Index {
    /// Index `specs`.
    pub(super) fn new<'a>(specs: impl Iterator<Item = &'a ToolSpec>) -> Self {
        let mut paths = Vec::new();
        let mut documents = Vec::new();
        for (i, spec) in specs.enumerate() {
            let segments = path_segments(spec);
            let words = document_words(&segments, spec);
            documents.push(Document::new(i, words));
            paths.push(segments);
        }
        let path_words = paths.iter().flatten().flatten().filter(|w| w.len() >= MIN_PREFIX).cloned().collect();
        let engine =
            SearchEngineBuilder::<usize, u32, Analysed>::with_tokenizer_and_documents(Analysed, documents).build();
        Index { engine, paths, path_words }
    }

    /// The positions of the best `limit` tools for `query`, best first.
    pub(super) fn rank(&self, query: &str, limit: usize) -> Vec<usize> {
        let words = self.query_words(query);
        let found = self.engine.search(&words.join(" "), POOL.max(limit));
        let asked: HashSet<&str> = words.iter().map(String::as_str).collect();
        let mut scored: Vec<(usize, f32)> = found
            .into_iter()
            .map(|r| {
                let id = r.document.id;
                let (named, total) = self.named_segments(id, &asked);
                let whole = if named == total { WHOLE_PATH_BONUS } else { 0.0 };
                (id, r.score + PATH_BONUS * named as f32 + whole)
            })
            .collect();
        // The engine sums a query's terms in hash order, so equal scores can differ in their last bits and come
        // back in any order: scores are compared to four decimals and ties go to the tool listed first, so the same
        // query always ranks the same way.
        scored.sort_by_key(|&(id, score)| (std::cmp::Reverse((score * 1e4).round() as i64), id));
        scored.into_iter().take(limit).map(|(id, _)| id).collect()
    }

    /// The analysed words of `query`, plus each path word a longer query word (not a path word itself) starts with.
    fn query_words(&self, query: &str) -> Vec<String> {
        let mut words = Vec::new();
        text::query_words_into(query, &mut words);
        let mut prefixes = Vec::new();
        for w in words.iter().filter(|w| !self.path_words.contains(*w)) {
            let cuts = w.char_indices().map(|(at, _)| at).filter(|&at| at >= MIN_PREFIX);
            prefixes.extend(cuts.map(|at| &w[..at]).filter(|p| self.path_words.contains(*p)).map(str::to_owned));
        }
        words.extend(prefixes);
        words
    }

    /// How many of tool `id`'s path segments one of `asked` names, and how many it has.
    fn named_segments(&self, id: usize, asked: &HashSet<&str>) -> (usize, usize) {
        // Every id comes from this index, so the fallback (nothing named of one segment) is never used.
        let Some(segments) = self.paths.get(id) else { return (0, 1) };
        (segments.iter().filter(|seg| seg.iter().any(|w| asked.contains(w.as_str()))).count(), segments.len())
    }
}

/// The command path's segments (the name's `_` parts for a tool without one), each as the words naming it.
fn path_segments(spec: &ToolSpec) -> Vec<Vec<String>> {
    let name_parts;
    let parts: &[String] = if spec.command_path().is_empty() {
        name_parts = spec.name().split('_').map(str::to_owned).collect::<Vec<_>>();
        &name_parts
    } else {
        spec.command_path()
    };
    parts
        .iter()
        .map(|part| {
            let mut words = Vec::new();
            text::name_words_into(part, &mut words);
            words
        })
        .filter(|words| !words.is_empty())
        .collect()
}

/// The analysed, weighted words one tool is indexed under.
fn document_words(segments: &[Vec<String>], spec: &ToolSpec) -> String {
    let mut description = Vec::new();
    text::words_into(without_tag_line(spec), &mut description);
    let path = segments.iter().flatten();
    let mut out = String::new();
    for _ in 0..PATH_WEIGHT {
        path.clone().for_each(|w| push_word(&mut out, w));
    }
    for _ in 0..DESCRIPTION_WEIGHT {
        description.iter().for_each(|w| push_word(&mut out, w));
    }
    out
}

fn push_word(out: &mut String, word: &str) {
    out.push_str(word);
    out.push(' ');
}

/// The description without the `Tags: ...` paragraph TOOL-14 appends.
fn without_tag_line(spec: &ToolSpec) -> &str {
    let d = spec.description();
    match d.rfind("Tags: ") {
        Some(at) if spec.tags().iter().all(|t| d[at..].contains(t)) => d[..at].trim_end(),
        _ => d,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::tool::ToolKind;
    use serde_json::json;

    /// A command tool at `path` described by `description` (the semantic tier's tests use it too).
    pub(in crate::agent::search) fn command(path: &[&str], description: &str) -> ToolSpec {
        ToolSpec::new(path.join("_"), ToolKind::Command, json!({"type": "object"}))
            .with_command_path(path.iter().copied())
            .with_description(description)
    }

    fn names(specs: &[ToolSpec], ids: Vec<usize>) -> Vec<&str> {
        ids.into_iter().filter_map(|i| specs.get(i)).map(ToolSpec::name).collect()
    }

    #[test]
    fn searchq_7_a_command_whose_whole_path_is_named_ranks_first() {
        let specs = [
            command(&["bench", "ordered"], "Read with an ordered consumer"),
            command(&["stream", "rm"], "Delete a stream"),
            command(&["consumer", "rm"], "Delete a consumer"),
        ];
        let index = Index::new(specs.iter());
        // `ORDERS` is a resource name that matches a rare word of another command; the request names `stream rm`.
        assert_eq!(names(&specs, index.rank("remove the stream ORDERS", 3))[0], "stream_rm");
        assert_eq!(names(&specs, index.rank("delete consumer WORKER", 3))[0], "consumer_rm");
    }

    #[test]
    fn searchq_7_a_longer_request_word_names_a_path_word_it_starts_with_and_a_query_always_ranks_the_same() {
        let specs = [command(&["bench", "pub"], "Time core publishing"), command(&["publish"], "Send a message")];
        let index = Index::new(specs.iter());
        assert_eq!(names(&specs, index.rank("benchmark publishing", 2))[0], "bench_pub");
        // Same query, same ranking, every time.
        let first = index.rank("publish", 2);
        assert!((0..10).all(|_| index.rank("publish", 2) == first));
        assert!(index.rank("nothing matches this", 5).is_empty());
    }
}
