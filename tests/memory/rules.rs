use super::*;

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
