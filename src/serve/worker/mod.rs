//! Agent runs taken from a JetStream work queue (WORK-1..12): `cli worker`, N of them, one stream.
//!
//! All coordination is JetStream's own: the operator's work-queue stream and durable pull consumer hand each
//! request to one worker; the worker extends its ack deadline while the run goes on, and acknowledges the request
//! only once the result is stored. A worker that dies stops extending, the server redelivers the request after
//! `ack_wait`, and the next worker resumes the run from its JetStream session journal: no recorded model turn is
//! requested again, and at most the one tool call whose result was not recorded runs again (SESS crash rules).
//!
//! - The worker binds and checks what the operator made, never creating anything (WORK-2): the stream has
//!   work-queue retention; the consumer is durable, pull, explicit-ack, with the configured `ack_wait` and
//!   `max_deliver`; a stream stores `<results_prefix>.>` with a duplicate window; sessions are in JetStream.
//! - A request is `{"id", "prompt", "session"?, "metadata"?, "budget"?}` ([`REQUEST_SCHEMA`]); its result
//!   `{"id", "outcome", "answer", "stats", "cost", "error"}` ([`RESULT_SCHEMA`]) goes to `<results_prefix>.<id>`
//!   with `Nats-Msg-Id: <id>`, so a result published twice is stored once (WORK-3).
//! - A bad body with a usable id gets an error result and is terminated; one with no usable id is terminated,
//!   reported and counted ([`RunningWorker::rejected`]). A request delivered `max_deliver` times without a result
//!   gets a final error result and is removed from the queue (WORK-5).
//! - A request's `budget` may only narrow `llm.budget` (WORK-6).
//! - Graceful shutdown stops fetching, suspends the runs in flight at their next boundary and gives their
//!   requests back for another worker (WORK-10).
//!
//! ```no_run
//! use fisk_ai::harness::Harness;
//! use fisk_ai::serve::worker::{Worker, WorkerEvent};
//! use fisk_ai::Config;
//! use std::sync::Arc;
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let harness = Arc::new(Harness::builder().config(Config::load("agent.yaml")?).build().await?);
//! let worker = Worker::builder()
//!     .harness(harness)
//!     .events(|e: &WorkerEvent<'_>| eprintln!("{e:?}"))
//!     .build()
//!     .await?; // checks the stream, the consumer, the results stream and the session store
//! let running = worker.start().await?;
//! fisk_ai::serve::shutdown_signal().await;
//! running.shutdown().await; // suspends the runs in flight for another worker
//! # Ok(()) }
//! ```

mod bind;
mod events;
mod exhausted;
mod job;
mod journal;
mod wire;

pub use events::{NoWorkerEvents, WorkerEvent, WorkerEventSink};
pub use wire::{MAX_ID_LEN, REQUEST_SCHEMA, RESULT_SCHEMA, ResultStats, RunResult};

use crate::agent::Agent;
use crate::config::Budget;
use crate::error::{Error, Result};
use crate::harness::Harness;
use crate::llm::Cost;
use crate::session::SessionStore;
use crate::tool::CancellationToken;
use async_nats::jetstream::{self, consumer::PullConsumer};
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// How long [`RunningWorker::shutdown`] waits for suspended runs to reach a boundary before abandoning them to
/// redelivery after `ack_wait`.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// How long one pull waits for requests before asking again (and noticing a shutdown).
const PULL_WAIT: Duration = Duration::from_secs(1);

