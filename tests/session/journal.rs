use super::*;

// ---- journal ----

#[tokio::test]
async fn sess_1_6_7_8_11_a_checkpointed_run_journals_every_step_in_order() {
    let s = Setup::new();
    let a = Logger::new("a");
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![Block::text("two steps"), tool_use("c1", "a", 1), tool_use("c2", "a", 2)]),
        answer("done"),
    ]));
    let agent = s.agent(config(""), &provider, &[&a]).await;
    let sid = SessionId::generate();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let events = move |e: &RunEvent<'_>| {
        if let RunEvent::Session { id, resumed } = e {
            sink.lock().unwrap().push((id.to_string(), *resumed));
        }
    };
    let out = agent.run("do it", RunOptions::new().with_checkpoint(sid.clone()).with_events(events)).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(out.session_id.as_ref(), Some(&sid));
    assert_eq!(*seen.lock().unwrap(), [(sid.to_string(), false)]);
    assert_eq!(s.protocols(&sid), ["meta", "assistant", "tool_result", "tool_result", "assistant", "terminal"]);
    let lines = s.lines(&sid);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["seq"], i as u64 + 1, "SESS-5: seq starts at 1 and increases by 1");
    }
    let meta = &lines[0]["meta"];
    assert_eq!(meta["version"], 4);
    assert_eq!(meta["run_id"], sid.as_str());
    assert_eq!(meta["prompt"], "do it");
    assert_eq!(meta["fingerprint"]["provider"], "scripted");
    assert_eq!(meta["fingerprint"]["model"], "m1");
    assert_eq!(meta["fingerprint"]["thinking_mode"], "off");
    assert_eq!(meta["fingerprint"]["max_iterations"], 50);
    assert_eq!(meta["fingerprint"]["max_tokens"], 200000);
    assert!(!lines[0].to_string().contains("Be careful"), "SESS-6: never the system prompt itself");
    assert!(meta.get("interactive").is_none());
    let turn = &lines[1]["assistant"];
    assert_eq!(turn["iteration"], 1);
    assert_eq!(turn["stop_reason"], "tool_use");
    assert_eq!((turn["in_tokens"].as_u64(), turn["out_tokens"].as_u64()), (Some(10), Some(5)));
    assert!(turn.get("cache_read_tokens").is_none(), "SESS-7: zero cache counters are omitted");
    assert_eq!(turn["message"]["content"][1]["tool_use"]["id"], "c1");
    assert_eq!(lines[2]["tool_result"]["tool_use_id"], "c1");
    assert_eq!(lines[2]["tool_result"]["result"], json!({"tool_use_id": "c1", "content": "did 1", "is_error": false}));
    assert!(lines[2]["tool_result"].get("remote").is_none());
    assert_eq!(lines[5]["terminal"], json!({"reason": "completed"}));
}

#[tokio::test]
async fn sess_28_journal_is_0600_in_a_0700_directory_and_lock_file_beside_it() {
    let s = Setup::new();
    let a = Logger::new("a");
    let provider = Arc::new(ScriptedProvider::new([answer("hi")]));
    let agent = s.agent(config(""), &provider, &[&a]).await;
    let sid = id("perm-check");
    agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(s.store().dir()), 0o700);
    assert_eq!(mode(&s.store().journal_path(&sid)), 0o600);
    assert!(s.store().dir().join("perm-check.lock").exists());
}

#[tokio::test]
async fn sess_2_3_ids_are_ksuids_or_valid_names_and_invalid_ids_never_reach_storage() {
    let generated = SessionId::generate();
    assert_eq!(generated.as_str().len(), 27);
    assert!(generated.as_str().chars().all(|c| c.is_ascii_alphanumeric()));
    for bad in ["", "-x", "_x", "a/b", "../x", "a.b", "a b", "é", &"a".repeat(129)] {
        let err = SessionId::new(bad).unwrap_err();
        assert!(err.is_session(), "{bad:?}");
    }
    assert!(SessionId::new("a".repeat(128)).is_ok());
    assert!(SessionId::new("A-b_9").is_ok());
}

#[tokio::test]
async fn sess_3_creating_an_existing_session_fails_and_the_run_ends_before_any_model_call() {
    let s = Setup::new();
    let provider = Arc::new(ScriptedProvider::new([answer("one")]));
    let a = Logger::new("a");
    let agent = s.agent(config(""), &provider, &[&a]).await;
    let sid = id("twice");
    assert_eq!(agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await.reason, TerminalReason::Completed);
    let out = agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(out.reason, TerminalReason::Error);
    assert!(
        out.error.as_ref().map(ToString::to_string).as_deref().unwrap().contains("session twice already exists"),
        "{:?}",
        out.error
    );
    assert_eq!(provider.requests().len(), 1, "no model call for the refused run");
    assert_eq!(s.protocols(&sid), ["meta", "assistant", "terminal"], "the first session is untouched");
}

#[tokio::test]
async fn sess_5_appends_are_idempotent_at_or_below_the_last_seq_and_refuse_gaps() {
    let s = Setup::new();
    let sid = id("seq");
    let mut w = s.store().create(&sid).await.unwrap();
    let term = |seq| JournalRecord::new(seq, Payload::Terminal(TerminalRecord::new(TerminalReason::Error, None)));
    w.append(&term(1)).await.unwrap();
    w.append(&term(2)).await.unwrap();
    w.append(&term(2)).await.unwrap();
    w.append(&term(1)).await.unwrap();
    let err = w.append(&term(4)).await.unwrap_err();
    assert!(err.to_string().contains("record 4"), "{err}");
    assert_eq!(std::fs::read_to_string(s.store().journal_path(&sid)).unwrap().lines().count(), 2);
}

#[tokio::test]
async fn sess_29_a_second_writer_is_refused_while_the_first_holds_the_lock() {
    let s = Setup::new();
    let sid = id("locked");
    let mut first = s.store().create(&sid).await.unwrap();
    first
        .append(&JournalRecord::new(1, Payload::Terminal(TerminalRecord::new(TerminalReason::Error, None))))
        .await
        .unwrap();
    let err = s.store().open(&sid).await.unwrap_err();
    assert!(err.to_string().contains("already locked"), "{err}");
    let err = s.store().remove(&sid).await.unwrap_err();
    assert!(err.to_string().contains("already locked"), "{err}");
    drop(first);
    assert!(s.store().open(&sid).await.is_ok(), "the lock dies with its holder");
}

#[tokio::test]
async fn sess_3_a_journal_whose_creator_died_before_its_first_record_is_reclaimed_not_resumed() {
    let s = Setup::new();
    let sid = id("stillborn");
    drop(s.store().create(&sid).await.unwrap());
    let err = s.store().open(&sid).await.unwrap_err();
    assert!(err.to_string().contains("holds no records"), "{err}");
    // A torn first line counts as no record too.
    std::fs::write(s.store().journal_path(&sid), br#"{"seq":1,"protocol":"io.cho"#).unwrap();
    let mut w = s.store().create(&sid).await.unwrap();
    w.append(&JournalRecord::new(1, Payload::Terminal(TerminalRecord::new(TerminalReason::Error, None))))
        .await
        .unwrap();
    drop(w);
    assert_eq!(s.store().read(&sid).await.unwrap().len(), 1);
    let err = s.store().create(&sid).await.unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
}
