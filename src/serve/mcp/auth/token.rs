//! One bearer JWT checked (AUTH-2): its header read by hand first, so `none`, HMAC and `crit` are refused by
//! name before any key is touched; then the signature with each candidate key, then `iss`, `aud`, `exp` and `nbf`
//! (with [`LEEWAY_SECS`]) through `jsonwebtoken`.

use super::keys::KeySet;
use base64::Engine;
use jsonwebtoken::{Algorithm, Validation};
use std::collections::HashMap;

/// Clock skew allowed on `exp` and `nbf`.
pub(crate) const LEEWAY_SECS: u64 = 30;
/// How many keys a token without `kid` is checked against.
const MAX_KEYLESS_TRIES: usize = 4;
/// The longest token accepted.
pub(crate) const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The algorithms a token may be signed with: the asymmetric ones `jsonwebtoken` verifies.
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Why a token was refused; its text goes into `error_description` and the server's log, never a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Not a JWT, or a header that is not acceptable.
    Malformed(String),
    /// No key has the token's key id, even after reading the keys again.
    UnknownKey,
    /// No key verifies the signature.
    Signature,
    /// Past `exp`.
    Expired,
    /// Before `nbf`.
    NotYetValid,
    /// `iss` is not the issuer.
    Issuer,
    /// `aud` does not name this server.
    Audience,
    /// A claim is missing or of the wrong type.
    Claims(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Malformed(why) => write!(f, "the token is malformed: {why}"),
            Failure::UnknownKey => f.write_str("the token's key id is not one of the issuer's keys"),
            Failure::Signature => f.write_str("the token's signature does not verify"),
            Failure::Expired => f.write_str("the token has expired"),
            Failure::NotYetValid => f.write_str("the token is not valid yet"),
            Failure::Issuer => f.write_str("the token comes from another issuer"),
            Failure::Audience => f.write_str("the token is not meant for this server (aud)"),
            Failure::Claims(why) => write!(f, "the token's claims are not acceptable: {why}"),
        }
    }
}

/// What the header says: the algorithm and the key id.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) alg: Algorithm,
    pub(crate) kid: Option<String>,
}

/// Read the header: a JSON object with an accepted `alg`, an optional string `kid`, and no `crit`.
pub(crate) fn head(token: &str) -> Result<Head, Failure> {
    #[derive(serde::Deserialize)]
    struct Raw {
        alg: String,
        #[serde(default)]
        kid: Option<String>,
        #[serde(default)]
        crit: Option<serde::de::IgnoredAny>,
    }
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(Failure::Malformed("a JWT has three dot-separated parts".to_owned()));
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| Failure::Malformed("the header is not base64url".to_owned()))?;
    let raw: Raw =
        serde_json::from_slice(&bytes).map_err(|_| Failure::Malformed("the header is not a JWS header".to_owned()))?;
    if raw.crit.is_some() {
        return Err(Failure::Malformed("the header has critical extensions (crit) this server does not know".into()));
    }
    let alg = raw.alg.parse::<Algorithm>().ok().filter(|a| ACCEPTED.contains(a)).ok_or_else(|| {
        let name: String = raw.alg.chars().take(16).filter(|c| c.is_ascii_graphic()).collect();
        Failure::Malformed(format!("alg {name:?} is not accepted (asymmetric signatures only)"))
    })?;
    Ok(Head { alg, kid: raw.kid })
}

/// The claims this server reads besides the ones `jsonwebtoken` checks.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Claims {
    #[serde(default)]
    pub(crate) sub: Option<String>,
    #[serde(default)]
    pub(crate) client_id: Option<String>,
    #[serde(default)]
    pub(crate) azp: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Scp>,
    #[serde(default)]
    pub(crate) exp: Option<f64>,
    #[serde(default)]
    pub(crate) nbf: Option<f64>,
}

/// `scp`: a list (Okta, Azure) or a space-separated string.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum Scp {
    List(Vec<String>),
    Text(String),
}

impl Claims {
    /// The granted scopes: `scope` (RFC 9068, space-separated), else `scp`.
    pub(crate) fn scopes(&self) -> Vec<String> {
        let words = |s: &str| s.split_ascii_whitespace().map(str::to_owned).collect::<Vec<_>>();
        match (&self.scope, &self.scp) {
            (Some(s), _) => words(s),
            (None, Some(Scp::Text(s))) => words(s),
            (None, Some(Scp::List(v))) => v.clone(),
            (None, None) => Vec::new(),
        }
    }
}

/// The claim checks, one [`Validation`] per accepted algorithm, built once.
pub(crate) struct Checks {
    by_alg: HashMap<Algorithm, Validation>,
}

impl Checks {
    /// `aud` must be `audience` (with or without one trailing `/`, which names the same resource).
    pub(crate) fn new(issuer: &str, audience: &str) -> Self {
        let bare = audience.trim_end_matches('/');
        let audiences = [bare.to_owned(), format!("{bare}/")];
        let by_alg = ACCEPTED
            .iter()
            .map(|&alg| {
                let mut v = Validation::new(alg);
                v.set_issuer(&[issuer]);
                v.set_audience(&audiences);
                v.set_required_spec_claims(&["exp", "iss", "aud"]);
                v.validate_nbf = true;
                v.leeway = LEEWAY_SECS;
                (alg, v)
            })
            .collect();
        Checks { by_alg }
    }

    /// Verify `token` (whose header is `head`) with the keys that may have signed it.
    pub(crate) fn verify(&self, token: &str, head: &Head, keys: &KeySet) -> Result<Claims, Failure> {
        let validation = self.by_alg.get(&head.alg).ok_or(Failure::Signature)?;
        let candidates = keys.keys.iter().filter(|k| {
            head.kid.as_deref().is_none_or(|kid| k.kid.as_deref() == Some(kid))
                && k.family.accepts(head.alg)
                && k.alg.is_none_or(|a| a == head.alg)
        });
        let mut last = Failure::Signature;
        // A token without a key id is tried against a few keys at most: each try is a signature check an
        // unauthenticated client makes us do.
        for key in candidates.take(MAX_KEYLESS_TRIES) {
            match jsonwebtoken::decode::<Claims>(token, &key.decoding, validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => {
                    last = failure(e.kind());
                    // Anything but a bad signature means this key verified it: no other key will do better.
                    if last != Failure::Signature {
                        return Err(last);
                    }
                }
            }
        }
        Err(last)
    }
}

fn failure(kind: &jsonwebtoken::errors::ErrorKind) -> Failure {
    use jsonwebtoken::errors::ErrorKind as K;
    match kind {
        K::InvalidSignature | K::InvalidAlgorithm | K::InvalidEcdsaKey | K::InvalidEddsaKey | K::InvalidRsaKey(_) => {
            Failure::Signature
        }
        K::ExpiredSignature => Failure::Expired,
        K::ImmatureSignature => Failure::NotYetValid,
        K::InvalidIssuer => Failure::Issuer,
        K::InvalidAudience => Failure::Audience,
        K::MissingRequiredClaim(c) => Failure::Claims(format!("{c} is missing")),
        K::InvalidClaimFormat(c) => Failure::Claims(format!("{c} has the wrong type")),
        K::Json(_) => Failure::Claims("a claim has the wrong type".to_owned()),
        other => Failure::Malformed(format!("{other:?}")),
    }
}
