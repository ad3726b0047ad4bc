use super::*;

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
