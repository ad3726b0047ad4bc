//! The streamable HTTP listener (MCP-3, MCP-4, MCP-22): rmcp's tower service at the router root behind axum,
//! strict `Host` and `Origin` checks following the bind address, a session cap, a request body limit,
//! `TCP_NODELAY` on every connection, and graceful shutdown.

use super::auth::{self, Auth, Caller};
use super::guard;
use super::handler::{Handler, InFlight, Shared};
use super::sessions::{self, BoundedSessions, Busy};
use crate::error::{Error, ErrorKind, Result};
use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN, RETRY_AFTER};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::future::{Future, IntoFuture};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long shutdown waits for in-flight requests before stopping them (MCP-22).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The header carrying a legacy session's id.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The `Host` headers to accept (DNS-rebinding protection), or `None` for any. Loopback binds accept the loopback
/// names; a specific address accepts itself (and the configured name); an all-interfaces bind accepts any host,
/// since clients may reach it under any name.
pub(crate) fn allowed_hosts(configured: &str, local: SocketAddr) -> Option<Vec<String>> {
    let ip = local.ip();
    if ip.is_unspecified() {
        return None;
    }
    let mut hosts: Vec<String> = Vec::new();
    let mut add = |h: &str| {
        let h = h.trim().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        if !h.is_empty() && !hosts.contains(&h) {
            hosts.push(h);
        }
    };
    if ip.is_loopback() {
        LOOPBACK_HOSTS.iter().for_each(|h| add(h));
    }
    add(&ip.to_string());
    if configured.parse::<IpAddr>().map(|c| !c.is_unspecified()).unwrap_or(true) {
        add(configured);
    }
    Some(hosts)
}

/// The `Origin`s to accept: the loopback names and the allowed hosts, over http and https, on any port.
pub(crate) fn allowed_origins(hosts: Option<&[String]>) -> Vec<String> {
    let mut names: Vec<&str> = LOOPBACK_HOSTS.to_vec();
    names.extend(hosts.unwrap_or_default().iter().map(String::as_str));
    let mut out = Vec::new();
    for name in names {
        let host = if name.contains(':') { format!("[{name}]") } else { name.to_owned() };
        for scheme in ["http", "https"] {
            let origin = format!("{scheme}://{host}:*");
            if !out.contains(&origin) {
                out.push(origin);
            }
        }
    }
    out
}

/// Bind `address:port` (a name is resolved).
pub(crate) async fn bind(address: &str, port: u16) -> Result<TcpListener> {
    let host = address.trim_start_matches('[').trim_end_matches(']');
    TcpListener::bind((host, port))
        .await
        .map_err(|e| Error::new(ErrorKind::Io, format!("cannot listen on {address}:{port}: {e}")).with_source(e))
}

/// What the router needs besides the handler state: the checks that run before rmcp sees a request.
pub(crate) struct RouterParts {
    pub(crate) hosts: Option<Vec<String>>,
    pub(crate) max_body: usize,
    pub(crate) sessions: Arc<BoundedSessions>,
    /// Cancelled at shutdown: every session (and its standalone stream) ends.
    pub(crate) sessions_cancel: CancellationToken,
    /// The resource server (AUTH-1..10), when `expose.agent.mcp.auth` is set.
    pub(crate) auth: Option<Arc<Auth>>,
}

