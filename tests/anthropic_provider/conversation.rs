use super::*;

// ---- Echo (PROV-14, PROV-15) and the conversation shapes ----

#[tokio::test]
async fn prov_15_transcript_03_is_echoed_block_for_block_with_server_blocks_byte_identical() {
    let (server, p, mut convo) = transcript_03().await;
    let first = convo.turn(&p).await;
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    let kinds: Vec<&str> = first
        .content
        .iter()
        .map(|b| match b {
            Block::Text { .. } => "text",
            Block::ToolUse { .. } => "tool_use",
            Block::Provider { kind, .. } => kind.as_str(),
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["text", "server_tool_use", "tool_search_tool_result", "text", "tool_use"]);
    // Only the client tool is ours to run (the search already ran server-side).
    assert_eq!(convo.messages.last().unwrap().tool_uses().map(|(_, n, _)| n).collect::<Vec<_>>(), ["cargo_test"]);
    convo.answer_tools(|_| ("running 42 tests\ntest result: FAILED. 41 passed; 1 failed; 0 ignored".into(), false));
    let last = convo.turn(&p).await;
    assert_eq!(last.stop_reason, StopReason::EndTurn);

    let reqs = server.requests();
    assert_headers(&reqs[1]);
    let body = reqs[1].body_json();
    let expected = fixture_json("requests/req_03b_after_tool_search.json");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0], expected["messages"][0]);
    // The assistant message is the fixture's content, block for block.
    let fixture = fixture_json("03_tool_search_then_deferred_tool_use.json");
    let want: Vec<Value> = fixture["content"].as_array().unwrap().iter().map(as_echoed).collect();
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"].as_array().unwrap(), &want);
    // Server blocks are the received bytes themselves, whitespace included.
    for raw in fixture_blocks("03_tool_search_then_deferred_tool_use.json") {
        if raw.get().contains("\"server_tool_use\"") || raw.get().contains("\"tool_search_tool_result\"") {
            assert!(contains(&reqs[1].body, raw.get().as_bytes()), "not verbatim: {}", raw.get());
        }
    }
    // One user message answering the one client tool call; nothing for the srvtoolu id.
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01LImbKdVF6ekXITxtaDEsCR",
            "content": "running 42 tests\ntest result: FAILED. 41 passed; 1 failed; 0 ignored"}]})
    );
    assert!(!contains(&reqs[1].body, br#""tool_use_id":"srvtoolu"#));
}

#[tokio::test]
async fn prov_15_thinking_signature_round_trips_byte_for_byte_and_tool_results_come_first() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("04_thinking_tool_use.json"),
        Reply::fixture("07_end_turn_after_tool_result.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo =
        Convo::new("cargo build fails in CI with an openssl-sys error but works on my laptop. Why?", fixture_plan());
    convo.model = "claude-opus-4-8";
    convo.thinking = true;
    let reply = convo.turn(&p).await;
    let fixture = fixture_json("04_thinking_tool_use.json");
    let signature = fixture["content"][0]["signature"].as_str().unwrap();
    match &reply.content[0] {
        Block::Thinking { text, signature: s } => {
            assert_eq!(s.as_bytes(), signature.as_bytes());
            assert_eq!(text, fixture["content"][0]["thinking"].as_str().unwrap());
        }
        other => panic!("expected thinking, got {other:?}"),
    }
    // The loop's user message, written text-first on purpose: results must still lead on the wire.
    let (id, _, _) = convo.messages.last().unwrap().tool_uses().next().unwrap();
    let id = id.to_owned();
    convo.messages.push(Message {
        role: Role::User,
        content: vec![
            Block::text("Keep the answer short."),
            Block::tool_result(id, "build:\n  image: rust:1-slim\n  script:\n    - cargo build --locked", false),
        ],
    });
    convo.turn(&p).await;

    let reqs = server.requests();
    let expected = fixture_json("requests/req_04b_thinking_tool_result.json");
    let body = reqs[1].body_json();
    assert_eq!(body["thinking"], json!({"type": "adaptive", "display": "summarized"}));
    assert_eq!(body["thinking"], expected["thinking"]);
    assert_eq!(body["max_tokens"], 16384, "PROV-11: thinking raises the default cap");
    let want: Vec<Value> = expected["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Some(blocks) = m["content"].as_array() {
                m["content"] = Value::Array(blocks.iter().map(as_echoed).collect());
            }
            m
        })
        .collect();
    assert_eq!(body["messages"].as_array().unwrap(), &want);
    // The signature's exact bytes, as a JSON string, are in the body.
    assert!(contains(&reqs[1].body, serde_json::to_string(signature).unwrap().as_bytes()));
}

