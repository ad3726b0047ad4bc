//! Checkpointed sessions through the SDK (SPEC section 14, GATE-12..16, LOOP-14): the file journal, folding,
//! fingerprint refusals, resume, recorded answers and suspend. The example CLI's crash and signal suites are in
//! `session_crash.rs` and `session_signals.rs`.

use fisk_ai::agent::{Agent, RunEvent, RunOptions, TerminalReason};
use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision};
use fisk_ai::llm::{Block, Caps, Message, Response, Role, ScriptedProvider, StopReason, Usage};
use fisk_ai::session::{
    AssistantRecord, ConfirmChoice, ConfirmRecord, FileSessionStore, Journal, JournalRecord, JournalWriter, Meta,
    Payload, SessionEntry, SessionId, SessionStore, TerminalRecord, ToolResultRecord,
};
use fisk_ai::tool::{CallContext, CancellationToken, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, Warning, async_trait};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn config(extra: &str) -> Config {
    Config::from_yaml_str(&format!("identity: t\nsystem_prompt: Be careful.\nllm:\n  model: m1\n{extra}")).unwrap()
}

fn tool_use(id: &str, name: &str, n: u32) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input: ToolInput::from_json(format!(r#"{{"n":{n}}}"#)).unwrap() }
}

fn calls(blocks: Vec<Block>) -> Response {
    Response::new(blocks, StopReason::ToolUse, Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() })
}

fn answer(t: &str) -> Response {
    Response::new(
        vec![Block::text(t)],
        StopReason::EndTurn,
        Usage { input_tokens: 7, output_tokens: 3, ..Usage::default() },
    )
}

/// An in-process tool that logs the `n` of each call, and may run a hook (e.g. request a suspend) while running.
#[derive(Clone)]
struct Logger {
    spec: Arc<ToolSpec>,
    log: Arc<Mutex<Vec<u64>>>,
    hook: Option<CancellationToken>,
}

impl Logger {
    fn new(name: &str) -> Self {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        Logger { spec: Arc::new(ToolSpec::new(name, ToolKind::Custom, schema)), log: Arc::default(), hook: None }
    }
    fn gated(name: &str) -> Self {
        let mut l = Self::new(name);
        l.spec = Arc::new((*l.spec).clone().with_confirm(true));
        l
    }
    fn calls(&self) -> Vec<u64> {
        self.log.lock().unwrap().clone()
    }
}

#[async_trait]
impl Tool for Logger {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, input: &ToolInput, _: &CallContext) -> ToolOutput {
        let n = input.to_value().ok().and_then(|v| v["n"].as_u64()).unwrap_or(0);
        self.log.lock().unwrap().push(n);
        if let Some(t) = &self.hook {
            t.cancel();
        }
        ToolOutput::success(format!("did {n}"))
    }
}

/// A gate answering from a script; records what it was asked.
struct ScriptGate {
    answers: Mutex<Vec<Decision>>,
    asked: Arc<AtomicUsize>,
}

impl ScriptGate {
    fn new(answers: &[Decision]) -> (Self, Arc<AtomicUsize>) {
        let asked = Arc::new(AtomicUsize::new(0));
        let mut a = answers.to_vec();
        a.reverse();
        (ScriptGate { answers: Mutex::new(a), asked: asked.clone() }, asked)
    }
}

