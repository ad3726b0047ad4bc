//! The streamable HTTP client under an HTTP import: rmcp's reqwest client for everything but `tools/call` and
//! `tools/list`, whose replies are read here as they stream.
//!
//! - A `tools/call` result of any size is capped exactly as EXEC-12 in bounded memory (MCPI-8); rmcp's own client
//!   refuses a body over its limit instead, which would lose the result. Each message up to
//!   [`LINE_LIMIT`](super::lines::LINE_LIMIT) is passed on whole; a longer one is reduced while it streams
//!   ([`Oversize`](super::oversize::Oversize)) to the small result MCPI-8 keeps of it.
//! - A `tools/list` page is read by the connection's [`Ledger`] (MCPI-6, MCPI-13): tool by tool, tolerantly,
//!   within the listing's memory bound.
//! - A reply that cannot be parsed (not JSON, nested too deep, not a JSON-RPC message) answers its request at once
//!   with the reason (MCPI-14), instead of leaving it to wait out the timeout.
//! - A `tools/call` carries the trace context its `_meta` carries (OTEL-7) as W3C `traceparent` and `tracestate`
//!   headers too, for a server whose HTTP instrumentation reads those and not `_meta`.

use super::lines::Message;
use super::listing::Ledger;
use super::malformed::{refusal, unparsable};
use super::oauth::ClientCredentials;
use super::sse::{Events, sse};
use futures::stream::{BoxStream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

type HttpError = StreamableHttpError<reqwest::Error>;

const SESSION_HEADER: &str = "Mcp-Session-Id";
/// How much of a failed reply's body is kept for the error.
const ERROR_PREFIX: usize = 64 * 1024;

/// rmcp's reqwest client, with `tools/call` and `tools/list` replies read here.
#[derive(Clone)]
pub(crate) struct CappingClient {
    inner: reqwest::Client,
    ledger: Ledger,
    /// Tokens from the client-credentials grant, put on every request instead of rmcp's static one (OAUTHC-3).
    oauth: Option<Arc<ClientCredentials>>,
}

/// The requests whose replies are read here.
enum Kind {
    Call,
    List(RequestId),
}

impl Kind {
    fn of(message: &ClientJsonRpcMessage) -> Option<Kind> {
        let JsonRpcMessage::Request(request) = message else { return None };
        match request.request {
            ClientRequest::CallToolRequest(_) => Some(Kind::Call),
            ClientRequest::ListToolsRequest(_) => Some(Kind::List(request.id.clone())),
            _ => None,
        }
    }
}

/// One POST, as rmcp's transport hands it over.
struct Post {
    uri: Arc<str>,
    message: ClientJsonRpcMessage,
    session_id: Option<Arc<str>>,
    auth_header: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
}

/// A POST's answer, before its body is read.
#[expect(clippy::large_enum_variant, reason = "one short-lived value per message, moved once, never stored")]
enum Answer {
    /// Answered already (accepted, an error status).
    Done(StreamableHttpPostResponse),
    /// A body to read: an SSE stream or one JSON message.
    Body { response: reqwest::Response, sse: bool, session: Option<String> },
}

impl CappingClient {
    /// `inner` for the requests; what the listing and failed replies leave goes to `ledger`.
    pub(crate) fn new(inner: reqwest::Client, ledger: Ledger) -> Self {
        CappingClient { inner, ledger, oauth: None }
    }

    /// Authenticate every request with tokens from `grant`.
    pub(crate) fn with_oauth(mut self, grant: Arc<ClientCredentials>) -> Self {
        self.oauth = Some(grant);
        self
    }

    /// Run `call` with the request's token: rmcp's (`given`) without OAuth; with it, the grant's token, and when
    /// the server answers `401` to that, once more with a new one (OAUTHC-3).
    async fn authorized<T, F, Fut>(&self, given: Option<String>, call: F) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: std::future::Future<Output = Result<T, HttpError>>,
    {
        let Some(grant) = &self.oauth else { return call(given).await };
        let token = grant.token().await.map_err(oauth_failed)?;
        match call(Some(token.clone())).await {
            Err(StreamableHttpError::AuthRequired(_)) => {
                let fresh = grant.renew(&token).await.map_err(oauth_failed)?;
                call(Some(fresh)).await
            }
            other => other,
        }
    }

    /// Send `post`; an accepted or failed request is answered here.
    async fn send(&self, post: Post) -> Result<Answer, HttpError> {
        let mut request = self.inner.post(post.uri.as_ref()).header(ACCEPT, "text/event-stream, application/json");
        if let Some(token) = post.auth_header {
            request = request.bearer_auth(token);
        }
        // rmcp's transport made these headers (protocol version, method and name); they pass through as they are.
        for (name, value) in post.custom_headers {
            request = request.header(name, value);
        }
        #[cfg(feature = "otel")]
        for (name, value) in trace_headers(&post.message) {
            request = request.header(name, value);
        }
        let had_session = post.session_id.is_some();
        if let Some(id) = &post.session_id {
            request = request.header(SESSION_HEADER, id.as_ref());
        }
        let response = request.json(&post.message).send().await.map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if status == reqwest::StatusCode::ACCEPTED || status == reqwest::StatusCode::NO_CONTENT {
            return Ok(Answer::Done(StreamableHttpPostResponse::Accepted));
        }
        if status == reqwest::StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        // With OAuth a 401 is the signal to fetch a new token (see `authorized`); without, it is reported as it came.
        if status == reqwest::StatusCode::UNAUTHORIZED && self.oauth.is_some() {
            let challenge = response.headers().get(reqwest::header::WWW_AUTHENTICATE);
            let challenge = challenge.and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
            return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(challenge)));
        }
        let session = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let content_type = response.headers().get(CONTENT_TYPE).map(|v| v.as_bytes().to_ascii_lowercase());
        // The media type alone, without parameters (`text/event-stream; charset=utf-8`).
        let is = |mime: &str| {
            content_type.as_deref().is_some_and(|ct| {
                let media = ct.split(|b| *b == b';').next().unwrap_or_default();
                media.trim_ascii() == mime.as_bytes()
            })
        };
        if !status.is_success() {
            return failed(status, is("application/json"), response, session).await.map(Answer::Done);
        }
        if is("text/event-stream") || is("application/json") {
            Ok(Answer::Body { sse: is("text/event-stream"), response, session })
        } else {
            Err(StreamableHttpError::UnexpectedContentType(
                content_type.map(|ct| String::from_utf8_lossy(&ct).into_owned()),
            ))
        }
    }

    /// `tools/call`: an SSE stream is passed on with each event bounded; one JSON body is read bounded and parsed.
    async fn post_call(&self, post: Post) -> Result<StreamableHttpPostResponse, HttpError> {
        let id = match &post.message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        match self.send(post).await? {
            Answer::Done(done) => Ok(done),
            Answer::Body { response, sse: true, session } => {
                Ok(StreamableHttpPostResponse::Sse(sse(response.bytes_stream().boxed(), id), session))
            }
            Answer::Body { response, sse: false, session } => {
                let body = read(response).await?;
                let message = match (serde_json::from_slice(&body), id) {
                    (Ok(message), _) => message,
                    (Err(e), Some(id)) => refusal(id, unparsable(&e)),
                    (Err(e), None) => return Err(StreamableHttpError::UnexpectedServerResponse(unparsable(&e).into())),
                };
                Ok(StreamableHttpPostResponse::Json(message, session))
            }
        }
    }

    /// `tools/list`: the reply, from one JSON body or the first answer on an SSE stream, read by the ledger.
    async fn post_list(&self, post: Post, id: RequestId) -> Result<StreamableHttpPostResponse, HttpError> {
        let (response, sse, session) = match self.send(post).await? {
            Answer::Done(done) => return Ok(done),
            Answer::Body { response, sse, session } => (response, sse, session),
        };
        if !sse {
            let body = read(response).await?;
            let answer = self.listing_answer(&body, &id);
            let answer = answer.unwrap_or_else(|| self.listing_failed(id, "its reply holds no answer".to_owned()));
            return Ok(StreamableHttpPostResponse::Json(answer, session));
        }
        // Other messages on a listing's stream (progress, log notifications) are dropped: a listing asks nothing of
        // the client.
        let mut body = response.bytes_stream();
        let (mut events, mut ready) = (Events::default(), Vec::new());
        while let Some(chunk) = body.next().await {
            events.feed(&chunk.map_err(StreamableHttpError::Client)?, &mut ready);
            for event in ready.drain(..) {
                let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else { continue };
                if let Some(answer) = self.listing_answer(data.as_bytes(), &id) {
                    return Ok(StreamableHttpPostResponse::Json(answer, session));
                }
            }
        }
        let answer = self.listing_failed(id, "its reply stream ended without an answer".to_owned());
        Ok(StreamableHttpPostResponse::Json(answer, session))
    }

    /// The answer to listing request `id` when `raw` is one: a page, the server's error, or the reason `raw`
    /// cannot be parsed. `None` for another message.
    fn listing_answer(&self, raw: &[u8], id: &RequestId) -> Option<ServerJsonRpcMessage> {
        if let Some(page) = self.ledger.reply(raw, &mut vec![id.clone()]) {
            return Some(page);
        }
        match serde_json::from_slice::<ServerJsonRpcMessage>(raw) {
            Ok(JsonRpcMessage::Error(error)) if error.id.as_ref().is_none_or(|e| e == id) => {
                Some(JsonRpcMessage::Error(error))
            }
            Ok(JsonRpcMessage::Response(answer)) if answer.id == *id => Some(JsonRpcMessage::Response(answer)),
            Ok(_) => None,
            Err(e) => Some(self.listing_failed(id.clone(), unparsable(&e))),
        }
    }

    fn listing_failed(&self, id: RequestId, why: String) -> ServerJsonRpcMessage {
        self.ledger.fail(why.clone());
        refusal(id, why)
    }
}

