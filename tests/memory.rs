//! Memory (SPEC §13): key, description, size and entry rules; the record format; the four tools' results; the
//! file backend on disk; the system-prompt note and index; and the read-before-update guard (MEM-25) on a store
//! that reports revisions.

mod common;

use fisk_ai::async_trait;
use fisk_ai::config::MemoryOptions;
use fisk_ai::memory::{
    CreateOutcome, Entry, FileMemoryStore, InMemoryStore, MAX_CONTENT_BYTES, MAX_ENTRIES, MemoryError, MemoryRecord,
    MemorySession, MemoryStore, OverwriteOutcome, Stored, decode, encode, memory_index, memory_note, memory_tools,
    normalize_description, validate_key,
};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput};
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

// ---- helpers ----

struct Tools(Vec<Arc<dyn Tool>>);

impl Tools {
    fn new(store: Arc<dyn MemoryStore>) -> Self {
        Tools(memory_tools(store))
    }

    async fn call(&self, index: usize, args: Value) -> ToolOutput {
        self.0[index].call(&ToolInput::from_value(&args), &CallContext::new()).await
    }

    async fn list(&self) -> Value {
        ok(self.call(0, json!({})).await)
    }

    async fn read(&self, key: &str) -> ToolOutput {
        self.call(1, json!({"key": key})).await
    }

    async fn write(&self, key: &str, description: &str, content: &str, overwrite: bool) -> ToolOutput {
        self.call(2, json!({"key": key, "description": description, "content": content, "overwrite": overwrite})).await
    }

    async fn create(&self, key: &str, description: &str, content: &str) -> ToolOutput {
        self.call(2, json!({"key": key, "description": description, "content": content})).await
    }

    async fn delete(&self, key: &str) -> ToolOutput {
        self.call(3, json!({"key": key})).await
    }

