use super::*;

// ---- MEM-4..7 tool results ----

#[tokio::test]
async fn mem_5_create_of_an_existing_key_is_refused_naming_the_key_and_its_description() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::new(file_store(dir.path()));
    assert_eq!(ok(tools.create("build.cmd", "How to build: make", "make all").await), written());
    let out = ok(tools.create("build.cmd", "Other", "other").await);
    assert_eq!(out["written"], false);
    assert_eq!(out.as_object().unwrap().len(), 2, "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(reason.contains("\"build.cmd\""), "{reason}");
    assert!(reason.contains("How to build: make"), "{reason}");
    assert!(reason.contains("overwrite") && reason.contains("another key"), "{reason}");
    // `overwrite: false` is the same as leaving it out.
    assert_eq!(ok(tools.write("build.cmd", "Other", "other", false).await)["written"], false);
    assert_eq!(ok(tools.read("build.cmd").await)["content"], "make all");
}

#[tokio::test]
async fn mem_5_existing_entry_without_a_readable_description_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("raw.md"), "no header at all").unwrap();
    let tools = Tools::new(file_store(dir.path()));
    let out = ok(tools.create("raw", "d", "c").await);
    assert_eq!(out["written"], false);
    assert!(out["reason"].as_str().unwrap().contains("\"raw\""));
    assert_eq!(fs::read_to_string(dir.path().join("raw.md")).unwrap(), "no header at all");
}

#[tokio::test]
async fn mem_6_overwrite_replaces_the_value_and_description() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::new(file_store(dir.path()));
    assert_eq!(ok(tools.create("k", "first", "one").await), written());
    assert_eq!(ok(tools.write("k", "second", "two", true).await), written());
    assert_eq!(
        ok(tools.read("k").await),
        json!({"found": true, "key": "k", "description": "second", "content": "two"})
    );
    assert_eq!(fs::read_to_string(dir.path().join("k.md")).unwrap(), "---\ndescription: second\n---\n\ntwo");
    // Overwrite of a missing key creates it.
    assert_eq!(ok(tools.write("fresh", "new", "x", true).await), written());
    assert_eq!(tools.keys().await, ["fresh", "k"]);
}

#[tokio::test]
async fn mem_3_read_hit_and_miss_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::new(file_store(dir.path()));
    assert_eq!(ok(tools.create("empty", "nothing inside", "").await), written());
    let out = tools.read("empty").await;
    assert_eq!(out.content(), r#"{"found":true,"key":"empty","description":"nothing inside","content":""}"#);

    let miss = ok(tools.read("absent").await);
    assert_eq!(miss["found"], false);
    assert_eq!(miss.as_object().unwrap().len(), 2, "{miss}");
    let reason = miss["reason"].as_str().unwrap();
    assert!(reason.contains("memory_list") && reason.contains("\"absent\""), "{reason}");
}

#[tokio::test]
async fn mem_7_delete_reports_whether_something_was_removed() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::new(file_store(dir.path()));
    assert_eq!(ok(tools.delete("never").await), json!({"deleted": false}));
    assert!(!dir.path().exists() || fs::read_dir(dir.path()).unwrap().next().is_none());
    assert_eq!(ok(tools.create("k", "d", "c").await), written());
    assert_eq!(ok(tools.delete("k").await), json!({"deleted": true}));
    assert_eq!(ok(tools.delete("k").await), json!({"deleted": false}));
    assert_eq!(ok(tools.read("k").await)["found"], false);
}