/// The MCP service at the router's root behind the strict header checks, the session cap, in-flight tracking
/// and the DELETE status fix.
pub(crate) fn router(shared: Arc<Shared>, parts: RouterParts) -> axum::Router {
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(parts.sessions_cancel.clone())
        .with_max_request_body_bytes(parts.max_body);
    // DNS rebinding: a browser page always sends its Origin, so only local origins (and the served names) pass,
    // whatever the bind; clients that are not browsers send none and are unaffected. rmcp's own (laxer) checks
    // stay on behind ours.
    let config = config.with_allowed_origins(allowed_origins(parts.hosts.as_deref())).enforce_origin_validation();
    let config = match &parts.hosts {
        Some(hosts) => config.with_allowed_hosts(hosts.clone()),
        None => config.disable_allowed_hosts(),
    };
    let factory = {
        let shared = shared.clone();
        move || Ok(Handler(shared.clone()))
    };
    let service = StreamableHttpService::new(factory, parts.sessions.clone(), config);
    let gate = Arc::new(Gate {
        origin_names: origin_names(parts.hosts.as_deref()),
        hosts: parts.hosts,
        sessions: parts.sessions,
        max_body: parts.max_body,
        in_flight: shared.in_flight.clone(),
        listing: shared.listing.clone(),
        shared: shared.clone(),
        auth: parts.auth,
    });
    let layer = axum::middleware::from_fn(move |req: Request, next: Next| {
        let gate = gate.clone();
        async move { gate.handle(req, next).await }
    });
    axum::Router::new().route_service("/", service).layer(layer)
}

/// The per-request checks in front of rmcp.
struct Gate {
    hosts: Option<Vec<String>>,
    origin_names: Vec<String>,
    sessions: Arc<BoundedSessions>,
    max_body: usize,
    in_flight: InFlight,
    /// The serialized `tools/list` result (see [`Gate::cached_listing`]).
    listing: Arc<super::listing::Listing>,
    shared: Arc<Shared>,
    auth: Option<Arc<Auth>>,
}