/// What every delivery's task shares.
pub(crate) struct Shared {
    agent: Agent,
    sessions: Arc<dyn SessionStore>,
    js: jetstream::Context,
    stream: jetstream::stream::Stream,
    results_prefix: String,
    ack_wait: Duration,
    max_deliver: u32,
    budget: Budget,
    max_cost: Option<Cost>,
    events: Arc<dyn WorkerEventSink>,
    /// Cancelled on shutdown: every run in flight suspends at its next boundary.
    suspend: CancellationToken,
    rejected: AtomicU64,
    /// The sessions running in this process, so one session never runs twice here at once.
    running: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Shared {
    /// WORK-3: publish `result` to `<results_prefix>.<id>` with `Nats-Msg-Id: <id>` and wait until it is stored.
    async fn publish(&self, result: &RunResult) -> Result<()> {
        let subject = format!("{}.{}", self.results_prefix, result.id);
        let body = serde_json::to_vec(result).map_err(|e| Error::nats(format!("cannot encode a result: {e}")))?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", result.id.as_str());
        let stored = async {
            self.js.publish_with_headers(subject.clone(), headers, body.into()).await?.await?;
            Ok::<(), async_nats::Error>(())
        };
        stored.await.map_err(|e| Error::nats(format!("cannot store the result on {subject}: {e}")))
    }
}

/// Builds a [`Worker`].
#[derive(Default)]
pub struct WorkerBuilder {
    harness: Option<Arc<Harness>>,
    agent: Option<Agent>,
    events: Option<Arc<dyn WorkerEventSink>>,
    grace: Option<Duration>,
}

impl std::fmt::Debug for WorkerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerBuilder")
            .field("harness", &self.harness.is_some())
            .field("agent", &self.agent.is_some())
            .finish_non_exhaustive()
    }
}

impl WorkerBuilder {
    /// The harness: its configuration's `expose.agent.worker`, its NATS connection and its session store
    /// (required).
    #[must_use]
    pub fn harness(mut self, harness: Arc<Harness>) -> Self {
        self.harness = Some(harness);
        self
    }

    /// The agent that runs each request, when the host builds its own (e.g. with its own provider), from the same
    /// harness. Its session store is the one the worker reads journals from. By default one is built from the
    /// harness.
    #[must_use]
    pub fn agent(mut self, agent: Agent) -> Self {
        self.agent = Some(agent);
        self
    }

