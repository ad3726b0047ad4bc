//! Tool calls as MCP tasks: the `io.modelcontextprotocol/tasks` extension (SEP-2663), TASK-1..6.
//!
//! rmcp's [`TaskManager`] runs each task, keeps its state and answers `tasks/get`, `tasks/update` and
//! `tasks/cancel`; this module adds what a server of real commands needs around it:
//!
//! - Which calls become tasks (TASK-1): a command tool's call from a client that declared the extension, on the
//!   request or at `initialize`. Built-ins answer at once, and a client without the extension sees no change.
//! - A bound (TASK-3): at most `expose.agent.mcp.tasks.max` tasks are kept, running or finished, until their
//!   retention ends. Past it a new task is refused with a tool error naming the setting; nothing queues.
//! - Owners (TASK-4): a task belongs to the MCP session that created it. Another session's `tasks/get`,
//!   `tasks/update` or `tasks/cancel` gets exactly the error an unknown id gets, so ids cannot be probed. A client
//!   without a session (stdio, which serves one client; or the stateless 2026-07-28 lifecycle over HTTP) holds its
//!   tasks by their ids alone: 122 random bits that only the creating request's response carries.
//! - Cancellation that stops the command (TASK-2): rmcp's `tasks/cancel` only records the wish; here it cancels the
//!   call, which kills its process group, and the task settles `cancelled`.
//! - The TTL (TASK-3): `expose.agent.mcp.tasks.ttl` from creation. A task still running then is stopped (its
//!   process group killed) and settles `failed`; a finished one is dropped one TTL after it finished. Two clocks
//!   meet there: this module's deadline on the call and rmcp's TTL sweep, which aborts the call on the next task
//!   request; either way the call is dropped, which kills its process group, and the task reads `failed`.
//!
//! Approval (TASK-5) goes through the same gate rules as a direct call, asked in the task's own `input_required`
//! round (see the handler), and progress becomes the task's status message (PROG-1's rate and PROG-2's tag).

use super::auth::Principal;
use super::events::McpEvent;
use super::handler::Shared;
use crate::config::format_duration;
use crate::tool::{ToolInput, ToolKind};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, Task,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// TASK-1: answer `request` with a new task when it should run as one, or with the refusal when too many are kept
/// (TASK-3); `None` when it runs as a plain call.
pub(crate) async fn start(
    shared: &Arc<Shared>,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<CallToolResponse> {
    let declared = context.client_capabilities().is_some_and(|c| c.supports_tasks());
    let command = shared.tools.get(&request.name).is_some_and(|t| t.spec().kind() == ToolKind::Command);
    if !declared || !command {
        return None;
    }
    let owner = Owner::of(context);
    let (shared_in, request_in, context_in) = (shared.clone(), request.clone(), context.clone());
    let spawned =
        shared.tasks.spawn(owner, &context.ct, move |task| Box::pin(run(shared_in, request_in, context_in, task)));
    Some(match spawned {
        Ok(task) => CreateTaskResult::new(task).into(),
        Err(kept) => {
            let caller = super::handler::caller_of(context);
            shared.events.emit(&McpEvent::TaskRefused { name: &request.name, why: &kept, caller: caller.as_deref() });
            let text =
                format!("\"{}\" was not started: {kept}; retry once some have finished and expired", request.name);
            // AUD-1: a refusal is a decision point too, recorded before the caller reads it.
            if shared.audit.is_some() {
                let input = request.arguments.as_ref().map_or_else(ToolInput::empty, ToolInput::from_map);
                let scope = super::handler::audit_scope(shared, context);
                crate::audit::refused(scope, &request.name, input.as_str(), &text).await;
            }
            CallToolResult::error(vec![ContentBlock::text(text)]).into()
        }
    })
}

/// The body of one task: the call through the one dispatch path, stopped when the task is cancelled (TASK-2) or
/// outlives its TTL (TASK-3).
async fn run(
    shared: Arc<Shared>,
    request: CallToolRequestParams,
    mut context: RequestContext<RoleServer>,
    task: TaskContext,
) -> Result<CallToolResult, TaskExit> {
    // Shutdown waits for tasks as for any call, and stops them the same way.
    let _busy = shared.in_flight.enter();
    // However this ends (rmcp's TTL sweep may abort it before it returns), the task is counted as finished.
    let _finished = Finished(shared.clone(), task.task_id().to_owned());
    // The creating request is over: the task's own cancellation is the call's.
    let cancel = CancellationToken::new();
    context.ct = cancel.clone();
    let ttl = shared.tasks.ttl();
    let call = tokio::time::timeout(ttl, shared.call(request, context, Some(&task)));
    let cancelling = async {
        task.cancelled().await;
        cancel.cancel();
        std::future::pending::<Infallible>().await
    };
    let response = tokio::select! {
        r = call => r,
        never = cancelling => match never {},
    };
    if cancel.is_cancelled() {
        return Err(TaskExit::Cancelled);
    }
    match response {
        Ok(CallToolResponse::Complete(result)) => Ok(result),
        Ok(_) => Err(TaskExit::Error(McpError::internal_error("the call asked for another round inside a task", None))),
        Err(_) => Err(TaskExit::Error(McpError::internal_error(
            format!("the task did not finish within its ttl ({}) and was stopped", format_duration(ttl)),
            None,
        ))),
    }
}

/// Marks a task finished when its body ends or is dropped.
struct Finished(Arc<Shared>, String);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.tasks.finished(&self.1);
    }
}

