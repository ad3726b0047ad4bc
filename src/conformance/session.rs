//! The session store kit: any [`SessionStore`] against the contract of [`SessionStore`] and [`JournalWriter`]
//! (SESS-3, SESS-5, SESS-14, SESS-29, SESS-30, SESS-33, CLI-24).

use super::{Report, ensure};
use crate::llm::Message;
use crate::session::{Fingerprint, JournalRecord, JournalWriter, Meta, Payload, SessionId, SessionStore, UserRecord};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// A hook acting on the store the kit made last (the kit runs its cases one after another).
type Hook = Arc<dyn Fn(&SessionId) + Send + Sync>;

/// Optional ways to provoke what a store cannot be asked to do through its trait. A case whose hook is missing is
/// reported as skipped, never as held.
#[derive(Clone, Default)]
pub struct SessionHooks {
    fail_next_append: Option<Hook>,
    recover: Option<Hook>,
    tear_tail: Option<Hook>,
}

impl fmt::Debug for SessionHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionHooks")
            .field("fail_next_append", &self.fail_next_append.is_some())
            .field("recover", &self.recover.is_some())
            .field("tear_tail", &self.tear_tail.is_some())
            .finish()
    }
}

impl SessionHooks {
    /// No hooks: the failure and torn-tail cases are skipped.
    pub fn new() -> Self {
        Self::default()
    }

    /// `hook` makes the next append to the session it names (in the store made last) fail.
    #[must_use]
    pub fn fail_next_append(mut self, hook: impl Fn(&SessionId) + Send + Sync + 'static) -> Self {
        self.fail_next_append = Some(Arc::new(hook));
        self
    }

    /// `hook` undoes what the [`fail_next_append`](Self::fail_next_append) hook did (a store whose failure is a
    /// condition, such as a stream limit, rather than one failed call), before the kit resumes the session.
    #[must_use]
    pub fn recover(mut self, hook: impl Fn(&SessionId) + Send + Sync + 'static) -> Self {
        self.recover = Some(Arc::new(hook));
        self
    }

    /// `hook` leaves a torn (partial) final record in the journal of the session it names, as a crash mid-write
    /// would, for stores that can have one (the file backend, SESS-30).
    #[must_use]
    pub fn tear_tail(mut self, hook: impl Fn(&SessionId) + Send + Sync + 'static) -> Self {
        self.tear_tail = Some(Arc::new(hook));
        self
    }
}

/// Run every case against stores from `fresh` (a new, empty store per case) and report each.
///
/// ```
/// use fisk_ai::conformance::session::{SessionHooks, check};
/// use fisk_ai::session::{InMemorySessionStore, SessionStore};
/// use std::sync::{Arc, Mutex};
///
/// # futures::executor::block_on(async {
/// let last = Arc::new(Mutex::new(InMemorySessionStore::new()));
/// let made = last.clone();
/// let fresh = move || {
///     let store = InMemorySessionStore::new();
///     *made.lock().unwrap() = store.clone();
///     async move { Arc::new(store) as Arc<dyn SessionStore> }
/// };
/// let hooks = SessionHooks::new().fail_next_append(move |_| last.lock().unwrap().fail_next_append());
/// let report = check("session (in memory)", fresh, hooks).await;
/// report.assert_passed();
/// assert_eq!(report.skipped.len(), 1, "no torn tails in memory");
/// # });
/// ```
pub async fn check<F, Fut>(suite: &str, fresh: F, hooks: SessionHooks) -> Report
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn SessionStore>>,
{
    let mut report = Report::new(suite);
    report.record("create_is_exclusive", create_is_exclusive(fresh().await).await);
    report.record("open_of_a_missing_session_fails", open_missing(fresh().await).await);
    report.record("appends_read_back_in_order_as_to_json", ordering(fresh().await).await);
    report.record("a_repeated_seq_is_a_no_op", repeated(fresh().await).await);
    report.record("a_gap_is_an_error", gap(fresh().await).await);
    report.record("a_second_writer_gets_a_lock_error_and_writes_nothing", second_writer(fresh().await).await);
    match &hooks.fail_next_append {
        Some(hook) => {
            let outcome = after_failure(fresh().await, hook, hooks.recover.as_ref()).await;
            report.record("no_append_after_a_failed_one", outcome);
        }
        None => report.skip("no_append_after_a_failed_one", "no fail_next_append hook"),
    }
    match &hooks.tear_tail {
        Some(hook) => {
            report.record("a_torn_tail_is_dropped_and_the_next_append_lands", torn(fresh().await, hook).await)
        }
        None => report.skip("a_torn_tail_is_dropped_and_the_next_append_lands", "no tear_tail hook"),
    }
    report.record("list_shows_created_sessions", list(fresh().await).await);
    report.record("remove_removes_and_is_idempotent", remove(fresh().await).await);
    report
}

