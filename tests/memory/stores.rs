use super::*;

// ---- MEM-19..21 file backend ----

#[tokio::test]
async fn mem_19_directory_is_created_0700_lazily_on_the_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let mem = dir.path().join("state/memory/ops");
    let store = file_store(&mem);
    let tools = Tools::new(store.clone());
    assert!(!mem.exists(), "constructing the store and its tools does no I/O");

    assert_eq!(tools.list().await, json!({"memories": []}));
    assert_eq!(ok(tools.read("k").await)["found"], false);
    assert_eq!(ok(tools.delete("k").await), json!({"deleted": false}));
    assert_eq!(store.count().await.unwrap(), 0);
    assert!(!memory_index(store.as_ref()).await.unwrap().is_empty());
    assert!(!dir.path().join("state").exists(), "reads never create the directory");

    assert_eq!(ok(tools.create("k", "d", "c").await), written());
    assert_eq!(fs::metadata(&mem).unwrap().permissions().mode() & 0o777, 0o700);
    let names: Vec<_> = fs::read_dir(&mem).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["k.md"]);
    assert_eq!(fs::read_to_string(mem.join("k.md")).unwrap(), "---\ndescription: d\n---\n\nc");
}

#[test]
fn mem_19_directory_resolution() {
    let wd = Path::new("/work/dir");
    let base = Path::new("/store/base");
    let options = MemoryOptions::default();
    assert_eq!(FileMemoryStore::from_config(&options, "ops", None, wd).dir(), Path::new("/work/dir/memory/ops"));
    assert_eq!(
        FileMemoryStore::from_config(&options, "ops", Some(base), wd).dir(),
        Path::new("/store/base/memory/ops")
    );

    let mut relative = MemoryOptions::default();
    relative.directory = Some("notes".into());
    assert_eq!(FileMemoryStore::from_config(&relative, "ops", None, wd).dir(), Path::new("/work/dir/notes"));
    assert_eq!(FileMemoryStore::resolve_dir(&relative, "ops", Some(base), wd), Path::new("/store/base/notes"));

    let mut absolute = MemoryOptions::default();
    absolute.directory = Some("/abs/mem".into());
    assert_eq!(FileMemoryStore::from_config(&absolute, "ops", Some(base), wd).dir(), Path::new("/abs/mem"));
    assert_eq!(FileMemoryStore::new("/x").backend(), "file");
}

