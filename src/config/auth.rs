//! `expose.agent.mcp.auth`: the OAuth 2.1 resource server in front of MCP over HTTP (AUTH-1..).

use std::path::PathBuf;

use serde::Deserialize;

use super::de;

/// `expose.agent.mcp.auth`: bearer JWTs checked against an issuer's keys (AUTH-1..10).
///
/// `issuer`, `audience` and exactly one of `jwks_url` and `jwks_file` are required (checked at load).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct McpAuth {
    /// `issuer`: the authorization server a token's `iss` must name exactly, published in this server's
    /// protected-resource metadata (RFC 9728).
    #[serde(deserialize_with = "de::url")]
    pub issuer: Option<String>,
    /// `audience`: this server's resource URL (RFC 8707), which a token's `aud` must name.
    #[serde(deserialize_with = "de::url")]
    pub audience: Option<String>,
    /// `jwks_url`: where the issuer publishes its signing keys; fetched at start, cached, and fetched again on a
    /// token with an unknown key id at a bounded rate.
    #[serde(deserialize_with = "de::url")]
    pub jwks_url: Option<String>,
    /// `jwks_file`: the signing keys as a local JWKS document, read at start and read again on an unknown key id
    /// at the same bounded rate.
    #[serde(deserialize_with = "de::opt_path")]
    pub jwks_file: Option<PathBuf>,
    /// `required_scopes`: scopes every token must carry (`403 insufficient_scope` otherwise).
    #[serde(deserialize_with = "de::scopes")]
    pub required_scopes: Vec<String>,
}
