//! The embedder: any OpenAI-compatible `POST <base_url>/embeddings` (KNOW-6), or a host's own [`Embedder`].

use crate::error::{Error, ErrorKind, Result};
use async_trait::async_trait;
use std::time::Duration;

/// The largest embeddings reply read: 64 MiB covers a batch of [`BATCH`] 4096-dimension vectors written as JSON.
const MAX_REPLY_BYTES: usize = 64 << 20;
/// Passages sent per request when indexing.
pub(crate) const BATCH: usize = 64;
/// The most dimensions a vector may have; a larger reply is refused as malformed.
const MAX_DIMENSIONS: usize = 16_384;

/// Turns texts into vectors.
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::knowledge::Embedder;
///
/// /// Two dimensions: the text's length and its count of spaces.
/// struct Toy;
///
/// #[async_trait]
/// impl Embedder for Toy {
///     fn model(&self) -> &str {
///         "toy-2"
///     }
///     async fn embed(&self, texts: &[String]) -> fisk_ai::Result<Vec<Vec<f32>>> {
///         Ok(texts.iter().map(|t| vec![t.len() as f32, t.matches(' ').count() as f32]).collect())
///     }
/// }
/// # let _ = Toy;
/// ```
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model's name, pinned in the index.
    fn model(&self) -> &str;

    /// One vector per text, in order. Vectors need not be normalised; the index normalises them.
    ///
    /// # Errors
    ///
    /// Whatever keeps the vectors from being made: an unreachable endpoint, an error status, a malformed reply.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
}

/// An OpenAI-compatible embeddings endpoint (`harness.knowledge.embeddings`).
///
/// It does not go through the model providers' `HttpCore`: that core decodes chat replies and retries for minutes,
/// while a search that cannot reach its embedder should fall back to lexical results at once. It shares the
/// providers' client settings (rustls, bounded replies).
#[derive(Clone)]
pub struct HttpEmbedder {
    client: reqwest::Client,
    url: String,
    model: String,
    key: Option<String>,
    timeout: Duration,
}

impl std::fmt::Debug for HttpEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEmbedder")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl HttpEmbedder {
    /// An embedder posting to `<base_url>/embeddings` for `model`.
    pub fn new(base_url: &str, model: impl Into<String>) -> Self {
        HttpEmbedder {
            client: reqwest::Client::new(),
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            model: model.into(),
            key: None,
            timeout: crate::config::DEFAULT_EMBEDDINGS_TIMEOUT,
        }
    }

    /// Send `key` as a bearer token.
    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Bound each request.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// An error naming the endpoint. Everything the endpoint (or the network) said is sanitized: these messages
    /// reach the operator's terminal and, as search warnings, the model.
    fn fail(&self, what: impl std::fmt::Display) -> Error {
        let what = crate::gate::sanitize(&what.to_string(), 300);
        Error::new(ErrorKind::Provider, format!("embeddings endpoint {}: {what}", self.url))
    }

    async fn read(&self, response: reqwest::Response) -> Result<Vec<u8>> {
        let mut response = response;
        let mut body = Vec::new();
        while let Some(piece) = response.chunk().await.map_err(|e| self.fail(format!("reading the reply: {e}")))? {
            if body.len() + piece.len() > MAX_REPLY_BYTES {
                return Err(self.fail(format!("the reply is over {MAX_REPLY_BYTES} bytes")));
            }
            body.extend_from_slice(&piece);
        }
        Ok(body)
    }
}

#[derive(serde::Deserialize)]
struct Reply {
    data: Vec<Item>,
}

#[derive(serde::Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[async_trait]
impl Embedder for HttpEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let body = serde_json::json!({"model": self.model, "input": texts, "encoding_format": "float"});
        let mut request = self.client.post(&self.url).timeout(self.timeout).json(&body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| self.fail(chain(&e)))?;
        let status = response.status();
        let bytes = self.read(response).await?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
            return Err(self.fail(format!("HTTP {}: {text}", status.as_u16())));
        }
        // serde's message can quote the reply; the position is enough to find the fault, and says nothing the
        // endpoint chose.
        let reply: Reply = serde_json::from_slice(&bytes).map_err(|e| {
            self.fail(format!("malformed reply ({:?} error at line {} column {})", e.classify(), e.line(), e.column()))
        })?;
        order(reply, texts.len()).map_err(|e| self.fail(e))
    }
}

/// The vectors in input order: every index once, the same dimension throughout, finite values.
fn order(reply: Reply, expected: usize) -> std::result::Result<Vec<Vec<f32>>, String> {
    if reply.data.len() != expected {
        return Err(format!("{} vectors for {expected} inputs", reply.data.len()));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (i, item) in reply.data.into_iter().enumerate() {
        let at = item.index.unwrap_or(i);
        let slot = out.get_mut(at).ok_or_else(|| format!("vector index {at} is out of range"))?;
        if slot.replace(item.embedding).is_some() {
            return Err(format!("vector index {at} appears twice"));
        }
    }
    let out: Vec<Vec<f32>> = out.into_iter().flatten().collect();
    let dim = out.first().map_or(0, Vec::len);
    if dim == 0 || dim > MAX_DIMENSIONS {
        return Err(format!("vectors of {dim} dimensions (expected 1 to {MAX_DIMENSIONS})"));
    }
    if out.iter().any(|v| v.len() != dim) {
        return Err("vectors of different dimensions in one reply".to_owned());
    }
    if out.iter().flatten().any(|x| !x.is_finite()) {
        return Err("a vector holds a value that is not a finite number".to_owned());
    }
    Ok(out)
}

/// `v` scaled to unit length (KNOW-6); a zero vector stays zero and matches nothing.
pub(crate) fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Little-endian `f32`s, as the index stores a vector.
pub(crate) fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The dot product of a query and a stored vector blob of the same dimension.
pub(crate) fn dot_blob(query: &[f32], blob: &[u8]) -> Option<f32> {
    (blob.len() == query.len() * 4)
        .then(|| blob.chunks_exact(4).zip(query).map(|(b, q)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * q).sum())
}

/// An error and its causes, `: `-joined (reqwest's own text leaves out why a connection failed).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}