impl Gate {
    async fn handle(&self, mut req: Request, next: Next) -> Response {
        if let Err(why) = self.check_headers(req.headers()) {
            return refuse(StatusCode::FORBIDDEN, why);
        }
        let caller = match self.authenticate(&mut req).await {
            Ok(caller) => caller,
            Err(response) => return response,
        };
        let method = req.method().clone();
        if method == Method::DELETE {
            // rmcp answers 202, which the official clients report as a failed termination.
            let mut response = next.run(req).await;
            if response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::NO_CONTENT;
                *response.body_mut() = Body::empty();
            }
            return response;
        }
        if method != Method::POST {
            // A GET opens the session's standalone stream. It is marked busy while rmcp routes it, so eviction
            // cannot close the session between rmcp's lookup and the stream's creation (a 500 instead of a 404), but
            // not while the stream stays open: an open stream is no call in progress, and holding one must not keep
            // a session from being evicted (the stream then ends).
            let header = req.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok());
            let routing = header.and_then(|id| self.sessions.enter(id));
            let response = next.run(req).await;
            drop(routing);
            return response;
        }
        let session = req.headers().get(SESSION_HEADER).map(|v| v.to_str().unwrap_or_default().to_owned());
        // Marked before anything else is awaited, under the lock eviction takes: from here on the session is either
        // ours until the response ends, or already gone (rmcp answers 404).
        let busy = session.as_deref().and_then(|id| self.sessions.enter(id));
        let req = if session.is_none() && self.sessions.is_full() {
            match self.refuse_new_session(req).await {
                Ok(req) => req,
                Err(response) => return response,
            }
        } else {
            req
        };
        let req = match self.cached_listing(req, caller.clone()).await {
            Ok(response) => return response,
            Err(req) => req,
        };
        let req = match mark_refused_arguments(req, self.max_body).await {
            Ok(req) => req,
            Err(response) => return response,
        };
        self.forward(req, next, busy, caller).await
    }

    /// AUTH-1..8: with `auth`, answer the metadata, refuse a request without an acceptable token, and a request in
    /// a session another caller opened (`404`, as for a session that does not exist); otherwise note the caller on
    /// the request for the handler.
    async fn authenticate(&self, req: &mut Request) -> std::result::Result<Option<Arc<Caller>>, Response> {
        let Some(auth) = &self.auth else { return Ok(None) };
        if req.method() == Method::GET && auth.resource().serves(req.uri().path()) {
            return Err(auth.resource().metadata());
        }
        let caller = auth.check(req.headers()).await.map_err(|r| auth.resource().challenge(&r))?;
        // rmcp reads a session id that is not text as no id at all (and would open a session nobody owns).
        let session = match req.headers().get(SESSION_HEADER).map(|v| v.to_str()) {
            None => None,
            Some(Ok(id)) => Some(id),
            Some(Err(_)) => return Err(refuse(StatusCode::BAD_REQUEST, "the Mcp-Session-Id header is not text")),
        };
        if session.is_some_and(|id| !self.sessions.usable_by(id, auth::session_key(&caller))) {
            return Err(refuse(StatusCode::NOT_FOUND, "no such session"));
        }
        req.extensions_mut().insert(caller.clone());
        Ok(Some(caller))
    }

    /// Hand a POST to rmcp. It counts as in flight (and its session as busy) until its response body has been
    /// sent: a tool call's result travels on the request's own response stream, so neither shutdown nor eviction
    /// may close the session before that body ends. A POST may open a session: if rmcp could not (every session
    /// busy, found only now because another `initialize` took the last idle place meanwhile), the client gets the
    /// same 503 as [`Gate::refuse_new_session`] gives instead of rmcp's bare 500.
    async fn forward(&self, req: Request, next: Next, busy: Option<Busy>, caller: Option<Arc<Caller>>) -> Response {
        let in_flight = self.in_flight.enter();
        let (response, opened) = sessions::opening(next.run(req)).await;
        if opened.refused {
            return self.full();
        }
        // AUTH-8: a new session belongs to its caller before the client learns its id (an existing owner stays).
        if let (Some(caller), Some(id)) = (caller, response.headers().get(SESSION_HEADER)) {
            self.sessions.claim(id.to_str().unwrap_or_default(), auth::session_key(&caller));
        }
        // Dropped here: a new session's `initialize` has been answered.
        drop(opened.busy);
        let (parts, body) = response.into_parts();
        let held = (in_flight, busy);
        let body = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
            let _held = &held;
            chunk
        });
        Response::from_parts(parts, Body::from_stream(body))
    }

    /// The answer to a new session when every open one is busy at the cap.
    fn full(&self) -> Response {
        let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, sessions::full_message(self.sessions.max()));
        response.headers_mut().insert(RETRY_AFTER, axum::http::HeaderValue::from_static("5"));
        response
    }

    /// Exactly one well-formed, allowed `Host`; at most one well-formed, allowed `Origin`.
    fn check_headers(&self, headers: &HeaderMap) -> std::result::Result<(), &'static str> {
        let mut hosts = headers.get_all(HOST).iter();
        match (hosts.next(), hosts.next()) {
            (None, _) if self.hosts.is_some() => return Err("a Host header is required"),
            (None, _) => {}
            (Some(h), None) => {
                let ok = h.to_str().is_ok_and(|h| guard::host_allowed(h, self.hosts.as_deref()));
                if !ok {
                    return Err("the Host header is not an allowed host[:port]");
                }
            }
            (Some(_), Some(_)) => return Err("more than one Host header"),
        }
        let mut origins = headers.get_all(ORIGIN).iter();
        match (origins.next(), origins.next()) {
            (None, _) => Ok(()),
            (Some(o), None) if o.to_str().is_ok_and(|o| guard::origin_allowed(o, &self.origin_names)) => Ok(()),
            (Some(_), None) => Err("the Origin header is not an allowed scheme://host[:port]"),
            (Some(_), Some(_)) => Err("more than one Origin header"),
        }
    }

    /// At the session cap with every session busy: an `initialize` (which would open a session) gets 503 before rmcp
    /// allocates anything;
    /// any other session-less request (the stateless 2026-07-28 lifecycle) goes on. Only reached at the cap, so
    /// the body is read here only then.
    async fn refuse_new_session(&self, req: Request) -> std::result::Result<Request, Response> {
        #[derive(serde::Deserialize)]
        struct Probe<'a> {
            #[serde(borrow)]
            method: Option<&'a str>,
        }
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, self.max_body).await else {
            return Err(refuse(StatusCode::PAYLOAD_TOO_LARGE, "the request body is too large"));
        };
        let opens = serde_json::from_slice::<Probe<'_>>(&bytes).is_ok_and(|p| p.method == Some("initialize"));
        if opens && self.sessions.is_full() {
            return Err(self.full());
        }
        Ok(Request::from_parts(parts, Body::from(bytes)))
    }
}