#[tokio::test]
async fn mem_20_listing_ignores_junk() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    fs::write(p.join("good.md"), encode("kept", "c")).unwrap();
    fs::write(p.join("notes.txt"), "x").unwrap();
    fs::write(p.join("README"), "x").unwrap();
    fs::write(p.join(".memtmp-x"), encode("staging", "c")).unwrap();
    fs::write(p.join(".memtmp-y.md"), encode("staging", "c")).unwrap();
    fs::write(p.join("bad..key.md"), encode("bad", "c")).unwrap();
    fs::write(p.join(".hidden.md"), encode("bad", "c")).unwrap();
    fs::write(p.join("sp ace.md"), encode("bad", "c")).unwrap();
    fs::write(p.join(".md"), encode("bad", "c")).unwrap();
    let target = tempfile::NamedTempFile::new().unwrap();
    fs::write(target.path(), encode("linked", "secret")).unwrap();
    std::os::unix::fs::symlink(target.path(), p.join("x.md")).unwrap();
    std::os::unix::fs::symlink(p.join("nowhere"), p.join("dangling.md")).unwrap();
    fs::create_dir(p.join("d.md")).unwrap();
    nix::unistd::mkfifo(&p.join("fifo.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();

    let store = file_store(p);
    let tools = Tools::new(store.clone());
    assert_eq!(tools.list().await, json!({"memories": [{"key": "good", "description": "kept"}]}));
    assert_eq!(store.count().await.unwrap(), 1);
    let index = memory_index(store.as_ref()).await.unwrap();
    assert!(index.contains("- good: kept") && !index.contains("linked"), "{index}");
}

#[tokio::test]
async fn mem_20_reads_refuse_symlinks_and_non_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let target = tempfile::NamedTempFile::new().unwrap();
    fs::write(target.path(), encode("linked", "top secret")).unwrap();
    std::os::unix::fs::symlink(target.path(), p.join("x.md")).unwrap();
    fs::create_dir(p.join("d.md")).unwrap();
    nix::unistd::mkfifo(&p.join("fifo.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let tools = Tools::new(file_store(p));

    let msg = err(tools.read("x").await);
    assert!(msg.contains("symbolic link") && !msg.contains("top secret"), "{msg}");
    assert!(err(tools.read("d").await).contains("not a regular file"));
    // A FIFO neither blocks the read nor is read.
    let fifo = tokio::time::timeout(std::time::Duration::from_secs(5), tools.read("fifo")).await.unwrap();
    assert!(err(fifo).contains("not a regular file"));

    // Create refuses (the name is taken) without following the link; delete leaves non-files alone.
    assert_eq!(ok(tools.create("x", "d", "c").await)["written"], false);
    assert_eq!(ok(tools.delete("x").await), json!({"deleted": false}));
    assert_eq!(ok(tools.delete("d").await), json!({"deleted": false}));
    assert!(fs::symlink_metadata(p.join("x.md")).unwrap().file_type().is_symlink());
    assert_eq!(fs::read_to_string(target.path()).unwrap(), encode("linked", "top secret"));

    // Overwrite replaces the link itself, never the file it points to.
    assert_eq!(ok(tools.write("x", "mine", "new", true).await), written());
    assert!(fs::symlink_metadata(p.join("x.md")).unwrap().is_file());
    assert_eq!(fs::read_to_string(target.path()).unwrap(), encode("linked", "top secret"));
    assert_eq!(ok(tools.read("x").await)["content"], "new");
}

#[tokio::test]
async fn mem_21_file_backend_overwrite_is_last_writer_wins_without_a_read() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("k.md"), encode("theirs", "old")).unwrap();
    let store = file_store(dir.path());
    assert!(!store.requires_read_before_update());
    assert_eq!(store.read("k").await.unwrap().unwrap().revision, None);
    let tools = Tools::new(store);
    assert_eq!(ok(tools.write("k", "mine", "new", true).await), written());
    assert_eq!(ok(tools.read("k").await)["content"], "new");
}

// ---- MEM-25 read-before-update on a store with revisions ----

#[tokio::test]
async fn mem_25_overwrite_of_a_key_this_run_never_read_is_refused() {
    let store = guarded();
    store.create("k", &record("theirs", "old")).await.unwrap();
    let tools = Tools::new(store.clone());
    let out = ok(tools.write("k", "mine", "new", true).await);
    assert_eq!(out["written"], false);
    let reason = out["reason"].as_str().unwrap();
    assert!(reason.contains("memory_read") && reason.contains("\"k\""), "{reason}");
    assert_eq!(store.read("k").await.unwrap().unwrap().content, "old");
}

#[tokio::test]
async fn mem_25_a_read_or_own_write_grants_overwrite_and_each_write_renews_it() {
    let store = guarded();
    store.create("k", &record("theirs", "old")).await.unwrap();
    let tools = Tools::new(store.clone());
    assert_eq!(ok(tools.read("k").await)["content"], "old");
    assert_eq!(ok(tools.write("k", "mine", "v1", true).await), written());
    assert_eq!(ok(tools.write("k", "mine", "v2", true).await), written(), "own write keeps authority");

    assert_eq!(ok(tools.create("fresh", "created here", "a").await), written());
    assert_eq!(ok(tools.write("fresh", "created here", "b", true).await), written(), "own create grants it");
    assert_eq!(store.read("fresh").await.unwrap().unwrap().content, "b");
}

