//! Tokens for the OAuth tests: the throwaway keys of tests/fixtures/jwt, their public halves as JWKs, and tokens
//! signed with them.

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(super::root().join("tests/fixtures/jwt").join(name)).unwrap()
}

/// A signing key of the fixtures, with the key id it is published under.
pub struct Signer {
    pub alg: Algorithm,
    pub kid: &'static str,
    key: EncodingKey,
}

impl Signer {
    pub fn new(alg: Algorithm, kid: &'static str, file: &str) -> Self {
        let pem = fixture(file);
        let key = match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem),
            Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
            _ => EncodingKey::from_ed_pem(&pem),
        }
        .unwrap();
        Signer { alg, kid, key }
    }

    pub fn rsa() -> Self {
        Signer::new(Algorithm::RS256, "rsa-1", "rsa.pem")
    }

    /// The public half as a JWK.
    pub fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.alg).unwrap();
        jwk.common.key_id = Some(self.kid.to_owned());
        serde_json::to_value(jwk).unwrap()
    }

    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(self.kid, claims)
    }

    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}
