//! A local document index the agent searches through one built-in tool, `knowledge_search` (feature `knowledge`,
//! KNOW-1..): runbooks, READMEs and design notes, chunked along their Markdown headings, ranked by BM25 and, with an
//! embeddings endpoint, by vector similarity fused with the words by reciprocal rank.
//!
//! - The index is one SQLite database (bundled) in a 0700 directory, default
//!   `knowledge/<identity>` under the state directory. One process writes it at a time (`index.lock`); the agent
//!   opens it read-only.
//! - Vectors are stored as blobs and compared by a full scan: exact, with no extension to load, and fast enough
//!   for tens of thousands of passages (the README gives the measured figures). `sqlite-vec` was not taken: its
//!   0.1.10 alpha does not build, and registering 0.1.9 with SQLite takes an `unsafe` call this crate does not
//!   allow.
//! - The words' postings are the index's own (`lexical`): SQLite FTS5's word splitting and Porter stemming, and
//!   its `bm25()` scores, without its per-row scoring cost (KNOW-23).
//! - Indexing is incremental: files unchanged by size and mtime are not read, files with the same content hash are
//!   not re-chunked, and a passage whose text is already stored keeps its vector.
//! - The chunker's version, the tokenizer, the embedding model, its dimension and both prefixes are pinned in the
//!   index; searching or adding with anything else asks for `--reindex` rather than mixing.
//!
//! ```no_run
//! # async fn demo(config: fisk_ai::Config) -> fisk_ai::Result<()> {
//! use fisk_ai::knowledge::{IndexOptions, KnowledgeBase};
//!
//! let kb = KnowledgeBase::from_config(&config, None)?;
//! let report = kb.index(IndexOptions::new(), &()).await?;
//! println!("{report}"); // indexed 12 files (0 unchanged, 0 removed)
//! if let Some(found) = kb.search("how do I restart the server", None).await? {
//!     for hit in found.hits {
//!         println!("{} {}", hit.citation, hit.title);
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod admin;
mod categories;
mod chunk;
mod embed;
mod files;
mod fold;
mod index;
mod lexical;
mod porter;
mod search;
mod store;
mod tool;
mod words;

pub use admin::{DoctorReport, IndexStats, SourceFile};
pub use chunk::{
    CHUNKER_VERSION, Chunk, MAX_CHUNK_TOKENS, MAX_CODE_BLOCK_TOKENS, MAX_HEADING_CHARS, TOKENIZER, chunk_markdown,
    estimate_tokens,
};
pub(crate) use embed::{BATCH as EMBED_BATCH, normalize};
pub use embed::{Embedder, HttpEmbedder};
pub use files::{MAX_FILE_BYTES, MAX_FILES, MAX_SKIPPED_LISTED, MAX_WALK_ENTRIES, Skipped, TEXT_EXTENSIONS};
pub use index::{IndexOptions, IndexProgress, IndexReport};
pub use search::{Hit, RRF_K, SearchResults, Tier, fts_query, reciprocal_rank_fusion};
pub use store::{DB_FILE, LOCK_FILE, Pins};
pub use tool::{KNOWLEDGE_SEARCH, KnowledgeSearchTool};

use crate::config::Config;
use crate::error::{Error, Result};
use files::Root;
use rusqlite::Connection;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The embedder `harness.knowledge.embeddings` describes, if any (knowledge search's, and `search_tools`' hybrid
/// tier's).
///
/// # Errors
///
/// A configuration error, located, when `embeddings.api_key_env` names a variable that is not set.
pub(crate) fn http_embedder(config: &Config) -> Result<Option<HttpEmbedder>> {
    let Some(e) = &config.harness.knowledge.embeddings else { return Ok(None) };
    let (Some(url), Some(model)) = (&e.base_url, &e.model) else { return Ok(None) };
    let mut http = HttpEmbedder::new(url, model.clone()).with_timeout(e.timeout());
    if let Some(var) = &e.api_key_env {
        let key = std::env::var(var).map_err(|_| {
            config.locate(Error::config_key(
                "harness.knowledge.embeddings.api_key_env",
                format!("harness.knowledge.embeddings.api_key_env: the variable {var} is not set"),
            ))
        })?;
        http = http.with_key(key);
    }
    Ok(Some(http))
}

/// An index and how to search it: where it lives, what it indexes, and the embedder, if any. Cheap to clone.
#[derive(Clone)]
pub struct KnowledgeBase {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    roots: Vec<Root>,
    unresolved: Vec<Skipped>,
    top_k: usize,
    max_injected_tokens: usize,
    embedder: Option<Arc<dyn Embedder>>,
    query_prefix: String,
    document_prefix: String,
    /// Idle read-only connections, each with the database file's inode: a reset replaces the file, and a connection
    /// on the old one is dropped. A pool, so concurrent searches (an MCP server's callers) do not queue on one.
    readers: Mutex<Vec<Reader>>,
    /// Bounds the connections open at once: a burst of searches waits here rather than opening one each.
    permits: Arc<tokio::sync::Semaphore>,
}

/// The most idle read-only connections kept.
const MAX_IDLE_READERS: usize = 4;
/// The most searches running at once on one knowledge base (each holds a connection).
pub(crate) const MAX_READERS: usize = 8;

/// A read-only connection, the inode of the file it opened, and the pins as of `version`.
struct Reader {
    conn: Connection,
    ino: u64,
    version: Option<i64>,
    pins: Option<Pins>,
}

impl Clone for Inner {
    /// A copy being configured further; it opens its own reader.
    fn clone(&self) -> Self {
        Inner {
            dir: self.dir.clone(),
            roots: self.roots.clone(),
            unresolved: self.unresolved.clone(),
            top_k: self.top_k,
            max_injected_tokens: self.max_injected_tokens,
            embedder: self.embedder.clone(),
            query_prefix: self.query_prefix.clone(),
            document_prefix: self.document_prefix.clone(),
            readers: Mutex::new(Vec::new()),
            permits: Arc::new(tokio::sync::Semaphore::new(MAX_READERS)),
        }
    }
}

impl std::fmt::Debug for KnowledgeBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeBase")
            .field("directory", &self.inner.dir)
            .field("roots", &self.inner.roots.iter().map(|r| &r.abs).collect::<Vec<_>>())
            .field("top_k", &self.inner.top_k)
            .field("embedder", &self.inner.embedder.as_ref().map(|e| e.model().to_owned()))
            .finish_non_exhaustive()
    }
}

