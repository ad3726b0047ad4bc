//! OAuth 2.1 client credentials for an imported HTTP server (`mcp_servers[].oauth`, OAUTHC-1..6).
//!
//! rmcp's `AuthorizationManager` does the protocol: discovery (the server's protected-resource metadata, RFC 9728,
//! then the issuer's RFC 8414 metadata), choosing `client_secret_basic` or `client_secret_post` from what the
//! issuer advertises, and the token request with the scopes and the `resource` parameter (RFC 8707). What it does
//! not do for this grant is kept here: a token is cached in memory and fetched again shortly before it expires, and
//! once when the server answers `401` to it (rmcp would try a refresh token, which this grant has none of).
//!
//! The secret is read from its environment variable when the import loads, never logged, and the variable is
//! scrubbed from every child process like `bearer_token_env` (see the import's credentials).

use crate::config::{McpOAuth, check_http_url};
use oauth2::TokenResponse;
use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata, ClientCredentialsConfig};
use std::time::Duration;
use tokio::time::Instant;

/// A token is fetched again this long before it expires (or at half its life, if that is sooner).
const RENEW_BEFORE: Duration = Duration::from_secs(60);
/// How long a token without `expires_in` is used before it is fetched again.
const UNDATED_LIFE: Duration = Duration::from_secs(300);

/// The client-credentials grant for one server: the settings, and the token in hand.
pub(crate) struct ClientCredentials {
    server: String,
    url: String,
    settings: McpOAuth,
    secret: String,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    manager: Option<AuthorizationManager>,
    token: Option<Held>,
}

struct Held {
    value: String,
    renew_at: Instant,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("server", &self.server)
            .field("client_id", &self.settings.client_id)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    /// The grant for `server` at `url`; the secret is read from `settings.client_secret_env` now.
    ///
    /// # Errors
    ///
    /// The reason, naming the variable (never its value), when it is unset or empty.
    pub(crate) fn new(server: &str, url: &str, settings: &McpOAuth) -> Result<Self, String> {
        let var = &settings.client_secret_env;
        let secret = match std::env::var(var) {
            Ok(v) if !v.is_empty() => v,
            Ok(_) => return Err(format!("oauth.client_secret_env {var} is empty")),
            Err(_) => return Err(format!("oauth.client_secret_env {var} is not set")),
        };
        Ok(ClientCredentials {
            server: server.to_owned(),
            url: url.to_owned(),
            settings: settings.clone(),
            secret,
            state: tokio::sync::Mutex::new(State::default()),
        })
    }

    /// A token to send: the one in hand until shortly before it expires, else a new one.
    pub(crate) async fn token(&self) -> Result<String, String> {
        let mut state = self.state.lock().await;
        if let Some(held) = &state.token
            && Instant::now() < held.renew_at
        {
            return Ok(held.value.clone());
        }
        self.fetch(&mut state).await
    }

    /// The server refused `rejected` (`401`): a new token, unless another request got one meanwhile.
    pub(crate) async fn renew(&self, rejected: &str) -> Result<String, String> {
        let mut state = self.state.lock().await;
        if let Some(held) = &state.token
            && held.value != rejected
        {
            return Ok(held.value.clone());
        }
        state.token = None;
        self.fetch(&mut state).await
    }

    async fn fetch(&self, state: &mut State) -> Result<String, String> {
        let config = ClientCredentialsConfig::ClientSecret {
            client_id: self.settings.client_id.clone(),
            client_secret: self.secret.clone(),
            scopes: self.settings.scopes.clone(),
            resource: Some(self.url.clone()),
        };
        if state.manager.is_none() {
            state.manager = Some(self.configure(&config).await?);
        }
        let Some(manager) = state.manager.as_ref() else { return Err("no OAuth client".to_owned()) };
        let response = manager
            .exchange_client_credentials(&config)
            .await
            .map_err(|e| self.failed("the token request failed", &e))?;
        let value = response.access_token().secret().clone();
        let life = response.expires_in().unwrap_or(UNDATED_LIFE);
        let renew_at = Instant::now() + life.saturating_sub(RENEW_BEFORE.min(life / 2));
        state.token = Some(Held { value: value.clone(), renew_at });
        Ok(value)
    }

    /// Find the token endpoint (configured, else discovered) and set the client up for it.
    async fn configure(&self, config: &ClientCredentialsConfig) -> Result<AuthorizationManager, String> {
        let mut manager =
            AuthorizationManager::new(self.url.as_str()).await.map_err(|e| self.failed("cannot start OAuth", &e))?;
        let metadata = match &self.settings.token_url {
            Some(token_url) => {
                let mut m = AuthorizationMetadata::default();
                m.token_endpoint = token_url.clone();
                m.authorization_endpoint = token_url.clone();
                // With no metadata to say otherwise, HTTP Basic: RFC 6749 section 2.3.1 makes every authorization
                // server support it for client secrets.
                let basic = serde_json::json!(["client_secret_basic"]);
                m.additional_fields.insert("token_endpoint_auth_methods_supported".to_owned(), basic);
                m
            }
            None => {
                let found = manager.resolve_metadata().await.map_err(|e| self.failed("discovery failed", &e))?;
                // A synthesized `/token` is a guess; the secret goes only where the server or issuer said.
                if !found.source.is_discovered() {
                    return Err(format!(
                        "the server publishes no OAuth metadata (RFC 9728 or RFC 8414); set oauth.token_url for {}",
                        self.server
                    ));
                }
                found.metadata
            }
        };
        check_http_url(&metadata.token_endpoint)
            .map_err(|e| format!("the token endpoint {:?} is not acceptable: {e}", metadata.token_endpoint))?;
        manager.set_metadata(metadata);
        manager
            .validate_client_credentials_metadata(config)
            .map_err(|e| self.failed("the issuer refuses this client", &e))?;
        manager
            .configure_client_credentials(config)
            .map_err(|e| self.failed("cannot configure the OAuth client", &e))?;
        Ok(manager)
    }

    fn failed(&self, what: &str, e: &dyn std::fmt::Display) -> String {
        // rmcp's messages name endpoints and OAuth error codes, not the secret.
        format!("OAuth client credentials for client {}: {what}: {e}", self.settings.client_id)
    }
}
