use super::*;

// ---- every key and every default ---------------------------------------------------------------------------------

#[test]
fn cfg_18_2_every_key_parses_into_its_field() {
    let c = parse(FULL);
    assert_eq!(c.identity.as_deref(), Some("ops_agent"));
    assert_eq!(c.identity().unwrap(), "ops_agent");
    assert_eq!(c.application_path.as_deref(), Some(Path::new("/usr/local/bin/nats")));
    assert_eq!(c.root_directory.as_deref(), Some(Path::new("/srv/docs")));
    assert_eq!(c.nats_context.as_deref(), Some("prod"));
    assert_eq!(c.system_prompt.as_deref(), Some("You help operators."));
    assert_eq!(c.include, Some(Filter::new(["^stream_", "info$"], ["safe", ""])));
    assert_eq!(c.exclude, Some(Filter::new(["_rm$"], ["dangerous"])));
    assert_eq!(c.global_flags, ["context", "server"]);

    assert_eq!(c.remote_tools.len(), 1);
    let h = &c.remote_tools[0];
    assert_eq!(h.name, "other-agent");
    assert_eq!(h.alias(), "oa");
    assert_eq!(h.include, Some(Filter::new(["^x"], Vec::<String>::new())));
    assert_eq!(h.exclude, Some(Filter::new(["^y"], Vec::<String>::new())));

    assert_eq!(c.mcp_servers.len(), 2);
    let gh = &c.mcp_servers[0];
    assert_eq!(gh.name, "github");
    assert_eq!(gh.alias(), "gh");
    assert_eq!(gh.url.as_deref(), Some("https://mcp.example.com/mcp"));
    assert_eq!(gh.command, None);
    assert_eq!(gh.bearer_token_env.as_deref(), Some("GITHUB_TOKEN"));
    assert_eq!(gh.timeout, Some(GoDuration::from_secs(45)));
    assert_eq!(gh.timeout(), Some(Duration::from_secs(45)));
    assert!(gh.confirm);
    assert_eq!(gh.include, Some(Filter::new(["^search_"], Vec::<String>::new())));
    assert_eq!(gh.exclude, Some(Filter::new(["_delete$"], Vec::<String>::new())));
    let local = &c.mcp_servers[1];
    assert_eq!(local.alias(), "local");
    assert_eq!(local.url, None);
    assert_eq!(
        local.command.as_deref(),
        Some(&["/usr/local/bin/some-mcp-server".to_owned(), "--stdio".to_owned()][..])
    );
    assert_eq!(local.timeout(), None);
    assert!(!local.confirm);

    assert_eq!(c.remote_agents.len(), 1);
    assert_eq!(c.remote_agents[0].name.as_deref(), Some("a"));
    assert_eq!(c.remote_agents[0].alias.as_deref(), Some("b"));

    let a = &c.expose.agent;
    assert!(a.agent_to_agent);
    let mcp = a.mcp.as_ref().expect("mcp block");
    assert_eq!(mcp.port, 9090);
    assert_eq!(mcp.port(), 9090);
    assert_eq!(mcp.address(), "0.0.0.0");
    assert_eq!(mcp.instructions, "Use carefully.");
    assert_eq!(mcp.confirm_over_mcp, ConfirmOverMcp::Auto);
    assert_eq!(mcp.max_concurrent_tools(), 8);
    assert_eq!(mcp.tool_timeout(), Duration::from_secs(60));
    assert_eq!(a.a2a.max_concurrent_tools(), 4);
    assert_eq!(a.a2a.tool_timeout(), Duration::from_secs(45));
    let tools = a.tools.as_ref().expect("expose.agent.tools");
    assert_eq!(tools.include, Some(Filter::new(["^stream_"], Vec::<String>::new())));
    assert_eq!(tools.exclude, Some(Filter::new(Vec::<String>::new(), ["internal"])));

    let hs = &c.harness;
    assert!(hs.human_in_the_loop.enabled);
    assert_eq!(hs.confirm_tags, ["ai:destructive", "prod"]);
    assert!(hs.no_tui);
    assert!(hs.no_bell);
    assert_eq!(hs.tools.len(), 2);
    assert_eq!(hs.tools[0].name, "read_file");
    assert!(hs.tools[0].confirm);
    assert_eq!(
        serde_json::Value::Object(hs.tools[0].options.clone()),
        serde_json::json!({"root": "docs", "max_bytes": 4096})
    );
    assert_eq!(hs.tools[1], HarnessTool::new("base64_encode"));
    assert!(hs.memory.enabled);
    assert_eq!(hs.memory.backend, "jetstream");
    assert!(hs.memory.no_index);
    assert_eq!(hs.memory.options.bucket.as_deref(), Some("AGENT_MEMORY"));
    assert_eq!(hs.memory.options.prefix.as_deref(), Some(""));
    assert!(hs.memory.options.no_require_read_before_update);
    assert_eq!(hs.memory.options.directory, None);
    assert_eq!(hs.sessions.backend, "jetstream");
    assert_eq!(hs.sessions.options.stream.as_deref(), Some("AGENT_SESSIONS"));

    let l = &c.llm;
    assert_eq!(l.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(l.provider, "anthropic");
    assert_eq!(l.budget.max_tokens(), 100_000);
    assert_eq!(l.budget.max_output_tokens(), Some(4096));
    assert_eq!(l.budget.max_iterations(), 12);
    assert_eq!(l.budget.call_timeout(), Duration::from_secs(90));
    assert!(l.thinking.enabled);
    assert!(l.no_prompt_cache);
    assert!(l.no_tool_search);

    assert_eq!(c.validate(Mode::Agent).unwrap(), vec![]);
    assert_eq!(c.validate(Mode::Server).unwrap(), vec![]);
}

#[test]
fn cfg_18_2_file_backends_take_directory() {
    let c = parse(
        "harness:\n  memory:\n    backend: file\n    options:\n      directory: mem\n  sessions:\n    options:\n      directory: /var/runs\n",
    );
    assert_eq!(c.harness.memory.backend, "file");
    assert_eq!(c.harness.memory.options.directory.as_deref(), Some(Path::new("mem")));
    assert_eq!(c.harness.sessions.backend, "file");
    assert_eq!(c.harness.sessions.options.directory.as_deref(), Some(Path::new("/var/runs")));
}

fn assert_all_defaults(c: &Config) {
    assert_eq!(c.identity, None);
    assert_eq!(c.identity().unwrap(), "fisk");
    assert_eq!(c.application_path, None);
    assert_eq!(c.root_directory, None);
    assert_eq!(c.nats_context, None);
    assert_eq!(c.system_prompt, None);
    assert_eq!(c.include, None);
    assert_eq!(c.exclude, None);
    assert!(c.global_flags.is_empty());
    assert!(c.remote_tools.is_empty());
    assert!(c.mcp_servers.is_empty());
    assert!(c.remote_agents.is_empty());
    assert!(!c.expose.agent.agent_to_agent);
    assert_eq!(c.expose.agent.mcp, None);
    assert_eq!(c.expose.agent.a2a.max_concurrent_tools(), 2);
    assert_eq!(c.expose.agent.a2a.tool_timeout(), Duration::from_secs(30));
    assert_eq!(c.expose.agent.tools, None);
    assert!(!c.harness.human_in_the_loop.enabled);
    assert!(c.harness.confirm_tags.is_empty());
    assert!(!c.harness.no_tui);
    assert!(!c.harness.no_bell);
    assert!(c.harness.tools.is_empty());
    assert!(!c.harness.memory.enabled);
    assert_eq!(c.harness.memory.backend, "file");
    assert!(!c.harness.memory.no_index);
    assert_eq!(c.harness.memory.options, Default::default());
    assert_eq!(c.harness.sessions.backend, "file");
    assert_eq!(c.harness.sessions.options, Default::default());
    assert_eq!(c.llm.model, None);
    assert_eq!(c.llm.provider, "anthropic");
    assert_eq!(c.llm.budget.max_tokens(), 200_000);
    assert_eq!(c.llm.budget.max_output_tokens(), None);
    assert_eq!(c.llm.budget.max_iterations(), 50);
    assert_eq!(c.llm.budget.call_timeout(), Duration::from_secs(120));
    assert!(!c.llm.thinking.enabled);
    assert!(!c.llm.no_prompt_cache);
    assert!(!c.llm.no_tool_search);
}

#[test]
fn cfg_1_empty_file_is_a_valid_empty_config_with_every_default() {
    for yaml in ["", "\n", "# only a comment\n", "---\n", "~\n"] {
        let c = parse(yaml);
        assert_all_defaults(&c);
        assert_eq!(c, Config::default());
        assert_eq!(c.validate(Mode::Lenient).unwrap(), vec![]);
    }
}

#[test]
fn cfg_18_2_empty_blocks_and_null_values_mean_defaults() {
    let c = parse(
        "identity:\ninclude:\nglobal_flags:\nexpose:\n  agent:\n    mcp:\n    a2a:\nharness:\n  tools:\n  memory:\n    backend: \"\"\n  sessions:\nllm:\n  provider: \"\"\n  budget:\n    max_tokens:\n",
    );
    assert_all_defaults(&c);
}

#[test]
fn mcp_1_empty_mcp_block_is_present_with_defaults() {
    let c = parse("expose:\n  agent:\n    mcp: {}\n");
    let mcp = c.expose.agent.mcp.as_ref().expect("present");
    assert_eq!(mcp.port(), 8080);
    assert_eq!(mcp.address(), "127.0.0.1");
    assert_eq!(mcp.instructions, "");
    assert_eq!(mcp.confirm_over_mcp, ConfirmOverMcp::Always);
    assert_eq!(mcp.max_concurrent_tools(), 2);
    assert_eq!(mcp.tool_timeout(), Duration::from_secs(30));
}

#[test]
fn mcp_2_zero_port_and_zero_values_mean_defaults() {
    let c = parse(
        "expose:\n  agent:\n    mcp:\n      port: 0\n      max_concurrent_tools: 0\n      tool_timeout: 0s\n    a2a:\n      max_concurrent_tools: 0\nllm:\n  budget:\n    max_tokens: 0\n    max_output_tokens: 0\n    max_iterations: 0\n",
    );
    let mcp = c.expose.agent.mcp.as_ref().unwrap();
    assert_eq!(mcp.port(), 8080);
    assert_eq!(mcp.max_concurrent_tools(), 2);
    assert_eq!(mcp.tool_timeout(), Duration::from_secs(30));
    assert_eq!(c.expose.agent.a2a.max_concurrent_tools(), 2);
    assert_eq!(c.llm.budget.max_tokens(), 200_000);
    assert_eq!(c.llm.budget.max_output_tokens(), None);
    assert_eq!(c.llm.budget.max_iterations(), 50);
}

#[test]
fn mcp_16_max_concurrent_tools_1024_is_accepted() {
    let c = parse(
        "expose:\n  agent:\n    mcp:\n      max_concurrent_tools: 1024\n    a2a:\n      max_concurrent_tools: 1024\n",
    );
    assert_eq!(c.expose.agent.mcp.unwrap().max_concurrent_tools(), 1024);
    assert_eq!(c.expose.agent.a2a.max_concurrent_tools(), 1024);
}

// ---- unknown keys ------------------------------------------------------------------------------------------------

#[test]
fn cfg_1_unknown_top_level_key_is_rejected_with_line_column_and_key() {
    let e = err("identity: x\nsystem_prompt: y\nidentitty: z\n");
    assert_eq!(loc(&e), (3, 1));
    assert_eq!(e.key(), Some("identitty"));
    assert_contains(&e, &["unknown field `identitty`", "line 3 column 1"]);
}

#[test]
fn cfg_1_unknown_nested_key_is_rejected_with_line_column_and_key_path() {
    let e = err("identity: x\nllm:\n  budget:\n    max_token: 3\n");
    assert_eq!(loc(&e), (4, 5));
    assert_eq!(e.key(), Some("llm.budget.max_token"));
    assert_contains(&e, &["llm.budget: unknown field `max_token`", "max_tokens"]);
}

#[test]
fn cfg_1_unknown_key_in_a_list_item_is_rejected_with_line_column_and_key_path() {
    let e = err("harness:\n  tools:\n    - name: read_file\n      confrim: true\n");
    assert_eq!(loc(&e), (4, 7));
    assert_eq!(e.key(), Some("harness.tools[0].confrim"));
    assert_contains(&e, &["harness.tools[0]: unknown field `confrim`"]);
}

#[test]
fn cfg_1_unknown_key_in_deep_blocks_is_rejected() {
    let e = err("expose:\n  agent:\n    mcp:\n      prot: 1\n");
    assert_eq!(loc(&e), (4, 7));
    assert_eq!(e.key(), Some("expose.agent.mcp.prot"));
    let e = err("mcp_servers:\n  - name: a\n    command: [x]\n    include:\n      tool: [x]\n");
    assert_eq!(loc(&e), (5, 7));
    assert_eq!(e.key(), Some("mcp_servers[0].include.tool"));
    let e = err("remote_agents:\n  - name: a\n    nmae: b\n");
    assert_eq!(e.key(), Some("remote_agents[0].nmae"));
}

#[test]
fn cfg_4_unknown_key_in_memory_options_is_rejected_with_line_column() {
    let e = err("harness:\n  memory:\n    options:\n      directry: /tmp\n");
    assert_eq!(loc(&e), (4, 7));
    assert_eq!(e.key(), Some("harness.memory.options.directry"));
    assert_contains(&e, &["harness.memory.options: unknown field `directry`"]);
}

#[test]
fn cfg_4_key_of_another_memory_backend_is_rejected_with_line_column() {
    let e = err("harness:\n  memory:\n    backend: file\n    options:\n      directory: m\n      bucket: X\n");
    assert_eq!(loc(&e), (6, 7));
    assert_eq!(e.key(), Some("harness.memory.options.bucket"));
    assert_contains(&e, &["unknown field `bucket`", "memory backend \"file\""]);

    let e = err("harness:\n  memory:\n    options:\n      prefix: p\n    backend: file\n");
    assert_eq!(loc(&e), (4, 7));
    assert_eq!(e.key(), Some("harness.memory.options.prefix"));

    let e = err("harness:\n  memory:\n    backend: jetstream\n    options:\n      bucket: B\n      directory: d\n");
    assert_eq!(loc(&e), (6, 7));
    assert_eq!(e.key(), Some("harness.memory.options.directory"));
    assert_contains(&e, &["memory backend \"jetstream\""]);
}

#[test]
fn cfg_4_key_of_another_sessions_backend_is_rejected_with_line_column() {
    let e = err("harness:\n  sessions:\n    options:\n      stream: S\n");
    assert_eq!(loc(&e), (4, 7));
    assert_eq!(e.key(), Some("harness.sessions.options.stream"));
    assert_contains(&e, &["unknown field `stream`", "sessions backend \"file\""]);

    let e = err("harness:\n  sessions:\n    backend: jetstream\n    options:\n      stream: S\n      dir: x\n");
    assert_eq!(loc(&e), (6, 7));
    assert_eq!(e.key(), Some("harness.sessions.options.dir"));
}

#[test]
fn cfg_1_wrong_value_type_carries_location_and_key() {
    let e = err("harness:\n  no_tui: maybe\n");
    assert_eq!(loc(&e), (2, 11));
    assert_eq!(e.key(), Some("harness.no_tui"));
    let e = err("global_flags: context\n");
    assert_eq!(e.key(), Some("global_flags"));
    assert_eq!(loc(&e), (1, 15));
}

#[test]
fn cfg_1_missing_required_entry_name_is_rejected() {
    let e = err("remote_tools:\n  - alias: x\n");
    assert_eq!(e.key(), Some("remote_tools[0].name"));
    assert_contains(&e, &["missing field `name`"]);
    assert_eq!(loc(&e).0, 2);
    let e = err("harness:\n  tools:\n    - confirm: true\n");
    assert_eq!(e.key(), Some("harness.tools[0].name"));
}

// ---- CFG-10 --------------------------------------------------------------------------------------------------------

#[test]
fn cfg_10_confirm_over_mcp_is_trimmed_and_case_insensitive() {
    for (v, want) in [
        ("always", ConfirmOverMcp::Always),
        ("ALWAYS", ConfirmOverMcp::Always),
        ("' Auto '", ConfirmOverMcp::Auto),
        ("auto", ConfirmOverMcp::Auto),
        ("Never", ConfirmOverMcp::Never),
        ("\"\"", ConfirmOverMcp::Always),
        ("\"  \"", ConfirmOverMcp::Always),
        ("", ConfirmOverMcp::Always),
    ] {
        let c = parse(&format!("expose:\n  agent:\n    mcp:\n      confirm_over_mcp: {v}\n"));
        assert_eq!(c.expose.agent.mcp.unwrap().confirm_over_mcp, want, "{v:?}");
    }
    assert_eq!(ConfirmOverMcp::Auto.to_string(), "auto");
    assert_eq!(ConfirmOverMcp::parse(" NEVER"), Ok(ConfirmOverMcp::Never));
}

#[test]
fn cfg_10_invalid_confirm_over_mcp_is_rejected_listing_the_three() {
    let e = err("expose:\n  agent:\n    mcp:\n      confirm_over_mcp: sometimes\n");
    assert_eq!(e.key(), Some("expose.agent.mcp.confirm_over_mcp"));
    assert_eq!(loc(&e), (4, 25));
    assert_contains(&e, &["sometimes", "always", "auto", "never"]);
}