    async fn keys(&self) -> Vec<String> {
        self.list().await["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["key"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// The JSON of a normal (non-error) result.
fn ok(out: ToolOutput) -> Value {
    assert!(!out.is_error(), "unexpected error result: {}", out.content());
    serde_json::from_str(out.content()).unwrap()
}

/// The text of an error result.
fn err(out: ToolOutput) -> String {
    assert!(out.is_error(), "expected an error result, got: {}", out.content());
    out.into_content()
}

fn written() -> Value {
    json!({"written": true})
}

fn file_store(dir: &Path) -> Arc<dyn MemoryStore> {
    Arc::new(FileMemoryStore::new(dir))
}

fn guarded() -> Arc<InMemoryStore> {
    Arc::new(InMemoryStore::new().with_read_before_update(true))
}

fn record(description: &str, content: &str) -> MemoryRecord {
    MemoryRecord::new(description, content).unwrap()
}

// ---- MEM-8 keys ----

#[test]
fn mem_8_key_rules_table() {
    let long_ok = "k".repeat(200);
    for key in ["a", "Z", "0", "A.b_c=d-e", "a.b.c", "-lead", "trail-", "_", "=", "x=1", "v1.2.3", &long_ok] {
        assert!(validate_key(key).is_ok(), "{key:?} should be valid");
    }
    let long_bad = "k".repeat(201);
    for key in
        ["", ".", "..", ".a", "a.", "a..b", "a/b", "../x", "a b", "a\nb", "ä", "a*", "a:b", "a\u{0}", "~", &long_bad]
    {
        let e = validate_key(key).unwrap_err();
        assert!(matches!(e, MemoryError::InvalidKey(_)) && e.is_rule(), "{key:?}");
        let msg = e.to_string();
        assert!(msg.contains("1 to 200 characters from A-Z a-z 0-9 . _ = -"), "{key:?}: {msg}");
        assert!(msg.contains("must not contain '..'"), "{msg}");
    }
    // A huge key is not echoed whole.
    let huge = "x/".repeat(100_000);
    assert!(validate_key(&huge).unwrap_err().to_string().len() < 500);
}

#[tokio::test]
async fn mem_8_invalid_key_is_an_error_result_on_every_tool_naming_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::new(file_store(dir.path()));
    for out in [
        tools.read("../etc/passwd").await,
        tools.create("a..b", "d", "c").await,
        tools.write(".hidden", "d", "c", true).await,
        tools.delete("a/b").await,
    ] {
        let msg = err(out);
        assert!(msg.starts_with("memory_"), "{msg}");
        assert!(msg.contains("invalid memory key") && msg.contains("1 to 200 characters"), "{msg}");
    }
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing was written");
}

// ---- MEM-9 descriptions ----

#[test]
fn mem_9_description_normalization() {
    let cases = [
        ("plain", "plain"),
        ("  padded  ", "padded"),
        ("tabs\tand\nnewlines\r\nhere", "tabs and newlines here"),
        ("bell\u{7}and\u{1b}escape", "bell and escape"),
        ("del\u{7f}c1\u{85}x", "del c1 x"),
        ("many     spaces", "many spaces"),
        ("nbsp\u{a0}\u{2028}sep", "nbsp sep"),
        ("unicode ✓ 日本 🎉", "unicode ✓ 日本 🎉"),
    ];
    for (input, want) in cases {
        assert_eq!(normalize_description(input).unwrap(), want, "{input:?}");
    }
    // Capped at 500 characters (not bytes), with no trailing space left by the cut.
    assert_eq!(normalize_description(&"é".repeat(600)).unwrap(), "é".repeat(500));
    let spaced = format!("{} tail", "x".repeat(499));
    assert_eq!(normalize_description(&spaced).unwrap(), "x".repeat(499));
    for empty in ["", "   ", "\n\t\r", "\u{0}\u{7}\u{1b}"] {
        let e = normalize_description(empty).unwrap_err();
        assert!(matches!(e, MemoryError::InvalidDescription(_)), "{empty:?}");
        assert!(e.to_string().contains("empty"));
    }
}

#[tokio::test]
async fn mem_9_tools_store_the_normalized_description_and_refuse_an_empty_one() {
    let store = Arc::new(InMemoryStore::new());
    let tools = Tools::new(store.clone());
    assert_eq!(ok(tools.create("k", "  Two\nlines\t ", "c").await), written());
    assert_eq!(tools.list().await, json!({"memories": [{"key": "k", "description": "Two lines"}]}));
    let msg = err(tools.create("k2", "\n \t", "c").await);
    assert!(msg.contains("description") && msg.contains("empty"), "{msg}");
    assert_eq!(store.count().await.unwrap(), 1);
}

// ---- MEM-10 content size ----

#[tokio::test]
async fn mem_10_content_up_to_65536_bytes_is_stored_and_one_more_is_refused_naming_size_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Tools::new(file_store(dir.path()));
    let max = "x".repeat(MAX_CONTENT_BYTES);
    assert_eq!(MAX_CONTENT_BYTES, 65536);
    assert_eq!(ok(tools.create("big", "d", &max).await), written());
    assert_eq!(ok(tools.read("big").await)["content"].as_str().unwrap().len(), 65536);

    let msg = err(tools.create("bigger", "d", &format!("{max}y")).await);
    assert!(msg.contains("65537") && msg.contains("65536"), "{msg}");
    // Bytes, not characters: 21846 three-byte characters are 65538 bytes.
    let msg = err(tools.write("big", "d", &"€".repeat(21846), true).await);
    assert!(msg.contains("65538"), "{msg}");
    assert_eq!(tools.keys().await, ["big"]);
}

// ---- MEM-11 entry cap ----

#[tokio::test]
async fn mem_11_the_1024th_create_succeeds_the_1025th_says_memory_is_full_and_overwrites_still_work() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..MAX_ENTRIES - 1 {
        fs::write(dir.path().join(format!("k{i:04}.md")), encode("seeded", "v")).unwrap();
    }
    let tools = Tools::new(file_store(dir.path()));
    assert_eq!(ok(tools.create("last", "the 1024th", "v").await), written());

    let msg = err(tools.create("one-more", "d", "v").await);
    assert!(msg.contains("memory is full") && msg.contains("1024") && msg.contains("delete"), "{msg}");
    let msg = err(tools.write("one-more", "d", "v", true).await);
    assert!(msg.contains("memory is full"), "overwrite of a missing key creates it: {msg}");

