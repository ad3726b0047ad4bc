//! The session store kit (conformance::session) against the stores that need no server: the file backend and the
//! in-memory store. The JetStream run is in `session_jetstream.rs`.
#![cfg(feature = "testing")]

use fisk_ai::conformance::session::{SessionHooks, check};
use fisk_ai::session::{FileSessionStore, InMemorySessionStore, SessionStore};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn sess_5_14_29_30_33_the_in_memory_store_keeps_the_session_store_contract() {
    let last = Arc::new(Mutex::new(InMemorySessionStore::new()));
    let made = last.clone();
    let fresh = move || {
        let store = InMemorySessionStore::new();
        *made.lock().unwrap() = store.clone();
        async move { Arc::new(store) as Arc<dyn SessionStore> }
    };
    let hooks = SessionHooks::new().fail_next_append(move |_| last.lock().unwrap().fail_next_append());
    let report = check("session (in memory)", fresh, hooks).await;
    report.assert_passed();
    let skipped: Vec<&str> = report.skipped.iter().map(|(c, _)| *c).collect();
    assert_eq!(skipped, ["a_torn_tail_is_dropped_and_the_next_append_lands"], "{report}");
}

#[tokio::test]
async fn sess_5_14_29_30_the_file_store_keeps_the_session_store_contract_torn_tail_included() {
    let dirs: Arc<Mutex<Vec<tempfile::TempDir>>> = Arc::default();
    let last: Arc<Mutex<PathBuf>> = Arc::default();
    let (made, kept) = (last.clone(), dirs.clone());
    let fresh = move || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs");
        *made.lock().unwrap() = path.clone();
        kept.lock().unwrap().push(dir);
        async move { Arc::new(FileSessionStore::new(path)) as Arc<dyn SessionStore> }
    };
    let hooks = SessionHooks::new().tear_tail(move |id| {
        let path = last.lock().unwrap().join(format!("{id}.json"));
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(br#"{"seq":3,"protocol":"io.choria.fisk-ai.v1.sess"#).unwrap();
    });
    let report = check("session (file)", fresh, hooks).await;
    report.assert_passed();
    // A file write cannot be made to fail from outside the writer: that case is the in-memory store's.
    let skipped: Vec<&str> = report.skipped.iter().map(|(c, _)| *c).collect();
    assert_eq!(skipped, ["no_append_after_a_failed_one"], "{report}");
    assert!(report.to_string().contains("SKIPPED no_append_after_a_failed_one"), "{report}");
}