#[tokio::test]
async fn mem_25_a_change_since_the_read_is_refused_and_the_remembered_revision_discarded() {
    let store = guarded();
    store.create("k", &record("d", "v0")).await.unwrap();
    let tools = Tools::new(store.clone());
    ok(tools.read("k").await);
    // Another writer changes the key.
    store.overwrite("k", &record("d", "theirs"), None).await.unwrap();

    let out = ok(tools.write("k", "d", "mine", true).await);
    assert_eq!(out["written"], false);
    let reason = out["reason"].as_str().unwrap();
    assert!(reason.contains("changed") && reason.contains("memory_read"), "{reason}");
    assert_eq!(store.read("k").await.unwrap().unwrap().content, "theirs");

    // Discarded: retrying without a read is refused too.
    let again = ok(tools.write("k", "d", "mine", true).await);
    assert_eq!(again["written"], false);
    assert!(again["reason"].as_str().unwrap().contains("has not read"), "{again}");

    ok(tools.read("k").await);
    assert_eq!(ok(tools.write("k", "d", "mine", true).await), written());
    assert_eq!(store.read("k").await.unwrap().unwrap().content, "mine");
}

#[tokio::test]
async fn mem_25_a_delete_by_another_writer_since_the_read_is_a_conflict() {
    let store = guarded();
    store.create("k", &record("d", "v0")).await.unwrap();
    let tools = Tools::new(store.clone());
    ok(tools.read("k").await);
    store.delete("k").await.unwrap();
    assert_eq!(ok(tools.write("k", "d", "mine", true).await)["written"], false);
    assert!(store.read("k").await.unwrap().is_none());
}

#[tokio::test]
async fn mem_25_listing_and_the_index_never_grant_overwrite_authority() {
    let store = guarded();
    store.create("k", &record("d", "v0")).await.unwrap();
    let tools = Tools::new(store.clone());
    assert_eq!(tools.keys().await, ["k"]);
    memory_index(store.as_ref()).await.unwrap();
    assert_eq!(ok(tools.write("k", "d", "mine", true).await)["written"], false);
    // A miss grants nothing either, and the plain create refusal still names the description.
    let out = ok(tools.create("k", "d", "mine").await);
    assert!(out["reason"].as_str().unwrap().contains("(description: \"d\")"), "{out}");
}

/// nats-wire §5: with the guard on, `overwrite: true` on a key this run never saw is refused, never a create.
#[tokio::test]
async fn mem_25_guarded_overwrite_of_a_missing_key_is_refused_and_never_creates() {
    let store = guarded();
    let tools = Tools::new(store.clone());
    let out = ok(tools.write("new", "d", "v", true).await);
    assert_eq!(out["written"], false);
    assert!(out["reason"].as_str().unwrap().contains("overwrite: false"), "{out}");
    assert!(store.read("new").await.unwrap().is_none());
    // A read that finds nothing grants nothing either; a create does.
    ok(tools.read("new").await);
    assert_eq!(ok(tools.write("new", "d", "v", true).await)["written"], false);
    assert_eq!(ok(tools.create("new", "d", "v").await), written());
    assert_eq!(ok(tools.write("new", "d", "again", true).await), written());
    // The run's own delete forgets the key.
    assert_eq!(ok(tools.delete("new").await), json!({"deleted": true}));
    assert_eq!(ok(tools.write("new", "d", "x", true).await)["written"], false);
    assert!(store.read("new").await.unwrap().is_none());
}

#[tokio::test]
async fn mem_25_authority_is_per_run_and_off_without_the_guard() {
    let store = guarded();
    store.create("k", &record("d", "v0")).await.unwrap();
    let first_run = Tools::new(store.clone());
    ok(first_run.read("k").await);
    let second_run = Tools::new(store.clone());
    assert_eq!(ok(second_run.write("k", "d", "x", true).await)["written"], false);
    assert_eq!(ok(first_run.write("k", "d", "y", true).await), written());

    // MEM-26: a store without the guard (no_require_read_before_update) allows blind overwrites.
    let open = Arc::new(InMemoryStore::new());
    open.create("k", &record("d", "v0")).await.unwrap();
    assert_eq!(ok(Tools::new(open.clone()).write("k", "d", "blind", true).await), written());
    assert_eq!(open.read("k").await.unwrap().unwrap().content, "blind");
}

