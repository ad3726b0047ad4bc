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

/// `mcp_servers[].oauth`: the OAuth 2.1 client-credentials grant for an imported HTTP server (OAUTHC-1..6).
///
/// `client_id` and `client_secret_env` are required; `token_url` defaults to discovery through the server's
/// protected-resource metadata and its issuer's metadata, `scopes` to none. Only with `url`, and not together with
/// `bearer_token_env` (checked at load).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct McpOAuth {
    /// `token_url`: the issuer's token endpoint; discovered when unset.
    #[serde(deserialize_with = "de::url")]
    pub token_url: Option<String>,
    /// `client_id`: this client's id at the issuer.
    #[serde(deserialize_with = "de::nullable")]
    pub client_id: String,
    /// `client_secret_env`: the environment variable holding the client secret, read at load and scrubbed from
    /// every child process.
    #[serde(deserialize_with = "de::nullable")]
    pub client_secret_env: String,
    /// `scopes`: the scopes to ask for.
    #[serde(deserialize_with = "de::scopes")]
    pub scopes: Vec<String>,
}

impl McpOAuth {
    /// Settings for `client_id` whose secret is in the variable `client_secret_env`, with the token endpoint
    /// discovered and no scopes.
    pub fn new(client_id: impl Into<String>, client_secret_env: impl Into<String>) -> Self {
        McpOAuth { client_id: client_id.into(), client_secret_env: client_secret_env.into(), ..Default::default() }
    }

    /// Use `token_url` instead of discovery.
    #[must_use]
    pub fn with_token_url(mut self, token_url: impl Into<String>) -> Self {
        self.token_url = Some(token_url.into());
        self
    }

    /// Ask for `scopes`.
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }
}
