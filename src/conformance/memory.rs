//! The [`MemoryStore`] kit: what every backend must do for the memory tools to behave the same over it.
//!
//! [`check`] runs each case on a fresh, empty store from the host's factory. Stores with revisions (that return
//! `Some` from reads and writes) also get the compare-and-swap cases; stores without them get those cases
//! reported as skipped.
//!
//! ```
//! use fisk_ai::conformance;
//! use fisk_ai::memory::{InMemoryStore, MemoryStore};
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let report = conformance::memory::check("memory (in-process)", || async {
//!     Arc::new(InMemoryStore::new()) as Arc<dyn MemoryStore>
//! })
//! .await;
//! report.assert_passed();
//! assert!(report.skipped.is_empty(), "the in-process store has revisions");
//! # }
//! ```

use super::{Report, ensure};
use crate::memory::{CreateOutcome, MemoryRecord, MemoryStore, OverwriteOutcome};
use std::future::Future;
use std::sync::Arc;

type Outcome = Result<(), String>;

/// Run every memory case against stores from `fresh`, which must return a new, empty store each call (for a
/// shared server: a new bucket or key prefix).
pub async fn check<F, Fut>(suite: &str, mut fresh: F) -> Report
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Arc<dyn MemoryStore>>,
{
    let mut report = Report::new(suite);
    report.record("read_of_a_missing_key_is_none", missing(fresh().await).await);
    report.record("create_then_read_round_trips_the_record", round_trip(fresh().await).await);
    report.record("create_of_an_existing_key_is_refused_and_keeps_the_value", create_twice(fresh().await).await);
    report.record("overwrite_without_revision_replaces_and_creates", blind_overwrite(fresh().await).await);
    report.record("delete_removes_once_and_a_key_can_be_created_again", delete(fresh().await).await);
    report.record("list_is_sorted_complete_and_skips_deleted_keys", list(fresh().await).await);
    report.record("count_matches_the_listing", count(fresh().await).await);
    report.record("racing_creates_of_one_key_have_exactly_one_winner", racing_creates(fresh().await).await);
    let store = fresh().await;
    let revisions = match store.create("probe", &record("Probe", "p")).await {
        Ok(CreateOutcome::Created { revision }) => revision.is_some(),
        other => {
            report.record("a_fresh_store_accepts_a_create", Err(format!("the probe create returned {other:?}")));
            false
        }
    };
    if store.requires_read_before_update() && !revisions {
        let why = "the store requires read-before-update (MEM-25) but reports no revisions to compare";
        report.record("guarded_stores_report_revisions", Err(why.into()));
    }
    if revisions {
        report.record("revisions_grow_with_every_write", revisions_grow(store).await);
        report.record("stale_compare_and_swap_is_a_conflict_and_writes_nothing", stale_cas(fresh().await).await);
        report.record("compare_and_swap_on_a_deleted_key_is_a_conflict", cas_after_delete(fresh().await).await);
        report.record("racing_compare_and_swaps_have_exactly_one_winner", racing_cas(fresh().await).await);
    } else {
        for case in [
            "revisions_grow_with_every_write",
            "stale_compare_and_swap_is_a_conflict_and_writes_nothing",
            "compare_and_swap_on_a_deleted_key_is_a_conflict",
            "racing_compare_and_swaps_have_exactly_one_winner",
        ] {
            report.skip(case, "the store reports no revisions");
        }
    }
    report
}

fn record(description: &str, content: &str) -> MemoryRecord {
    // Both are within MEM-9/MEM-10, so this cannot fail.
    MemoryRecord::new(description, content).unwrap_or_else(|e| unreachable!("kit record: {e}"))
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what} failed: {e}")
}

async fn missing(store: Arc<dyn MemoryStore>) -> Outcome {
    let read = store.read("absent").await.map_err(|e| err("read", e))?;
    ensure(read.is_none(), || format!("read of a key never written returned {read:?}"))?;
    let deleted = store.delete("absent").await.map_err(|e| err("delete", e))?;
    ensure(!deleted, || "delete of a key never written reported a removal".into())
}

async fn round_trip(store: Arc<dyn MemoryStore>) -> Outcome {
    // Content the record format must carry verbatim: a front-matter lookalike, blank lines, non-ASCII.
    let content = "---\ndescription: not the header\n---\n\n  café 🦀\n\ttrailing\n\n";
    let created = store.create("deploy.region_v2=eu-1", &record("Where we deploy", content)).await;
    let created = created.map_err(|e| err("create", e))?;
    let CreateOutcome::Created { revision } = created else {
        return Err(format!("create of a new key returned {created:?}"));
    };
    let read = store.read("deploy.region_v2=eu-1").await.map_err(|e| err("read", e))?;
    let read = read.ok_or("a created key reads as missing")?;
    ensure(read.description == "Where we deploy", || format!("description came back as {:?}", read.description))?;
    ensure(read.content == content, || format!("content came back as {:?}", read.content))?;
    ensure(read.revision == revision, || {
        format!("the read's revision {:?} is not the create's {revision:?}", read.revision)
    })
}

async fn create_twice(store: Arc<dyn MemoryStore>) -> Outcome {
    store.create("k", &record("First", "one")).await.map_err(|e| err("create", e))?;
    let again = store.create("k", &record("Second", "two")).await.map_err(|e| err("second create", e))?;
    match &again {
        CreateOutcome::Exists { existing_description } => {
            ensure(existing_description.as_deref().is_none_or(|d| d == "First"), || {
                format!("the refusal names the description {existing_description:?}, not the stored \"First\"")
            })?
        }
        other => return Err(format!("a create over an existing key returned {other:?}")),
    }
    let read = store.read("k").await.map_err(|e| err("read", e))?.ok_or("the key vanished")?;
    ensure(read.content == "one", || format!("the refused create changed the value to {:?}", read.content))
}

async fn blind_overwrite(store: Arc<dyn MemoryStore>) -> Outcome {
    store.create("k", &record("D", "old")).await.map_err(|e| err("create", e))?;
    let out = store.overwrite("k", &record("D2", "new"), None).await.map_err(|e| err("overwrite", e))?;
    ensure(matches!(out, OverwriteOutcome::Written { .. }), || format!("overwrite returned {out:?}"))?;
    let read = store.read("k").await.map_err(|e| err("read", e))?.ok_or("the key vanished")?;
    ensure(read.content == "new" && read.description == "D2", || format!("read back {read:?}"))?;
    let out = store.overwrite("fresh", &record("D", "v"), None).await.map_err(|e| err("overwrite (missing)", e))?;
    ensure(matches!(out, OverwriteOutcome::Written { .. }), || format!("overwrite of a missing key returned {out:?}"))?;
    let read = store.read("fresh").await.map_err(|e| err("read", e))?;
    ensure(read.is_some_and(|r| r.content == "v"), || "an overwrite without revision did not create the key".into())
}

async fn delete(store: Arc<dyn MemoryStore>) -> Outcome {
    store.create("k", &record("D", "v")).await.map_err(|e| err("create", e))?;
    ensure(store.delete("k").await.map_err(|e| err("delete", e))?, || {
        "delete of a stored key reported nothing".into()
    })?;
    ensure(store.read("k").await.map_err(|e| err("read", e))?.is_none(), || "a deleted key still reads".into())?;
    ensure(!store.delete("k").await.map_err(|e| err("second delete", e))?, || "a second delete removed again".into())?;
    let again = store.create("k", &record("D", "v2")).await.map_err(|e| err("create after delete", e))?;
    ensure(matches!(again, CreateOutcome::Created { .. }), || format!("create after delete returned {again:?}"))
}

async fn list(store: Arc<dyn MemoryStore>) -> Outcome {
    for key in ["b", "a.x", "c", "gone"] {
        store.create(key, &record(&format!("About {key}"), "v")).await.map_err(|e| err("create", e))?;
    }
    store.delete("gone").await.map_err(|e| err("delete", e))?;
    store.overwrite("c", &record("About c, again", "v2"), None).await.map_err(|e| err("overwrite", e))?;
    let entries = store.list().await.map_err(|e| err("list", e))?;
    let got: Vec<(&str, &str)> = entries.iter().map(|e| (e.key.as_str(), e.description.as_str())).collect();
    let want = [("a.x", "About a.x"), ("b", "About b"), ("c", "About c, again")];
    ensure(got == want, || format!("list returned {got:?}, expected {want:?}"))
}

async fn count(store: Arc<dyn MemoryStore>) -> Outcome {
    ensure(store.count().await.map_err(|e| err("count", e))? == 0, || "a fresh store counts entries".into())?;
    for key in ["a", "b", "c"] {
        store.create(key, &record("D", "v")).await.map_err(|e| err("create", e))?;
    }
    store.delete("b").await.map_err(|e| err("delete", e))?;
    let (n, listed) =
        (store.count().await.map_err(|e| err("count", e))?, store.list().await.map_err(|e| err("list", e))?);
    ensure(n == 2 && listed.len() == 2, || {
        format!("count {n} and listing {} after 3 creates and 1 delete", listed.len())
    })
}

async fn racing_creates(store: Arc<dyn MemoryStore>) -> Outcome {
    let racers = (0..8).map(|i| {
        let store = store.clone();
        async move { store.create("contested", &record("Racer", &format!("racer {i}"))).await }
    });
    let results = futures::future::join_all(racers).await;
    let mut winners = Vec::new();
    for (i, result) in results.into_iter().enumerate() {
        match result.map_err(|e| err("racing create", e))? {
            CreateOutcome::Created { .. } => winners.push(i),
            CreateOutcome::Exists { .. } => {}
        }
    }
    ensure(winners.len() == 1, || format!("racers {winners:?} all created the one key"))?;
    let read = store.read("contested").await.map_err(|e| err("read", e))?.ok_or("no value after the race")?;
    let want = format!("racer {}", winners[0]);
    ensure(read.content == want, || format!("the winner wrote {want:?} but the key holds {:?}", read.content))
}

async fn revisions_grow(store: Arc<dyn MemoryStore>) -> Outcome {
    let first = store.read("probe").await.map_err(|e| err("read", e))?.and_then(|s| s.revision);
    let out = store.overwrite("probe", &record("Probe", "p2"), first).await.map_err(|e| err("overwrite", e))?;
    let OverwriteOutcome::Written { revision: second } = out else {
        return Err(format!("a compare-and-swap on the current revision returned {out:?}"));
    };
    ensure(matches!((first, second), (Some(a), Some(b)) if b > a), || {
        format!("revision went from {first:?} to {second:?}; each write must raise it")
    })
}

async fn stale_cas(store: Arc<dyn MemoryStore>) -> Outcome {
    let rev = create_rev(&store, "k").await?;
    store.overwrite("k", &record("D", "theirs"), Some(rev)).await.map_err(|e| err("overwrite", e))?;
    let out = store.overwrite("k", &record("D", "mine"), Some(rev)).await.map_err(|e| err("stale overwrite", e))?;
    ensure(matches!(&out, OverwriteOutcome::Conflict { reason } if !reason.is_empty()), || {
        format!("a compare-and-swap on a stale revision returned {out:?}")
    })?;
    let read = store.read("k").await.map_err(|e| err("read", e))?.ok_or("the key vanished")?;
    ensure(read.content == "theirs", || format!("the refused write left {:?}", read.content))
}

async fn cas_after_delete(store: Arc<dyn MemoryStore>) -> Outcome {
    let rev = create_rev(&store, "k").await?;
    store.delete("k").await.map_err(|e| err("delete", e))?;
    let out = store.overwrite("k", &record("D", "mine"), Some(rev)).await.map_err(|e| err("overwrite", e))?;
    ensure(matches!(out, OverwriteOutcome::Conflict { .. }), || format!("CAS on a deleted key returned {out:?}"))?;
    ensure(store.read("k").await.map_err(|e| err("read", e))?.is_none(), || "the refused CAS recreated the key".into())
}

async fn racing_cas(store: Arc<dyn MemoryStore>) -> Outcome {
    let rev = create_rev(&store, "k").await?;
    let racers = (0..8).map(|i| {
        let store = store.clone();
        async move { store.overwrite("k", &record("D", &format!("racer {i}")), Some(rev)).await }
    });
    let mut winners = Vec::new();
    for (i, result) in futures::future::join_all(racers).await.into_iter().enumerate() {
        match result.map_err(|e| err("racing overwrite", e))? {
            OverwriteOutcome::Written { .. } => winners.push(i),
            OverwriteOutcome::Conflict { .. } => {}
        }
    }
    ensure(winners.len() == 1, || format!("racers {winners:?} all won a compare-and-swap on revision {rev}"))?;
    let read = store.read("k").await.map_err(|e| err("read", e))?.ok_or("the key vanished")?;
    let want = format!("racer {}", winners[0]);
    ensure(read.content == want, || format!("the winner wrote {want:?} but the key holds {:?}", read.content))
}

async fn create_rev(store: &Arc<dyn MemoryStore>, key: &str) -> Result<u64, String> {
    match store.create(key, &record("D", "v0")).await.map_err(|e| err("create", e))? {
        CreateOutcome::Created { revision: Some(rev) } => Ok(rev),
        other => Err(format!("create returned {other:?} without a revision")),
    }
}