impl KnowledgeBase {
    /// A knowledge base indexing into `directory`; add paths and an embedder with the builder methods.
    pub fn new(directory: impl Into<PathBuf>) -> Self {
        KnowledgeBase {
            inner: Arc::new(Inner {
                dir: directory.into(),
                roots: Vec::new(),
                unresolved: Vec::new(),
                top_k: crate::config::DEFAULT_KNOWLEDGE_TOP_K as usize,
                max_injected_tokens: crate::config::DEFAULT_MAX_INJECTED_TOKENS as usize,
                embedder: None,
                query_prefix: String::new(),
                document_prefix: String::new(),
                readers: Mutex::new(Vec::new()),
                permits: Arc::new(tokio::sync::Semaphore::new(MAX_READERS)),
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// Index `path` (a file, or a directory walked for text files); a relative path is taken from `base`.
    #[must_use]
    pub fn with_path(self, path: impl AsRef<Path>, base: impl AsRef<Path>) -> Self {
        let (path, base) = (path.as_ref().to_path_buf(), base.as_ref().to_path_buf());
        self.edit(|i| match Root::new(&path, &base) {
            Ok(root) => i.roots.push(root),
            Err(why) => i.unresolved.push(Skipped { path, reason: format!("cannot be resolved: {why}") }),
        })
    }

    /// Passages per search when the caller does not say (clamped to 1..=20).
    #[must_use]
    pub fn with_top_k(self, top_k: usize) -> Self {
        self.edit(|i| i.top_k = top_k.clamp(1, crate::config::MAX_KNOWLEDGE_TOP_K as usize))
    }

    /// The most estimated tokens of passage text one `knowledge_search` result carries.
    #[must_use]
    pub fn with_max_injected_tokens(self, tokens: usize) -> Self {
        self.edit(|i| i.max_injected_tokens = tokens.max(1))
    }

    /// Add the vector tier: `embedder`, with the prefixes put before queries and passages (`{title}` in the
    /// passage prefix becomes the passage's heading path).
    #[must_use]
    pub fn with_embedder(self, embedder: Arc<dyn Embedder>, query_prefix: &str, document_prefix: &str) -> Self {
        let (q, d) = (query_prefix.to_owned(), document_prefix.to_owned());
        self.edit(|i| {
            i.embedder = Some(embedder);
            i.query_prefix = q;
            i.document_prefix = d;
        })
    }

    /// The knowledge base `harness.knowledge` describes: paths from the configuration file's directory, the index
    /// in `directory`, else `knowledge/<identity>` under `store_base` or the state directory.
    ///
    /// # Errors
    ///
    /// A configuration error, located, when the identity is invalid, no state directory can be found, or
    /// `embeddings.api_key_env` names a variable that is not set.
    pub fn from_config(config: &Config, store_base: Option<&Path>) -> Result<Self> {
        let k = &config.harness.knowledge;
        let base = match config.file().and_then(Path::parent) {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => std::env::current_dir()
                .map_err(|e| Error::knowledge(format!("cannot read the working directory: {e}")))?,
        };
        let dir = match &k.directory {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => base.join(d),
            None => {
                let identity = config.identity()?;
                let root = match store_base {
                    Some(b) => b.to_path_buf(),
                    None => crate::session::state_home("knowledge index")?,
                };
                root.join("knowledge").join(identity)
            }
        };
        let mut kb = KnowledgeBase::new(dir)
            .with_top_k(k.top_k as usize)
            .with_max_injected_tokens(k.max_injected_tokens as usize);
        for p in &k.paths {
            kb = kb.with_path(p, &base);
        }
        if let (Some(e), Some(http)) = (&k.embeddings, http_embedder(config)?) {
            kb = kb.with_embedder(Arc::new(http), &e.query_prefix, &e.document_prefix);
        }
        Ok(kb)
    }

    /// The index directory.
    pub fn directory(&self) -> &Path {
        &self.inner.dir
    }

    /// The configured paths, resolved.
    pub fn paths(&self) -> Vec<&Path> {
        self.inner.roots.iter().map(|r| r.abs.as_path()).collect()
    }

    pub(crate) fn roots(&self) -> &[Root] {
        &self.inner.roots
    }

    /// Passages per search by default.
    pub fn top_k(&self) -> usize {
        self.inner.top_k
    }

    /// The text bound of one tool result, in estimated tokens.
    pub fn max_injected_tokens(&self) -> usize {
        self.inner.max_injected_tokens
    }

    /// The embedder, when the vector tier is configured.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.inner.embedder.as_ref()
    }

    /// Configured paths that could not be resolved (they do not exist, say); an index run reports them as skipped.
    pub fn unresolved(&self) -> &[Skipped] {
        &self.inner.unresolved
    }

    /// What an index built now would be pinned to (dimension aside).
    pub fn pins(&self) -> Pins {
        Pins {
            chunker: CHUNKER_VERSION.to_owned(),
            tokenizer: TOKENIZER.to_owned(),
            model: self.inner.embedder.as_ref().map(|e| e.model().to_owned()),
            dimension: None,
            query_prefix: self.inner.query_prefix.clone(),
            document_prefix: self.inner.document_prefix.clone(),
        }
    }

    /// Run `f` on a read-only connection and the index's pins, in one read transaction (so the pins, the totals,
    /// the postings and the passages all come from one commit), taking an idle connection from the pool or opening
    /// one; `None` when no index was ever built. The pins are read again only when another connection has committed
    /// (`PRAGMA data_version`), so a search costs one extra query, not six.
    pub(crate) fn with_reader<T>(&self, f: impl FnOnce(&Connection, &Pins) -> Result<T>) -> Result<Option<T>> {
        let db = store::db_path(&self.inner.dir);
        let Some(ino) = std::fs::metadata(&db).map(|m| m.ino()).ok() else { return Ok(None) };
        let idle = {
            let mut pool = self.inner.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Connections on a replaced file (a reset, then a new index) are of no more use. The new file cannot
            // take the old one's inode number while a pooled connection still holds the old one open.
            pool.retain(|r| r.ino == ino);
            pool.pop()
        };
        let mut reader = match idle {
            Some(r) => r,
            None => match store::open_reader(&self.inner.dir)? {
                Some(conn) => Reader { conn, ino, version: None, pins: None },
                None => return Ok(None),
            },
        };
        let out = Self::in_snapshot(&mut reader, &db, f);
        // A connection is pooled only outside any transaction (a failed rollback would leave one open).
        if reader.conn.is_autocommit() {
            let mut pool = self.inner.readers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if pool.len() < MAX_IDLE_READERS {
                pool.push(reader);
            }
        }
        out
    }

    /// `f` in one read transaction on `reader`, with the pins of that snapshot (read again only when it is newer
    /// than the ones held). `f`'s error wins over a failure to end the transaction.
    fn in_snapshot<T>(
        reader: &mut Reader,
        db: &Path,
        f: impl FnOnce(&Connection, &Pins) -> Result<T>,
    ) -> Result<Option<T>> {
        let snapshot = reader.conn.unchecked_transaction().map_err(|e| store::sql(db, e))?;
        // The first read starts the snapshot; `data_version` then tells whether it is newer than the pins held.
        reader.conn.query_row("SELECT count(*) FROM meta", [], |_| Ok(())).map_err(|e| store::sql(db, e))?;
        let version: i64 =
            reader.conn.query_row("PRAGMA data_version", [], |r| r.get(0)).map_err(|e| store::sql(db, e))?;
        if reader.version != Some(version) {
            reader.pins = store::read_pins(&reader.conn).map_err(|e| store::sql(db, e))?;
            reader.version = Some(version);
        }
        // An index emptied by a reset, or whose first build has not committed, reads as not built.
        let out = match &reader.pins {
            Some(pins) => f(&reader.conn, pins).map(Some)?,
            None => None,
        };
        snapshot.commit().map_err(|e| store::sql(db, e))?;
        Ok(out)
    }
}