    // Existing keys: overwrite works, a plain create is the usual refusal.
    assert_eq!(ok(tools.write("k0001", "replaced", "new", true).await), written());
    assert_eq!(ok(tools.read("k0001").await)["content"], "new");
    let refusal = ok(tools.create("k0002", "d", "v").await);
    assert_eq!(refusal["written"], false);
    assert!(refusal["reason"].as_str().unwrap().contains("\"seeded\""));

    assert_eq!(ok(tools.delete("k0003").await), json!({"deleted": true}));
    assert_eq!(ok(tools.create("one-more", "d", "v").await), written());
    assert_eq!(tools.keys().await.len(), MAX_ENTRIES);
}

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

// ---- MEM-13 record format ----

/// Values exactly as the Go reference writes them (gopkg.in/yaml.v3 frontmatter).
const REFERENCE: &[(&str, &str, &str)] = &[
    ("---\ndescription: 'a: b'\n---\n\nbody\n", "a: b", "body\n"),
    ("---\ndescription: plain words\n---\n\n", "plain words", ""),
    (
        "---\ndescription: '- starts with a dash'\n---\n\nline one\nline two",
        "- starts with a dash",
        "line one\nline two",
    ),
    (
        "---\ndescription: 'it''s: quoted'\n---\n\n---\nlooks like: frontmatter\n---\n",
        "it's: quoted",
        "---\nlooks like: frontmatter\n---\n",
    ),
    (
        "---\ndescription: '\"double\" quotes'\n---\n\n\nleading blank line kept\n",
        "\"double\" quotes",
        "\nleading blank line kept\n",
    ),
    ("---\ndescription: héllo wörld ✓ 日本\n---\n\nunicode body ✓\n", "héllo wörld ✓ 日本", "unicode body ✓\n"),
    ("---\ndescription: '---'\n---\n\nx", "---", "x"),
    ("---\ndescription: '#not a comment'\n---\n\ny", "#not a comment", "y"),
    ("---\ndescription: 'true'\n---\n\nz", "true", "z"),
];

#[tokio::test]
async fn mem_13_reference_files_read_back_unchanged_and_reencode_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (bytes, description, content)) in REFERENCE.iter().enumerate() {
        assert_eq!(decode(bytes), ((*description).to_owned(), (*content).to_owned()), "{bytes:?}");
        assert_eq!(encode(description, content), *bytes, "re-encoding {description:?}");
        assert_eq!(record(description, content).encode(), *bytes);
        fs::write(dir.path().join(format!("ref{i}.md")), bytes).unwrap();
    }
    let tools = Tools::new(file_store(dir.path()));
    for (i, (bytes, description, content)) in REFERENCE.iter().enumerate() {
        let key = format!("ref{i}");
        let hit = ok(tools.read(&key).await);
        assert_eq!(hit, json!({"found": true, "key": key, "description": description, "content": content}));
        // Written back through the tool: the same bytes on disk.
        assert_eq!(ok(tools.write(&key, description, content, true).await), written());
        assert_eq!(fs::read_to_string(dir.path().join(format!("{key}.md"))).unwrap(), *bytes);
    }
}