/// How often a client is told to poll, in milliseconds.
const POLL_INTERVAL_MS: u64 = 1000;
/// Kept past rmcp's own retention, so this count never drops a task rmcp still holds.
const MARGIN: Duration = Duration::from_secs(1);

/// Who may see a task: the session that created it, or no one in particular (see the module docs); and on a
/// server with `auth`, only the caller that created it (AUTH-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    session: Option<String>,
    caller: Option<Principal>,
}

impl Owner {
    /// The owner of `context`'s request: its HTTP session, when it has one.
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Owner {
        let session = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get(super::http::SESSION_HEADER))
            .and_then(|v| v.to_str().ok());
        let caller = super::handler::caller_of(context).map(|c| Principal::of(&c));
        Owner { session: session.map(str::to_owned), caller }
    }

    /// Whether it counts against a share: it has a session or a caller.
    fn known(&self) -> bool {
        self.session.is_some() || self.caller.is_some()
    }

    /// Whether `other` counts against the same share: the same caller's (whatever its session), else the same
    /// session's.
    fn same_share(&self, other: &Owner) -> bool {
        match (&self.caller, &other.caller) {
            (Some(a), Some(b)) => a.quota == b.quota,
            (None, None) => self.session == other.session,
            _ => false,
        }
    }
}

/// One task as counted here.
struct Kept {
    owner: Owner,
    created: Instant,
    finished: Option<Instant>,
}

/// The tasks of one server.
pub(crate) struct Tasks {
    manager: TaskManager,
    kept: Mutex<HashMap<String, Kept>>,
    ttl: Duration,
    max: usize,
}

impl Tasks {
    pub(crate) fn new(ttl: Duration, max: usize) -> Tasks {
        Tasks { manager: TaskManager::new(), kept: Mutex::default(), ttl, max }
    }

    /// The TTL every task gets.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The most tasks one HTTP session keeps at once, a quarter of [`max`](Tasks::max) (at least one), so a
    /// single client cannot take every task place. A client without a session (stdio, which serves one client;
    /// or the stateless lifecycle) has no share of its own and is bound by `max` alone.
    pub(crate) fn share(&self) -> usize {
        self.max.div_ceil(4).max(1)
    }