#[tokio::test]
async fn loop_8_pause_turn_is_continued_by_resending_the_paused_content_as_the_last_message() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("06_pause_turn.json"),
        Reply::fixture("07_end_turn_after_tool_result.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo = Convo::new("Is the api deployment healthy in the staging namespace?", fixture_plan());
    let paused = convo.turn(&p).await;
    assert_eq!(paused.stop_reason, StopReason::PauseTurn);
    assert_eq!(convo.messages.last().unwrap().tool_uses().count(), 0);
    // No tool results and no new user message: the same request again with the paused turn appended.
    convo.turn(&p).await;

    let body = server.requests()[1].body_json().clone();
    let expected = fixture_json("requests/req_06b_continue_after_pause.json");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages.last().unwrap()["role"], "assistant");
    let want: Vec<Value> = expected["messages"][1]["content"].as_array().unwrap().iter().map(as_echoed).collect();
    assert_eq!(messages[1]["content"].as_array().unwrap(), &want);
    assert_eq!(messages[0], expected["messages"][0]);
    for key in ["model", "max_tokens", "system", "cache_control"] {
        assert_eq!(body[key], expected[key], "{key}");
    }
    let reqs = server.requests();
    for raw in fixture_blocks("06_pause_turn.json").iter().filter(|r| !r.get().contains("\"type\": \"text\"")) {
        assert!(contains(&reqs[1].body, raw.get().as_bytes()));
    }
}

#[tokio::test]
async fn prov_14_a_failed_tool_search_is_kept_and_echoed_with_its_error_fields_intact() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("09_tool_search_error_result.json"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo = Convo::new("Is the rollout done?", fixture_plan());
    convo.turn(&p).await;
    convo.messages.push(Message::user("The staging cluster."));
    convo.turn(&p).await;
    let reqs = server.requests();
    for raw in fixture_blocks("09_tool_search_error_result.json").iter().take(2) {
        assert!(contains(&reqs[1].body, raw.get().as_bytes()), "{}", raw.get());
    }
    let body = reqs[1].body_json();
    assert_eq!(body["messages"][1]["content"][1]["content"]["error_code"], "invalid_tool_input");
    assert!(body["messages"][1]["content"][1]["content"].as_object().unwrap().contains_key("error_message"));
}

