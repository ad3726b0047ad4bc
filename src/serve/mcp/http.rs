//! The streamable HTTP listener (MCP-3, MCP-4, MCP-22): rmcp's tower service at the listener root behind axum,
//! allowed `Host` headers following the bind address, a request body limit, and graceful shutdown.

use super::handler::{Handler, Shared};
use crate::{Error, ErrorKind, Result};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
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

/// Serve until `shutdown` resolves, then stop accepting, wait up to [`SHUTDOWN_GRACE`] for calls in progress, and
/// stop whatever is left (their process groups are killed).
pub(crate) async fn serve(
    shared: Arc<Shared>,
    listener: TcpListener,
    hosts: Option<Vec<String>>,
    max_body: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let sessions = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(sessions.clone())
        .with_max_request_body_bytes(max_body);
    // DNS rebinding: a browser page always sends its Origin, so only local origins (and the served names) pass,
    // whatever the bind; clients that are not browsers send none and are unaffected.
    let config = config.with_allowed_origins(allowed_origins(hosts.as_deref())).enforce_origin_validation();
    let config = match hosts {
        Some(hosts) => config.with_allowed_hosts(hosts),
        None => config.disable_allowed_hosts(),
    };
    let factory = {
        let shared = shared.clone();
        move || Ok(Handler(shared.clone()))
    };
    let service = StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    // A POST counts as in flight until its response body has been sent: a tool call's result travels on the
    // request's own response stream, so shutdown must not close sessions before that body ends.
    let in_flight = shared.in_flight.clone();
    let track = axum::middleware::from_fn(move |req: axum::extract::Request, next: axum::middleware::Next| {
        let in_flight = in_flight.clone();
        async move {
            if req.method() != axum::http::Method::POST {
                return next.run(req).await;
            }
            let guard = in_flight.enter();
            let (parts, body) = next.run(req).await.into_parts();
            let body = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
                let _held = &guard;
                chunk
            });
            axum::response::Response::from_parts(parts, axum::body::Body::from_stream(body))
        }
    });
    let app = axum::Router::new().route_service("/", service).layer(track);
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
    let _ = tokio::time::timeout_at(deadline, shared.in_flight.wait_idle()).await;
    shared.calls_cancel.cancel();
    sessions.cancel();
    let _ = tokio::time::timeout_at(deadline.max(Instant::now() + Duration::from_millis(250)), &mut server).await;
    Ok(())
}

/// A future that resolves on SIGINT or SIGTERM (MCP-22). The handlers are installed when this is called, not when
/// the future is first polled, so a signal arriving in between is not lost. Must be called inside a Tokio runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate()).ok();
    let int = signal(SignalKind::interrupt()).ok();
    async move {
        let wait = |s: Option<tokio::signal::unix::Signal>| async move {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = wait(term) => {}
            () = wait(int) => {}
        }
    }
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