type Outcome = Result<(), String>;

fn id(name: &str) -> SessionId {
    SessionId::new(format!("kit-{name}")).unwrap_or_else(|_| SessionId::generate())
}

/// Record `seq` of a journal: meta first, then user messages holding `text`.
fn record(seq: u64, text: &str) -> JournalRecord {
    let payload = if seq == 1 {
        // A fixed time: the kit compares bodies byte for byte.
        let mut meta = Meta::new("kit-run", Fingerprint::default(), text);
        meta.created = "2026-01-02T03:04:05Z".to_owned();
        Payload::Meta(meta)
    } else {
        Payload::User(UserRecord::new(Message::user(format!("{text} {seq}"))))
    };
    JournalRecord::new(seq, payload)
}

fn err<E: fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Append records `from..=to` of `text`.
async fn append(w: &mut Box<dyn JournalWriter>, from: u64, to: u64, text: &str) -> Outcome {
    for seq in from..=to {
        w.append(&record(seq, text)).await.map_err(err(&format!("append of record {seq}")))?;
    }
    Ok(())
}

/// The stored records of `id` equal records `1..=n` of `text`, byte for byte.
async fn holds(store: &dyn SessionStore, id: &SessionId, n: u64, text: &str) -> Outcome {
    let got = store.read(id).await.map_err(err("read"))?;
    let seqs: Vec<u64> = got.iter().map(|r| r.seq).collect();
    ensure(seqs == (1..=n).collect::<Vec<_>>(), || format!("read back seqs {seqs:?}, expected 1..={n}"))?;
    for r in &got {
        let want = record(r.seq, text).to_json();
        ensure(r.to_json() == want, || {
            format!("record {} reads back as {} instead of {}", r.seq, lossy(&r.to_json()), lossy(&want))
        })?;
    }
    Ok(())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

async fn create_is_exclusive(store: Arc<dyn SessionStore>) -> Outcome {
    let id = id("exclusive");
    let mut w = store.create(&id).await.map_err(err("create"))?;
    append(&mut w, 1, 1, "first").await?;
    ensure(store.create(&id).await.is_err(), || "a second create while the first writer lives succeeded".into())?;
    drop(w);
    ensure(store.create(&id).await.is_err(), || "creating an existing session succeeded".into())?;
    holds(&*store, &id, 1, "first").await
}

async fn open_missing(store: Arc<dyn SessionStore>) -> Outcome {
    let missing = id("missing");
    ensure(store.open(&missing).await.is_err(), || "opening a missing session succeeded".into())?;
    ensure(store.read(&missing).await.is_err(), || "reading a missing session succeeded".into())
}

async fn ordering(store: Arc<dyn SessionStore>) -> Outcome {
    let id = id("ordering");
    let mut w = store.create(&id).await.map_err(err("create"))?;
    append(&mut w, 1, 7, "ordered").await?;
    w.close().await.map_err(err("close"))?;
    holds(&*store, &id, 7, "ordered").await?;
    let (records, mut w) = store.open(&id).await.map_err(err("open"))?;
    ensure(records.len() == 7, || format!("open returned {} records, expected 7", records.len()))?;
    append(&mut w, 8, 9, "ordered").await?;
    drop(w);
    holds(&*store, &id, 9, "ordered").await
}

async fn repeated(store: Arc<dyn SessionStore>) -> Outcome {
    let id = id("repeated");
    let mut w = store.create(&id).await.map_err(err("create"))?;
    append(&mut w, 1, 3, "once").await?;
    for seq in [3, 2, 1] {
        w.append(&record(seq, "again")).await.map_err(err(&format!("repeating record {seq}")))?;
    }
    append(&mut w, 4, 4, "once").await?;
    drop(w);
    holds(&*store, &id, 4, "once").await
}

async fn gap(store: Arc<dyn SessionStore>) -> Outcome {
    let id = id("gap");
    let mut w = store.create(&id).await.map_err(err("create"))?;
    append(&mut w, 1, 2, "gap").await?;
    ensure(w.append(&record(4, "gap")).await.is_err(), || "appending record 4 after record 2 succeeded".into())?;
    drop(w);
    holds(&*store, &id, 2, "gap").await
}

async fn second_writer(store: Arc<dyn SessionStore>) -> Outcome {
    let id = id("second-writer");
    let mut first = store.create(&id).await.map_err(err("create"))?;
    append(&mut first, 1, 2, "first").await?;
    let second = store.open(&id).await;
    append(&mut first, 3, 3, "first").await?;
    match second {
        Err(e) => {
            ensure(e.to_string().contains("lock"), || format!("the second open failed without a lock error: {e}"))?
        }
        Ok((_, mut w)) => {
            let refused = w.append(&record(3, "second")).await;
            ensure(refused.as_ref().is_err_and(|e| e.to_string().contains("lock")), || {
                format!("the second writer's first append was not refused with a lock error: {refused:?}")
            })?;
            // Retried, the refused record is still refused: the writer took nothing from its failure.
            let again = w.append(&record(3, "second")).await;
            ensure(again.is_err(), || "the refused writer's retry of the same record went through".into())?;
        }
    }
    append(&mut first, 4, 4, "first").await?;
    drop(first);
    holds(&*store, &id, 4, "first").await
}

async fn after_failure(store: Arc<dyn SessionStore>, fail: &Hook, recover: Option<&Hook>) -> Outcome {
    let id = id("after-failure");
    let mut w = store.create(&id).await.map_err(err("create"))?;
    append(&mut w, 1, 2, "kept").await?;
    fail(&id);
    ensure(w.append(&record(3, "lost")).await.is_err(), || "the append the hook made fail succeeded".into())?;
    // Whatever failed is over now; the writer must still refuse: its journal's tail is unknown (SESS-33).
    if let Some(recover) = recover {
        recover(&id);
    }
    for seq in [3, 4] {
        ensure(w.append(&record(seq, "lost")).await.is_err(), || format!("record {seq} was taken after a failure"))?;
    }
    drop(w);
    // The journal stays resumable at its last coherent record.
    let (records, mut w) = store.open(&id).await.map_err(err("open after the failure"))?;
    let last = records.last().map_or(0, |r| r.seq);
    ensure(last == 2, || format!("after the failure the journal ends at record {last}, expected 2"))?;
    append(&mut w, 3, 3, "kept").await?;
    drop(w);
    holds(&*store, &id, 3, "kept").await
}

async fn torn(store: Arc<dyn SessionStore>, tear: &Hook) -> Outcome {
    let id = id("torn");
    let mut w = store.create(&id).await.map_err(err("create"))?;
    append(&mut w, 1, 2, "whole").await?;
    drop(w);
    tear(&id);
    holds(&*store, &id, 2, "whole").await.map_err(|e| format!("with a torn tail: {e}"))?;
    let (records, mut w) = store.open(&id).await.map_err(err("open with a torn tail"))?;
    ensure(records.len() == 2, || format!("open returned {} records, expected 2", records.len()))?;
    append(&mut w, 3, 3, "whole").await?;
    drop(w);
    holds(&*store, &id, 3, "whole").await
}

async fn list(store: Arc<dyn SessionStore>) -> Outcome {
    let ids = [id("listed-a"), id("listed-b")];
    for id in &ids {
        let mut w = store.create(id).await.map_err(err("create"))?;
        append(&mut w, 1, 2, "listed").await?;
    }
    let listed: Vec<SessionId> = store.list().await.map_err(err("list"))?.into_iter().map(|e| e.id).collect();
    ensure(ids.iter().all(|id| listed.contains(id)), || format!("list shows {listed:?}, expected {ids:?}"))
}

async fn remove(store: Arc<dyn SessionStore>) -> Outcome {
    let id = id("removed");
    let mut w = store.create(&id).await.map_err(err("create"))?;
    append(&mut w, 1, 2, "removed").await?;
    drop(w);
    store.remove(&id).await.map_err(err("remove"))?;
    ensure(store.read(&id).await.is_err(), || "a removed session still reads".into())?;
    ensure(store.open(&id).await.is_err(), || "a removed session still opens".into())?;
    store.remove(&id).await.map_err(err("removing it again"))?;
    store.remove(&self::id("never-made")).await.map_err(err("removing a session never made"))?;
    let listed = store.list().await.map_err(err("list"))?;
    ensure(listed.iter().all(|e| e.id != id), || "a removed session is still listed".into())?;
    // The id is free again.
    let mut w = store.create(&id).await.map_err(err("create after remove"))?;
    append(&mut w, 1, 1, "again").await?;
    drop(w);
    holds(&*store, &id, 1, "again").await
}