#[tokio::test]
async fn prov_14_unknown_and_redacted_blocks_become_provider_blocks_holding_their_exact_bytes() {
    let reply = r#"{"id":"msg_x","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[
        {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"},
        {"type" : "web_fetch_tool_result", "tool_use_id":"srvtoolu_01", "content": {"n": 1.50, "s": "caf\u00e9"}},
        {"type":"text","text":"","citations":null},
        {"type":"text","text":"done"}],
        "stop_reason":"end_turn","brand_new_field":{"x":1},"usage":{"input_tokens":null,"output_tokens":7}}"#;
    let server = FakeAnthropic::with_replies([
        Reply::bytes(200, "application/json", reply.to_owned()),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let p = provider(&server);
    let mut convo = Convo::new("hi", fixture_plan());
    let r = convo.turn(&p).await;
    assert_eq!(r.usage.output_tokens, 7);
    assert_eq!(r.usage.input_tokens, 0, "null counts as zero");
    let raws: Vec<(&str, &str)> = r
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Provider { kind, raw } => Some((kind.as_str(), raw.get())),
            _ => None,
        })
        .collect();
    assert_eq!(
        raws,
        [
            ("redacted_thinking", r#"{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}"#),
            (
                "web_fetch_tool_result",
                r#"{"type" : "web_fetch_tool_result", "tool_use_id":"srvtoolu_01", "content": {"n": 1.50, "s": "caf\u00e9"}}"#
            ),
        ]
    );
    assert_eq!(r.content[2], Block::text(""));
    convo.messages.push(Message::user("more"));
    convo.turn(&p).await;
    let sent = &server.requests()[1];
    for (_, raw) in raws {
        assert!(contains(&sent.body, raw.as_bytes()));
    }
    // The empty text block is dropped on the way back (the API refuses empty text); the rest stays in order.
    let assistant = &sent.body_json()["messages"][1]["content"];
    assert_eq!(assistant.as_array().unwrap().len(), 3);
    assert_eq!(assistant[2], json!({"type": "text", "text": "done"}));
}

#[tokio::test]
async fn prov_14_tool_results_open_the_user_message_in_call_order_and_server_ids_get_none() {
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let p = provider(&server);
    let input = ToolInput::from_json(r#"{"path": "a"}"#).unwrap();
    let mut convo = Convo::new("read two files", fixture_plan());
    convo.messages.push(Message::assistant(vec![
        Block::ToolUse { id: "toolu_a".into(), name: "read_file".into(), input: input.clone() },
        Block::ToolUse { id: "toolu_b".into(), name: "read_file".into(), input },
    ]));
    convo.messages.push(Message {
        role: Role::User,
        content: vec![
            Block::text("note"),
            Block::tool_result("toolu_a", "A", false),
            Block::tool_result("srvtoolu_x", "never sent", false),
            Block::tool_result("toolu_b", "", true),
        ],
    });
    convo.turn(&p).await;
    let body = server.requests()[0].body_json().clone();
    assert_eq!(
        body["messages"][2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true},
            {"type": "text", "text": "note"}
        ])
    );
}

#[tokio::test]
async fn prov_14_stop_reasons_and_usage_map_verbatim() {
    let custom = |reason: &str| {
        Reply::json(
            200,
            &json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "cut"}],
                "stop_reason": reason, "usage": {"input_tokens": 3, "output_tokens": 4,
                "cache_read_input_tokens": 5, "cache_creation_input_tokens": 6, "server_tool_use": null}}),
        )
    };
    let server = FakeAnthropic::with_replies([
        Reply::fixture("05_max_tokens.json"),
        Reply::fixture("08_refusal.json"),
        custom("model_context_window_exceeded"),
        custom("stop_sequence"),
        custom("a_reason_from_the_future"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let p = provider(&server);
    let convo = Convo::new("hi", fixture_plan());
    let mut got = Vec::new();
    for _ in 0..6 {
        got.push(p.call(&convo.request()).await.unwrap());
    }
    assert_eq!(got[0].stop_reason, StopReason::MaxTokens);
    assert_eq!(got[1].stop_reason, StopReason::Refusal);
    assert!(got[1].content.is_empty());
    assert_eq!(got[2].stop_reason, StopReason::ContextWindowExceeded);
    assert_eq!(got[3].stop_reason, StopReason::StopSequence);
    assert_eq!(got[4].stop_reason, StopReason::Other("a_reason_from_the_future".into()));
    assert_eq!((got[2].usage.input_tokens, got[2].usage.output_tokens, got[2].usage.cache_read_tokens), (3, 4, 5));
    assert_eq!(got[2].usage.cache_creation_tokens, 6);
    let u = got[5].usage;
    assert_eq!((u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_creation_tokens), (418, 71, 0, 3104));
}
