use super::*;

// ---- CFG-8 / CFG-9 / CFG-3 -----------------------------------------------------------------------------------------

#[test]
fn cfg_8_negative_max_tokens_is_rejected_naming_key_and_value() {
    let e = err("llm:\n  budget:\n    max_tokens: -5\n");
    assert_eq!(e.key(), Some("llm.budget.max_tokens"));
    assert_eq!(loc(&e), (3, 17));
    assert_contains(&e, &["llm.budget.max_tokens", "-5"]);
}

#[test]
fn cfg_8_negative_max_output_tokens_is_rejected_naming_key_and_value() {
    let e = err("llm:\n  budget:\n    max_output_tokens: -1\n");
    assert_eq!(e.key(), Some("llm.budget.max_output_tokens"));
    assert_contains(&e, &["llm.budget.max_output_tokens", "-1"]);
}

#[test]
fn cfg_8_negative_max_iterations_is_rejected_naming_key_and_value() {
    let e = err("llm:\n  budget:\n    max_iterations: -20\n");
    assert_eq!(e.key(), Some("llm.budget.max_iterations"));
    assert_contains(&e, &["llm.budget.max_iterations", "-20"]);
}

#[test]
fn cfg_9_unparsable_call_timeout_is_rejected_naming_key_and_value() {
    let e = err("llm:\n  budget:\n    call_timeout: 2 minutes\n");
    assert_eq!(e.key(), Some("llm.budget.call_timeout"));
    assert_eq!(loc(&e), (3, 19));
    assert_contains(&e, &["llm.budget.call_timeout", "\"2 minutes\""]);
    let e = err("llm:\n  budget:\n    call_timeout: 1d\n");
    assert_contains(&e, &["llm.budget.call_timeout", r#"time: unknown unit "d" in duration "1d""#]);
}

#[test]
fn cfg_9_zero_or_negative_call_timeout_is_rejected() {
    for v in ["0s", "\"0\"", "-1s"] {
        let e = err(&format!("llm:\n  budget:\n    call_timeout: {v}\n"));
        assert_eq!(e.key(), Some("llm.budget.call_timeout"), "{v}");
        assert_contains(&e, &["positive"]);
    }
}

#[test]
fn cfg_3_bare_number_duration_is_rejected_with_a_hint() {
    let e = err("expose:\n  agent:\n    a2a:\n      tool_timeout: 30\n");
    assert_eq!(e.key(), Some("expose.agent.a2a.tool_timeout"));
    assert_eq!(loc(&e), (4, 21));
    assert_contains(&e, &["30", "bare number is not accepted"]);
}

// ---- MCP-2 / MCP-16 / MCP-17 / A2A-11 ------------------------------------------------------------------------------

#[test]
fn mcp_2_port_out_of_range_is_rejected() {
    for v in ["70000", "-1", "65536"] {
        let e = err(&format!("expose:\n  agent:\n    mcp:\n      port: {v}\n"));
        assert_eq!(e.key(), Some("expose.agent.mcp.port"));
        assert_eq!(loc(&e), (4, 13));
        assert_contains(&e, &[v, "65535"]);
    }
    assert_eq!(parse("expose:\n  agent:\n    mcp:\n      port: 65535\n").expose.agent.mcp.unwrap().port(), 65535);
}

#[test]
fn mcp_16_negative_or_too_large_max_concurrent_tools_is_rejected() {
    for (v, part) in [("-1", "negative"), ("1025", "1024")] {
        let e = err(&format!("expose:\n  agent:\n    mcp:\n      max_concurrent_tools: {v}\n"));
        assert_eq!(e.key(), Some("expose.agent.mcp.max_concurrent_tools"));
        assert_eq!(loc(&e), (4, 29));
        assert_contains(&e, &[v, part]);
    }
}

#[test]
fn a2a_11_negative_or_too_large_max_concurrent_tools_is_rejected() {
    for (v, part) in [("-3", "negative"), ("5000", "1024")] {
        let e = err(&format!("expose:\n  agent:\n    a2a:\n      max_concurrent_tools: {v}\n"));
        assert_eq!(e.key(), Some("expose.agent.a2a.max_concurrent_tools"));
        assert_contains(&e, &[v, part]);
    }
}

#[test]
fn mcp_17_negative_tool_timeout_is_rejected() {
    let e = err("expose:\n  agent:\n    mcp:\n      tool_timeout: -1s\n");
    assert_eq!(e.key(), Some("expose.agent.mcp.tool_timeout"));
    assert_eq!(loc(&e), (4, 21));
    assert_contains(&e, &["negative", "-1s"]);
}

#[test]
fn a2a_11_negative_tool_timeout_is_rejected() {
    let e = err("expose:\n  agent:\n    a2a:\n      tool_timeout: -2m\n");
    assert_eq!(e.key(), Some("expose.agent.a2a.tool_timeout"));
    assert_contains(&e, &["negative", "-2m0s"]);
}

#[test]
fn a2a_11_knobs_are_separate_from_mcp() {
    let c = parse("expose:\n  agent:\n    mcp:\n      max_concurrent_tools: 9\n");
    assert_eq!(c.expose.agent.a2a.max_concurrent_tools(), 2);
}

// ---- SEL-6 ---------------------------------------------------------------------------------------------------------

#[test]
fn sel_6_invalid_pattern_is_rejected_naming_pattern_and_key() {
    let cases = [
        ("include:\n  tools: [\"^ok\", \"(\"]\n", "include.tools[1]", (2, 18)),
        ("exclude:\n  tools: [\"[a-\"]\n", "exclude.tools[0]", (2, 11)),
        (
            "expose:\n  agent:\n    tools:\n      include:\n        tools: [\"(\"]\n",
            "expose.agent.tools.include.tools[0]",
            (5, 17),
        ),
        (
            "expose:\n  agent:\n    tools:\n      exclude:\n        tools: [\"(\"]\n",
            "expose.agent.tools.exclude.tools[0]",
            (5, 17),
        ),
        (
            "remote_tools:\n  - name: a\n    include:\n      tools: [\"(\"]\n",
            "remote_tools[0].include.tools[0]",
            (4, 15),
        ),
        (
            "mcp_servers:\n  - name: a\n    command: [x]\n    exclude:\n      tools: [\"(\"]\n",
            "mcp_servers[0].exclude.tools[0]",
            (5, 15),
        ),
    ];
    for (yaml, key, at) in cases {
        let e = err(yaml);
        assert_eq!(e.key(), Some(key), "{yaml}");
        assert_eq!(loc(&e), at, "{yaml}");
        assert_contains(&e, &["invalid regular expression", key]);
    }
    let e = err("include:\n  tools: [\"(\"]\n");
    assert_contains(&e, &["\"(\""]);
}

#[test]
fn sel_6_invalid_pattern_set_in_code_is_rejected_by_validate() {
    let mut c = Config::default();
    c.exclude = Some(Filter::new(["a", "*"], Vec::<String>::new()));
    let e = c.validate(Mode::Lenient).unwrap_err();
    assert_eq!(e.key(), Some("exclude.tools[1]"));
    assert_contains(&e, &["\"*\""]);
}

// ---- BUILTIN-1 -----------------------------------------------------------------------------------------------------

#[test]
fn builtin_1_tool_listed_twice_is_rejected_naming_it() {
    let e = err("harness:\n  tools:\n    - name: read_file\n    - name: base64_encode\n    - name: read_file\n");
    assert_eq!(e.key(), Some("harness.tools[2].name"));
    assert_contains(&e, &["\"read_file\"", "twice"]);
}

#[test]
fn builtin_1_unknown_tool_names_are_left_to_the_registry() {
    let c = parse("harness:\n  tools:\n    - name: my_host_tool\n      options: {anything: [1, 2]}\n");
    assert_eq!(c.harness.tools[0].name, "my_host_tool");
}

// ---- MEM-18 / SESS-25 ----------------------------------------------------------------------------------------------

/// A backend name is any registered one, so the harness (which knows the registry) refuses an unregistered one, with
/// the key's file position and the registered names, before anything loads.
fn harness_err(yaml: &str) -> Error {
    let config = Config::from_yaml_str(yaml).unwrap_or_else(|e| panic!("parses: {e}"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    match rt.block_on(fisk_ai::harness::Harness::builder().config(config).build()) {
        Ok(_) => panic!("expected the harness to refuse:\n{yaml}"),
        Err(e) => e,
    }
}

#[test]
fn mem_18_unknown_memory_backend_is_rejected_listing_known() {
    let e = harness_err("harness:\n  memory:\n    backend: redis\n");
    assert_eq!(e.key(), Some("harness.memory.backend"));
    assert_eq!(loc(&e), (3, 14));
    assert_contains(&e, &["\"redis\"", "file", "jetstream"]);
}

#[test]
fn sess_25_unknown_sessions_backend_is_rejected_listing_known() {
    let e = harness_err("harness:\n  sessions:\n    backend: sqlite\n");
    assert_eq!(e.key(), Some("harness.sessions.backend"));
    assert_contains(&e, &["\"sqlite\"", "file", "jetstream"]);
}

#[test]
fn mem_18_a_backend_name_no_registry_can_hold_is_refused_when_parsing() {
    let e = err("harness:\n  memory:\n    backend: \"re dis\"\n");
    assert_eq!(e.key(), Some("harness.memory.backend"));
    assert_eq!(loc(&e), (3, 14));
}

#[test]
fn mem_22_jetstream_memory_requires_bucket() {
    let e = err("harness:\n  memory:\n    backend: jetstream\n");
    assert_eq!(e.key(), Some("harness.memory.options.bucket"));
    assert_contains(&e, &["harness.memory.options.bucket", "required"]);
    let e = err("harness:\n  memory:\n    backend: jetstream\n    options:\n      bucket: \"\"\n");
    assert_eq!(e.key(), Some("harness.memory.options.bucket"));
}

#[test]
fn mem_24_jetstream_prefix_unset_and_empty_differ() {
    let c = parse("harness:\n  memory:\n    backend: jetstream\n    options:\n      bucket: B\n");
    assert_eq!(c.harness.memory.options.prefix, None);
    let c = parse("harness:\n  memory:\n    backend: jetstream\n    options:\n      bucket: B\n      prefix: \"\"\n");
    assert_eq!(c.harness.memory.options.prefix.as_deref(), Some(""));
}

#[test]
fn sess_31_jetstream_sessions_require_stream() {
    let e = err("harness:\n  sessions:\n    backend: jetstream\n    options: {}\n");
    assert_eq!(e.key(), Some("harness.sessions.options.stream"));
    assert_contains(&e, &["required"]);
}
