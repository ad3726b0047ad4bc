use super::*;

// ---- stores ----

/// A store whose writers fail from the `fail_at`-th append on, to exercise SESS-33 through the plug-in seam.
struct Flaky {
    inner: FileSessionStore,
    fail_at: u64,
}

struct FlakyWriter {
    inner: Box<dyn JournalWriter>,
    fail_at: u64,
}

#[async_trait]
impl JournalWriter for FlakyWriter {
    async fn append(&mut self, record: &JournalRecord) -> fisk_ai::Result<()> {
        if record.seq >= self.fail_at {
            return Err(fisk_ai::Error::session("disk full"));
        }
        self.inner.append(record).await
    }
}

#[async_trait]
impl SessionStore for Flaky {
    fn backend(&self) -> &str {
        "flaky"
    }
    async fn create(&self, id: &SessionId) -> fisk_ai::Result<Box<dyn JournalWriter>> {
        Ok(Box::new(FlakyWriter { inner: self.inner.create(id).await?, fail_at: self.fail_at }))
    }
    async fn open(&self, id: &SessionId) -> fisk_ai::Result<(Vec<JournalRecord>, Box<dyn JournalWriter>)> {
        let (records, inner) = self.inner.open(id).await?;
        Ok((records, Box::new(FlakyWriter { inner, fail_at: u64::MAX })))
    }
    async fn read(&self, id: &SessionId) -> fisk_ai::Result<Vec<JournalRecord>> {
        self.inner.read(id).await
    }
    async fn list(&self) -> fisk_ai::Result<Vec<SessionEntry>> {
        self.inner.list().await
    }
    async fn remove(&self, id: &SessionId) -> fisk_ai::Result<()> {
        self.inner.remove(id).await
    }
}

#[tokio::test]
async fn sess_33_a_failed_append_ends_the_run_with_error_and_the_session_stays_resumable() {
    let s = Setup::new();
    let a = Logger::new("a");
    // Records: 1 meta, 2 assistant, 3 result c1, 4 result c2 (fails), so c2 ran but its result is not recorded.
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c1", "a", 1), tool_use("c2", "a", 2)])]));
    let agent = Agent::builder()
        .config(config(""))
        .provider_arc(provider.clone())
        .session_store(Flaky { inner: s.store(), fail_at: 4 })
        .tool(a.clone())
        .build()
        .await
        .unwrap();
    let sid = id("flaky");
    let warned = Arc::new(Mutex::new(Vec::new()));
    let w = warned.clone();
    let events = move |e: &RunEvent<'_>| {
        if let RunEvent::Warning(x) = e {
            w.lock().unwrap().push(x.kind());
        }
    };
    let out = agent.run("x", RunOptions::new().with_checkpoint(sid.clone()).with_events(events)).await;
    assert_eq!(out.reason, TerminalReason::Error);
    assert!(out.error.as_ref().map(ToString::to_string).as_deref().unwrap().contains("disk full"), "{:?}", out.error);
    assert_eq!(a.calls(), [1, 2]);
    assert_eq!(provider.requests().len(), 1, "the run stops at the failed record");
    assert_eq!(*warned.lock().unwrap(), ["session_end_unrecorded"], "the terminal record failing is only a warning");
    assert_eq!(s.protocols(&sid), ["meta", "assistant", "tool_result"]);

    // Resumable: c2 is the one repeated call (SESS-15).
    let provider = Arc::new(ScriptedProvider::new([answer("ok")]));
    let b = Logger::new("a");
    let resumed = s.agent(config(""), &provider, &[&b]).await;
    let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed);
    assert_eq!(b.calls(), [2]);
}

#[tokio::test]
async fn ovr_7_an_injected_session_store_with_a_non_file_backend_fails_at_build() {
    let s = Setup::new();
    let cfg = config("harness:\n  sessions:\n    backend: jetstream\n    options:\n      stream: RUNS\n");
    let err = Agent::builder()
        .config(cfg)
        .provider(ScriptedProvider::new([]))
        .session_store(s.store())
        .tool(Logger::new("a"))
        .build()
        .await
        .unwrap_err();
    assert_eq!(err.key(), Some("harness.sessions.backend"));
}