#[tokio::test]
async fn mem_25_session_api_tracks_revisions_through_the_store() {
    let store = guarded();
    let session = Arc::new(MemorySession::new(store.clone()));
    assert_eq!(session.tools().len(), 4);
    let rec = record("d", "v");
    assert_eq!(session.write("k", &rec, false).await.unwrap(), fisk_ai::memory::WriteOutcome::Written);
    let rev = store.read("k").await.unwrap().unwrap().revision.unwrap();
    assert_eq!(session.write("k", &rec, true).await.unwrap(), fisk_ai::memory::WriteOutcome::Written);
    assert!(store.read("k").await.unwrap().unwrap().revision.unwrap() > rev);
    assert!(matches!(session.write("../k", &rec, true).await, Err(MemoryError::InvalidKey(_))));
    assert_eq!(store.backend(), "memory");
}

/// A store that counts once per run (as JetStream does, MEM-27) over the in-process one, with or without the guard.
struct CountsOnce(InMemoryStore);

#[async_trait]
impl MemoryStore for CountsOnce {
    async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
        self.0.list().await
    }
    async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
        self.0.read(key).await
    }
    async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
        self.0.create(key, record).await
    }
    async fn overwrite(&self, key: &str, r: &MemoryRecord, e: Option<u64>) -> Result<OverwriteOutcome, MemoryError> {
        self.0.overwrite(key, r, e).await
    }
    async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
        self.0.delete(key).await
    }
    fn count_once_per_run(&self) -> bool {
        true
    }
    fn requires_read_before_update(&self) -> bool {
        self.0.requires_read_before_update()
    }
}

/// MEM-11, MEM-27, nats-wire §5: without the guard a blind overwrite of a missing key creates it, so it counts
/// toward the cap the run tracks; the run cannot slip past the cap that way.
#[tokio::test]
async fn mem_11_27_blind_overwrites_that_create_count_toward_the_cap() {
    let inner = InMemoryStore::new();
    for i in 0..MAX_ENTRIES - 1 {
        inner.create(&format!("k{i}"), &record("d", "v")).await.unwrap();
    }
    let tools = Tools::new(Arc::new(CountsOnce(inner)));
    assert_eq!(ok(tools.write("new1", "d", "v", true).await), written(), "the last free entry");
    let full = tools.write("new2", "d", "v", true).await;
    assert!(full.is_error() && full.content().contains("memory is full"), "{}", full.content());
    // Replacing an existing key still works at the cap.
    assert_eq!(ok(tools.write("new1", "d", "v2", true).await), written());
}

/// MEM-25: a store that asks for the guard but reports no revision cannot compare-and-swap, so the session refuses
/// rather than writing blindly.
#[tokio::test]
async fn mem_25_a_guarded_store_without_revisions_is_refused_not_written_blindly() {
    struct NoRevisions(std::sync::Mutex<std::collections::BTreeMap<String, String>>);
    #[async_trait]
    impl MemoryStore for NoRevisions {
        async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
            Ok(Vec::new())
        }
        async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
            Ok(self.0.lock().unwrap().get(key).map(|v| Stored::decode(v, None)))
        }
        async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
            self.0.lock().unwrap().insert(key.into(), record.encode());
            Ok(CreateOutcome::Created { revision: None })
        }
        async fn overwrite(
            &self,
            key: &str,
            r: &MemoryRecord,
            _: Option<u64>,
        ) -> Result<OverwriteOutcome, MemoryError> {
            self.0.lock().unwrap().insert(key.into(), r.encode());
            Ok(OverwriteOutcome::Written { revision: None })
        }
        async fn delete(&self, _: &str) -> Result<bool, MemoryError> {
            Ok(false)
        }
        fn requires_read_before_update(&self) -> bool {
            true
        }
    }
    let store = Arc::new(NoRevisions(Default::default()));
    let tools = Tools::new(store.clone());
    assert_eq!(ok(tools.create("k", "d", "v0").await), written());
    ok(tools.read("k").await);
    let out = tools.write("k", "d", "blind", true).await;
    assert!(out.is_error() && out.content().contains("reported no revision"), "{}", out.content());
    assert_eq!(store.read("k").await.unwrap().unwrap().content, "v0");
}