#[test]
fn mem_13_tricky_descriptions_round_trip() {
    let tricky = [
        "a: b",
        "a: b: c",
        "'single'",
        "\"double\"",
        "key: 'v'",
        "- dash",
        "-",
        "---",
        "--- x",
        "...",
        "#c",
        "x #y",
        "[x]",
        "{a: 1}",
        "*star",
        "&anchor",
        "!tag",
        "|pipe",
        ">fold",
        "?q",
        "%YAML 1.2",
        "@at",
        "`tick",
        "true",
        "false",
        "null",
        "~",
        "123",
        "-1.5",
        "1e3",
        "0x1F",
        "0o17",
        ".inf",
        ".nan",
        "yes",
        "no",
        "on",
        "héllo ✓ 日本",
        "emoji 🎉",
        "\u{feff}bom",
        "tab\there",
        "line\nbreak",
        "cr\rlf",
        "a\u{7f}b",
        "\u{85}nel",
        " lead",
        "trail ",
        "\\ backslash",
        "C:\\path\\to",
        "<html> & </html>",
        "a\u{2028}b",
        "\u{a0}nbsp",
        "= sign",
        "\"unbalanced",
        "it's",
        "'",
        "\"",
        ": colon first",
        "x:",
        "comma, list",
        "%",
        "\u{1b}[31mred",
    ];
    let mut cases: Vec<String> = tricky.iter().map(|s| (*s).to_owned()).collect();
    // Pseudo-random mixes of the characters YAML cares about.
    let alphabet: Vec<char> = "ab :-#'\"\\|>!&*?{}[],%@`~\n\t.0é✓🎉\u{7}\u{85}\u{feff}".chars().collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..2000 {
        let len = (seed % 24) as usize + 1;
        let mut s = String::new();
        for _ in 0..len {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            s.push(alphabet[(seed % alphabet.len() as u64) as usize]);
        }
        cases.push(s);
    }
    for raw in &cases {
        let Ok(description) = normalize_description(raw) else { continue };
        assert!(!description.contains('\n'));
        for content in ["", "body", "---\n", "\nlead", "---\ndescription: fake\n---\n\nx", "crlf\r\n"] {
            let stored = encode(&description, content);
            assert!(stored.starts_with("---\ndescription: "), "{stored:?}");
            assert_eq!(decode(&stored), (description.clone(), content.to_owned()), "{raw:?} / {content:?}");
        }
    }
    // Without MEM-9 normalization, multi-line descriptions still round-trip.
    for raw in ["line\nbreak", "a\n---\nb", "trailing\n"] {
        assert_eq!(decode(&encode(raw, "c")), (raw.to_owned(), "c".to_owned()));
    }
}

#[test]
fn mem_13_lenient_reading_of_malformed_values() {
    let all_body = [
        "",
        "no frontmatter",
        "---",
        "---\n",
        "---\ndescription: never closed\n",
        "---\n[unclosed\n---\n\nbody",
        "---\n- a\n- list\n---\n\nbody",
        "---\njust a scalar\n---\n\nbody",
        "---\ndescription: [not, a, scalar]\n---\n\nbody",
        "---\ndescription: {a: 1}\n---\n\nbody",
        " ---\ndescription: x\n---\n\nbody",
        "--- \ndescription: x\n---\n\nbody",
        "\n---\ndescription: x\n---\n\nbody",
        "---\ndescription: x\n---x\n\nbody",
    ];
    for value in all_body {
        assert_eq!(decode(value), (String::new(), value.to_owned()), "{value:?}");
    }
    let parsed = [
        ("---\ndescription: x\n---\nno blank line", "x", "no blank line"),
        ("---\ndescription: x\nother: ignored\n---\n\nbody", "x", "body"),
        ("---\n---\n\nbody", "", "body"),
        ("---\nother: only\n---\n\nbody", "", "body"),
        ("---\ndescription: ~\n---\n\nbody", "", "body"),
        ("---\ndescription: 42\n---\n\nbody", "42", "body"),
        ("---\ndescription: x\n---", "x", ""),
        ("---\ndescription: x\n---\n", "x", ""),
        (
            "---\ndescription: first\n---\n\nbody\n---\ndescription: second\n---\n",
            "first",
            "body\n---\ndescription: second\n---\n",
        ),
        ("---\ndescription: x\n---\n\n\n\ntwo blank lines kept", "x", "\n\ntwo blank lines kept"),
        ("---\ndescription: >\n  folded\n  text\n---\n\nb", "folded text\n", "b"),
        ("---\r\ndescription: crlf\r\n---\r\n\r\nbody\r\n", "crlf", "body\r\n"),
    ];
    for (value, description, content) in parsed {
        assert_eq!(decode(value), (description.to_owned(), content.to_owned()), "{value:?}");
    }
}

#[tokio::test]
async fn mem_13_malformed_files_read_as_all_body_with_an_empty_description() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("bad.md"), "---\n[oops\n---\n\nbody").unwrap();
    fs::write(dir.path().join("bin.md"), b"\xff\xfe binary").unwrap();
    let tools = Tools::new(file_store(dir.path()));
    assert_eq!(
        ok(tools.read("bad").await),
        json!({"found": true, "key": "bad", "description": "", "content": "---\n[oops\n---\n\nbody"})
    );
    assert_eq!(ok(tools.read("bin").await)["content"], "\u{fffd}\u{fffd} binary");
    assert_eq!(
        tools.list().await,
        json!({"memories": [{"key": "bad", "description": ""}, {"key": "bin", "description": ""}]})
    );
}

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

