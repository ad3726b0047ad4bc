use super::*;

// ---- Request shape ----

#[tokio::test]
async fn prov_8_9_12_first_request_has_the_documented_headers_system_blocks_and_tools() {
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let p = provider(&server);
    let mut convo = Convo::new("Do the tests of the core crate pass?", fixture_plan());
    let reply = convo.turn(&p).await;
    assert_eq!(reply.stop_reason, StopReason::EndTurn);

    let r = &server.requests()[0];
    assert_headers(r);
    let body = r.body_json();
    let expected = fixture_json("requests/req_03a_initial.json");
    for key in ["model", "max_tokens", "system", "cache_control", "messages"] {
        assert_eq!(body[key], expected[key], "{key}");
    }
    assert!(body.get("thinking").is_none() && body.get("stream").is_none() && body.get("tool_choice").is_none());

    // PROV-12: same tools, order and deferral as the fixture; the search tool (undated alias) last.
    let tools = tools_of(body);
    let want = expected["tools"].as_array().unwrap();
    assert_eq!(tools.len(), want.len());
    for (got, want) in tools.iter().zip(want).take(want.len() - 1) {
        assert_eq!(got["type"], "custom");
        assert_eq!((&got["name"], &got["description"]), (&want["name"], &want["description"]));
        assert_eq!(got["defer_loading"], want["defer_loading"], "{}", got["name"]);
        assert!(got["defer_loading"].is_boolean() && got.get("strict").is_none() && got.get("cache_control").is_none());
        assert_eq!(got["input_schema"]["required"], want["input_schema"]["required"]);
        assert_eq!(got["input_schema"]["additionalProperties"], false);
    }
    assert_eq!(tools.last().unwrap(), &json!({"type": "tool_search_tool_bm25", "name": "tool_search_tool_bm25"}));
    assert!(!contains(&r.body, b"strict"), "SEARCH-7: never strict");
}

#[tokio::test]
async fn prov_13_non_required_properties_are_annotated_on_a_copy_and_never_for_imported_tools() {
    let schema = json!({
        "type": "object",
        "properties": {
            "stream": {"type": "string", "description": "The stream"},
            "count": {"type": "integer", "description": "How many"},
            "force": {"type": "boolean"}
        },
        "required": ["stream"],
        "additionalProperties": false,
        "$comment": "forwarded"
    });
    let local = ToolSpec::new("stream_info", ToolKind::Command, schema.clone()).with_description("Info");
    let imported = ToolSpec::new("remote_info", ToolKind::Imported, schema.clone()).with_origin(Origin::remote("hub"));
    let tools = vec![tool(local), tool(imported)];
    let specs: Vec<Arc<dyn Tool>> = tools.clone();
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let mut convo = Convo::new("hi", plan_of(tools, true));
    convo.turn(&provider(&server)).await;

    let body = server.requests()[0].body_json().clone();
    let local = &tools_of(&body)[0]["input_schema"];
    assert_eq!(local["type"], "object");
    assert_eq!(local["properties"]["stream"]["description"], "The stream");
    assert_eq!(local["properties"]["count"]["description"], "How many (optional)");
    assert_eq!(local["properties"]["force"]["description"], "Optional.");
    assert_eq!((&local["additionalProperties"], &local["$comment"]), (&json!(false), &json!("forwarded")));
    assert_eq!(local["required"], json!(["stream"]));
    // MCP and a2a schemas go as they are.
    let remote = &tools_of(&body)[1]["input_schema"];
    assert_eq!(remote, &schema);
    // The tools' own schemas are untouched.
    assert!(specs.iter().all(|t| t.spec().input_schema() == &schema));
}

#[tokio::test]
async fn search_3_4_5_tools_are_deferred_and_the_search_tool_sent_exactly_when_due() {
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::fixture("01_end_turn_text.json"));
    let p = provider(&server);
    let builtin = || tool(ToolSpec::new("read_file", ToolKind::Builtin, json!({"type": "object"})));
    let cases: Vec<(&str, ToolPlan, bool)> = vec![
        // >= 10 real command tools: every command deferred (unless ai:no_defer), built-ins never; search last.
        ("natscli", plan_of([fisk_tools("natscli.json"), vec![builtin()]].concat(), true), true),
        // < 10 tools (one of them tagged ai:no_defer): nothing deferred, no search tool.
        ("cowsay", plan_of(fisk_tools("cowsay.json"), true), false),
        // >= 10 but the provider may not defer (no_tool_search): everything direct.
        ("natscli no search", plan_of(fisk_tools("natscli.json"), false), false),
        // >= 10 but every tool opted out: no search tool (SEARCH-4).
        (
            "all no_defer",
            plan_of(
                (0..12)
                    .map(|i| tool(ToolSpec::new(format!("t{i:02}"), ToolKind::Custom, json!({})).with_no_defer(true)))
                    .collect(),
                true,
            ),
            false,
        ),
    ];
    for (i, (name, plan, search)) in cases.iter().enumerate() {
        let mut convo = Convo::new("hi", plan.clone());
        convo.turn(&p).await;
        let body = server.requests()[i].body_json().clone();
        let tools = tools_of(&body);
        let custom = if *search { &tools[..tools.len() - 1] } else { &tools[..] };
        assert_eq!(custom.len(), plan.len(), "{name}");
        for ((got, (selected, deferred)), n) in custom.iter().zip(plan.iter()).zip(0..) {
            assert_eq!(got["name"], selected.spec().name(), "{name}: order at {n}");
            assert_eq!(got["defer_loading"], json!(deferred), "{name}: {}", got["name"]);
            assert_eq!(got["type"], "custom");
        }
        let has_search = tools.iter().any(|t| t["name"] == "tool_search_tool_bm25");
        assert_eq!(has_search, *search, "{name}");
        assert_eq!(plan.search(), *search, "{name}");
        if *search {
            assert_eq!(tools.last().unwrap()["type"], "tool_search_tool_bm25");
            assert!(custom.iter().any(|t| t["defer_loading"] == true));
            assert!(custom.iter().any(|t| t["defer_loading"] == false), "never defer everything");
        } else {
            assert!(custom.iter().all(|t| t["defer_loading"] == false), "{name}");
        }
    }
    // Built-ins are never deferred; command tools tagged ai:no_defer neither.
    let body = server.requests()[0].body_json().clone();
    assert_eq!(tools_of(&body).iter().find(|t| t["name"] == "read_file").unwrap()["defer_loading"], false);
    // SEARCH-8: descriptions are the model descriptions, Tags line included, so tag words are searchable.
    let (plan, body) = (&cases[0].1, server.requests()[0].body_json().clone());
    for (got, (selected, _)) in tools_of(&body).iter().zip(plan.iter()) {
        assert_eq!(got["description"].as_str().unwrap_or(""), selected.spec().description());
    }
    assert!(tools_of(&body).iter().any(|t| t["description"].as_str().unwrap_or("").contains("\n\nTags: ")));
}

