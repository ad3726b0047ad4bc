//! A fleet of `fisk worker` processes over a real nats-server (2.11+) and the fake Messages API (WORK-*).
//!
//! Each request's prompt is `job <id>`; the fake API answers it from the conversation: turn `t` of a script of
//! `steps` turns calls `step` with token `<id>-<t>` (`slow-<id>-<t>`, a 1s step, when the id starts with `slow`),
//! then answers `done <id>`. The `stepper` fake app logs every step's start and end, so repeated tool calls and
//! repeated model turns can be counted per request.
//!
//! Users declare `mod common; mod fake_anthropic; mod stepper; mod fleet;`.
#![allow(dead_code)]

use crate::common::example;
use crate::common::nats::NatsServer;
use crate::fake_anthropic::streamed;
use crate::stepper::Stepper;
use async_nats::jetstream::{self, consumer, stream};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

pub struct Fleet {
    pub nats: NatsServer,
    pub stepper: Stepper,
    pub js: jetstream::Context,
    pub client: async_nats::Client,
}

/// The queue's settings for one test.
pub struct Queue {
    pub ack_wait: Duration,
    pub max_deliver: i64,
    pub max_concurrent_runs: usize,
    /// Model turns with a tool call before the answer.
    pub steps: usize,
}

impl Default for Queue {
    fn default() -> Self {
        Queue { ack_wait: Duration::from_secs(2), max_deliver: 5, max_concurrent_runs: 1, steps: 2 }
    }
}

/// The id a request's prompt names.
fn id_of(body: &Value) -> String {
    let first = &body["messages"][0]["content"];
    let text = match first {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    };
    text.strip_prefix("job ").unwrap_or(&text).trim().to_owned()
}

impl Fleet {
    /// The server, the session stream `RUNS`, the work-queue stream `WORK` (subject `work.runs`) with durable pull
    /// consumer `workers`, the results stream `RESULTS` over `results.>`, and a configuration naming them.
    pub async fn start(queue: Queue) -> Fleet {
        let nats = NatsServer::start_fencing();
        let stepper = Stepper::start_jetstream(Vec::new(), &nats.url(), "RUNS").await;
        let steps = queue.steps;
        stepper.server.set_responder(move |req| {
            let body = req.body_json();
            let id = id_of(body);
            let turn = crate::stepper::turn_of(body);
            if turn < steps {
                let token = if id.starts_with("slow") { format!("slow-{id}-{turn}") } else { format!("{id}-{turn}") };
                let call = json!({"type": "tool_use", "id": format!("call-{token}"), "name": "step", "input": {"token": token}});
                streamed(&[call], "tool_use")
            } else {
                streamed(&[json!({"type": "text", "text": format!("done {id}")})], "end_turn")
            }
        });
        let client = async_nats::connect(nats.url()).await.unwrap();
        let js = jetstream::new(client.clone());
        let fleet = Fleet { nats, stepper, js, client };
        fleet.make_queue(&queue, stream::RetentionPolicy::WorkQueue).await;
        fleet
            .js
            .create_stream(stream::Config {
                name: "RESULTS".into(),
                subjects: vec!["results.>".into()],
                duplicate_window: Duration::from_secs(600),
                ..Default::default()
            })
            .await
            .unwrap();
        fleet.write_config(&queue, "");
        fleet
    }

    pub async fn make_queue(&self, queue: &Queue, retention: stream::RetentionPolicy) {
        let work = self
            .js
            .create_stream(stream::Config {
                name: "WORK".into(),
                subjects: vec!["work.runs".into()],
                retention,
                ..Default::default()
            })
            .await
            .unwrap();
        work.create_consumer(consumer::pull::Config {
            durable_name: Some("workers".into()),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: queue.ack_wait,
            max_deliver: queue.max_deliver,
            ..Default::default()
        })
        .await
        .unwrap();
    }

    /// The stepper's configuration, plus the fake API's URL, the worker block and `extra` lines.
    pub fn write_config(&self, queue: &Queue, extra: &str) {
        let path = &self.stepper.config;
        let text = std::fs::read_to_string(path).unwrap();
        let base = text.split("\n# worker\n").next().unwrap().to_owned();
        let text = if base.contains("base_url:") {
            base
        } else {
            base.replace(
                "  model: test-model\n",
                &format!("  model: test-model\n  base_url: {}\n", self.stepper.server.url()),
            )
        };
        let block = format!(
            "\n# worker\nexpose:\n  agent:\n    worker:\n      stream: WORK\n      consumer: workers\n      results_prefix: results\n      max_concurrent_runs: {}\n      ack_wait: {}ms\n      max_deliver: {}\n{extra}",
            queue.max_concurrent_runs,
            queue.ack_wait.as_millis(),
            queue.max_deliver
        );
        std::fs::write(path, format!("{text}{block}")).unwrap();
    }

