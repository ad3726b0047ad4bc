use super::*;

// ---- fold ----

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
