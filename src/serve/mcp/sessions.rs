//! Bounded MCP sessions: at most `max_sessions` open at once, each closed after `session_idle_timeout` without a
//! request. rmcp's own session manager has neither bound, so a client that opens sessions and walks away would
//! grow the server without limit (about 50 KB a session).

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// The cap is reached; the new session was never created.
    #[error("too many MCP sessions are open (max_sessions {0}); close one or raise expose.agent.mcp.max_sessions")]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's [`LocalSessionManager`] behind a cap and an idle expiry.
pub(crate) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    idle: Duration,
    /// Every open session and when it last saw a request.
    seen: Mutex<HashMap<SessionId, Instant>>,
    /// Serializes creation so two concurrent `initialize`s cannot both take the last place.
    creating: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for BoundedSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedSessions").field("max", &self.max).field("idle", &self.idle).finish_non_exhaustive()
    }
}

impl BoundedSessions {
    pub(crate) fn new(max: usize, idle: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        // rmcp's worker also stops itself when idle; the entry it leaves behind is reaped here.
        inner.session_config.keep_alive = Some(idle);
        BoundedSessions { inner, max, idle, seen: Mutex::new(HashMap::new()), creating: tokio::sync::Mutex::new(()) }
    }

    /// Sessions open now (idle ones not yet reaped included).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether another session can be opened without reaping: a cheap check for the HTTP layer.
    pub(crate) fn is_full(&self) -> bool {
        let seen = self.lock();
        seen.len() >= self.max && !seen.values().any(|t| t.elapsed() >= self.idle)
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Instant>> {
        // A panic while holding this lock leaves only timestamps behind, which stay valid.
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `id` names an open session that has not gone idle; counts as activity.
    pub(crate) fn is_open(&self, id: &str) -> bool {
        let mut seen = self.lock();
        match seen.get_mut(id) {
            Some(t) if t.elapsed() < self.idle => {
                *t = Instant::now();
                true
            }
            _ => false,
        }
    }

    fn touch(&self, id: &SessionId) {
        if let Some(t) = self.lock().get_mut(id) {
            *t = Instant::now();
        }
    }

    /// Close every session idle for longer than the expiry.
    async fn reap(&self) {
        let expired: Vec<SessionId> = {
            let seen = self.lock();
            seen.iter().filter(|(_, t)| t.elapsed() >= self.idle).map(|(id, _)| id.clone()).collect()
        };
        for id in expired {
            self.lock().remove(&id);
            if let Err(e) = self.inner.close_session(&id).await {
                tracing::debug!(session = %id, error = %e, "closing an idle MCP session failed");
            }
        }
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        self.reap().await;
        if self.len() >= self.max {
            return Err(SessionsError::Full(self.max));
        }
        let (id, transport) = self.inner.create_session().await?;
        self.lock().insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        let expired = match self.lock().get(id) {
            None => return Ok(false),
            Some(t) => t.elapsed() >= self.idle,
        };
        if expired {
            // Its worker may already have stopped; the client gets 404 and opens a new session.
            self.close_session(id).await?;
            return Ok(false);
        }
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.lock().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}
