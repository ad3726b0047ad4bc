//! The protected-resource metadata (RFC 9728) and the `WWW-Authenticate` challenges (RFC 6750, MCP
//! authorization) of AUTH-3 and AUTH-4.

use super::Rejection;
use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

/// The well-known path prefix of the metadata (RFC 9728 section 3).
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// This server as an OAuth protected resource.
pub(crate) struct Resource {
    document: bytes::Bytes,
    /// The metadata's URL, as challenges name it.
    url: String,
    /// The paths the metadata is answered at: the bare well-known path, and the one with the resource's path.
    paths: Vec<String>,
    /// `scope="..."` for a challenge to a request without a token, when scopes are required.
    required: String,
}

impl Resource {
    /// The document for `audience` (this server's resource URL), protected by `issuer`.
    pub(crate) fn new(issuer: &str, audience: &str, name: &str, scopes: &[String]) -> Self {
        let document = serde_json::json!({
            "resource": audience,
            "authorization_servers": [issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": scopes,
            "resource_name": name,
        });
        // RFC 9728 section 3.1: the well-known segment goes between the host and the resource's path.
        let (origin, path) = split_url(audience);
        let path = path.trim_end_matches('/');
        let mut paths = vec![WELL_KNOWN.to_owned()];
        if !path.is_empty() {
            paths.push(format!("{WELL_KNOWN}{path}"));
        }
        let url = format!("{origin}{}", paths.last().map(String::as_str).unwrap_or(WELL_KNOWN));
        Resource { document: bytes::Bytes::from(document.to_string()), url, paths, required: String::new() }
    }

    /// Name `scopes` in challenges to requests without a token.
    pub(crate) fn with_required(mut self, scopes: &[String]) -> Self {
        self.required = scopes.join(" ");
        self
    }

    /// The metadata document's JSON.
    pub(crate) fn document(&self) -> &[u8] {
        &self.document
    }

    /// Whether `path` is where the metadata is answered.
    pub(crate) fn serves(&self, path: &str) -> bool {
        self.paths.iter().any(|p| p == path)
    }

    /// The metadata document as a response.
    pub(crate) fn metadata(&self) -> Response {
        let mut response = Response::new(Body::from(self.document.clone()));
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
        response
    }

    /// The `401` or `403` for `rejection`, with its challenge; the description names why, never the token.
    pub(crate) fn challenge(&self, rejection: &Rejection) -> Response {
        let meta = format!("resource_metadata=\"{}\"", quotable(&self.url));
        let (status, header, why) = match rejection {
            Rejection::Missing => {
                let scope =
                    if self.required.is_empty() { String::new() } else { format!(", scope=\"{}\"", self.required) };
                (StatusCode::UNAUTHORIZED, format!("Bearer {meta}{scope}"), "a bearer token is required".to_owned())
            }
            Rejection::Invalid(why) => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer error=\"invalid_token\", error_description=\"{}\", {meta}", quotable(why)),
                why.clone(),
            ),
            Rejection::Scope(missing) => {
                let why = format!("the token lacks the scope {}", missing.join(" "));
                let header = format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{}\", error_description=\"{}\", {meta}",
                    quotable(&missing.join(" ")),
                    quotable(&why)
                );
                (StatusCode::FORBIDDEN, header, why)
            }
        };
        // Every client's first request has no token (that is how it finds the metadata): not worth a warning.
        if *rejection == Rejection::Missing {
            tracing::debug!(target: "fisk_ai::serve::mcp", "MCP request without a bearer token: 401");
        } else {
            crate::telemetry::http_refused(status.as_u16(), &why);
        }
        let mut response = Response::new(Body::from(why));
        *response.status_mut() = status;
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        if let Ok(value) = HeaderValue::from_str(&header) {
            response.headers_mut().insert(WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// `(scheme://authority, /path)` of an absolute URL, without query or fragment.
fn split_url(url: &str) -> (&str, &str) {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

/// Text fit for an RFC 6750 quoted string: printable ASCII without `"` and `\`.
fn quotable(s: &str) -> String {
    s.chars()
        .map(|c| if c == ' ' || (c.is_ascii_graphic() && c != '"' && c != '\\') { c } else { '?' })
        .take(200)
        .collect()
}
