//! The optional hybrid tier of `search_tools` (`harness.knowledge.embeddings.tool_search`): the words' ranking fused
//! by reciprocal rank with a ranking by embedding similarity, with the same embedder and fusion as knowledge search.
//!
//! **Why fused, not replaced:** on a CLI tree the words are strong (the path bonus finds a command the request
//! spells out), and embeddings find what the words miss: a request in other words than the command's
//! (`purge the backlog` for `stream purge`). Reciprocal rank fusion needs no score calibration between the two.
//!
//! The tools' vectors are made on the first search (in batches, once), not when the agent is built: an agent whose
//! model never searches never calls the embedder. A search whose embedder fails (unreachable, a malformed reply,
//! slower than [`DEADLINE`]) falls back to the words' ranking and says so in the result; for [`COOL_DOWN`] after a
//! failure, searches go to the words at once instead of waiting on the embedder again.

use crate::error::{Error, Result};
use crate::knowledge::{Embedder, RRF_K, reciprocal_rank_fusion};
use crate::tool::ToolSpec;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How many of each ranking are fused: every tool of a tree this size, the top of a larger one.
pub(super) const POOL: usize = 100;
/// The most time one search gives the embedder (the tools' first embedding included) before it ranks by words.
pub(super) const DEADLINE: Duration = Duration::from_secs(15);
/// After a failure, how long searches rank by words without asking the embedder.
pub(super) const COOL_DOWN: Duration = Duration::from_secs(60);
/// The most bytes of one tool's text embedded: a passage's size in knowledge search (about 400 tokens), so one long
/// description cannot pass an embedding model's input limit and turn the tier off.
const MAX_TEXT_BYTES: usize = 1600;

/// What embeds queries and tools, and the prefixes some models want before each.
#[derive(Clone)]
pub struct ToolEmbeddings {
    embedder: Arc<dyn Embedder>,
    query_prefix: String,
    document_prefix: String,
}

impl std::fmt::Debug for ToolEmbeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEmbeddings").field("model", &self.embedder.model()).finish_non_exhaustive()
    }
}

impl ToolEmbeddings {
    /// `embedder`, with nothing put before queries and tool texts.
    pub fn new(embedder: Arc<dyn Embedder>) -> Self {
        ToolEmbeddings { embedder, query_prefix: String::new(), document_prefix: String::new() }
    }

    /// The prefixes knowledge search uses (`harness.knowledge.embeddings.query_prefix` and `document_prefix`);
    /// `{title}` in the document prefix becomes the tool's command path.
    #[must_use]
    pub fn with_prefixes(mut self, query_prefix: &str, document_prefix: &str) -> Self {
        self.query_prefix = query_prefix.to_owned();
        self.document_prefix = document_prefix.to_owned();
        self
    }

    /// The embedding model's name.
    pub fn model(&self) -> &str {
        self.embedder.model()
    }

    /// The hybrid tier as `harness.knowledge.embeddings.tool_search` configures it: knowledge search's embedder and
    /// prefixes, or `None` when it is off.
    ///
    /// # Errors
    ///
    /// A configuration error, located, when `embeddings.api_key_env` names a variable that is not set.
    pub fn from_config(config: &crate::config::Config) -> Result<Option<Self>> {
        let Some(e) = config.harness.knowledge.embeddings.as_ref().filter(|e| e.tool_search) else { return Ok(None) };
        let http = crate::knowledge::http_embedder(config)?;
        Ok(http.map(|h| ToolEmbeddings::new(Arc::new(h)).with_prefixes(&e.query_prefix, &e.document_prefix)))
    }
}

/// The vector side of one tool set: its texts, their unit vectors once made, and when the embedder last failed.
pub(super) struct Semantic {
    with: ToolEmbeddings,
    texts: Vec<String>,
    vectors: tokio::sync::OnceCell<Vec<Vec<f32>>>,
    failed: Mutex<Option<Instant>>,
}