    /// Where the worker's events go (default: discarded).
    #[must_use]
    pub fn events(mut self, sink: impl WorkerEventSink + 'static) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// How long a shutdown waits for suspended runs ([`SHUTDOWN_GRACE`] by default).
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Check the configuration and bind the operator's stream, consumer and results stream (WORK-2).
    ///
    /// # Errors
    ///
    /// A configuration error, located, when `expose.agent.worker` is absent or sessions are not kept in JetStream,
    /// and (naming the `nats` command that fixes it) when the stream, the consumer or the results stream is
    /// missing or configured otherwise; a NATS error when the server cannot be reached.
    pub async fn build(self) -> Result<Worker> {
        let harness = self.harness.ok_or_else(|| Error::config("a worker needs a harness"))?;
        let config = harness.config();
        let settings = config.expose.agent.worker.clone().ok_or_else(|| {
            config.locate(Error::config_key("expose.agent.worker", "expose.agent.worker is required to run a worker"))
        })?;
        settings.validate().map_err(|e| config.locate(e))?;
        if config.harness.sessions.backend != "jetstream" {
            return Err(config.locate(Error::config_key(
                "harness.sessions.backend",
                "harness.sessions.backend: a worker journals every run so another worker can take it over: set \
                 backend: jetstream",
            )));
        }
        let agent = match self.agent {
            Some(agent) => agent,
            None => Agent::builder().harness(harness.clone()).build().await?,
        };
        // The agent's own store, so the journal the worker reads is the one its runs write.
        let sessions = agent.session_store().map_err(Error::session)?.clone();
        let max_cost = config.llm.budget.max_cost.map(Cost::from_usd).transpose()?;
        let nats = harness.nats().await?;
        let js = jetstream::new(nats.client().clone());
        let names = |v: &Option<String>| v.clone().unwrap_or_default();
        let (stream_name, consumer_name) = (names(&settings.stream), names(&settings.consumer));
        let results_prefix = names(&settings.results_prefix);
        let expected = bind::Expected {
            stream: &stream_name,
            consumer: &consumer_name,
            results_prefix: &results_prefix,
            ack_wait: settings.ack_wait(),
            max_deliver: settings.max_deliver(),
            context: nats.context(),
        };
        let (stream, consumer) = bind_queue(&js, &expected).await?;
        bind::check_results(&js, &expected).await?;
        let shared = Arc::new(Shared {
            agent,
            sessions,
            js,
            stream,
            results_prefix,
            ack_wait: settings.ack_wait(),
            max_deliver: settings.max_deliver(),
            budget: config.llm.budget.clone(),
            max_cost,
            events: self.events.unwrap_or_else(|| Arc::new(NoWorkerEvents)),
            suspend: CancellationToken::new(),
            rejected: AtomicU64::new(0),
            running: std::sync::Mutex::new(std::collections::HashSet::new()),
        });
        let grace = self.grace.unwrap_or(SHUTDOWN_GRACE);
        let max_runs = settings.max_concurrent_runs();
        Ok(Worker { shared, consumer, stream_name, consumer_name, max_runs, grace })
    }
}

/// The stream and consumer, checked (WORK-2).
async fn bind_queue(
    js: &jetstream::Context,
    want: &bind::Expected<'_>,
) -> Result<(jetstream::stream::Stream, PullConsumer)> {
    let (name, consumer) = (want.stream, want.consumer);
    let nats = |what: &str, e: &dyn std::fmt::Display| {
        let text = e.to_string();
        if text.contains("not found") || text.contains("10059") || text.contains("10014") {
            Error::config_key(
                "expose.agent.worker",
                format!(
                    "expose.agent.worker: {what} does not exist (context {}); the worker never creates it (fix: see \
                     `nats stream add --help` / `nats consumer add --help`, or the README's \"Running a fleet\")",
                    want.context
                ),
            )
        } else {
            Error::nats(format!("cannot read {what} (context {}): {e}", want.context))
        }
    };
    let mut stream = js.get_stream(name).await.map_err(|e| nats(&format!("stream {name}"), &e))?;
    let info = stream.info().await.map_err(|e| nats(&format!("stream {name}"), &e))?;
    bind::check_stream(&info.config, want)?;
    let info = stream.consumer_info(consumer).await.map_err(|e| nats(&format!("consumer {consumer} on {name}"), &e))?;
    bind::check_consumer(&info, want)?;
    let pull: PullConsumer =
        stream.get_consumer(consumer).await.map_err(|e| nats(&format!("consumer {consumer} on {name}"), &e))?;
    Ok((stream, pull))
}

/// A worker, bound and checked; [`start`](Worker::start) it to take requests.
pub struct Worker {
    shared: Arc<Shared>,
    consumer: PullConsumer,
    stream_name: String,
    consumer_name: String,
    max_runs: usize,
    grace: Duration,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("stream", &self.stream_name)
            .field("consumer", &self.consumer_name)
            .field("max_concurrent_runs", &self.max_runs)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A builder.
    pub fn builder() -> WorkerBuilder {
        WorkerBuilder::default()
    }

    /// The work-queue stream.
    pub fn stream(&self) -> &str {
        &self.stream_name
    }

    /// The durable consumer.
    pub fn consumer(&self) -> &str {
        &self.consumer_name
    }

    /// The results subject prefix.
    pub fn results_prefix(&self) -> &str {
        &self.shared.results_prefix
    }

    /// Runs at once.
    pub fn max_concurrent_runs(&self) -> usize {
        self.max_runs
    }

    /// The consumer's ack wait: how long after a worker dies its request is redelivered.
    pub fn ack_wait(&self) -> Duration {
        self.shared.ack_wait
    }

    /// The agent that runs each request.
    pub fn agent(&self) -> &Agent {
        &self.shared.agent
    }

