//! The OAuth 2.1 resource server in front of MCP over HTTP (AUTH-1..10), configured by `expose.agent.mcp.auth`.
//!
//! Every HTTP request but the protected-resource metadata (RFC 9728) must carry `Authorization: Bearer <JWT>`.
//! The token is checked against the issuer's keys (see `keys`) and claims (see `token`), then against
//! `required_scopes`; a missing or bad token gets `401`, too few scopes `403`, each with the
//! `WWW-Authenticate: Bearer resource_metadata=...` challenge the MCP authorization spec asks for. The caller the
//! token names rides on the request to the handler, which hides tools whose `auth:scope=` tags the caller's
//! scopes do not cover (see `scopes`), reports it in events and telemetry, and keeps each session to the caller
//! that opened it.
//!
//! A verified token is remembered (by its SHA-256) until it expires or the keys are read again, so a client
//! sending the same token on every request pays for one signature check, not one per request.

mod keys;
mod resource;
mod scopes;
mod token;

pub(crate) use keys::DEFAULT_MIN_REFRESH;
pub(crate) use resource::Resource;
pub(crate) use scopes::ToolScopes;

use crate::config::McpAuth;
use crate::error::{Error, Result};
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Verified tokens remembered at once; past it, expired ones are dropped, then all.
const VERIFIED_MAX: usize = 1024;

/// Who is calling: the subject and client of the bearer token a request carried (AUTH-8). Present on requests to a
/// server with `expose.agent.mcp.auth`; carried in [`McpEvent`](super::McpEvent)s and telemetry.
///
/// The values are the token's, unchanged; [`Display`](std::fmt::Display) sanitizes them for a terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    subject: Option<String>,
    client_id: Option<String>,
    scopes: Vec<String>,
    /// The owner key (see [`Caller::key`]), built once: requests of a remembered token reuse this caller.
    key: String,
}

impl Caller {
    /// A caller, as a host's own authentication layer or a test would describe one.
    ///
    /// ```
    /// use fisk_ai::serve::mcp::Caller;
    ///
    /// let caller = Caller::new(Some("alice"), Some("ops-console"), ["ops.read"]);
    /// assert!(caller.has_scope("ops.read"));
    /// assert_eq!(caller.to_string(), "alice (client ops-console)");
    /// ```
    pub fn new<I, S>(subject: Option<&str>, client_id: Option<&str>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Caller::build(
            subject.map(str::to_owned),
            client_id.map(str::to_owned),
            scopes.into_iter().map(Into::into).collect(),
        )
    }

    fn build(subject: Option<String>, client_id: Option<String>, scopes: Vec<String>) -> Self {
        // JSON, so no subject and client id can run together into another caller's key.
        let key = serde_json::json!([subject, client_id]).to_string();
        Caller { subject, client_id, scopes, key }
    }

    /// The token's `sub`: the user (or, for client credentials, often the client).
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The token's `client_id` (RFC 9068), else its `azp`: the application acting.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The scopes granted: `scope` (space-separated), else `scp`.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// The owner key of sessions, tasks and approvals: a session is used only by the caller that opened it.
    fn key(&self) -> &str {
        &self.key
    }
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clean = |s: &str| crate::gate::sanitize(s, 120);
        match (&self.subject, &self.client_id) {
            (Some(s), Some(c)) if s != c => write!(f, "{} (client {})", clean(s), clean(c)),
            (Some(s), _) => f.write_str(&clean(s)),
            (None, Some(c)) => write!(f, "client {}", clean(c)),
            (None, None) => f.write_str("an anonymous token"),
        }
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// No `Authorization` header.
    Missing,
    /// A token that is not acceptable, and why.
    Invalid(String),
    /// A valid token without these required scopes.
    Scope(Vec<String>),
}

/// One verified token: who, and for how long.
struct Verified {
    caller: Arc<Caller>,
    exp: f64,
    nbf: f64,
    generation: u64,
}

/// The resource server: settings, keys, the verified-token memory and the metadata document.
pub(crate) struct Auth {
    checks: token::Checks,
    keys: Arc<keys::Keys>,
    required: Vec<String>,
    resource: Resource,
    verified: Mutex<HashMap<[u8; 32], Verified>>,
}