#[cfg(feature = "nats")]
#[tokio::test]
async fn sess_25_31_a_jetstream_backend_that_cannot_connect_fails_only_checkpointed_runs_naming_backend_stream_and_context()
 {
    // A context that does not exist: the backend cannot connect.
    let cfg = config(
        "nats_context: fisk-ai-no-such-context\nharness:\n  sessions:\n    backend: jetstream\n    options:\n      \
         stream: RUNS\n",
    );
    let provider = Arc::new(ScriptedProvider::new([answer("plain"), answer("never")]));
    let agent = Agent::builder().config(cfg).provider_arc(provider.clone()).tool(Logger::new("a")).build().await;
    let agent = agent.expect("the backend opens lazily: building never fails on it");
    assert_eq!(agent.run("x", RunOptions::new()).await.answer.as_deref(), Some("plain"), "an ephemeral run works");
    let out = agent.run("x", RunOptions::new().with_checkpoint(SessionId::new("js").unwrap())).await;
    assert_eq!(out.reason, TerminalReason::Error);
    let text = out.error.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("jetstream session backend") && text.contains("RUNS"), "{text}");
    assert!(text.contains("fisk-ai-no-such-context"), "{text}");
    assert_eq!(provider.requests().len(), 1, "no model call for the checkpointed run");
}

#[test]
fn sess_26_the_file_directory_follows_options_then_store_base_then_xdg() {
    use fisk_ai::config::SessionOptions;
    let opts = |dir: Option<&str>| {
        let mut o = SessionOptions::default();
        o.directory = dir.map(Into::into);
        o
    };
    let base = Path::new("/srv/agent");
    let dir = |o: &SessionOptions, b: Option<&Path>| FileSessionStore::from_config(o, b).unwrap().dir().to_owned();
    assert_eq!(dir(&opts(Some("/var/runs")), Some(base)), Path::new("/var/runs"));
    assert_eq!(dir(&opts(Some("journals")), Some(base)), Path::new("/srv/agent/journals"));
    assert_eq!(dir(&opts(None), Some(base)), Path::new("/srv/agent/runs"));
    let default = dir(&opts(None), None);
    assert!(default.ends_with("fisk-ai/runs") && default.is_absolute(), "{}", default.display());
}

#[tokio::test]
async fn cli_24_remove_is_idempotent_and_list_finds_sessions() {
    let s = Setup::new();
    let store = s.store();
    assert!(store.list().await.unwrap().is_empty(), "a missing directory lists as empty");
    store.create(&id("one")).await.unwrap();
    let listed: Vec<String> = store.list().await.unwrap().into_iter().map(|e| e.id.to_string()).collect();
    assert_eq!(listed, ["one"]);
    store.remove(&id("one")).await.unwrap();
    store.remove(&id("one")).await.unwrap();
    assert!(!store.journal_path(&id("one")).exists());
    assert!(!store.dir().join("one.lock").exists());
}

#[tokio::test]
async fn sess_12_provider_and_thinking_blocks_round_trip_byte_for_byte_through_the_journal() {
    let s = Setup::new();
    let a = Logger::new("a");
    let raw =
        serde_json::value::RawValue::from_string(r#"{"type":"server_tool_use","id":"s1","input":{"q":1.50}}"#.into())
            .unwrap();
    let blocks = vec![
        Block::Thinking { text: "hmm".into(), signature: "c2lnbmF0dXJl".into() },
        Block::Provider { kind: "server_tool_use".into(), raw },
        tool_use("c1", "a", 1),
    ];
    let suspend = CancellationToken::new();
    let mut hooked = a.clone();
    hooked.hook = Some(suspend.clone());
    let provider = Arc::new(ScriptedProvider::new([calls(blocks.clone())]));
    let agent = s.agent(config(""), &provider, &[&hooked]).await;
    let sid = id("blocks");
    agent.run("x", RunOptions::new().with_checkpoint(sid.clone()).with_suspend(suspend)).await;
    let content = &s.lines(&sid)[1]["assistant"]["message"]["content"];
    assert_eq!(content[0], json!({"thinking": {"text": "hmm", "signature": "c2lnbmF0dXJl"}}));
    assert_eq!(content[1]["provider"]["kind"], "server_tool_use");
    let j = Journal::fold(s.store().read(&sid).await.unwrap()).unwrap();
    assert_eq!(j.messages[1], Message { role: Role::Assistant, content: blocks });
    assert!(
        s.lines(&sid)[1].to_string().contains("1.50")
            || std::fs::read_to_string(s.store().journal_path(&sid)).unwrap().contains("1.50")
    );
}

#[tokio::test]
async fn sess_30_a_whole_final_line_that_cannot_be_read_is_never_dropped_or_overwritten() {
    let s = Setup::new();
    let sid = id("future");
    let path = s.store().journal_path(&sid);
    std::fs::create_dir_all(s.store().dir()).unwrap();
    let future = "{\"seq\":1,\"protocol\":\"io.choria.fisk-ai.v2.session.meta\",\"meta\":{}}\n";
    std::fs::write(&path, future).unwrap();
    let err = s.store().open(&sid).await.unwrap_err();
    assert!(err.to_string().contains("future.json:1"), "{err}");
    let err = s.store().create(&sid).await.unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), future, "the record is kept byte for byte");
}