/// A reply's body as one bounded [`Message`].
async fn read(response: reqwest::Response) -> Result<Vec<u8>, HttpError> {
    let mut body = response.bytes_stream();
    let mut message = Message::default();
    while let Some(chunk) = body.next().await {
        message.feed(&chunk.map_err(StreamableHttpError::Client)?);
    }
    Ok(message.finish())
}

/// A non-success reply: a JSON-RPC error in the body is the answer; anything else fails the request, naming the
/// status and the start of the body.
async fn failed(
    status: reqwest::StatusCode,
    json: bool,
    response: reqwest::Response,
    session: Option<String>,
) -> Result<StreamableHttpPostResponse, HttpError> {
    let retry_after =
        response.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk[..chunk.len().min(ERROR_PREFIX - body.len())]);
        if body.len() >= ERROR_PREFIX {
            break;
        }
    }
    if json && let Ok(error @ JsonRpcMessage::Error(_)) = serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
        return Ok(StreamableHttpPostResponse::Json(error, session));
    }
    // As rmcp's client reports them: the status, and when to try again.
    if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        return Err(StreamableHttpError::HttpStatus(HttpStatusError::new(status.as_u16(), retry_after)));
    }
    let text = String::from_utf8_lossy(&body);
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!("HTTP {status}: {text}"))))
}