#[async_trait]
impl ConfirmGate for ScriptGate {
    fn can_ask(&self) -> bool {
        true
    }
    async fn confirm(&self, _req: &ConfirmRequest) -> Decision {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.answers.lock().unwrap().pop().expect("the gate was asked more often than scripted")
    }
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        Setup { dir: tempfile::tempdir().unwrap() }
    }
    fn store(&self) -> FileSessionStore {
        FileSessionStore::new(self.dir.path().join("runs"))
    }
    fn lines(&self, id: &SessionId) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.store().journal_path(id)).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
    fn protocols(&self, id: &SessionId) -> Vec<String> {
        self.lines(id)
            .iter()
            .map(|l| l["protocol"].as_str().unwrap().trim_start_matches("io.choria.fisk-ai.v1.session.").to_owned())
            .collect()
    }
    async fn agent(&self, config: Config, provider: &Arc<ScriptedProvider>, tools: &[&Logger]) -> Agent {
        let mut b = Agent::builder().config(config).provider_arc(provider.clone()).session_store(self.store());
        for t in tools {
            b = b.tool((*t).clone());
        }
        b.build().await.unwrap()
    }
    async fn agent_gated(
        &self,
        config: Config,
        provider: &Arc<ScriptedProvider>,
        tools: &[&Logger],
        gate: impl ConfirmGate + 'static,
    ) -> Agent {
        let mut b =
            Agent::builder().config(config).provider_arc(provider.clone()).session_store(self.store()).gate(gate);
        for t in tools {
            b = b.tool((*t).clone());
        }
        b.build().await.unwrap()
    }
    /// Write a journal by hand: the meta record of `agent`'s fingerprint, then `rest`.
    async fn journal(&self, agent: &Agent, id: &SessionId, prompt: &str, rest: Vec<Payload>) {
        let mut w = self.store().create(id).await.unwrap();
        let meta = Meta::new(id.as_str(), agent.fingerprint().clone(), prompt);
        w.append(&JournalRecord::new(1, Payload::Meta(meta))).await.unwrap();
        for (i, p) in rest.into_iter().enumerate() {
            w.append(&JournalRecord::new(i as u64 + 2, p)).await.unwrap();
        }
    }
}

fn assistant(iteration: u32, blocks: Vec<Block>) -> Payload {
    Payload::Assistant(AssistantRecord::new(
        iteration,
        Message::assistant(blocks),
        StopReason::ToolUse,
        Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() },
    ))
}

fn result(id: &str, content: &str) -> Payload {
    Payload::ToolResult(ToolResultRecord::new(id, content, false, false))
}

