use super::*;

// ---- resume ----

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
    let (gate, asked) = RecordingGate::new(&[]);
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
    assert_eq!(asked.asked().len(), 0, "GATE-14: recorded answers are not asked again");
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
    let (gate, asked) = RecordingGate::new(&[]);
    let provider = Arc::new(ScriptedProvider::new([calls(vec![tool_use("c2", "gated", 2)]), answer("ok")]));
    let resumed = s.agent_gated(config(""), &provider, &[&gated], gate).await;
    let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!(gated.calls(), [2]);
    assert_eq!(asked.asked().len(), 0);
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
    let (gate, asked) = RecordingGate::new(&[Decision::Decline, Decision::ForConversation]);
    let agent = s.agent_gated(config(""), &provider, &[&gated], gate).await;
    let sid = id("answers");
    let out = agent.run("x", RunOptions::new().with_checkpoint(sid.clone())).await;
    assert_eq!(out.reason, TerminalReason::Completed);
    assert_eq!(asked.asked().len(), 2, "c3 is covered by the allowance");
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

    let (gate, asked) = RecordingGate::new(&[Decision::Once]);
    let provider = Arc::new(ScriptedProvider::new([answer("ok")]));
    let resumed = s.agent_gated(config(""), &provider, &[&gated], gate).await;
    let out = resumed.resume(&sid, RunOptions::new()).await.unwrap();
    assert_eq!(out.reason, TerminalReason::Completed);
    assert_eq!(asked.asked().len(), 1, "the same call is asked again");
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