#[tokio::test]
async fn sess_17_a_final_reply_whose_terminal_record_was_lost_folds_as_completed_and_is_not_resumed() {
    let s = Setup::new();
    let a = Logger::new("a");
    let agent = s.agent(config(""), &Arc::new(ScriptedProvider::new([])), &[&a]).await;
    let sid = id("lost-end");
    let reply = Payload::Assistant(AssistantRecord::new(
        1,
        Message::assistant(vec![Block::text("the answer")]),
        StopReason::EndTurn,
        Usage::default(),
    ));
    s.journal(&agent, &sid, "p", vec![reply]).await;
    let j = Journal::fold(s.store().read(&sid).await.unwrap()).unwrap();
    assert_eq!(j.status(), "completed");
    let provider = Arc::new(ScriptedProvider::new([answer("again")]));
    let resumed = s.agent(config(""), &provider, &[&a]).await;
    let err = resumed.resume(&sid, RunOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("already completed"), "{err}");
    assert!(provider.requests().is_empty(), "the model is not asked to continue its own final reply");

    // A refused final reply folds as an error, and is not resumable either.
    let sid = id("refused-end");
    let refused = Payload::Assistant(AssistantRecord::new(
        1,
        Message::assistant(vec![Block::text("no")]),
        StopReason::Refusal,
        Usage::default(),
    ));
    s.journal(&agent, &sid, "p", vec![refused]).await;
    let err = resumed.resume(&sid, RunOptions::new()).await.unwrap_err();
    assert!(err.to_string().contains("ended with the model's final reply (stop reason refusal)"), "{err}");
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn loop_6_7_calls_of_a_truncated_or_refused_turn_never_run_on_resume() {
    for stop in [StopReason::MaxTokens, StopReason::Refusal] {
        let s = Setup::new();
        let a = Logger::new("a");
        let agent = s.agent(config(""), &Arc::new(ScriptedProvider::new([])), &[&a]).await;
        let sid = id("unrunnable");
        let turn = Payload::Assistant(AssistantRecord::new(
            1,
            Message::assistant(vec![tool_use("c1", "a", 1)]),
            stop.clone(),
            Usage::default(),
        ));
        s.journal(&agent, &sid, "p", vec![turn]).await;
        let provider = Arc::new(ScriptedProvider::new([answer("ok")]));
        let resumed = s.agent(config(""), &provider, &[&a]).await;
        let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
        assert_eq!(out.reason, TerminalReason::Completed);
        assert!(a.calls().is_empty(), "{stop:?}: the call never runs");
        let last = provider.requests()[0].messages.last().unwrap().clone();
        assert!(
            matches!(&last.content[0], Block::ToolResult { content, is_error: true, .. } if content.contains("not run")),
            "{last:?}"
        );
    }
}

#[tokio::test]
async fn gate_14_invariant_6_a_recorded_answer_never_covers_a_later_call_that_reuses_its_id() {
    let s = Setup::new();
    let gated = Logger::gated("gated");
    let agent = s.agent(config(""), &Arc::new(ScriptedProvider::new([])), &[&gated]).await;
    let sid = id("reused");
    s.journal(
        &agent,
        &sid,
        "p",
        vec![
            assistant(1, vec![tool_use("call_0", "gated", 1)]),
            Payload::Confirm(ConfirmRecord::answer(ConfirmChoice::Once, "call_0", "gated", "gated", "ai:confirm")),
            result("call_0", "did 1"),
            // The provider reuses the id in the next turn; that call was never answered.
            assistant(2, vec![tool_use("call_0", "gated", 2)]),
        ],
    )
    .await;
    let provider = Arc::new(ScriptedProvider::new([answer("ok")]));
    let resumed = s.agent(config(""), &provider, &[&gated]).await;
    let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed);
    assert!(gated.calls().is_empty(), "no operator can be asked, so the unanswered call is declined, not run");
}