    /// A `fisk worker` process; its stderr lines are collected.
    pub fn worker(&self) -> WorkerProcess {
        let js = self.stepper.jetstream.as_ref().unwrap();
        let mut child = tokio::process::Command::new(example("cli"))
            .arg("worker")
            .arg("--config")
            .arg(&self.stepper.config)
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("STEPPER_LOG", &self.stepper.log)
            .env("XDG_CONFIG_HOME", js.xdg.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = lines.clone();
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        WorkerProcess { child, lines }
    }

    /// Publish a request body on the queue's subject, waiting for the stream's ack.
    pub async fn submit(&self, body: &Value) {
        self.submit_raw(body.to_string().into_bytes()).await;
    }

    pub async fn submit_raw(&self, body: Vec<u8>) {
        self.js.publish("work.runs", body.into()).await.unwrap().await.unwrap();
    }

    /// Every stored result by id, with how many messages each id's subject holds.
    pub async fn results(&self) -> HashMap<String, (Value, u64)> {
        use futures::StreamExt;
        let mut stream = self.js.get_stream("RESULTS").await.unwrap();
        let info = stream.info().await.unwrap();
        let mut counts: HashMap<String, u64> = HashMap::new();
        if info.state.messages > 0 {
            let mut subjects = stream.info_builder().subjects("results.>").fetch().await.unwrap();
            while let Some(Ok((subject, n))) = subjects.next().await {
                counts.insert(subject.trim_start_matches("results.").to_owned(), n as u64);
            }
        }
        let mut out = HashMap::new();
        for (id, n) in counts {
            let m = stream.get_last_raw_message_by_subject(&format!("results.{id}")).await.unwrap();
            out.insert(id, (serde_json::from_slice(&m.payload).unwrap(), n));
        }
        out
    }

    /// Wait until `n` results are stored; panics after `limit` with what the workers said.
    pub async fn wait_results(
        &self,
        n: usize,
        limit: Duration,
        workers: &[&WorkerProcess],
    ) -> HashMap<String, (Value, u64)> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let results = self.results().await;
            if results.len() >= n {
                return results;
            }
            if tokio::time::Instant::now() > deadline {
                let said: Vec<String> = workers.iter().map(|w| w.said()).collect();
                panic!("{} of {n} results after {limit:?}:\n{}", results.len(), said.join("\n----\n"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Messages left in the work queue.
    pub async fn queued(&self) -> u64 {
        self.js.get_stream("WORK").await.unwrap().info().await.unwrap().state.messages
    }

    /// (request id, turn) of every model request so far.
    pub fn model_turns(&self) -> Vec<(String, usize)> {
        let requests = self.stepper.server.requests();
        requests.iter().map(|r| (id_of(r.body_json()), crate::stepper::turn_of(r.body_json()))).collect()
    }

    /// The pid of the process running a slow step that has started and not ended, when there is one.
    pub fn running_slow_step(&self) -> Option<u32> {
        let ends: HashSet<String> = self.stepper.ends().into_iter().collect();
        let starts = self.stepper.starts_by();
        starts.into_iter().rev().find(|(t, _)| t.starts_with("slow-") && !ends.contains(t)).map(|(_, pid)| pid)
    }

    /// Wait until `worker` runs a slow step; panics after `limit`.
    pub async fn wait_slow_step(&self, worker: &WorkerProcess, limit: Duration) {
        let pid = worker.child.id().expect("running");
        let deadline = tokio::time::Instant::now() + limit;
        while self.running_slow_step() != Some(pid) {
            assert!(tokio::time::Instant::now() < deadline, "no slow step on worker {pid}:\n{}", worker.said());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// How many step starts repeat an earlier one.
    pub fn repeated_steps(&self) -> usize {
        let starts = self.stepper.starts();
        let mut seen = HashSet::new();
        starts.into_iter().filter(|s| !seen.insert(s.clone())).count()
    }
}

pub struct WorkerProcess {
    pub child: tokio::process::Child,
    pub lines: Arc<Mutex<Vec<String>>>,
}

impl WorkerProcess {
    pub fn said(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Wait until a stderr line satisfies `f`; panics after `limit`.
    pub async fn wait_line(&self, what: &str, limit: Duration, f: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(line) = self.lines.lock().unwrap().iter().find(|l| f(l)) {
                return line.clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}:\n{}", self.said());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub async fn ready(&self) {
        self.wait_line("the worker to be ready", Duration::from_secs(60), |l| l.starts_with("worker ready")).await;
    }

    pub fn signal(&self, signal: i32) {
        let pid = self.child.id().expect("running") as i32;
        // SAFETY-free: the `kill` command, not libc.
        std::process::Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().unwrap();
    }

    pub async fn exit(mut self) -> (Option<i32>, String) {
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait()).await.expect("exits").unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        (status.code(), self.said())
    }
}
