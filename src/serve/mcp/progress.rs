//! Progress notifications for a running call (PROG-1..3).
//!
//! When a `tools/call` carries `_meta.progressToken`, the server reports on the call while it runs: at most one
//! `notifications/progress` a second (PROG-1), each with the seconds elapsed as its increasing `progress` and a
//! message saying so. A tool tagged `ai:progress` adds the last line its command printed (PROG-2); without the tag
//! no output is ever quoted, since a command's output may hold secrets. Stdout and stderr share one pipe (EXEC-11),
//! so that line is the last of either. Nothing is reported without a token, and a call that ends within a second
//! reports nothing (PROG-3).
//!
//! A call that runs as a task (TASK-1) has no request left to report on: the same message becomes the task's
//! status message, which `tasks/get` returns, at the same rate and under the same tag.

use crate::gate::sanitize;
use crate::tool::{OutputTail, ToolSpec, tags};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::task_manager::TaskContext;
use std::time::Duration;
use tokio::time::Instant;

/// How often a running call is reported on, at most.
pub(crate) const EVERY: Duration = Duration::from_secs(1);
/// The longest output line quoted in a message.
const LINE_LIMIT: usize = 200;

/// Where reports go.
enum Sink {
    /// `notifications/progress` with the client's token.
    Client { peer: Peer<RoleServer>, token: ProgressToken },
    /// The status message of the task the call runs as.
    Task(TaskContext),
}

/// Reports on one call that asked for progress.
pub(crate) struct Reporter {
    sink: Sink,
    tail: Option<OutputTail>,
}

impl Reporter {
    /// A reporter for a call of `spec` on `context`'s request, when the client asked for progress or the call runs
    /// as `task`.
    pub(crate) fn new(
        context: &RequestContext<RoleServer>,
        spec: &ToolSpec,
        task: Option<&TaskContext>,
    ) -> Option<Reporter> {
        let sink = match task {
            Some(task) => Sink::Task(task.clone()),
            None => Sink::Client { peer: context.peer.clone(), token: context.meta.get_progress_token()? },
        };
        let tail = spec.tags().contains(tags::PROGRESS).then(OutputTail::new);
        Some(Reporter { sink, tail })
    }

    /// The tail the call should feed, when its output may be quoted.
    pub(crate) fn tail(&self) -> Option<OutputTail> {
        self.tail.clone()
    }

    /// Report until dropped, from a task of its own so a slow client never holds the call back. The guard stops
    /// it before the call's result is sent.
    pub(crate) fn start(self) -> Reporting {
        let started = Instant::now();
        Reporting(tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(started + EVERY, EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let elapsed = started.elapsed().as_secs();
                let mut message = format!("running for {elapsed}s");
                if let Some(line) = self.tail.as_ref().and_then(OutputTail::last_line) {
                    message.push_str(": ");
                    message.push_str(&sanitize(&line, LINE_LIMIT));
                }
                let (peer, token) = match &self.sink {
                    Sink::Task(task) => {
                        task.set_status_message(message);
                        continue;
                    }
                    Sink::Client { peer, token } => (peer, token),
                };
                #[expect(clippy::cast_precision_loss, reason = "seconds of one call are far below 2^52")]
                let param = ProgressNotificationParam::new(token.clone(), elapsed as f64).with_message(message);
                if peer.notify_progress(param).await.is_err() {
                    // The client is gone; the call ends with its session.
                    return;
                }
            }
        }))
    }
}

/// Stops the reports when dropped.
pub(crate) struct Reporting(tokio::task::JoinHandle<()>);

impl Drop for Reporting {
    fn drop(&mut self) {
        self.0.abort();
    }
}