    /// Start taking requests: subscribe to the consumer's max-deliveries advisories (WORK-5), then pull.
    ///
    /// # Errors
    ///
    /// A NATS error when the advisory subscription cannot be made.
    pub async fn start(self) -> Result<RunningWorker> {
        let stop = CancellationToken::new();
        let advisories = exhausted::subscribe(&self.shared, &self.stream_name, &self.consumer_name).await?;
        let consumer = self.consumer_name.clone();
        let watcher = tokio::spawn(exhausted::watch(self.shared.clone(), advisories, consumer, stop.clone()));
        let puller = tokio::spawn(pull(self.shared.clone(), self.consumer, self.max_runs, stop.clone(), self.grace));
        Ok(RunningWorker { shared: self.shared, stop, puller, watcher })
    }
}

/// Pull requests while there is room, one task per delivery; on stop, suspend what runs and wait out the grace.
async fn pull(shared: Arc<Shared>, consumer: PullConsumer, max_runs: usize, stop: CancellationToken, grace: Duration) {
    let room = Arc::new(Semaphore::new(max_runs));
    let mut runs = JoinSet::new();
    while !stop.is_cancelled() {
        while let Some(done) = runs.try_join_next() {
            report_panic(&shared, done);
        }
        let first = tokio::select! {
            () = stop.cancelled() => break,
            permit = room.clone().acquire_owned() => permit,
        };
        let Ok(first) = first else { break };
        let mut permits = vec![first];
        while let Ok(p) = room.clone().try_acquire_owned() {
            permits.push(p);
        }
        let batch = consumer.batch().max_messages(permits.len()).expires(PULL_WAIT).messages().await;
        let mut batch = match batch {
            Ok(batch) => batch,
            Err(e) => {
                shared.events.emit(&WorkerEvent::Trouble { what: &format!("cannot pull requests: {e}") });
                tokio::time::sleep(PULL_WAIT).await;
                continue;
            }
        };
        while let Some(next) = batch.next().await {
            let message = match next {
                Ok(m) => m,
                Err(e) => {
                    shared.events.emit(&WorkerEvent::Trouble { what: &format!("cannot pull requests: {e}") });
                    break;
                }
            };
            // Taken after the stop: given straight back, for another worker.
            if stop.is_cancelled() {
                let _ = message.ack_with(jetstream::AckKind::Nak(None)).await;
                continue;
            }
            let Some(permit) = permits.pop() else { break };
            let shared = shared.clone();
            runs.spawn(async move {
                job::handle(shared, message).await;
                drop(permit);
            });
        }
    }
    shared.suspend.cancel();
    let deadline = tokio::time::Instant::now() + grace;
    while !runs.is_empty() {
        if tokio::time::timeout_at(deadline, runs.join_next()).await.is_err() {
            // Left to redelivery: with no more in-progress acks, another worker gets them after ack_wait.
            runs.abort_all();
            break;
        }
    }
    // Every nak of the shutdown written out before the host may exit.
    let _ = shared.js.client().flush().await;
}

/// A delivery's task that panicked (a host's event sink, say): its request is left to redelivery.
fn report_panic(shared: &Shared, done: std::result::Result<(), tokio::task::JoinError>) {
    if let Err(e) = done
        && e.is_panic()
    {
        let what = format!("a request's task panicked; the request goes to another delivery: {e}");
        shared.events.emit(&WorkerEvent::Trouble { what: &what });
    }
}

/// A worker taking requests; [`shutdown`](RunningWorker::shutdown) it to stop.
#[must_use = "dropping a running worker stops it"]
pub struct RunningWorker {
    shared: Arc<Shared>,
    stop: CancellationToken,
    puller: tokio::task::JoinHandle<()>,
    watcher: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for RunningWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningWorker").field("stopping", &self.stop.is_cancelled()).finish_non_exhaustive()
    }
}

impl RunningWorker {
    /// Requests terminated with no result because they had no usable id (WORK-3), since start.
    pub fn rejected(&self) -> u64 {
        self.shared.rejected.load(Ordering::Relaxed)
    }

    /// Stop (WORK-10): no more pulls; runs in flight suspend at their next boundary and their requests are given
    /// back for another worker; runs that do not reach one within the grace are abandoned to redelivery after
    /// `ack_wait`. Returns [`rejected`](Self::rejected) as it stands once everything stopped.
    pub async fn shutdown(mut self) -> u64 {
        self.stop.cancel();
        let _ = (&mut self.puller).await;
        self.watcher.abort();
        self.rejected()
    }
}

/// Dropping a running worker stops it as [`shutdown`](RunningWorker::shutdown) does, without waiting.
impl Drop for RunningWorker {
    fn drop(&mut self) {
        self.stop.cancel();
        self.watcher.abort();
    }
}
