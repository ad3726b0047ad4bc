//! The fleet worker (issue 32, "Measure"), in one run against one nats-server 2.11+ (`FISK_AI_NATS_SERVER_FENCING`,
//! else `FISK_AI_NATS_SERVER`, else PATH):
//!
//! 1. Runs per second draining 200 pre-published requests through 1, 2 and 4 in-process `Worker`s (4 runs at once
//!    each), every run journaled to JetStream: a model turn calling an in-process tool that answers at once, then
//!    the answer (a provider that answers from the conversation, no network). Baseline in the same run, on the same
//!    stream and consumer shape: as many bare pullers (4 messages at once each) that publish a result with
//!    `Nats-Msg-Id`, wait for its PubAck and ack.
//! 2. Takeover time against `ack_wait` (1s, 2s, 4s): a worker on its own Tokio runtime is stopped dead (the
//!    runtime dropped mid-run: no more in-progress acks, no nak, its connection gone, as a SIGKILL leaves it) while
//!    its run waits on the model; measured from then until a second worker resumes the session.
//!
//! Timings are printed, never asserted. The figures are in the CHANGELOG.

#[path = "../tests/common/nats.rs"]
mod nats;

use async_nats::jetstream::{self, consumer, stream};
use fisk_ai::agent::Agent;
use fisk_ai::harness::Harness;
use fisk_ai::llm::{
    Block, Caps, ModelProvider, ProviderError, Request, Response, Role, ScriptedProvider, StopReason, Usage,
};
use fisk_ai::nats::NatsConnection;
use fisk_ai::serve::worker::{Worker, WorkerEvent};
use fisk_ai::tool::{ToolInput, ToolKind, ToolSpec};
use fisk_ai::{Config, async_trait};
use futures::StreamExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "common/scripted.rs"]
#[allow(dead_code, reason = "only the tool is used here")]
mod scripted;
use scripted::FakeTool;

const REQUESTS: usize = 200;

/// Turn 0 calls `nop`, turn 1 answers; `stall` makes turn 1 wait (so a worker can die mid-run).
struct Turns {
    caps: Caps,
    stall: Option<Arc<tokio::sync::Notify>>,
}

#[async_trait]
impl ModelProvider for Turns {
    fn capabilities(&self) -> &Caps {
        &self.caps
    }

    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
        let usage = Usage { input_tokens: 100, output_tokens: 20, ..Usage::default() };
        if !req.messages.iter().any(|m| m.role == Role::Assistant) {
            let call =
                Block::ToolUse { id: "c1".into(), name: "nop".into(), input: ToolInput::from_json("{}").unwrap() };
            return Ok(Response::new(vec![call], StopReason::ToolUse, usage));
        }
        if let Some(stalled) = &self.stall {
            stalled.notify_one();
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Ok(Response::new(vec![Block::text("done")], StopReason::EndTurn, usage))
    }
}

fn turns(stall: Option<Arc<tokio::sync::Notify>>) -> Turns {
    Turns { caps: ScriptedProvider::new([]).capabilities().clone(), stall }
}

/// Stream `name` (subject `<lower>.runs`, work-queue) with consumer `workers`, and results stream `R<name>`.
async fn queue(js: &jetstream::Context, name: &str, ack_wait: Duration) {
    let lower = name.to_lowercase();
    let work = js
        .create_stream(stream::Config {
            name: name.into(),
            subjects: vec![format!("{lower}.runs")],
            retention: stream::RetentionPolicy::WorkQueue,
            ..Default::default()
        })
        .await
        .unwrap();
    work.create_consumer(consumer::pull::Config {
        durable_name: Some("workers".into()),
        ack_policy: consumer::AckPolicy::Explicit,
        ack_wait,
        max_deliver: 5,
        max_ack_pending: 10_000,
        ..Default::default()
    })
    .await
    .unwrap();
    js.create_stream(stream::Config {
        name: format!("R{name}"),
        subjects: vec![format!("{lower}.results.>")],
        duplicate_window: Duration::from_secs(600),
        ..Default::default()
    })
    .await
    .unwrap();
}