#[tokio::test]
async fn sess_15_cancelling_a_checkpointed_run_between_calls_records_nothing_for_the_cut_call() {
    let s = Setup::new();
    let cancel = CancellationToken::new();
    let mut a = Logger::new("a");
    a.hook = Some(cancel.clone());
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c1", "a", 1), tool_use("c2", "a", 2)])]));
    let agent = s.agent(config(""), &provider, &[&a]).await;
    let sid = id("cancelled");
    let out = agent.run("x", RunOptions::new().with_checkpoint(sid.clone()).with_cancel(cancel)).await;
    assert_eq!(out.reason, TerminalReason::Error);
    assert_eq!(a.calls(), [1], "c2 is never started once the run is cancelled");
    assert_eq!(s.protocols(&sid), ["meta", "assistant", "terminal"], "the cut call's result is not recorded");
    let b = Logger::new("a");
    let provider = Arc::new(ScriptedProvider::new([answer("ok")]));
    let resumed = s.agent(config(""), &provider, &[&b]).await;
    assert_eq!(resumed.resume(&sid, RunOptions::new()).await.unwrap().reason, TerminalReason::Completed);
    assert_eq!(b.calls(), [1, 2], "the cut call runs again, once");
}

#[tokio::test]
async fn a_turn_with_two_calls_sharing_an_id_runs_nothing_and_is_not_journaled() {
    let s = Setup::new();
    let a = Logger::new("a");
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("dup", "a", 1), tool_use("dup", "a", 2)])]));
    let agent = s.agent(config(""), &provider, &[&a]).await;
    let sid = id("dup");
    let out = agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(out.reason, TerminalReason::Error);
    assert!(
        out.error.as_ref().map(ToString::to_string).as_deref().unwrap().contains("same id \"dup\""),
        "{:?}",
        out.error
    );
    assert!(a.calls().is_empty());
    assert_eq!(s.protocols(&sid), ["meta", "terminal"]);
}

#[tokio::test]
async fn sess_16_the_fingerprint_hashes_are_pinned_to_the_canonical_form() {
    // Expected values computed independently (Python hashlib) over the canonical JSON the SPEC describes:
    // system: ["Be careful."]; tools: [{"defer_loading":false,"description":"","input_schema":{sorted keys},"name":"a"}].
    let s = Setup::new();
    let agent = s.agent(config(""), &Arc::new(ScriptedProvider::new([])), &[&Logger::new("a")]).await;
    let fp = agent.fingerprint();
    assert_eq!(fp.system_hash, "d06e64209364bb3408867240f147d078d34606b89d6aecb927e1b8f92630716a");
    assert_eq!(fp.tools_hash, "4e042f28d79c33f4a6141da6fe5ab5832580b70b7a0da7938f6f7d83744a4e21");
}

#[tokio::test]
async fn sess_28_a_session_directory_every_user_can_write_is_refused() {
    let s = Setup::new();
    let store = s.store();
    std::fs::create_dir_all(store.dir()).unwrap();
    std::fs::set_permissions(store.dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = store.create(&id("open-dir")).await.unwrap_err();
    assert!(err.to_string().contains("writable by every user"), "{err}");
    assert!(!store.journal_path(&id("open-dir")).exists());
}

#[cfg(feature = "nats")]
#[test]
fn sess_25_31_the_cowsay_jetstream_sessions_example_is_a_valid_configuration() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/cowsay/sessions-jetstream.yaml");
    let cfg = fisk_ai::Config::load(&path).unwrap();
    cfg.validate(fisk_ai::config::Mode::Lenient).unwrap();
    cfg.check_supported().unwrap();
    assert_eq!(cfg.harness.sessions.backend, "jetstream");
    assert_eq!(cfg.harness.sessions.options.stream.as_deref(), Some("RUNS"));
}
