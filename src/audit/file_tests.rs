//! Unit tests of the file sink's writer (AUD-10), against `/dev/null` where a sync must fail.

use super::*;
use crate::audit::{AuditSink, Event};

/// A sink over `/dev/null`, whose `fdatasync` the kernel refuses (EINVAL) while its writes succeed.
fn unsyncable() -> FileSink {
    let null = || OpenOptions::new().append(true).open("/dev/null").unwrap();
    let path = PathBuf::from("/dev/null");
    let writer = Writer {
        path: path.clone(),
        file: Arc::new(null()),
        unsynced: false,
        size: 0,
        first: None,
        chain: Chain::genesis(),
        rotate_bytes: u64::MAX,
        _lock: null(),
        broken: None,
    };
    FileSink::start(path, writer).unwrap()
}

fn entries() -> [Entry; 1] {
    [Entry::new(Event::Requested, "other", "t")]
}

/// AUD-10: a settled record is acknowledged once written, and the writer thread syncs it; when that sync fails,
/// the trail is broken and later appends are refused. Only settled appends are made, which never sync
/// themselves, so the failure can only be the writer thread's sync.
#[tokio::test]
async fn aud_10_a_failed_sync_after_a_settled_write_refuses_later_appends() {
    let sink = unsyncable();
    sink.append_settled(&entries()).await.expect("acknowledged once written");
    let mut refused = None;
    for _ in 0..1000 {
        if let Err(e) = sink.append_settled(&entries()).await {
            refused = Some(e.to_string());
            break;
        }
        tokio::task::yield_now().await;
    }
    let why = refused.expect("the sync failed and broke the trail");
    assert!(why.contains("an earlier write failed (cannot sync it"), "{why}");
    let durable = sink.append(&entries()).await.unwrap_err().to_string();
    assert!(durable.contains("an earlier write failed"), "{durable}");
}

/// AUD-10: dropping the sink right after a settled append waits for the sync the append queued (here the sync
/// fails, which leaves its mark on the writer).
#[tokio::test]
async fn aud_10_dropping_the_sink_waits_for_the_sync_of_settled_records() {
    let sink = unsyncable();
    sink.append_settled(&entries()).await.expect("acknowledged once written");
    let writer = sink.writer.clone();
    drop(sink);
    let why = lock(&writer).broken.clone().expect("the records were synced before the sink closed");
    assert!(why.contains("cannot sync it"), "{why}");
}

/// A panic while the writer's lock was held may have left the chain ahead of the file: the trail is broken, and
/// every later append is refused rather than written after a gap.
#[tokio::test]
async fn a_poisoned_writer_lock_breaks_the_trail() {
    let dir = tempfile::tempdir().unwrap();
    let sink = FileSink::open(dir.path().join("t.jsonl"), 1 << 20).unwrap();
    sink.append(&entries()).await.unwrap();
    let writer = sink.writer.clone();
    let panicked = std::thread::spawn(move || {
        let _held = writer.lock().unwrap();
        panic!("a panic while the lock is held");
    })
    .join();
    assert!(panicked.is_err());
    let settled = sink.append_settled(&entries()).await.unwrap_err().to_string();
    assert!(settled.contains("a writer panicked"), "{settled}");
    let durable = sink.append(&entries()).await.unwrap_err().to_string();
    assert!(durable.contains("a writer panicked"), "{durable}");
}