impl Auth {
    /// Read the keys and build the checks; `scopes` are every scope a tool tag names (for the metadata).
    pub(crate) async fn new(
        config: &McpAuth,
        identity: &str,
        tool_scopes: &ToolScopes,
        min_refresh: Duration,
    ) -> Result<Self> {
        let missing = |key: &str| Error::config_key(key, format!("{key} is required"));
        let issuer = config.issuer.as_deref().ok_or_else(|| missing("expose.agent.mcp.auth.issuer"))?;
        let audience = config.audience.as_deref().ok_or_else(|| missing("expose.agent.mcp.auth.audience"))?;
        let source = match (&config.jwks_url, &config.jwks_file) {
            (Some(url), _) => keys::Source::Url(url.clone()),
            (None, Some(file)) => keys::Source::File(file.clone()),
            (None, None) => return Err(missing("expose.agent.mcp.auth.jwks_url")),
        };
        // jsonwebtoken panics at the first check when a host's build also enables its `rust_crypto` feature and no
        // provider was chosen; choose ours (aws-lc-rs, as the TLS stack) then, before any token arrives.
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            let _ = jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER.install_default();
        }
        let keys = Arc::new(keys::Keys::load(source, min_refresh).await?);
        let mut supported = config.required_scopes.clone();
        for s in tool_scopes.all() {
            if !supported.iter().any(|x| x == s) {
                supported.push(s.to_owned());
            }
        }
        Ok(Auth {
            checks: token::Checks::new(issuer, audience),
            keys,
            required: config.required_scopes.clone(),
            resource: Resource::new(issuer, audience, identity, &supported).with_required(&config.required_scopes),
            verified: Mutex::new(HashMap::new()),
        })
    }

    /// The metadata document and the challenges.
    pub(crate) fn resource(&self) -> &Resource {
        &self.resource
    }

    /// Check the request's bearer token: the caller it names, or why it is refused.
    pub(crate) async fn check(&self, headers: &HeaderMap) -> std::result::Result<Arc<Caller>, Rejection> {
        let token = bearer(headers)?;
        let caller = self.verify(token).await.map_err(|f| Rejection::Invalid(f.to_string()))?;
        let missing: Vec<String> = self.required.iter().filter(|s| !caller.has_scope(s)).cloned().collect();
        if missing.is_empty() { Ok(caller) } else { Err(Rejection::Scope(missing)) }
    }

    async fn verify(&self, token: &str) -> std::result::Result<Arc<Caller>, token::Failure> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = now();
        let leeway = token::LEEWAY_SECS as f64;
        let mut keys = self.keys.current();
        if let Some(v) = self.lock().get(&digest)
            && v.generation == keys.generation
            && now < v.exp + leeway
            && now + leeway >= v.nbf
        {
            return Ok(v.caller.clone());
        }
        self.keys.refresh_if_old();
        let head = token::head(token)?;
        keys = self.keys.current();
        if let Some(kid) = head.kid.as_deref()
            && !keys.has_kid(kid)
        {
            keys = self.keys.after_unknown_kid(&keys).await;
            if !keys.has_kid(kid) {
                return Err(token::Failure::UnknownKey);
            }
        }
        let claims = self.checks.verify(token, &head, &keys)?;
        // Sessions, tasks and approvals belong to a caller: a token naming nobody would share them with every other.
        if claims.sub.is_none() && claims.client_id.is_none() && claims.azp.is_none() {
            return Err(token::Failure::Claims("it names no subject (sub) and no client (client_id, azp)".to_owned()));
        }
        let scopes = claims.scopes();
        let caller = Arc::new(Caller::build(claims.sub, claims.client_id.or(claims.azp), scopes));
        let verified = Verified {
            caller: caller.clone(),
            exp: claims.exp.unwrap_or(0.0),
            nbf: claims.nbf.unwrap_or(f64::MIN),
            generation: keys.generation,
        };
        let mut memory = self.lock();
        if memory.len() >= VERIFIED_MAX {
            memory.retain(|_, v| now < v.exp + leeway);
            if memory.len() >= VERIFIED_MAX {
                memory.clear();
            }
        }
        memory.insert(digest, verified);
        Ok(caller)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Verified>> {
        self.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The session key of a caller (see [`Caller`]'s sessions rule).
pub(crate) fn session_key(caller: &Caller) -> &str {
    caller.key()
}

/// Who owns a task or a pending approval: `key` decides who may see or answer it, `quota` whose share it counts
/// against. The share is the subject's (else the client's), so a user cannot multiply it with client ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal {
    pub(crate) key: String,
    pub(crate) quota: String,
}

impl Principal {
    pub(crate) fn of(caller: &Caller) -> Self {
        let quota = match (&caller.subject, &caller.client_id) {
            (Some(s), _) => serde_json::json!(["sub", s]),
            (None, c) => serde_json::json!(["client", c]),
        };
        Principal { key: caller.key().to_owned(), quota: quota.to_string() }
    }
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// The token of exactly one `Authorization: Bearer <token>` header (RFC 6750 section 2.1).
fn bearer(headers: &HeaderMap) -> std::result::Result<&str, Rejection> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return Err(Rejection::Missing),
        (Some(v), None) => v,
        (Some(_), Some(_)) => return Err(Rejection::Invalid("more than one Authorization header".to_owned())),
    };
    let invalid = |why: &str| Rejection::Invalid(why.to_owned());
    let value = value.to_str().map_err(|_| invalid("the Authorization header is not ASCII"))?;
    let (scheme, token) = value.split_once(' ').ok_or_else(|| invalid("the Authorization header is not Bearer"))?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(invalid("the Authorization scheme is not Bearer"));
    }
    let token = token.trim_matches(' ');
    if token.len() > token::MAX_TOKEN_BYTES {
        return Err(invalid("the token is longer than 8 KiB"));
    }
    let b64token = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=');
    if token.is_empty() || !token.bytes().all(b64token) {
        return Err(invalid("the bearer token is empty or has characters a token cannot have"));
    }
    Ok(token)
}

#[cfg(test)]
mod tests;