impl Semantic {
    /// The tools' texts: the command path (or name) and the description, as the model reads them; the path once,
    /// in the prefix's `{title}` when it has one. Each is cut to [`MAX_TEXT_BYTES`].
    pub(super) fn new<'a>(with: ToolEmbeddings, specs: impl Iterator<Item = &'a ToolSpec>) -> Self {
        let texts = specs
            .map(|s| {
                let title = if s.command_path().is_empty() { s.name().to_owned() } else { s.display_path() };
                let mut text = if with.document_prefix.contains("{title}") {
                    format!("{}{}", with.document_prefix.replace("{title}", &title), s.description())
                } else {
                    format!("{}{title}: {}", with.document_prefix, s.description())
                };
                // By hand: `floor_char_boundary` is newer than the crate's minimum Rust.
                if let Some(cut) = (0..=MAX_TEXT_BYTES).rev().find(|&i| text.is_char_boundary(i)) {
                    text.truncate(cut);
                }
                text
            })
            .collect();
        Semantic { with, texts, vectors: tokio::sync::OnceCell::new(), failed: Mutex::new(None) }
    }

    /// `lexical` (tool indexes, best first) fused with the tools nearest `query`, best first, within [`DEADLINE`].
    /// A failure starts a [`COOL_DOWN`] during which searches fail at once.
    ///
    /// # Errors
    ///
    /// The embedder's failure, a reply that does not fit (a count or dimension that differs, a value that is not
    /// a finite number), the deadline passed, or a failure less than [`COOL_DOWN`] ago.
    pub(super) async fn fuse(&self, query: &str, lexical: &[usize]) -> Result<Vec<usize>> {
        let failed = || self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = *failed()
            && at.elapsed() < COOL_DOWN
        {
            return Err(Error::knowledge(format!(
                "it failed {}s ago; it is asked again {}s after that",
                at.elapsed().as_secs(),
                COOL_DOWN.as_secs()
            )));
        }
        let fused = match tokio::time::timeout(DEADLINE, self.fuse_now(query, lexical)).await {
            Ok(r) => r,
            Err(_) => Err(Error::knowledge(format!("no answer within {}s", DEADLINE.as_secs()))),
        };
        *failed() = fused.is_err().then(Instant::now);
        fused
    }

    async fn fuse_now(&self, query: &str, lexical: &[usize]) -> Result<Vec<usize>> {
        let vectors = self.vectors.get_or_try_init(|| self.embed_tools()).await?;
        let q = embed_all(&*self.with.embedder, &[format!("{}{query}", self.with.query_prefix)]).await?;
        let q = q.first().ok_or_else(|| Error::knowledge("the embedder returned no query vector"))?;
        if vectors.first().is_some_and(|v| v.len() != q.len()) {
            return Err(Error::knowledge("the query vector's dimension differs from the tools'"));
        }
        let mut near: Vec<(usize, f32)> =
            vectors.iter().enumerate().map(|(i, v)| (i, v.iter().zip(q).map(|(a, b)| a * b).sum())).collect();
        near.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let ids = |it: &mut dyn Iterator<Item = usize>| it.take(POOL).filter_map(|i| i64::try_from(i).ok()).collect();
        let (words, vecs): (Vec<i64>, Vec<i64>) =
            (ids(&mut lexical.iter().copied()), ids(&mut near.iter().map(|n| n.0)));
        let fused = reciprocal_rank_fusion(&[&words, &vecs], RRF_K);
        Ok(fused.into_iter().filter_map(|(id, _)| usize::try_from(id).ok()).collect())
    }

    async fn embed_tools(&self) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(self.texts.len());
        for part in self.texts.chunks(crate::knowledge::EMBED_BATCH) {
            out.extend(embed_all(&*self.with.embedder, part).await?);
        }
        if out.first().is_some_and(|first| out.iter().any(|v| v.len() != first.len())) {
            return Err(Error::knowledge("the embedder returned vectors of mixed dimensions for the tools"));
        }
        Ok(out)
    }
}

