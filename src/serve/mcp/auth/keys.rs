//! The issuer's signing keys (AUTH-1, AUTH-7): a JWKS document from a URL or a file, parsed into verification
//! keys, cached, and read again on a token with an unknown key id at most once per interval, or once it is old.
//!
//! Only asymmetric signature keys are kept. A JWKS is public, so an `oct` (shared secret) key in it would let
//! anyone sign tokens; such keys, encryption keys and key types this crate cannot verify with are skipped.

use crate::error::{Error, ErrorKind, Result};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::time::Instant;

/// The largest JWKS document read: real ones are a few KiB.
const MAX_JWKS_BYTES: usize = 256 * 1024;
/// The most keys kept from one document.
const MAX_KEYS: usize = 64;
/// How long a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Keys older than this are fetched again on the next request (issuers rotate with overlap, so hours are fine).
pub(crate) const MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// The default least interval between two reads caused by unknown key ids (AUTH-7).
pub(crate) const DEFAULT_MIN_REFRESH: Duration = Duration::from_secs(10);

/// The curve or key type a key verifies for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl Family {
    /// Whether a token signed with `alg` can be checked with a key of this family.
    pub(crate) fn accepts(self, alg: Algorithm) -> bool {
        use Algorithm::*;
        match self {
            Family::Rsa => matches!(alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
            Family::P256 => alg == ES256,
            Family::P384 => alg == ES384,
            Family::Ed25519 => alg == EdDSA,
        }
    }
}

/// One verification key.
pub(crate) struct Key {
    pub(crate) kid: Option<String>,
    /// The key's own `alg`, when the JWKS pins one.
    pub(crate) alg: Option<Algorithm>,
    pub(crate) family: Family,
    pub(crate) decoding: DecodingKey,
}

/// The keys of one read of the document.
pub(crate) struct KeySet {
    pub(crate) keys: Vec<Key>,
    /// SHA-256 of the document, so reading the same keys again keeps the generation (and the verified tokens).
    digest: [u8; 32],
    /// Bumped on every successful read, so results verified with older keys can be told apart.
    pub(crate) generation: u64,
    read_at: Instant,
}

impl KeySet {
    /// Whether any key has this id.
    pub(crate) fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }
}

/// Where the document comes from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Url(String),
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Url(u) => write!(f, "jwks_url {u}"),
            Source::File(p) => write!(f, "jwks_file {}", p.display()),
        }
    }
}

/// The cached keys and their refresh state.
pub(crate) struct Keys {
    source: Source,
    http: Option<reqwest::Client>,
    current: RwLock<Arc<KeySet>>,
    /// Held while reading; holds when the last read (successful or not) started.
    refresh: tokio::sync::Mutex<Instant>,
    min_refresh: Duration,
}

impl Keys {
    /// Read the document once; an issuer whose keys cannot be read at start is a configuration error.
    pub(crate) async fn load(source: Source, min_refresh: Duration) -> Result<Self> {
        let http = match &source {
            Source::Url(_) => Some(
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(Duration::from_secs(3))
                    .timeout(FETCH_TIMEOUT)
                    .build()
                    .map_err(|e| Error::new(ErrorKind::Config, format!("cannot build the JWKS client: {e}")))?,
            ),
            Source::File(_) => None,
        };
        let keys = read(&source, http.as_ref(), 1)
            .await
            .map_err(|e| Error::config_key("expose.agent.mcp.auth", format!("expose.agent.mcp.auth: {e}")))?;
        // A URL is never read more often than once a second, whatever the host asked.
        let min_refresh = match source {
            Source::Url(_) => min_refresh.max(Duration::from_secs(1)),
            Source::File(_) => min_refresh,
        };
        Ok(Keys {
            source,
            http,
            current: RwLock::new(Arc::new(keys)),
            refresh: tokio::sync::Mutex::new(Instant::now()),
            min_refresh,
        })
    }

    /// The keys now.
    pub(crate) fn current(&self) -> Arc<KeySet> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// A token named a key id `seen` does not have: read the document again unless one was read within the
    /// minimum interval (AUTH-7), and return the keys to try. A read that fails keeps the old keys.
    pub(crate) async fn after_unknown_kid(&self, seen: &KeySet) -> Arc<KeySet> {
        let mut last = self.refresh.lock().await;
        let now = self.current();
        if now.generation != seen.generation || last.elapsed() < self.min_refresh {
            return now;
        }
        *last = Instant::now();
        self.reread(now.generation).await
    }

    /// Read the document again, off the request's path, if the keys are older than [`MAX_AGE`] and no read is
    /// under way; the request goes on with the keys it has.
    pub(crate) fn refresh_if_old(self: &Arc<Self>) {
        let now = self.current();
        if now.read_at.elapsed() < MAX_AGE {
            return;
        }
        let keys = self.clone();
        tokio::spawn(async move {
            let Ok(mut last) = keys.refresh.try_lock() else { return };
            if keys.current().generation != now.generation || last.elapsed() < keys.min_refresh {
                return;
            }
            *last = Instant::now();
            keys.reread(now.generation).await;
        });
    }

