//! [`Shared`]: what every request of one server reads (the tools, the settings, the bounds), and the count of
//! requests in progress that shutdown waits for.

use super::auth::{Caller, ToolScopes};
use super::events::McpEventSink;
use super::listing::Visible;
use super::pending::PendingApprovals;
use crate::config::ConfirmOverMcp;
use crate::select::Toolset;
use rmcp::model::{ElicitationSchema, ServerConfig};
use rmcp::service::{RequestContext, RoleServer};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

/// Everything a request needs, built once and shared by every client.
pub(crate) struct Shared {
    /// The harness's policy hook (POL-1).
    pub(crate) policy: Option<Arc<dyn crate::policy::PolicyHook>>,
    /// The harness's audit trail (AUD-1).
    pub(crate) audit: Option<Arc<crate::audit::AuditTrail>>,
    pub(crate) identity: String,
    pub(crate) info: ServerConfig,
    pub(crate) tools: Toolset,
    /// The `tools/list` result, serialized once: the HTTP layer answers a legacy session's plain listing request
    /// with its bytes instead of re-serializing every tool per request.
    pub(crate) listing: Arc<super::listing::Listing>,
    pub(crate) confirm: ConfirmOverMcp,
    pub(crate) confirm_timeout: Duration,
    pub(crate) tool_timeout: Duration,
    pub(crate) max_concurrent: usize,
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) pending: PendingApprovals,
    pub(crate) form: ElicitationSchema,
    pub(crate) events: Arc<dyn McpEventSink>,
    pub(crate) in_flight: InFlight,
    /// Cancelled when shutdown stops waiting for in-flight calls: their process groups are killed.
    pub(crate) calls_cancel: CancellationToken,
    /// Calls run as tasks (TASK-1..6).
    pub(crate) tasks: super::tasks::Tasks,
    /// The scopes each tool needs (AUTH-5); empty without `auth`.
    pub(crate) scopes: Arc<ToolScopes>,
}

impl Shared {
    /// Which tools `caller` may see, or `None` when every tool is shown (no tool needs a scope).
    pub(crate) fn visible(&self, caller: Option<Arc<Caller>>) -> Option<Visible> {
        if !self.scopes.any() {
            return None;
        }
        let scopes = self.scopes.clone();
        Some(Arc::new(move |i| scopes.visible(i, caller.as_deref())))
    }

    /// Whether tool `name` is served to `caller` (AUTH-5).
    pub(crate) fn shown(&self, name: &str, caller: Option<&Caller>) -> bool {
        !self.scopes.any() || self.tools.position(name).is_some_and(|i| self.scopes.visible(i, caller))
    }
}

/// The caller an authenticated HTTP request carries (AUTH-8).
pub(crate) fn caller_of(context: &RequestContext<RoleServer>) -> Option<Arc<Caller>> {
    context.extensions.get::<axum::http::request::Parts>()?.extensions.get::<Arc<Caller>>().cloned()
}

/// Requests in progress, so shutdown can wait for them (MCP-22). Cheap to clone; a guard counts one request until
/// it is dropped.
#[derive(Debug, Clone, Default)]
pub(crate) struct InFlight(Arc<InFlightInner>);

#[derive(Debug, Default)]
struct InFlightInner {
    count: AtomicUsize,
    idle: Notify,
}

pub(crate) struct InFlightGuard(Arc<InFlightInner>);

impl InFlight {
    pub(crate) fn enter(&self) -> InFlightGuard {
        self.0.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self.0.clone())
    }

    /// Resolve once nothing is in progress.
    pub(crate) async fn wait_idle(&self) {
        loop {
            let notified = self.0.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.0.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