/// One vector per text, unit length, or an error when the reply does not fit (a host's embedder is checked as the
/// HTTP one checks its replies: a value that is not finite would rank its tool first).
async fn embed_all(embedder: &dyn Embedder, texts: &[String]) -> Result<Vec<Vec<f32>>> {
    let vectors = embedder.embed(texts).await?;
    if vectors.iter().flatten().any(|x| !x.is_finite()) {
        return Err(Error::knowledge("the embedder returned a value that is not a finite number"));
    }
    if vectors.len() != texts.len() || vectors.iter().any(Vec::is_empty) {
        return Err(Error::knowledge(format!(
            "the embedder returned {} vectors (some empty?) for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    Ok(vectors.into_iter().map(crate::knowledge::normalize).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::search::index::Index;
    use crate::agent::search::index::tests::command;
    use std::sync::Mutex;

    fn specs() -> Vec<ToolSpec> {
        vec![
            command(&["stream", "info"], "Show a stream's configuration and state"),
            command(&["stream", "purge"], "Remove every message from a stream"),
            command(&["consumer", "info"], "Show a consumer's configuration and state"),
        ]
    }

    /// A toy model that knows synonyms: each text is a count of concepts (emptying, showing, stream, consumer), so
    /// `drain the backlog` is near `purge ... remove every message` with no word in common. Records each batch, and
    /// fails while `failing` is set.
    #[derive(Default)]
    struct Concepts {
        batches: Mutex<Vec<Vec<String>>>,
        failing: std::sync::atomic::AtomicBool,
    }

    #[async_trait::async_trait]
    impl Embedder for Concepts {
        fn model(&self) -> &str {
            "concepts"
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            self.batches.lock().unwrap().push(texts.to_vec());
            if self.failing.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(Error::knowledge("the endpoint answered 500"));
            }
            const CONCEPTS: [&[&str]; 4] = [
                &["purge", "flush", "backlog", "remove", "drain"],
                &["info", "show", "details"],
                &["stream"],
                &["consumer"],
            ];
            Ok(texts
                .iter()
                .map(|t| {
                    let t = t.to_lowercase();
                    CONCEPTS.iter().map(|words| words.iter().filter(|w| t.contains(*w)).count() as f32).collect()
                })
                .collect())
        }
    }

    fn names(specs: &[ToolSpec], ids: &[usize]) -> Vec<String> {
        ids.iter().filter_map(|&i| specs.get(i)).map(|s| s.name().to_owned()).collect()
    }

    #[tokio::test]
    async fn searchq_8_the_hybrid_tier_finds_a_tool_the_words_miss_and_keeps_what_they_find() {
        let specs = specs();
        let index = Index::new(specs.iter());
        let model = Arc::new(Concepts::default());
        let semantic = Semantic::new(ToolEmbeddings::new(model.clone()), specs.iter());

        // No word of the request is in any tool's path or description (nor a synonym the words know): the words
        // find nothing, the vectors do.
        let words = index.rank("drain the backlog", POOL);
        assert!(words.is_empty(), "{:?}", names(&specs, &words));
        let fused = semantic.fuse("drain the backlog", &words).await.unwrap();
        assert_eq!(names(&specs, &fused)[0], "stream_purge");

        // A request the words answer keeps that answer first: both rankings agree on it.
        let words = index.rank("consumer info", POOL);
        let fused = semantic.fuse("consumer info", &words).await.unwrap();
        assert_eq!(names(&specs, &fused)[0], "consumer_info");

        // The tools were embedded once, with their command paths; each search embedded its query.
        let batches = model.batches.lock().unwrap().clone();
        assert_eq!(batches.len(), 3, "{batches:?}");
        assert_eq!(batches[0][1], "stream purge: Remove every message from a stream");
        assert_eq!(
            (batches[1].as_slice(), batches[2].as_slice()),
            (&["drain the backlog".to_owned()][..], &["consumer info".to_owned()][..])
        );
    }

    #[tokio::test]
    async fn searchq_8_a_failing_embedder_is_an_error_and_is_asked_again_after_the_cool_down() {
        let specs = specs();
        let model = Arc::new(Concepts::default());
        model.failing.store(true, std::sync::atomic::Ordering::Relaxed);
        let semantic =
            Semantic::new(ToolEmbeddings::new(model.clone()).with_prefixes("query: ", "{title} | "), specs.iter());
        let err = semantic.fuse("purge", &[1]).await.unwrap_err();
        assert!(err.to_string().contains("500"), "{err}");
        model.failing.store(false, std::sync::atomic::Ordering::Relaxed);
        // Within the cool-down the embedder is not asked again.
        let err = semantic.fuse("purge", &[1]).await.unwrap_err();
        assert!(err.to_string().contains("asked again"), "{err}");
        assert_eq!(model.batches.lock().unwrap().len(), 1);
        *semantic.failed.lock().unwrap() = Some(Instant::now() - COOL_DOWN);
        let fused = semantic.fuse("purge", &[1]).await.unwrap();
        assert_eq!(names(&specs, &fused)[0], "stream_purge");
        let batches = model.batches.lock().unwrap().clone();
        // The failed tool batch, the tools again, then the query: with the configured prefixes.
        assert_eq!(batches.len(), 3, "{batches:?}");
        // `{title}` in the prefix carries the path, once.
        assert_eq!(batches[1][0], "stream info | Show a stream's configuration and state");
        assert_eq!(batches[2], ["query: purge"]);
    }

    /// An embedder whose reply does not fit the texts.
    struct Short;

    #[async_trait::async_trait]
    impl Embedder for Short {
        fn model(&self) -> &str {
            "short"
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            Ok(vec![vec![1.0]; texts.len().saturating_sub(1)])
        }
    }

    #[tokio::test]
    async fn searchq_8_a_reply_with_too_few_vectors_is_an_error_not_a_wrong_ranking() {
        let specs = specs();
        let semantic = Semantic::new(ToolEmbeddings::new(Arc::new(Short)), specs.iter());
        let err = semantic.fuse("purge", &[1]).await.unwrap_err();
        assert!(err.to_string().contains("2 vectors") && err.to_string().contains("3 texts"), "{err}");
    }
}
