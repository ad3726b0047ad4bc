//! The memory conformance kit (feature `testing`) against every backend this crate ships: file, in-process and
//! JetStream (a real `nats-server -js`).
#![cfg(feature = "testing")]

mod common;

use fisk_ai::conformance;
use fisk_ai::memory::{FileMemoryStore, InMemoryStore, MemoryStore};
use std::sync::Arc;

#[tokio::test]
async fn kit_holds_for_the_file_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    let report = conformance::memory::check("memory (file)", || {
        n += 1;
        let store = FileMemoryStore::new(dir.path().join(format!("case{n}")));
        async move { Arc::new(store) as Arc<dyn MemoryStore> }
    })
    .await;
    report.assert_passed();
    // MEM-21: the file backend has no revisions, so the compare-and-swap cases do not apply.
    assert_eq!(report.skipped.len(), 4, "{report}");
}

#[tokio::test]
async fn kit_holds_for_the_in_process_store() {
    let report = conformance::memory::check("memory (in-process)", || async {
        Arc::new(InMemoryStore::new()) as Arc<dyn MemoryStore>
    })
    .await;
    report.assert_passed();
    assert!(report.skipped.is_empty(), "{report}");
}

/// The kit can fail: a store that forgets what it was told does not pass.
#[tokio::test]
async fn kit_reports_a_store_that_breaks_the_contract() {
    use fisk_ai::async_trait;
    use fisk_ai::memory::{CreateOutcome, Entry, MemoryError, MemoryRecord, OverwriteOutcome, Stored};

    /// Accepts every write and remembers none of them.
    struct Forgetful;

    #[async_trait]
    impl MemoryStore for Forgetful {
        async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
            Ok(Vec::new())
        }
        async fn read(&self, _: &str) -> Result<Option<Stored>, MemoryError> {
            Ok(None)
        }
        async fn create(&self, _: &str, _: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
            Ok(CreateOutcome::Created { revision: None })
        }
        async fn overwrite(&self, _: &str, _: &MemoryRecord, _: Option<u64>) -> Result<OverwriteOutcome, MemoryError> {
            Ok(OverwriteOutcome::Written { revision: None })
        }
        async fn delete(&self, _: &str) -> Result<bool, MemoryError> {
            Ok(false)
        }
    }

    let report =
        conformance::memory::check("forgetful", || async { Arc::new(Forgetful) as Arc<dyn MemoryStore> }).await;
    assert!(!report.is_ok());
    let failed: Vec<&str> = report.failed.iter().map(|f| f.case).collect();
    for case in ["create_then_read_round_trips_the_record", "racing_creates_of_one_key_have_exactly_one_winner"] {
        assert!(failed.contains(&case), "{case} should fail: {report}");
    }
    let shown = report.to_string();
    assert!(shown.contains("FAILED create_of_an_existing_key_is_refused_and_keeps_the_value"), "{shown}");

    /// Asks runs for the read-before-update guard, but has no revisions to compare: the kit must not pass it by
    /// skipping the compare-and-swap cases.
    struct GuardedWithoutRevisions(InMemoryStore);
    #[async_trait]
    impl MemoryStore for GuardedWithoutRevisions {
        async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
            self.0.list().await
        }
        async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
            Ok(self.0.read(key).await?.map(|s| Stored::new(s.description, s.content, None)))
        }
        async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
            Ok(match self.0.create(key, record).await? {
                CreateOutcome::Created { .. } => CreateOutcome::Created { revision: None },
                other => other,
            })
        }
        async fn overwrite(
            &self,
            key: &str,
            r: &MemoryRecord,
            _: Option<u64>,
        ) -> Result<OverwriteOutcome, MemoryError> {
            self.0.overwrite(key, r, None).await.map(|_| OverwriteOutcome::Written { revision: None })
        }
        async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
            self.0.delete(key).await
        }
        fn requires_read_before_update(&self) -> bool {
            true
        }
    }
    let report = conformance::memory::check("guarded, no revisions", || async {
        Arc::new(GuardedWithoutRevisions(InMemoryStore::new())) as Arc<dyn MemoryStore>
    })
    .await;
    assert!(report.failed.iter().any(|f| f.case == "guarded_stores_report_revisions"), "{report}");
}

#[cfg(feature = "nats")]
#[tokio::test]
#[ignore = "needs nats-server (apt-get install -y nats-server); .ci/run runs it on 2.9 and 2.15"]
async fn kit_holds_for_the_jetstream_backend() {
    use common::nats::NatsServer;
    use fisk_ai::memory::JetStreamMemory;
    use fisk_ai::nats::NatsConnection;

    let server = NatsServer::start();
    let client = async_nats::connect(server.url()).await.unwrap();
    common::kv::create_bucket(&client, "KIT").await;
    let nats = NatsConnection::borrowed(client, "test");
    let mut n = 0;
    let report = conformance::memory::check("memory (jetstream)", || {
        // A fresh prefix per case: an empty store in the one bucket.
        n += 1;
        let (nats, prefix) = (nats.clone(), format!("case{n}"));
        async move { Arc::new(JetStreamMemory::bind(&nats, "KIT", &prefix).await.unwrap()) as Arc<dyn MemoryStore> }
    })
    .await;
    report.assert_passed();
    assert!(report.skipped.is_empty(), "{report}");
}