#[tokio::test]
async fn mem_2_list_is_sorted_and_reflects_writes_and_deletes_during_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::new(file_store(dir.path()));
    assert_eq!(tools.list().await, json!({"memories": []}));
    for key in ["zeta", "Alpha", "beta", "a.b", "a-b", "a_b", "a=b", "0"] {
        assert_eq!(ok(tools.create(key, &format!("about {key}"), "c").await), written());
    }
    let mut expected = vec!["zeta", "Alpha", "beta", "a.b", "a-b", "a_b", "a=b", "0"];
    expected.sort_unstable();
    assert_eq!(tools.keys().await, expected);
    assert_eq!(tools.list().await["memories"][0], json!({"key": "0", "description": "about 0"}));

    assert_eq!(ok(tools.delete("beta").await), json!({"deleted": true}));
    assert_eq!(ok(tools.write("Alpha", "renamed", "c", true).await), written());
    expected.retain(|k| *k != "beta");
    assert_eq!(tools.keys().await, expected);
    assert!(
        tools.list().await["memories"].as_array().unwrap().contains(&json!({"key": "Alpha", "description": "renamed"}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mem_5_concurrent_creates_of_one_key_exactly_one_wins_file_backend() {
    let dir = tempfile::tempdir().unwrap();
    let mut tasks = Vec::new();
    for i in 0..24 {
        // Separate tool sets over separate stores on one directory, like separate processes.
        let store = file_store(&dir.path().join("mem"));
        tasks.push(tokio::spawn(async move {
            Tools::new(store).create("race", &format!("writer {i}"), &format!("value {i}")).await
        }));
    }
    let mut wins = Vec::new();
    for (i, task) in tasks.into_iter().enumerate() {
        let out = ok(task.await.unwrap());
        if out == written() {
            wins.push(i);
        } else {
            assert_eq!(out["written"], false, "{out}");
        }
    }
    assert_eq!(wins.len(), 1, "exactly one creator wins: {wins:?}");
    let tools = Tools::new(file_store(&dir.path().join("mem")));
    let read = ok(tools.read("race").await);
    assert_eq!(read["content"], format!("value {}", wins[0]));
    let names: Vec<_> = fs::read_dir(dir.path().join("mem")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["race.md"], "no staging files are left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mem_5_concurrent_creates_of_one_key_exactly_one_wins_shared_tools() {
    let store: Arc<dyn MemoryStore> = Arc::new(InMemoryStore::new());
    let tools = Arc::new(Tools::new(store));
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let tools = tools.clone();
            tokio::spawn(async move { tools.create("race", "d", &i.to_string()).await })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        if ok(task.await.unwrap()) == written() {
            wins += 1;
        }
    }
    assert_eq!(wins, 1);
}

// ---- arguments, specs, display ----

#[tokio::test]
async fn mem_1_tools_come_in_order_as_never_deferred_builtins() {
    let tools = memory_tools(Arc::new(InMemoryStore::new()));
    let names: Vec<_> = tools.iter().map(|t| t.spec().name().to_owned()).collect();
    assert_eq!(names, ["memory_list", "memory_read", "memory_write", "memory_delete"]);
    for tool in &tools {
        let spec = tool.spec();
        assert_eq!(spec.kind(), ToolKind::Builtin);
        assert!(spec.no_defer() && !spec.confirm_opt_in());
        assert!(spec.description().len() > 80, "{} needs a real description", spec.name());
    }
    assert_eq!(tools[2].spec().input_schema()["required"], json!(["key", "description", "content"]));
    assert_eq!(tools[2].spec().input_schema()["properties"]["overwrite"]["type"], "boolean");
    assert_eq!(tools[1].spec().input_schema()["required"], json!(["key"]));
    assert_eq!(tools[3].spec().input_schema()["required"], json!(["key"]));
    assert!(tools[0].spec().input_schema()["properties"].as_object().unwrap().is_empty());
}

#[test]
fn gate_7_display_lines_are_one_line_summaries() {
    let tools = memory_tools(Arc::new(InMemoryStore::new()));
    let input = |v: Value| ToolInput::from_value(&v);
    assert_eq!(tools[0].display(&ToolInput::empty()), "memory_list");
    assert_eq!(tools[1].display(&input(json!({"key": "a.b"}))), "memory_read a.b");
    assert_eq!(tools[2].display(&input(json!({"key": "k", "description": "d", "content": "c"}))), "memory_write k");
    assert_eq!(
        tools[2].display(&input(json!({"key": "k", "description": "d", "content": "c", "overwrite": true}))),
        "memory_write k (overwrite)"
    );
    assert_eq!(tools[3].display(&input(json!({"key": "k"}))), "memory_delete k");
    assert_eq!(tools[3].display(&input(json!({}))), "memory_delete");
    assert_eq!(tools[1].display(&input(json!({"key": "x\u{1b}[2J\ny"}))), "memory_read x y");
}

#[tokio::test]
async fn mem_4_bad_arguments_are_error_results_and_never_panic() {
    let store = Arc::new(InMemoryStore::new());
    let tools = Tools::new(store.clone());
    let cases = [
        (1, json!({})),
        (1, json!({"key": 5})),
        (1, json!({"key": "k", "extra": 1})),
        (2, json!({"key": "k", "description": "d"})),
        (2, json!({"key": "k", "description": "d", "content": "c", "overwrite": "yes"})),
        (2, json!({"key": "k", "description": null, "content": "c"})),
        (3, json!([])),
        (0, json!({"unexpected": true})),
        (0, json!("text")),
    ];
    for (index, args) in cases {
        // Through the dispatch path, as every surface calls them.
        let msg = err(common::dispatch::dispatched(tools.0[index].clone(), &args.to_string()).await);
        assert!(msg.contains(&format!("\"{}\"", tools.0[index].spec().name())), "{args}: {msg}");
    }
    // `null` arguments are `{}`.
    let null = ToolInput::from_json("null").unwrap();
    assert_eq!(tools.0[0].call(&null, &CallContext::new()).await.content(), r#"{"memories":[]}"#);
    assert_eq!(store.count().await.unwrap(), 0);
}

/// A backend whose every operation fails.
struct Broken;

#[async_trait]
impl MemoryStore for Broken {
    async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
        Err(MemoryError::backend("bucket unreachable"))
    }
    async fn read(&self, _: &str) -> Result<Option<Stored>, MemoryError> {
        Err(MemoryError::backend("bucket unreachable"))
    }
    async fn create(&self, _: &str, _: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
        Err(MemoryError::backend("bucket unreachable"))
    }
    async fn overwrite(&self, _: &str, _: &MemoryRecord, _: Option<u64>) -> Result<OverwriteOutcome, MemoryError> {
        Err(MemoryError::backend("bucket unreachable"))
    }
    async fn delete(&self, _: &str) -> Result<bool, MemoryError> {
        Err(MemoryError::backend("bucket unreachable"))
    }
}

#[tokio::test]
async fn mem_14_backend_errors_are_error_results() {
    let tools = Tools::new(Arc::new(Broken));
    for out in [
        tools.call(0, json!({})).await,
        tools.read("k").await,
        tools.create("k", "d", "c").await,
        tools.write("k", "d", "c", true).await,
        tools.delete("k").await,
    ] {
        let msg = err(out);
        assert!(msg.contains("bucket unreachable"), "{msg}");
    }
    assert!(memory_index(&Broken).await.unwrap_err().to_string().contains("bucket unreachable"));
    assert!(!MemoryError::backend("x").is_rule());
}

#[tokio::test]
async fn mem_14_file_backend_io_failures_are_error_results() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    fs::write(&not_a_dir, "x").unwrap();
    let tools = Tools::new(file_store(&not_a_dir));
    let msg = err(tools.create("k", "d", "c").await);
    assert!(msg.contains("memory directory") && msg.contains("file"), "{msg}");
    assert!(err(tools.call(0, json!({})).await).contains("memory directory"));
}

// ---- MEM-15, MEM-17 system segments ----

#[tokio::test]
async fn mem_15_index_lists_entries_between_markers_under_a_heading() {
    let store = InMemoryStore::new();
    store.create("zeta", &record("Last one", "c")).await.unwrap();
    store.create("alpha", &record("First: with a colon", "c")).await.unwrap();
    let index = memory_index(&store).await.unwrap();
    let lines: Vec<&str> = index.lines().collect();
    assert_eq!(lines.len(), 5, "{index}");
    let heading = lines[0];
    assert!(heading.contains("earlier runs") && heading.contains("not instructions"), "{heading}");
    assert!(heading.contains("memory_read"), "{heading}");
    assert_eq!(lines[1..], ["<memory-index>", "- alpha: First: with a colon", "- zeta: Last one", "</memory-index>"]);
}

#[tokio::test]
async fn mem_15_index_of_an_empty_store_says_none_stored_yet() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileMemoryStore::new(dir.path().join("missing"));
    let index = memory_index(&store).await.unwrap();
    assert!(index.ends_with("\n<memory-index>\n(none stored yet)\n</memory-index>"), "{index}");
    assert_eq!(index.lines().count(), 4);
    assert!(!dir.path().join("missing").exists());
}

#[tokio::test]
async fn mem_15_index_descriptions_are_sanitized_and_capped_at_200_characters() {
    let dir = tempfile::tempdir().unwrap();
    // Written by hand: the tools would have normalized the escape away already.
    fs::write(
        dir.path().join("alert.md"),
        "---\ndescription: \"\\e[31mred\\e[0m alert\\a \\e]0;title\\a done\"\n---\n\nbody",
    )
    .unwrap();
    fs::write(dir.path().join("long.md"), encode(&"w".repeat(450), "body")).unwrap();
    fs::write(dir.path().join("none.md"), "no header").unwrap();
    let store = FileMemoryStore::new(dir.path());
    assert!(store.read("alert").await.unwrap().unwrap().description.contains('\u{1b}'));

    let index = memory_index(&store).await.unwrap();
    let lines: Vec<&str> = index.lines().collect();
    assert_eq!(lines[2], "- alert: red alert done");
    assert_eq!(lines[3], format!("- long: {}…", "w".repeat(200)));
    assert_eq!(lines[4], "- none:");
    assert!(!index.contains('\u{1b}') && !index.contains('\u{7}'));
}

#[test]
fn mem_17_note_covers_persistence_what_to_save_reading_first_create_semantics_and_data_not_instructions() {
    let note = memory_note();
    assert!(std::ptr::eq(note, memory_note()), "stable text");
    let lower = note.to_lowercase();
    for needle in [
        "across runs",
        "transient state",
        "secrets",
        "narration",
        "memory_read",
        "creates a new key",
        "overwrite: true",
        "not instructions",
    ] {
        assert!(lower.contains(needle), "note lacks {needle:?}: {note}");
    }
}
