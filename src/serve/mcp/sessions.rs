//! Bounded MCP sessions (MCP-24): at most `max_sessions` open at once, each closed after `session_idle_timeout`
//! without a request. rmcp's own session manager has neither bound, so a client that opens sessions and walks away
//! would grow the server without limit (about 50 KB a session).
//!
//! At the cap a new session takes the place of the least recently used one that has no request in progress: a
//! client that opens sessions and abandons them can no longer lock everyone else out until they expire. The
//! evicted session's next request gets rmcp's `404 Not Found` for an unknown `Mcp-Session-Id`, on which SDK
//! clients open a new session. Only when every session has a request in progress is a new one refused (`503`).
//!
//! A session counts as busy while the HTTP layer holds a [`Busy`] mark for it: from the moment a POST naming it
//! passes the gate until that POST's response body has been sent (a tool call's result travels on that body), and,
//! for a session being opened, until its `initialize` has been answered. The mark is taken under the same lock
//! that picks the eviction victim, so a request either marks its session before eviction can choose it, or finds
//! it already gone and gets the 404.

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// The cap is reached and every session has a request in progress; the new session was never created.
    #[error("{}", full_message(*.0))]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// The refusal a client gets when no session can make room for its new one.
pub(crate) fn full_message(max: usize) -> String {
    format!(
        "too many MCP sessions are open (max_sessions {max}) and every one has a request in progress; try again \
         later or raise expose.agent.mcp.max_sessions"
    )
}

/// One open session: when it last saw a request, and how many of its requests are in progress.
#[derive(Debug)]
struct Entry {
    last: Instant,
    busy: usize,
    /// The caller that opened it, on a server with `auth` (AUTH-8): nobody else may use it.
    owner: Option<Box<str>>,
}

impl Entry {
    fn new() -> Self {
        Entry { last: Instant::now(), busy: 0, owner: None }
    }
}

/// Every open session, shared with the [`Busy`] marks that must find their entry again when they end.
type Table = Arc<Mutex<HashMap<SessionId, Entry>>>;

fn lock(table: &Table) -> MutexGuard<'_, HashMap<SessionId, Entry>> {
    // A panic while holding this lock leaves only timestamps and counts behind, which stay valid.
    table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A request in progress for one session: while any is held the session is never evicted or expired. Dropping it
/// counts the end of the request as the session's latest activity.
#[derive(Debug)]
pub(crate) struct Busy {
    table: Table,
    id: SessionId,
}

impl Drop for Busy {
    fn drop(&mut self) {
        // The session may have been closed meanwhile (DELETE, shutdown): then there is nothing to release.
        if let Some(entry) = lock(&self.table).get_mut(&self.id) {
            entry.busy = entry.busy.saturating_sub(1);
            entry.last = Instant::now();
        }
    }
}

/// What [`BoundedSessions::create_session`] reports to the HTTP request that opened (or failed to open) a session.
#[derive(Debug, Default)]
pub(crate) struct Opening {
    /// The cap was reached and no session could make room: the request must be answered `503`.
    pub(crate) refused: bool,
    /// The new session, marked busy until its `initialize` has been answered, so that a concurrent `initialize`
    /// cannot evict it half-open.
    pub(crate) busy: Option<Busy>,
}

tokio::task_local! {
    /// Set by the HTTP gate around a request without a session: rmcp creates the session inside that request's
    /// task, and its error for a refusal is a bare 500, so the refusal (and the new session's mark) comes back here.
    static OPENING: RefCell<Opening>;
}

/// Run `request` (one that may open a session) and return what opening a session inside it reported.
pub(crate) async fn opening<F: Future>(request: F) -> (F::Output, Opening) {
    let scoped = async {
        let out = request.await;
        (out, OPENING.with(|o| std::mem::take(&mut *o.borrow_mut())))
    };
    OPENING.scope(RefCell::new(Opening::default()), scoped).await
}

/// rmcp's [`LocalSessionManager`] behind a cap with least-recently-used eviction of idle sessions, and an idle
/// expiry.
pub(crate) struct BoundedSessions {
    inner: LocalSessionManager,
    max: usize,
    idle: Duration,
    table: Table,
    /// Serializes creation so two concurrent `initialize`s cannot both take the last place.
    creating: tokio::sync::Mutex<()>,
    /// What else a session holds (its tasks), when the server has any.
    work: Option<Arc<dyn SessionWork>>,
}