impl CappingClient {
    /// One POST: `tools/call` and `tools/list` read here, the rest by rmcp's client.
    async fn post_once(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        if let Some(kind) = Kind::of(&message) {
            let post = Post { uri, message, session_id, auth_header, custom_headers };
            return match kind {
                Kind::Call => self.post_call(post).await,
                Kind::List(id) => self.post_list(post, id).await,
            };
        }
        self.inner
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }
}

/// OTEL-7: the `traceparent` and `tracestate` a `tools/call`'s `_meta` carries, as headers. The connection put
/// them there from the current span; a value a header cannot hold is left out.
#[cfg(feature = "otel")]
fn trace_headers(message: &ClientJsonRpcMessage) -> Vec<(&'static str, HeaderValue)> {
    let JsonRpcMessage::Request(request) = message else { return Vec::new() };
    let ClientRequest::CallToolRequest(call) = &request.request else { return Vec::new() };
    let Some(meta) = &call.params.meta else { return Vec::new() };
    [crate::telemetry::TRACEPARENT, crate::telemetry::TRACESTATE]
        .into_iter()
        .filter_map(|key| {
            let value = meta.get(key)?.as_str()?;
            Some((key, HeaderValue::from_str(value).ok()?))
        })
        .collect()
}

/// A grant that could not produce a token, as the transport's error.
fn oauth_failed(why: String) -> HttpError {
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(why))
}

impl StreamableHttpClient for CappingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        if self.oauth.is_none() {
            return self.post_once(uri, message, session_id, auth_header, custom_headers, limits).await;
        }
        self.authorized(auth_header, |token| {
            let (uri, message, session_id, headers) =
                (uri.clone(), message.clone(), session_id.clone(), custom_headers.clone());
            self.post_once(uri, message, session_id, token, headers, limits)
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.authorized(auth_header, |token| {
            self.inner.delete_session(uri.clone(), session_id.clone(), token, custom_headers.clone())
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.authorized(auth_header, |token| {
            let (uri, session_id, last_event_id) = (uri.clone(), session_id.clone(), last_event_id.clone());
            self.inner.get_stream(uri, session_id, last_event_id, token, custom_headers.clone())
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.authorized(auth_header, |token| {
            let (uri, session_id, last_event_id) = (uri.clone(), session_id.clone(), last_event_id.clone());
            let headers = custom_headers.clone();
            self.inner.get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                token,
                headers,
                max_sse_event_size,
            )
        })
        .await
    }
}