impl Gate {
    /// A legacy session's plain `tools/list` is answered here from the listing serialized at build, as a JSON
    /// response (which the transport allows for any request): a 10,000-tool listing is megabytes, and rmcp would
    /// clone and serialize every tool on every request. Anything else (another method, a cursor, an unknown or
    /// expired session, a 2026-07-28 request, a client that takes only SSE) goes to rmcp untouched.
    async fn cached_listing(
        &self,
        req: Request,
        caller: Option<Arc<Caller>>,
    ) -> std::result::Result<Response, Request> {
        let headers = req.headers();
        let Some(session) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned) else {
            return Err(req);
        };
        let takes_json = headers
            .get(axum::http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.split(',').any(|t| t.trim().starts_with("application/json")));
        let modern = headers.get("mcp-protocol-version").is_some_and(|v| v.as_bytes() >= b"2026-07-28".as_slice());
        if !takes_json || modern || !self.sessions.is_open(&session) {
            return Err(req);
        }
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, self.max_body).await else {
            return Ok(refuse(StatusCode::PAYLOAD_TOO_LARGE, "the request body is too large"));
        };
        match listing_request_id(&bytes) {
            Some(id) => {
                let span = crate::telemetry::mcp_span("tools/list", None, Some(&session), &id, None);
                #[cfg(feature = "otel")]
                super::caller_trace::continue_from_headers(&span, &parts.headers);
                let _span = span.entered();
                let head = bytes::Bytes::from(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#));
                let chunks = std::iter::once(head)
                    .chain(self.listing.chunks(self.shared.visible(caller)))
                    .chain(std::iter::once(bytes::Bytes::from_static(b"}")));
                let body = Body::from_stream(futures::stream::iter(chunks.map(Ok::<_, std::convert::Infallible>)));
                let mut response = Response::new(body);
                response.headers_mut().insert(CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"));
                Ok(response)
            }
            None => Err(Request::from_parts(parts, Body::from(bytes))),
        }
    }
}