#[tokio::test]
async fn prov_9_cache_breakpoints_stay_within_four_and_the_prefix_is_identical_across_turns() {
    for (cache, marker) in [
        (CacheMode::Default, Some(json!({"type": "ephemeral"}))),
        (CacheMode::OneHour, Some(json!({"type": "ephemeral", "ttl": "1h"}))),
        (CacheMode::Off, None),
    ] {
        let (server, p, mut convo) = transcript_03().await;
        convo.cache = cache;
        convo.turn(&p).await;
        convo.answer_tools(|_| ("41 passed; 1 failed".into(), false));
        convo.turn(&p).await;

        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        for r in &reqs {
            let breakpoints = count(&r.body, br#""cache_control""#);
            assert!(breakpoints <= 4, "{cache:?}: {breakpoints} breakpoints");
            let body = r.body_json();
            match &marker {
                Some(m) => {
                    assert_eq!(breakpoints, 2, "{cache:?}");
                    assert_eq!(&body["cache_control"], m);
                    let system = body["system"].as_array().unwrap();
                    assert_eq!(&system.last().unwrap()["cache_control"], m, "last system block");
                    assert!(system[..system.len() - 1].iter().all(|b| b.get("cache_control").is_none()));
                }
                None => assert_eq!(breakpoints, 0, "no cache markers when caching is off"),
            }
        }
        assert_eq!(prefix(&reqs[0].body), prefix(&reqs[1].body), "{cache:?}: tools+system prefix moved");
    }
}

#[test]
fn prov_9_tools_and_system_prefix_is_byte_identical_over_50_turns_with_300_tools() {
    let tools: Vec<Arc<dyn Tool>> = (0..300)
        .map(|i| {
            let schema = json!({"type": "object", "additionalProperties": false, "required": ["subject"],
                "properties": {"subject": {"type": "string", "description": "What"}, "limit": {"type": "integer"}}});
            tool(ToolSpec::new(format!("tool_{i:03}"), ToolKind::Command, schema).with_description(format!("Tool {i}")))
        })
        .collect();
    let plan = plan_of(tools, true);
    let p = AnthropicProvider::new(KEY);
    let system = system();
    let mut messages = vec![Message::user("start")];
    let mut first: Option<Vec<u8>> = None;
    let mut tools_raw: Option<String> = None;
    for turn in 0..50 {
        let req = Request::new("claude-sonnet-4-6", &system, &messages, &plan);
        let body = p.request_body(&req);
        assert_eq!(body, p.request_body(&req), "deterministic");
        let this_prefix = prefix(&body).to_vec();
        match &first {
            None => first = Some(this_prefix),
            Some(f) => assert_eq!(f, &this_prefix, "turn {turn}: the tools+system prefix changed"),
        }
        #[derive(serde::Deserialize)]
        struct B<'a> {
            #[serde(borrow)]
            tools: &'a RawValue,
        }
        let raw = serde_json::from_slice::<B<'_>>(&body).unwrap().tools.get().to_owned();
        assert_eq!(tools_raw.get_or_insert_with(|| raw.clone()), &raw);
        let id = format!("toolu_{turn:04}");
        let input = ToolInput::from_json(format!(r#"{{"subject": "s{turn}", "limit": 1.50}}"#)).unwrap();
        messages.push(Message::assistant(vec![
            Block::text(format!("Calling tool {turn}")),
            Block::ToolUse { id: id.clone(), name: format!("tool_{:03}", turn % 300), input },
        ]));
        messages.push(Message {
            role: Role::User,
            content: vec![Block::tool_result(id, "result line\n".repeat(5), false)],
        });
    }
    // The model's own number forms reach the wire unchanged.
    let body = p.request_body(&Request::new("claude-sonnet-4-6", &system, &messages, &plan));
    assert!(contains(&body, br#"{"subject": "s49", "limit": 1.50}"#));
}
