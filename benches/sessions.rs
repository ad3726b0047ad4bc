//! JetStream journals against file journals (SESS-14, SESS-32), in one run: the latency of one durable append
//! (p50/p99 over many), and a checkpointed scripted run writing a 17-record journal end to end. Needs nats-server
//! 2.11+ (`FISK_AI_NATS_SERVER_FENCING`, else `FISK_AI_NATS_SERVER`, else PATH). The ratios are printed before
//! criterion's own figures.

#[path = "../tests/common/nats.rs"]
mod nats;

use criterion::{Criterion, criterion_group, criterion_main};
use fisk_ai::Config;
use fisk_ai::agent::{Agent, RunOptions};
use fisk_ai::llm::{Message, ScriptedProvider};
use fisk_ai::nats::NatsConnection;
use fisk_ai::session::jetstream::JetStreamSessions;
use fisk_ai::session::{FileSessionStore, JournalRecord, Payload, SessionId, SessionStore, UserRecord};
use fisk_ai::tool::{ToolKind, ToolSpec};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/scripted.rs"]
mod scripted;
use scripted::{FakeTool, script};

#[path = "common/stats.rs"]
mod stats;
use stats::percentile;

/// p50 and p99 of `n` appends of a ~300-byte record to one new session of `store`.
async fn append_latency(store: &dyn SessionStore, n: u64) -> (Duration, Duration) {
    let mut w = store.create(&SessionId::generate()).await.unwrap();
    let text = "x".repeat(240);
    let mut times = Vec::with_capacity(n as usize);
    for seq in 1..=n {
        let record = JournalRecord::new(seq, Payload::User(UserRecord::new(Message::user(text.as_str()))));
        let start = Instant::now();
        w.append(&record).await.unwrap();
        times.push(start.elapsed());
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let server = nats::NatsServer::start_fencing();
    let dir = tempfile::tempdir_in(std::env::var_os("CARGO_TARGET_TMPDIR").unwrap_or_else(|| ".".into())).unwrap();
    let file: Arc<dyn SessionStore> = Arc::new(FileSessionStore::new(dir.path().join("runs")));
    let js: Arc<dyn SessionStore> = rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let config = async_nats::jetstream::stream::Config {
            name: "RUNS".into(),
            subjects: vec!["runs.>".into()],
            max_messages_per_subject: 1,
            discard: async_nats::jetstream::stream::DiscardPolicy::New,
            discard_new_per_subject: true,
            ..Default::default()
        };
        async_nats::jetstream::new(client.clone()).create_stream(config).await.unwrap();
        Arc::new(JetStreamSessions::bind(&NatsConnection::borrowed(client, "bench"), "RUNS").await.unwrap())
    });

    let (f50, f99) = rt.block_on(append_latency(&*file, 500));
    let (j50, j99) = rt.block_on(append_latency(&*js, 500));
    eprintln!("append latency over 500 appends: file p50 {f50:?} p99 {f99:?}; jetstream p50 {j50:?} p99 {j99:?}");
    eprintln!(
        "append latency ratio jetstream/file: p50 {:.2}x, p99 {:.2}x",
        j50.as_secs_f64() / f50.as_secs_f64(),
        j99.as_secs_f64() / f99.as_secs_f64()
    );

    let config = Config::from_yaml_str("identity: b\nsystem_prompt: s\nllm:\n  model: m\n").unwrap();
    let schema = serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let agent = |store: &Arc<dyn SessionStore>| {
        rt.block_on(
            Agent::builder()
                .config(config.clone())
                .provider(ScriptedProvider::new(script()))
                .session_store_arc(store.clone())
                .tool(FakeTool(ToolSpec::new("nop", ToolKind::Custom, schema.clone())))
                .build(),
        )
        .unwrap()
    };
    let run = |store: &Arc<dyn SessionStore>| {
        let a = agent(store);
        let start = Instant::now();
        let out = rt.block_on(a.run("go", RunOptions::new().with_checkpoint(SessionId::generate())));
        assert!(out.reason.is_success());
        start.elapsed()
    };
    let median = |store: &Arc<dyn SessionStore>| {
        let mut t: Vec<Duration> = (0..30).map(|_| run(store)).collect();
        t.sort();
        t[t.len() / 2]
    };
    let (fm, jm) = (median(&file), median(&js));
    eprintln!(
        "checkpointed 17-record run, median of 30: file {fm:?}, jetstream {jm:?} ({:.2}x)",
        jm.as_secs_f64() / fm.as_secs_f64()
    );

    let mut g = c.benchmark_group("sessions");
    for (name, store) in [("file", &file), ("jetstream", &js)] {
        g.bench_function(format!("append_{name}"), |b| {
            let mut w = rt.block_on(store.create(&SessionId::generate())).unwrap();
            let mut seq = 0;
            b.iter(|| {
                seq += 1;
                let record = JournalRecord::new(seq, Payload::User(UserRecord::new(Message::user("step"))));
                rt.block_on(w.append(black_box(&record))).unwrap();
            });
        });
        g.bench_function(format!("checkpointed_17_record_run_{name}"), |b| {
            b.iter_batched(
                || (agent(store), SessionId::generate()),
                |(a, id): (Agent, SessionId)| {
                    rt.block_on(async { black_box(a.run("go", RunOptions::new().with_checkpoint(id)).await) })
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(sessions_benches, benches);
criterion_main!(sessions_benches);