fn id(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

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

fn meta_line(fp: &str) -> String {
    format!(
        r#"{{"seq":1,"protocol":"io.choria.fisk-ai.v1.session.meta","meta":{{"version":4,"run_id":"x","created":"2026-11-30T00:00:00Z","fingerprint":{fp},"prompt":"p"}}}}"#
    )
}

const FP: &str = r#"{"provider":"scripted","model":"m1","system_hash":"","tools_hash":"","thinking_mode":"off","max_tokens":1,"max_iterations":1}"#;

fn fold_lines(lines: &[String]) -> fisk_ai::Result<Journal> {
    let records: fisk_ai::Result<Vec<JournalRecord>> =
        lines.iter().map(|l| JournalRecord::from_json(l.as_bytes())).collect();
    Journal::fold(records?)
}

#[test]
fn sess_13_fold_rejects_each_kind_of_corrupt_or_unsupported_journal() {
    let meta = meta_line(FP);
    let assistant = r#"{"seq":2,"protocol":"io.choria.fisk-ai.v1.session.assistant","assistant":{"iteration":1,"message":{"role":"assistant","content":[{"tool_use":{"id":"c1","name":"a","input":{}}}]},"in_tokens":1,"out_tokens":1}}"#;
    let result = |seq: u64, id: &str| {
        format!(
            r#"{{"seq":{seq},"protocol":"io.choria.fisk-ai.v1.session.tool_result","tool_result":{{"tool_use_id":"{id}","result":{{"tool_use_id":"{id}","content":"ok","is_error":false}}}}}}"#
        )
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![], "empty"),
        (vec![result(1, "c1")], "not meta"),
        (vec![meta.replace(r#""version":4"#, r#""version":5"#)], "unsupported journal version 5"),
        (vec![meta.replace(r#""version":4"#, r#""version":3"#)], "unsupported journal version 3"),
        (vec![meta.clone(), meta.replace(r#""seq":1"#, r#""seq":2"#)], "second meta"),
        (vec![meta.clone(), assistant.replace(r#""seq":2"#, r#""seq":3"#)], "seq 3 follows seq 1"),
        (vec![meta.clone(), assistant.to_owned(), result(2, "c1")], "seq 2 follows seq 2"),
        (vec![meta.clone(), result(2, "c1")], "answers no assistant turn"),
        (vec![meta.clone(), assistant.to_owned(), result(3, "zz")], "unknown call"),
        (vec![meta.clone(), assistant.to_owned(), result(3, "c1"), result(4, "c1")], "a second result"),
        (
            vec![meta.clone(), assistant.replace(r#"}}]}"#, r#"}},{"tool_use":{"id":"c1","name":"a","input":{}}}]}"#)],
            "two tool calls with id",
        ),
        (
            vec![
                meta.clone(),
                assistant.to_owned(),
                result(3, "c1").replacen(r#""tool_use_id":"c1","content""#, r#""tool_use_id":"c9","content""#, 1),
            ],
            "its result block says",
        ),
        (
            vec![meta.clone(), r#"{"seq":2,"protocol":"io.choria.fisk-ai.v1.session.assistant"}"#.into()],
            "has no assistant payload",
        ),
        (
            vec![meta.clone(), r#"{"seq":2,"protocol":"io.choria.fisk-ai.v1.session.bogus","bogus":{}}"#.into()],
            "unsupported record protocol",
        ),
    ];
    for (lines, expect) in cases {
        let err = fold_lines(&lines).unwrap_err();
        assert!(err.is_session());
        assert!(err.to_string().contains(expect), "{lines:?}: {err} (wanted {expect:?})");
    }
    // And a well-formed one folds: the pending call is the one without a result.
    let j = fold_lines(&[meta, assistant.to_owned()]).unwrap();
    assert_eq!(j.pending.as_ref().unwrap().unanswered().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["c1"]);
    assert_eq!((j.llm_calls, j.next_iteration, j.status()), (1, 2, "open"));
}

#[tokio::test]
async fn sess_30_a_torn_final_line_is_dropped_and_cut_before_the_next_append_but_interior_garbage_is_corrupt() {
    let s = Setup::new();
    let a = Logger::new("a");
    let provider = Arc::new(ScriptedProvider::new([answer("hi")]));
    let agent = s.agent(config(""), &provider, &[&a]).await;
    let sid = id("torn");
    s.journal(&agent, &sid, "p", vec![assistant(1, vec![tool_use("c1", "a", 1)])]).await;
    let path = s.store().journal_path(&sid);
    let mut bytes = std::fs::read(&path).unwrap();
    let whole = bytes.len();
    bytes.extend_from_slice(br#"{"seq":3,"protocol":"io.choria.fisk-ai.v1.session.tool_re"#);
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(s.store().read(&sid).await.unwrap().len(), 2, "the torn line is dropped on read");
    // Resume cuts the torn tail, runs the pending call and appends cleanly after the last whole record.
    let out = agent.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(a.calls(), [1]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.as_bytes()[..whole].ends_with(b"\n"));
    assert_eq!(s.protocols(&sid), ["meta", "assistant", "tool_result", "assistant", "terminal"]);

    // Garbage inside the journal is corruption, named with file and line.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "{not json");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = s.store().read(&sid).await.unwrap_err();
    assert!(err.to_string().contains("torn.json:2 is corrupt"), "{err}");
}

#[tokio::test]
async fn sess_17_a_completed_session_cannot_be_resumed() {
    let s = Setup::new();
    let a = Logger::new("a");
    let provider = Arc::new(ScriptedProvider::new([answer("hi")]));
    let agent = s.agent(config(""), &provider, &[&a]).await;
    let sid = id("done");
    agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    let err = agent.resume(&sid, RunOptions::new().with_force(true)).await.unwrap_err();
    assert!(err.to_string().contains("session done has already completed"), "{err}");
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn sess_18_a_provider_change_is_refused_even_with_force() {
    let s = Setup::new();
    let a = Logger::new("a");
    let first = Arc::new(ScriptedProvider::new([]));
    let agent = s.agent(config(""), &first, &[&a]).await;
    let sid = id("prov");
    s.journal(&agent, &sid, "p", vec![assistant(1, vec![tool_use("c1", "a", 1)])]).await;
    let other = Arc::new(ScriptedProvider::new([answer("no")]).with_caps(Caps::new("elsewhere")));
    let moved = s.agent(config("  budget:\n    max_iterations: 3\n"), &other, &[&a]).await;
    for force in [false, true] {
        let err = moved.resume(&sid, RunOptions::new().with_force(force)).await.unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("provider scripted") && msg.contains("provider elsewhere"), "{msg}");
        assert!(msg.contains("--force does not apply"), "{msg}");
        assert!(!msg.contains("max_iterations"), "SESS-18 precedes the drift check: {msg}");
    }
    assert!(a.calls().is_empty() && other.requests().is_empty());
}

#[tokio::test]
async fn sess_19_every_drifted_field_is_named_and_force_resumes_with_a_reset() {
    type Change = Box<dyn Fn(&mut Config)>;
    let cases: [(&str, Change, &str); 6] = [
        ("model", Box::new(|c: &mut Config| c.llm.model = Some("m2".into())), "model: m1 -> m2"),
        ("system", Box::new(|c: &mut Config| c.system_prompt = Some("Be bold.".into())), "system prompt: changed"),
        ("tools", Box::new(|_c: &mut Config| {}), "tool set: changed"),
        ("thinking", Box::new(|c: &mut Config| c.llm.thinking.enabled = true), "thinking: off -> summarized"),
        ("tokens", Box::new(|c: &mut Config| c.llm.budget.max_tokens = 5000), "max_tokens: 200000 -> 5000"),
        ("iters", Box::new(|c: &mut Config| c.llm.budget.max_iterations = 9), "max_iterations: 50 -> 9"),
    ];
    for (name, change, line) in cases {
        let s = Setup::new();
        let a = Logger::gated("a");
        let agent = s.agent(config(""), &Arc::new(ScriptedProvider::new([])), &[&a]).await;
        let sid = id(name);
        let once = ConfirmRecord::answer(ConfirmChoice::Once, "c1", "a", "a", "ai:confirm");
        s.journal(&agent, &sid, "p", vec![assistant(1, vec![tool_use("c1", "a", 1)]), Payload::Confirm(once)]).await;

        let mut changed = config("");
        change(&mut changed);
        let extra = Logger::new("extra");
        let tools: Vec<&Logger> = if name == "tools" { vec![&a, &extra] } else { vec![&a] };
        let provider = Arc::new(ScriptedProvider::new([answer("ok")]));
        let resumed = s.agent(changed, &provider, &tools).await;
        let err = resumed.resume(&sid, RunOptions::new()).await.unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(line), "{name}: {msg}");
        assert!(msg.contains("--force"), "{msg}");
        assert_eq!(msg.matches(" -> ").count() + msg.matches(": changed").count(), 1, "one line per change: {msg}");
        assert!(a.calls().is_empty());

        // GATE-15: forced, the recorded "once" is dropped, so with nobody to ask the pending gated call is declined.
        let out = resumed.resume(&sid, RunOptions::new().with_force(true)).await.unwrap();
        assert_eq!(out.reason, TerminalReason::Completed, "{name}: {:?}", out.error);
        assert!(a.calls().is_empty(), "{name}: the dropped answer must not run the command");
        let protocols = s.protocols(&sid);
        assert_eq!(protocols[3], "confirm");
        assert_eq!(s.lines(&sid)[3]["confirm"], json!({"choice": "reset"}));
        let first = &provider.requests()[0];
        let denial = &first.messages.last().unwrap().content[0];
        assert!(matches!(denial, Block::ToolResult { content, .. } if content.contains("\"allowed\":false")));
    }
}

#[tokio::test]
async fn sess_20_gate_14_resume_runs_only_unanswered_calls_and_honors_recorded_answers() {
    let s = Setup::new();
    let plain = Logger::new("plain");
    let gated = Logger::gated("gated");
    let setup_provider = Arc::new(ScriptedProvider::new([]));
    let agent = s.agent(config(""), &setup_provider, &[&plain, &gated]).await;
    let sid = id("pending");
    s.journal(
        &agent,
        &sid,
        "p",
        vec![
            assistant(
                1,
                vec![
                    tool_use("c1", "plain", 1),
                    tool_use("c2", "gated", 2),
                    tool_use("c3", "gated", 3),
                    tool_use("c4", "plain", 4),
                ],
            ),
            result("c1", "did 1"),
            Payload::Confirm(ConfirmRecord::answer(ConfirmChoice::Once, "c2", "gated", "gated", "ai:confirm")),
            Payload::Confirm(ConfirmRecord::answer(ConfirmChoice::Decline, "c3", "gated", "gated", "ai:confirm")),
        ],
    )
    .await;
    // A gate that would fail the test if asked: every pending answer is already recorded.
    let (gate, asked) = ScriptGate::new(&[]);
    let provider = Arc::new(ScriptedProvider::new([answer("all done")]));
    let resumed = s.agent_gated(config(""), &provider, &[&plain, &gated], gate).await;
    let replayed = Arc::new(Mutex::new(0usize));
    let r = replayed.clone();
    let events = move |e: &RunEvent<'_>| {
        if let RunEvent::Replay { messages } = e {
            *r.lock().unwrap() = messages.len();
        }
    };
    let out = resumed.resume(&sid, RunOptions::new().with_events(events)).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(asked.load(Ordering::SeqCst), 0, "GATE-14: recorded answers are not asked again");
    assert_eq!(plain.calls(), [4], "c1's result was recorded, so only c4 runs");
    assert_eq!(gated.calls(), [2], "c2 was approved once; c3 was declined");
    assert_eq!(*replayed.lock().unwrap(), 2, "SESS-22: the prompt and the pending turn are replayed");
    let req = &provider.requests()[0];
    let results = &req.messages.last().unwrap().content;
    let ids: Vec<&str> = results
        .iter()
        .map(|b| match b {
            Block::ToolResult { tool_use_id, .. } => tool_use_id.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"], "LOOP-9: one message, call order");
    assert!(matches!(&results[2], Block::ToolResult { content, .. } if content.contains("operator declined")));
    // LOOP-14: counters continue from the journal.
    assert_eq!(out.stats.llm_calls, 2);
    assert_eq!(out.stats.tool_calls, 4);
    assert_eq!(out.stats.usage.input_tokens, 17);
    assert_eq!(s.protocols(&sid)[5..], ["tool_result", "tool_result", "tool_result", "assistant", "terminal"]);
}

#[tokio::test]
async fn gate_14_an_always_answer_covers_later_calls_of_that_tool_after_resume() {
    let s = Setup::new();
    let gated = Logger::gated("gated");
    let agent = s.agent(config(""), &Arc::new(ScriptedProvider::new([])), &[&gated]).await;
    let sid = id("always");
    s.journal(
        &agent,
        &sid,
        "p",
        vec![
            assistant(1, vec![tool_use("c1", "gated", 1)]),
            Payload::Confirm(ConfirmRecord::answer(ConfirmChoice::Always, "c1", "gated", "gated", "ai:confirm")),
            result("c1", "did 1"),
        ],
    )
    .await;
    let (gate, asked) = ScriptGate::new(&[]);
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c2", "gated", 2)]), answer("ok")]));
    let resumed = s.agent_gated(config(""), &provider, &[&gated], gate).await;
    let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(gated.calls(), [2]);
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn gate_13_operator_answers_are_journaled_before_the_command_runs() {
    let s = Setup::new();
    let gated = Logger::gated("gated");
    let provider = Arc::new(ScriptedProvider::new([
        calls(vec![tool_use("c1", "gated", 1), tool_use("c2", "gated", 2)]),
        calls(vec![tool_use("c3", "gated", 3)]),
        answer("ok"),
    ]));
    let (gate, asked) = ScriptGate::new(&[Decision::Decline, Decision::ForConversation]);
    let agent = s.agent_gated(config(""), &provider, &[&gated], gate).await;
    let sid = id("answers");
    let out = agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(out.reason, TerminalReason::Completed);
    assert_eq!(asked.load(Ordering::SeqCst), 2, "c3 is covered by the allowance");
    assert_eq!(gated.calls(), [2, 3]);
    assert_eq!(
        s.protocols(&sid),
        [
            "meta",
            "assistant",
            "confirm",
            "tool_result",
            "confirm",
            "tool_result",
            "assistant",
            "tool_result",
            "assistant",
            "terminal"
        ]
    );
    let lines = s.lines(&sid);
    assert_eq!(
        lines[2]["confirm"],
        json!({"choice": "decline", "tool_use_id": "c1", "tool": "gated", "command": r#"gated {"n":1}"#, "tag": "ai:confirm"})
    );
    assert_eq!(lines[4]["confirm"]["choice"], "always");
    let j = Journal::fold(s.store().read(&sid).await.unwrap()).unwrap();
    assert_eq!(j.allowed, ["gated"]);
    assert!(j.answers.is_empty(), "per-call answers are held only for the turn they were given in");
}

/// A gate whose prompt is interrupted (Ctrl-C at the prompt).
struct Interrupted;

#[async_trait]
impl ConfirmGate for Interrupted {
    fn can_ask(&self) -> bool {
        true
    }
    async fn confirm(&self, _req: &ConfirmRequest) -> Decision {
        Decision::Abort
    }
}

#[tokio::test]
async fn gate_12_an_interrupted_prompt_suspends_a_checkpointed_run_and_asks_again_on_resume() {
    let s = Setup::new();
    let gated = Logger::gated("gated");
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c1", "gated", 1)])]));
    let agent = s.agent_gated(config(""), &provider, &[&gated], Interrupted).await;
    let sid = id("interrupt");
    let out = agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(out.reason, TerminalReason::Suspended);
    assert!(gated.calls().is_empty());
    assert_eq!(s.protocols(&sid), ["meta", "assistant", "terminal"], "no answer is recorded");

    let (gate, asked) = ScriptGate::new(&[Decision::Once]);
    let provider = Arc::new(ScriptedProvider::new([answer("ok")]));
    let resumed = s.agent_gated(config(""), &provider, &[&gated], gate).await;
    let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed);
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the same call is asked again");
    assert_eq!(gated.calls(), [1]);
}

#[tokio::test]
async fn sess_24_loop_3_a_suspend_request_finishes_the_step_and_stops_at_the_boundary_exactly_once() {
    let s = Setup::new();
    let suspend = CancellationToken::new();
    let mut a = Logger::new("a");
    a.hook = Some(suspend.clone());
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c1", "a", 1), tool_use("c2", "a", 2)])]));
    let agent = s.agent(config(""), &provider, &[&a]).await;
    let sid = id("suspend");
    let out = agent.run("x", RunOptions::new().with_checkpoint(sid.clone()).with_suspend(suspend)).await;
    assert_eq!(out.reason, TerminalReason::Suspended);
    assert_eq!(a.calls(), [1, 2], "work in progress completes: both calls of the turn");
    assert_eq!(provider.requests().len(), 1, "no model call after the suspend request");
    assert_eq!(s.protocols(&sid), ["meta", "assistant", "tool_result", "tool_result", "terminal"]);
    assert_eq!(s.lines(&sid)[4]["terminal"], json!({"reason": "suspended"}));

    let provider = Arc::new(ScriptedProvider::new([answer("finished")]));
    let b = Logger::new("a");
    let resumed = s.agent(config(""), &provider, &[&b]).await;
    let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed);
    assert_eq!(out.answer.as_deref(), Some("finished"));
    assert!(b.calls().is_empty(), "SESS-14: nothing re-executes after a clean suspend");
    let req = &provider.requests()[0];
    assert_eq!(req.messages.len(), 3, "prompt, the recorded turn, its results: nothing re-sent to the model");
    // SESS-21: the resume reminder is the last system segment, and it is not fingerprinted.
    assert_eq!(req.system.len(), 2);
    assert!(req.system[1].contains("resumed") && req.system[1].contains("stale"));
    assert_eq!(resumed.fingerprint(), agent.fingerprint());
}

#[tokio::test]
async fn sess_24_a_run_without_checkpoint_ignores_the_suspend_token() {
    let suspend = CancellationToken::new();
    suspend.cancel();
    let a = Logger::new("a");
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c1", "a", 1)]), answer("ok")]));
    let agent = Agent::builder().config(config("")).provider_arc(provider).tool(a.clone()).build().await.unwrap();
    let out = agent.run("x", RunOptions::new().with_suspend(suspend)).await;
    assert_eq!(out.reason, TerminalReason::Completed);
    assert_eq!(out.session_id, None);
}

#[tokio::test]
async fn budget_1_loop_14_the_iteration_cap_is_cumulative_across_resume() {
    let s = Setup::new();
    let a = Logger::new("a");
    let cfg = || config("  budget:\n    max_iterations: 2\n");
    let suspend = CancellationToken::new();
    let mut hooked = a.clone();
    hooked.hook = Some(suspend.clone());
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c1", "a", 1)])]));
    let agent = s.agent(cfg(), &provider, &[&hooked]).await;
    let sid = id("cap");
    agent.run("x", RunOptions::new().with_checkpoint(sid.clone()).with_suspend(suspend)).await;
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c2", "a", 2)]), answer("never")]));
    let resumed = s.agent(cfg(), &provider, &[&a]).await;
    let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::MaxIterations);
    assert_eq!(provider.requests().len(), 1, "one call before the suspend plus one after reach the cap of 2");
    assert_eq!(out.stats.llm_calls, 2);
    let j = Journal::fold(s.store().read(&sid).await.unwrap()).unwrap();
    assert_eq!((j.next_iteration, j.status()), (3, "max_iterations"));
}

#[tokio::test]
async fn sess_22_a_paused_last_turn_warns_that_server_state_may_have_expired() {
    let s = Setup::new();
    let a = Logger::new("a");
    let agent = s.agent(config(""), &Arc::new(ScriptedProvider::new([])), &[&a]).await;
    let sid = id("paused");
    let paused = Payload::Assistant(AssistantRecord::new(
        1,
        Message::assistant(vec![Block::text("searching")]),
        StopReason::PauseTurn,
        Usage::default(),
    ));
    s.journal(&agent, &sid, "p", vec![paused]).await;
    let provider = Arc::new(ScriptedProvider::new([answer("ok")]));
    let resumed = s.agent(config(""), &provider, &[&a]).await;
    let warned = Arc::new(Mutex::new(Vec::new()));
    let w = warned.clone();
    let events = move |e: &RunEvent<'_>| {
        if let RunEvent::Warning(x) = e {
            w.lock().unwrap().push((*x).clone());
        }
    };
    resumed.resume(&sid, RunOptions::new().with_events(events)).await.unwrap();
    assert!(warned.lock().unwrap().contains(&Warning::PausedTurnMayHaveExpired { session: "paused".into() }));
}

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

#[tokio::test]
async fn sess_25_the_jetstream_backend_is_refused_at_build_with_its_location() {
    // Until the jetstream backend is built, a configuration naming it is refused before anything runs (issue 11).
    let cfg = config("harness:\n  sessions:\n    backend: jetstream\n    options:\n      stream: RUNS\n");
    let provider = Arc::new(ScriptedProvider::new([answer("never")]));
    let err =
        Agent::builder().config(cfg).provider_arc(provider.clone()).tool(Logger::new("a")).build().await.unwrap_err();
    assert!(err.to_string().contains("jetstream session backend is not built yet"), "{err}");
    assert_eq!(err.key(), Some("harness.sessions.backend"));
    assert!(err.location().is_some(), "{err:?}");
    assert!(provider.requests().is_empty());
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