async fn fill(js: &jetstream::Context, name: &str, n: usize) {
    let subject = format!("{}.runs", name.to_lowercase());
    let mut acks = Vec::with_capacity(n);
    for i in 0..n {
        let body = serde_json::json!({"id": format!("{name}-{i}"), "prompt": "go"}).to_string();
        acks.push(js.publish(subject.clone(), body.into()).await.unwrap());
    }
    for a in acks {
        a.await.unwrap();
    }
}

async fn stored(js: &jetstream::Context, name: &str) -> u64 {
    js.get_stream(format!("R{name}")).await.unwrap().info().await.unwrap().state.messages
}

async fn wait_stored(js: &jetstream::Context, name: &str, n: u64) {
    while stored(js, name).await < n {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn harness(nats: &NatsConnection, name: &str, ack_wait: Duration) -> Arc<Harness> {
    let yaml = format!(
        "identity: bench\nsystem_prompt: s\nllm:\n  model: m\nharness:\n  sessions:\n    backend: jetstream\n    options:\n      stream: RUNS\nexpose:\n  agent:\n    worker:\n      stream: {name}\n      consumer: workers\n      results_prefix: {}.results\n      max_concurrent_runs: 4\n      ack_wait: {}ms\n",
        name.to_lowercase(),
        ack_wait.as_millis()
    );
    let schema = serde_json::json!({"type": "object"});
    let h = Harness::builder()
        .config(Config::from_yaml_str(&yaml).unwrap())
        .nats(nats.clone())
        .tool(FakeTool(ToolSpec::new("nop", ToolKind::Custom, schema)))
        .build()
        .await
        .unwrap();
    Arc::new(h)
}

async fn worker(h: Arc<Harness>, provider: Turns, events: impl Fn(&WorkerEvent<'_>) + Send + Sync + 'static) -> Worker {
    let agent = Agent::builder().harness(h.clone()).provider(provider).build().await.unwrap();
    Worker::builder().harness(h).agent(agent).events(events).build().await.unwrap()
}

/// Seconds to drain the queue with `n` workers.
async fn through_workers(nats: &NatsConnection, js: &jetstream::Context, n: usize) -> f64 {
    let name = format!("W{n}");
    queue(js, &name, Duration::from_secs(30)).await;
    fill(js, &name, REQUESTS).await;
    let mut built = Vec::new();
    for _ in 0..n {
        let h = harness(nats, &name, Duration::from_secs(30)).await;
        built.push(worker(h, turns(None), |_: &WorkerEvent<'_>| {}).await);
    }
    let start = Instant::now();
    let mut running = Vec::new();
    for w in built {
        running.push(w.start().await.unwrap());
    }
    wait_stored(js, &name, REQUESTS as u64).await;
    let took = start.elapsed().as_secs_f64();
    for r in running {
        r.shutdown().await;
    }
    took
}

/// Seconds to drain the same queue shape with `n` bare pullers: publish a result (PubAck awaited), then ack.
async fn through_pullers(js: &jetstream::Context, n: usize) -> f64 {
    let name = format!("B{n}");
    queue(js, &name, Duration::from_secs(30)).await;
    fill(js, &name, REQUESTS).await;
    let start = Instant::now();
    let mut pullers = Vec::new();
    for _ in 0..n {
        let js = js.clone();
        let name = name.clone();
        // As the worker pulls: up to 4 in flight, each handled as it arrives.
        pullers.push(tokio::spawn(async move {
            let c: consumer::PullConsumer = js.get_stream(&name).await.unwrap().get_consumer("workers").await.unwrap();
            let room = Arc::new(tokio::sync::Semaphore::new(4));
            loop {
                let first = room.clone().acquire_owned().await.unwrap();
                let mut permits = vec![first];
                while let Ok(p) = room.clone().try_acquire_owned() {
                    permits.push(p);
                }
                let batch = c.batch().max_messages(permits.len()).expires(Duration::from_secs(1));
                let mut batch = batch.messages().await.unwrap();
                while let Some(Ok(m)) = batch.next().await {
                    let Some(permit) = permits.pop() else { break };
                    let js = js.clone();
                    let subject = format!("{}.results.{}", name.to_lowercase(), m.info().unwrap().stream_sequence);
                    tokio::spawn(async move {
                        let mut headers = async_nats::HeaderMap::new();
                        headers.insert("Nats-Msg-Id", subject.as_str());
                        js.publish_with_headers(subject.clone(), headers, "{}".into()).await.unwrap().await.unwrap();
                        m.double_ack().await.unwrap();
                        drop(permit);
                    });
                }
            }
        }));
    }
    wait_stored(js, &name, REQUESTS as u64).await;
    let took = start.elapsed().as_secs_f64();
    for p in pullers {
        p.abort();
    }
    took
}

/// From the moment a worker is stopped dead mid-run to the moment another resumes its session.
async fn takeover(nats: &NatsConnection, js: &jetstream::Context, url: &str, ack_wait: Duration) -> Duration {
    let name = format!("T{}", ack_wait.as_millis());
    queue(js, &name, ack_wait).await;
    // The victim, on a runtime of its own with a connection of its own.
    let stalled = Arc::new(tokio::sync::Notify::new());
    let victim_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (url, victim_name, stall) = (url.to_owned(), name.clone(), stalled.clone());
    let victim = victim_rt.spawn(async move {
        let client = async_nats::connect(url).await.unwrap();
        let h = harness(&NatsConnection::borrowed(client, "victim"), &victim_name, ack_wait).await;
        let running = worker(h, turns(Some(stall)), |_: &WorkerEvent<'_>| {}).await.start().await.unwrap();
        std::future::pending::<()>().await;
        drop(running);
    });
    fill(js, &name, 1).await;
    stalled.notified().await;
    // The rescuer, already pulling when the victim dies.
    let resumed: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let seen = resumed.clone();
    let h = harness(nats, &name, ack_wait).await;
    let rescuer = worker(h, turns(None), move |e: &WorkerEvent<'_>| {
        if let WorkerEvent::Started { resumed: true, .. } = e {
            seen.lock().unwrap().get_or_insert_with(Instant::now);
        }
    })
    .await
    .start()
    .await
    .unwrap();
    // Killed well into the run, after some in-progress acks, at a point unrelated to their rhythm.
    tokio::time::sleep(ack_wait.mul_f64(1.45)).await;
    let killed = Instant::now();
    victim.abort();
    victim_rt.shutdown_background();
    loop {
        let at = *resumed.lock().unwrap();
        if let Some(at) = at {
            wait_stored(js, &name, 1).await;
            rescuer.shutdown().await;
            return at - killed;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let server = nats::NatsServer::start_fencing();
    rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let js = jetstream::new(client.clone());
        js.create_stream(stream::Config {
            name: "RUNS".into(),
            subjects: vec!["runs.>".into()],
            max_messages_per_subject: 1,
            discard: stream::DiscardPolicy::New,
            discard_new_per_subject: true,
            ..Default::default()
        })
        .await
        .unwrap();
        let nats = NatsConnection::borrowed(client, "bench");
        eprintln!("{REQUESTS} requests each; worker: 4 runs at once per worker, one tool call per run, journaled");
        eprintln!("{:>8} {:>14} {:>16} {:>8}", "workers", "worker runs/s", "baseline msgs/s", "ratio");
        for n in [1, 2, 4] {
            let w = REQUESTS as f64 / through_workers(&nats, &js, n).await;
            let b = REQUESTS as f64 / through_pullers(&js, n).await;
            eprintln!("{n:>8} {w:>14.1} {b:>16.1} {:>7.3}x", w / b);
        }
        eprintln!("takeover after a worker dies mid-run (the second worker already pulling):");
        for secs in [1, 2, 4] {
            let ack_wait = Duration::from_secs(secs);
            let t = takeover(&nats, &js, &server.url(), ack_wait).await;
            eprintln!(
                "  ack_wait {ack_wait:?}: resumed after {t:?} ({:.2} of ack_wait)",
                t.as_secs_f64() / secs as f64
            );
        }
    });
}
