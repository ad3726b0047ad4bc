//! Graceful-shutdown signals for every server (MCP-22, A2A-12).

use std::future::Future;

/// A future that resolves on SIGINT or SIGTERM (MCP-22, A2A-12). The handlers are installed when this is called, not when
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