    /// A session ended (its client closed it, it was idle past `session_idle_timeout`, or it was evicted): nobody
    /// can reach its tasks any more, so each one still running is cancelled, which stops its call and kills its
    /// process group. They stay counted until they expire, as rmcp keeps them until then.
    pub(crate) fn end_session(&self, session: &str) {
        let running: Vec<String> = self
            .lock()
            .iter()
            .filter(|(_, k)| k.owner.session.as_deref() == Some(session) && k.finished.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        for id in running {
            // An error: it finished meanwhile.
            let _ = self.manager.cancel_task(&id);
        }
    }

    /// Whether `session` has a task still running: such a session is not evicted to make room for another.
    pub(crate) fn running_in(&self, session: &str) -> bool {
        self.lock().values().any(|k| k.finished.is_none() && k.owner.session.as_deref() == Some(session))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Kept>> {
        self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Start a task for `owner`, or say why not: [`max`](Tasks::max) are kept, or a session its [`share`](Tasks::share) (TASK-3).
    pub(crate) fn spawn(
        &self,
        owner: Owner,
        request: &CancellationToken,
        make: impl FnOnce(TaskContext) -> TaskFuture,
    ) -> Result<Task, String> {
        // Held across the spawn: a task that finishes at once waits here until it is counted, so its finish is
        // never lost.
        let mut kept = self.lock();
        // Checked under the lock: a closing session cancels its requests before its tasks are collected (see
        // `end_session`), so a task is either collected and cancelled, or never made.
        if request.is_cancelled() {
            return Err("the request was cancelled (its session is closing)".to_owned());
        }
        let now = Instant::now();
        let ttl = self.ttl;
        kept.retain(|_, k| {
            let end = match k.finished {
                Some(at) => at.checked_add(ttl.saturating_add(MARGIN)),
                // rmcp stops it at its TTL, then keeps it one more.
                None => k.created.checked_add(ttl.saturating_mul(2).saturating_add(MARGIN)),
            };
            end.is_none_or(|end| now < end)
        });
        if kept.len() >= self.max {
            return Err(format!("this server already keeps {} tasks (expose.agent.mcp.tasks.max)", self.max));
        }
        if owner.known() && kept.values().filter(|k| k.owner.same_share(&owner)).count() >= self.share() {
            return Err(format!(
                "this session (or caller) already keeps {} tasks, its share (a quarter) of expose.agent.mcp.tasks.max",
                self.share()
            ));
        }
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let options = TaskOptions::new().with_ttl_ms(ttl_ms).with_poll_interval_ms(POLL_INTERVAL_MS);
        let task = self.manager.spawn(options, make);
        kept.insert(task.task_id.clone(), Kept { owner, created: now, finished: None });
        Ok(task)
    }

    /// Note that a task's call returned, which starts its retention.
    pub(crate) fn finished(&self, id: &str) {
        if let Some(k) = self.lock().get_mut(id) {
            k.finished.get_or_insert_with(Instant::now);
        }
    }

    /// TASK-4: the id, when `owner` may see it; otherwise the very error rmcp gives an unknown id.
    fn owned<'a>(&self, id: &'a str, owner: &Owner) -> Result<&'a str, McpError> {
        match self.lock().get(id) {
            Some(k) if &k.owner == owner => Ok(id),
            _ => Err(McpError::invalid_params(format!("unknown task: {id}"), None)),
        }
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, id: &str, owner: &Owner) -> Result<DetailedTask, McpError> {
        self.manager.get_task(self.owned(id, owner)?)
    }

    /// `tasks/update`: answers to the task's input requests.
    pub(crate) fn update(
        &self,
        id: &str,
        owner: &Owner,
        answers: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), McpError> {
        self.manager.update_task(self.owned(id, owner)?, answers)
    }

    /// `tasks/cancel`: rmcp records it and wakes the task, whose call is then stopped (TASK-2).
    pub(crate) fn cancel(&self, id: &str, owner: &Owner) -> Result<(), McpError> {
        self.manager.cancel_task(self.owned(id, owner)?)
    }
}

/// A session's tasks are its work: it is not evicted while one runs, and they are cancelled when it closes.
impl super::sessions::SessionWork for Shared {
    fn working(&self, session: &str) -> bool {
        self.tasks.running_in(session)
    }

    fn ended(&self, session: &str) {
        self.tasks.end_session(session);
    }
}