    async fn reread(&self, generation: u64) -> Arc<KeySet> {
        match read(&self.source, self.http.as_ref(), generation + 1).await {
            Ok(mut keys) => {
                let old = self.current();
                if keys.digest == old.digest {
                    // The same keys: the generation stays, so verified tokens stay valid.
                    keys.generation = old.generation;
                }
                let keys = Arc::new(keys);
                *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = keys.clone();
                keys
            }
            Err(e) => {
                tracing::warn!(target: "fisk_ai::serve::mcp", "the issuer's keys could not be read again; the cached keys stay: {e}");
                // Not retried at once: the next read waits for the minimum interval again.
                self.current()
            }
        }
    }
}

/// Read and parse the document.
async fn read(source: &Source, http: Option<&reqwest::Client>, generation: u64) -> std::result::Result<KeySet, String> {
    let bytes = match (source, http) {
        (Source::Url(url), Some(http)) => fetch(http, url).await?,
        (Source::File(path), _) => read_file(path).await?,
        (Source::Url(url), None) => return Err(format!("{url}: no HTTP client")),
    };
    let keys = parse(&bytes).map_err(|e| format!("{source}: {e}"))?;
    let digest = sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(&bytes)).into();
    Ok(KeySet { keys, digest, generation, read_at: Instant::now() })
}

async fn fetch(http: &reqwest::Client, url: &str) -> std::result::Result<Vec<u8>, String> {
    use futures::StreamExt;
    let response = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json, application/jwk-set+json")
        .send()
        .await
        .map_err(|e| format!("jwks_url {url}: cannot fetch the keys: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("jwks_url {url}: the issuer answered {status}"));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("jwks_url {url}: the keys could not be read: {e}"))?;
        if body.len() + chunk.len() > MAX_JWKS_BYTES {
            return Err(format!("jwks_url {url}: the document is larger than {} KiB", MAX_JWKS_BYTES / 1024));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

async fn read_file(path: &std::path::Path) -> std::result::Result<Vec<u8>, String> {
    use tokio::io::AsyncReadExt;
    let shown = path.display();
    let file = tokio::fs::File::open(path).await.map_err(|e| format!("jwks_file {shown}: {e}"))?;
    // Bounded while reading: a file that grows after any size check is still read no further than the limit.
    let mut bytes = Vec::new();
    file.take(MAX_JWKS_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| format!("jwks_file {shown}: {e}"))?;
    if bytes.len() > MAX_JWKS_BYTES {
        return Err(format!("jwks_file {shown}: the document is larger than {} KiB", MAX_JWKS_BYTES / 1024));
    }
    Ok(bytes)
}

/// The signature keys of a JWKS document; an error when it is not one or holds no key this server can use.
pub(crate) fn parse(bytes: &[u8]) -> std::result::Result<Vec<Key>, String> {
    #[derive(serde::Deserialize)]
    struct Document {
        keys: Vec<serde_json::Value>,
    }
    let doc: Document =
        serde_json::from_slice(bytes).map_err(|e| format!("not a JWKS document (an object with \"keys\"): {e}"))?;
    let mut keys = Vec::new();
    let mut skipped = Vec::new();
    for (i, raw) in doc.keys.into_iter().enumerate() {
        match key(raw) {
            Ok(k) if keys.len() < MAX_KEYS => keys.push(k),
            Ok(_) => skipped.push(format!("keys[{i}]: more than {MAX_KEYS} keys")),
            Err(why) => skipped.push(format!("keys[{i}]: {why}")),
        }
    }
    if !skipped.is_empty() {
        tracing::debug!(target: "fisk_ai::serve::mcp", "JWKS keys skipped: {}", skipped.join("; "));
    }
    if keys.is_empty() {
        let why = if skipped.is_empty() { "it is empty".to_owned() } else { skipped.join("; ") };
        return Err(format!("no usable signature key (RSA, EC P-256/P-384 or Ed25519): {why}"));
    }
    Ok(keys)
}

fn key(raw: serde_json::Value) -> std::result::Result<Key, String> {
    let jwk: Jwk = serde_json::from_value(raw).map_err(|e| format!("not a key this server can use: {e}"))?;
    if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != PublicKeyUse::Signature) {
        return Err("not a signature key (use is not \"sig\")".to_owned());
    }
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Family::Rsa,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Family::P256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P384 => Family::P384,
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => Family::Ed25519,
        AlgorithmParameters::OctetKey(_) => return Err("a shared-secret (oct) key, never used".to_owned()),
        _ => return Err("an unsupported key type or curve".to_owned()),
    };
    let alg = match &jwk.common.key_algorithm {
        None => None,
        Some(a) => {
            let name = serde_json::to_value(a).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            let alg = name.parse::<Algorithm>().map_err(|_| format!("alg {name:?} is not a signature algorithm"))?;
            if !family.accepts(alg) {
                return Err(format!("alg {name:?} does not fit the key's type"));
            }
            Some(alg)
        }
    };
    let decoding = DecodingKey::from_jwk(&jwk).map_err(|e| format!("the key does not decode: {e}"))?;
    Ok(Key { kid: jwk.common.key_id.clone(), alg, family, decoding })
}
