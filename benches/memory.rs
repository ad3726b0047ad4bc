//! Memory round trips (issue 14): create, read and guarded update through `MemorySession` (what the tools call),
//! on the JetStream backend (a real `nats-server -js` on loopback, one kept connection as an agent has) against
//! the file backend in the same run. It needs `nats-server` on PATH (or `FISK_AI_NATS_SERVER`).
//!
//! `cargo bench --bench memory`

#[path = "../tests/common/kv.rs"]
mod kv;
#[path = "../tests/common/nats.rs"]
mod nats;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use fisk_ai::memory::{FileMemoryStore, JetStreamMemory, MemoryRecord, MemorySession, MemoryStore, WriteOutcome};
use fisk_ai::nats::NatsConnection;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static NEXT: AtomicU64 = AtomicU64::new(0);

/// One round: create a new key, read it, update it (the read grants the guarded update).
async fn round(session: &MemorySession, record: &MemoryRecord) {
    let key = format!("k{}", NEXT.fetch_add(1, Ordering::Relaxed));
    assert_eq!(session.write(&key, record, false).await.unwrap(), WriteOutcome::Written);
    black_box(session.read(&key).await.unwrap().unwrap());
    assert_eq!(session.write(&key, record, true).await.unwrap(), WriteOutcome::Written);
    // Keep the store under the entry cap however many iterations criterion picks.
    session.delete(&key).await.unwrap();
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = nats::NatsServer::start();
    let nats = rt.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        kv::create_bucket(&client, "BENCH").await;
        NatsConnection::borrowed(client, "bench")
    });
    // Rounds and listings in separate stores: the rounds leave a delete marker per key, which a listing of the
    // same prefix would have to page through.
    let jetstream = |prefix: &'static str| {
        let nats = nats.clone();
        rt.block_on(async move {
            Arc::new(JetStreamMemory::bind(&nats, "BENCH", prefix).await.unwrap()) as Arc<dyn MemoryStore>
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| Arc::new(FileMemoryStore::new(dir.path().join(name))) as Arc<dyn MemoryStore>;
    let record = MemoryRecord::new("A note", "x".repeat(1024)).unwrap();

    let mut g = c.benchmark_group("memory");
    g.sample_size(30).measurement_time(Duration::from_secs(6));
    for (name, rounds, listed) in
        [("file", file("rounds"), file("listed")), ("jetstream", jetstream("rounds"), jetstream("listed"))]
    {
        let session = MemorySession::new(rounds);
        g.bench_with_input(BenchmarkId::new("create_read_update_delete", name), &name, |b, _| {
            b.iter(|| rt.block_on(round(&session, &record)))
        });
        let session = MemorySession::new(listed);
        g.bench_with_input(BenchmarkId::new("list_20", name), &name, |b, _| {
            rt.block_on(async {
                for i in 0..20 {
                    session.write(&format!("list{i}"), &record, false).await.unwrap();
                }
            });
            b.iter(|| rt.block_on(async { black_box(session.list().await.unwrap()) }))
        });
    }
    g.finish();
}

criterion_group!(memory, benches);
criterion_main!(memory);