/// Note why a `tools/call`'s arguments are refused as sent (a key twice, say; see `arguments`) before rmcp decodes
/// the body.
async fn mark_refused_arguments(req: Request, max_body: usize) -> std::result::Result<Request, Response> {
    let (mut parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
        return Err(refuse(StatusCode::PAYLOAD_TOO_LARGE, "the request body is too large"));
    };
    if let Some(error) = super::arguments::in_call(&bytes) {
        parts.extensions.insert(super::arguments::RefusedArguments(error));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// The id of a JSON-RPC `tools/list` request without a cursor (its text, as sent), or `None` for anything else.
fn listing_request_id(body: &[u8]) -> Option<&str> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        jsonrpc: &'a str,
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
        method: &'a str,
        #[serde(borrow)]
        params: Option<&'a serde_json::value::RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        cursor: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe<'_> = serde_json::from_slice(body).ok()?;
    let id = probe.id?.get();
    let plain = match probe.params {
        None => true,
        Some(p) if p.get() == "null" => true,
        Some(p) => serde_json::from_str::<Params>(p.get()).is_ok_and(|p| p.cursor.is_none()),
    };
    // A JSON-RPC id is a string or a number; anything else goes to rmcp, which refuses it.
    let id_ok = id.starts_with('"') || id.starts_with(|c: char| c == '-' || c.is_ascii_digit());
    (probe.jsonrpc == "2.0" && probe.method == "tools/list" && plain && id_ok).then_some(id)
}

fn refuse(status: StatusCode, why: impl Into<String>) -> Response {
    let why = why.into();
    crate::telemetry::http_refused(status.as_u16(), &why);
    let mut response = Response::new(Body::from(why));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, axum::http::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// The host names an `Origin` may carry: the loopback names and the allowed hosts.
fn origin_names(hosts: Option<&[String]>) -> Vec<String> {
    let mut names: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    for h in hosts.unwrap_or_default() {
        if !names.contains(h) {
            names.push(h.clone());
        }
    }
    names
}

/// Serve `router` on `listener` until `shutdown` resolves, then stop accepting and shut the server down
/// gracefully ([`stop`]). Every accepted connection gets `TCP_NODELAY`: an SSE response goes out as several
/// writes, and with Nagle's algorithm the last waits for the client's delayed ACK (about 40 ms a request).
pub(crate) async fn serve(
    shared: Arc<Shared>,
    sessions_cancel: CancellationToken,
    listener: TcpListener,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY on an MCP connection");
        }
    });
    let stop_accepting = CancellationToken::new();
    let server = axum::serve(listener, app).with_graceful_shutdown(stop_accepting.clone().cancelled_owned());
    let mut server = std::pin::pin!(server.into_future());
    tokio::select! {
        r = &mut server => {
            return r.map_err(|e| Error::new(ErrorKind::Io, format!("the MCP server stopped: {e}")).with_source(e));
        }
        () = shutdown => {}
    }
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    stop_accepting.cancel();
    stop(&shared, &sessions_cancel, deadline).await;
    let _ = tokio::time::timeout_at(deadline.max(Instant::now() + Duration::from_millis(250)), &mut server).await;
    Ok(())
}

/// Wait until `deadline` for calls in progress, then stop the rest (their process groups are killed) and end
/// every session.
pub(crate) async fn stop(shared: &Shared, sessions_cancel: &CancellationToken, deadline: Instant) {
    let _ = tokio::time::timeout_at(deadline, shared.in_flight.wait_idle()).await;
    shared.calls_cancel.cancel();
    sessions_cancel.cancel();
}

#[cfg(test)]
mod tests {

    #[test]
    fn allowed_origins_are_local_names_and_served_hosts_on_any_port() {
        let o = allowed_origins(Some(&["agent.example".to_owned(), "::1".to_owned()]));
        assert!(o.contains(&"http://localhost:*".to_owned()));
        assert!(o.contains(&"https://[::1]:*".to_owned()));
        assert!(o.contains(&"http://agent.example:*".to_owned()));
        assert_eq!(o.iter().filter(|x| x.as_str() == "http://[::1]:*").count(), 1);
        assert!(!o.iter().any(|x| x.contains("0.0.0.0")));
    }

    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_binds_accept_loopback_names_only() {
        let hosts = allowed_hosts("127.0.0.1", addr("127.0.0.1:8080")).unwrap();
        assert_eq!(hosts, ["localhost", "127.0.0.1", "::1"]);
        let hosts = allowed_hosts("localhost", addr("127.0.0.1:8080")).unwrap();
        assert_eq!(hosts, ["localhost", "127.0.0.1", "::1"]);
    }

    #[test]
    fn a_specific_address_accepts_itself_and_its_name() {
        assert_eq!(allowed_hosts("10.1.2.3", addr("10.1.2.3:80")).unwrap(), ["10.1.2.3"]);
        assert_eq!(allowed_hosts("box.example", addr("10.1.2.3:80")).unwrap(), ["10.1.2.3", "box.example"]);
    }

    #[test]
    fn all_interfaces_accept_any_host() {
        assert_eq!(allowed_hosts("0.0.0.0", addr("0.0.0.0:80")), None);
        assert_eq!(allowed_hosts("::", addr("[::]:80")), None);
    }
}