/// Work a session holds beyond its requests: the server's tasks (TASK-4 makes each task its session's).
pub(crate) trait SessionWork: Send + Sync {
    /// Whether `session` has work still running, so evicting it would lose that work.
    fn working(&self, session: &str) -> bool;
    /// `session` is closed: its work can no longer be reached, so it is stopped.
    fn ended(&self, session: &str);
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
        BoundedSessions { inner, max, idle, table: Table::default(), creating: tokio::sync::Mutex::new(()), work: None }
    }

    /// Keep sessions with running `work` from eviction, and stop a session's work when it closes.
    pub(crate) fn with_work(mut self, work: Arc<dyn SessionWork>) -> Self {
        self.work = Some(work);
        self
    }

    /// Whether `id` is in use: a request in progress (`busy`), or running work.
    fn in_use(&self, id: &SessionId, busy: usize) -> bool {
        busy > 0 || self.work.as_ref().is_some_and(|w| w.working(id))
    }

    /// Sessions open now (idle ones not yet reaped included); never more than [`max`](Self::max).
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether a new session would be refused: the cap is reached and every session has a request in progress. A
    /// cheap check for the HTTP layer, which refuses before rmcp allocates anything.
    pub(crate) fn is_full(&self) -> bool {
        let table = self.lock();
        table.len() >= self.max && table.iter().all(|(id, e)| self.in_use(id, e.busy))
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Entry>> {
        lock(&self.table)
    }

    /// Mark a request for session `id` in progress, or `None` when no such session is open or it has gone idle
    /// past the expiry (rmcp then answers 404: a late request does not revive an expired session). Counts as
    /// activity.
    pub(crate) fn enter(&self, id: &str) -> Option<Busy> {
        let mut table = self.lock();
        let id = table.get_key_value(id)?.0.clone();
        let entry = table.get_mut(&id).filter(|e| !self.expired(e))?;
        entry.busy += 1;
        entry.last = Instant::now();
        Some(Busy { table: self.table.clone(), id })
    }

    /// Record `owner` as the caller that opened session `id` (AUTH-8), before the client learns the id.
    pub(crate) fn claim(&self, id: &str, owner: &str) {
        if let Some(entry) = self.lock().get_mut(id) {
            entry.owner.get_or_insert_with(|| owner.into());
        }
    }

    /// Whether a request by `caller` may use session `id`: no such session (rmcp answers 404) or one `caller`
    /// opened. On a server with `auth` every session is claimed before its client learns the id, so an unclaimed
    /// one is nobody's to use.
    pub(crate) fn usable_by(&self, id: &str, caller: &str) -> bool {
        match self.lock().get(id) {
            None => true,
            Some(entry) => entry.owner.as_deref() == Some(caller),
        }
    }

    /// Whether `id` names an open session that has not gone idle; counts as activity.
    pub(crate) fn is_open(&self, id: &str) -> bool {
        let mut table = self.lock();
        match table.get_mut(id) {
            Some(e) if e.busy > 0 || e.last.elapsed() < self.idle => {
                e.last = Instant::now();
                true
            }
            _ => false,
        }
    }

    fn touch(&self, id: &SessionId) {
        if let Some(e) = self.lock().get_mut(id) {
            e.last = Instant::now();
        }
    }

    fn expired(&self, entry: &Entry) -> bool {
        entry.busy == 0 && entry.last.elapsed() >= self.idle
    }

    /// Close every idle session past the expiry.
    async fn reap(&self) {
        let mut expired: Vec<SessionId> = Vec::new();
        self.lock().retain(|id, e| {
            let keep = !self.expired(e);
            if !keep {
                expired.push(id.clone());
            }
            keep
        });
        for id in expired {
            self.close_inner(&id, "idle past session_idle_timeout").await;
        }
    }

    /// At the cap, take the least recently used session without a request in progress out of the table (it is
    /// closed by the caller, outside the lock). `Err` when every session is busy.
    fn make_room(&self) -> Result<Option<SessionId>, SessionsError> {
        let mut table = self.lock();
        if table.len() < self.max {
            return Ok(None);
        }
        let victim = table
            .iter()
            .filter(|(id, e)| !self.in_use(id, e.busy))
            .min_by_key(|(_, e)| e.last)
            .map(|(id, _)| id.clone());
        let victim = victim.ok_or(SessionsError::Full(self.max))?;
        table.remove(&victim);
        Ok(Some(victim))
    }

    /// Stop rmcp's worker for a session already out of the table.
    async fn close_inner(&self, id: &SessionId, why: &str) {
        tracing::debug!(session = %id, max_sessions = self.max, "closing MCP session: {why}");
        if let Err(e) = self.inner.close_session(id).await {
            tracing::debug!(session = %id, error = %e, "closing an MCP session failed");
        }
        // After the close, which cancelled the session's requests: none can start a task now.
        self.end_work(id);
    }

    /// Stop the work of a session that is closing.
    fn end_work(&self, id: &SessionId) {
        if let Some(work) = &self.work {
            work.ended(id);
        }
    }

    /// Report a refusal to the request opening the session, if it runs inside [`opening`].
    fn report_refusal(&self) {
        let _outside_a_gated_request = OPENING.try_with(|o| o.borrow_mut().refused = true);
    }

    /// Record a new session, marked busy for the request opening it when that request runs inside [`opening`].
    fn admit(&self, id: &SessionId) {
        let mut entry = Entry::new();
        let marked = OPENING
            .try_with(|o| {
                o.borrow_mut().busy = Some(Busy { table: self.table.clone(), id: id.clone() });
            })
            .is_ok();
        if marked {
            entry.busy = 1;
        }
        self.lock().insert(id.clone(), entry);
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.creating.lock().await;
        self.reap().await;
        let victim = self.make_room().inspect_err(|_| self.report_refusal())?;
        if let Some(victim) = victim {
            self.close_inner(&victim, "least recently used idle session, evicted at max_sessions").await;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.admit(&id);
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
            Some(e) => self.expired(e),
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
        let closed = self.inner.close_session(id).await;
        // After the close, which cancelled the session's requests: none can start a task now.
        self.end_work(id);
        Ok(closed?)
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn open(sessions: &BoundedSessions) -> Result<SessionId, SessionsError> {
        sessions.create_session().await.map(|(id, _transport)| id)
    }

    #[tokio::test]
    async fn mcp_24_eviction_takes_the_least_recently_used_unmarked_session_and_refuses_when_all_are_marked() {
        let sessions = BoundedSessions::new(2, Duration::from_secs(300));
        let a = open(&sessions).await.unwrap();
        let b = open(&sessions).await.unwrap();
        // `a` is the least recently used, but marked: `b` goes.
        let busy_a = sessions.enter(&a).expect("a is open");
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(sessions.is_open(&b), "b is used after a");
        assert!(!sessions.is_full(), "b can make room");
        let c = open(&sessions).await.unwrap();
        assert_eq!(sessions.len(), 2);
        assert!(sessions.enter(&b).is_none(), "b was evicted");
        assert!(sessions.is_open(&a));
        // Every session marked: refused, nothing evicted.
        let busy_c = sessions.enter(&c).expect("c is open");
        assert!(sessions.is_full());
        assert!(matches!(open(&sessions).await, Err(SessionsError::Full(2))));
        assert_eq!(sessions.len(), 2);
        // A mark held twice stays until both end.
        let again_c = sessions.enter(&c).unwrap();
        drop(busy_c);
        assert!(sessions.is_full());
        drop(busy_a);
        let d = open(&sessions).await.unwrap();
        assert!(sessions.enter(&a).is_none(), "a, unmarked, made room");
        assert!(sessions.is_open(&c) && sessions.is_open(&d));
        drop(again_c);
    }

    #[tokio::test]
    async fn mcp_24_an_expired_session_is_not_revived_by_a_late_request() {
        let sessions = BoundedSessions::new(2, Duration::from_millis(1));
        let a = open(&sessions).await.unwrap();
        let b = open(&sessions).await.unwrap();
        let busy_b = sessions.enter(&b).unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(sessions.enter(&a).is_none(), "a is past the expiry");
        assert!(!sessions.has_session(&a).await.unwrap(), "and gets 404");
        assert!(sessions.has_session(&b).await.unwrap(), "b, marked, does not expire");
        drop(busy_b);
    }
}