#[tokio::test]
async fn mem_25_overwrite_of_a_missing_key_creates_it_and_a_delete_forgets_the_key() {
    let store = guarded();
    let tools = Tools::new(store.clone());
    assert_eq!(ok(tools.write("new", "d", "v", true).await), written());
    assert_eq!(ok(tools.delete("new").await), json!({"deleted": true}));
    assert_eq!(ok(tools.write("new", "d", "again", true).await), written());
    // Someone else recreates a key this run deleted: the run must read it first.
    ok(tools.delete("new").await);
    store.create("new", &record("theirs", "x")).await.unwrap();
    assert_eq!(ok(tools.write("new", "d", "mine", true).await)["written"], false);
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

// ---- MemoryRecord ----

#[test]
fn mem_9_10_record_new_enforces_the_rules() {
    let rec = MemoryRecord::new(" A\tdescription ", "body").unwrap();
    assert_eq!((rec.description(), rec.content()), ("A description", "body"));
    assert!(matches!(
        MemoryRecord::new("d", "x".repeat(65537)),
        Err(MemoryError::TooLarge { size: 65537, limit: 65536 })
    ));
    assert!(matches!(MemoryRecord::new("", "x"), Err(MemoryError::InvalidDescription(_))));
    assert_eq!(Stored::decode(&rec.encode(), Some(3)), Stored::new("A description", "body", Some(3)));
    assert!(MemoryError::Full { limit: MAX_ENTRIES }.to_string().contains("memory is full"));
}

/// A revision-reporting store that asks runs to count once (MEM-27), recording how often it was counted.
struct CountOnce {
    inner: InMemoryStore,
    counts: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl MemoryStore for CountOnce {
    async fn list(&self) -> Result<Vec<Entry>, MemoryError> {
        self.inner.list().await
    }
    async fn read(&self, key: &str) -> Result<Option<Stored>, MemoryError> {
        self.inner.read(key).await
    }
    async fn create(&self, key: &str, record: &MemoryRecord) -> Result<CreateOutcome, MemoryError> {
        self.inner.create(key, record).await
    }
    async fn overwrite(
        &self,
        key: &str,
        record: &MemoryRecord,
        expected: Option<u64>,
    ) -> Result<OverwriteOutcome, MemoryError> {
        self.inner.overwrite(key, record, expected).await
    }
    async fn delete(&self, key: &str) -> Result<bool, MemoryError> {
        self.inner.delete(key).await
    }
    async fn count(&self) -> Result<usize, MemoryError> {
        self.counts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.count().await
    }
    fn count_once_per_run(&self) -> bool {
        true
    }
    fn requires_read_before_update(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn mem_27_a_store_counted_once_per_run_tracks_the_runs_own_creates_and_deletes() {
    let store = Arc::new(CountOnce { inner: InMemoryStore::new(), counts: Default::default() });
    for i in 0..MAX_ENTRIES - 2 {
        store.inner.create(&format!("k{i}"), &record("seeded", "v")).await.unwrap();
    }
    let tools = Tools::new(store.clone());
    assert_eq!(ok(tools.create("a", "d", "v").await), written());
    assert_eq!(ok(tools.create("b", "d", "v").await), written());
    assert!(err(tools.create("c", "d", "v").await).contains("memory is full"));
    assert_eq!(ok(tools.delete("a").await), json!({"deleted": true}));
    assert_eq!(ok(tools.delete("a").await), json!({"deleted": false}));
    assert_eq!(ok(tools.create("c", "d", "v").await), written());
    assert!(err(tools.create("e", "d", "v").await).contains("memory is full"));
    assert_eq!(store.counts.load(std::sync::atomic::Ordering::SeqCst), 1, "counted once for the run");

    // A new run counts again.
    let next_run = Tools::new(store.clone());
    assert!(err(next_run.create("e", "d", "v").await).contains("memory is full"));
    assert_eq!(store.counts.load(std::sync::atomic::Ordering::SeqCst), 2);
}
