//! Configuration parsing and validation (SPEC section 18 and the value rules it references).

use std::path::{Path, PathBuf};
use std::time::Duration;

use fisk_ai::config::{Config, ConfirmOverMcp, Filter, GoDuration, HarnessTool, McpServerEntry, Mode, RemoteToolsHost};
use fisk_ai::{Error, ErrorKind, Warning};

fn parse(yaml: &str) -> Config {
    Config::from_yaml_str(yaml).unwrap_or_else(|e| panic!("should parse: {e}\n{yaml}"))
}

fn err(yaml: &str) -> Error {
    match Config::from_yaml_str(yaml) {
        Ok(cfg) => panic!("should fail:\n{yaml}\nparsed: {cfg:#?}"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Config, "{e}");
            e
        }
    }
}

fn loc(e: &Error) -> (usize, usize) {
    let l = e.location().unwrap_or_else(|| panic!("error has no location: {e:?}"));
    (l.line, l.column)
}

#[track_caller]
fn assert_contains(e: &Error, parts: &[&str]) {
    let text = e.to_string();
    for p in parts {
        assert!(text.contains(p), "error {text:?} should contain {p:?}");
    }
}

const FULL: &str = r#"
identity: ops_agent
application_path: /usr/local/bin/nats
root_directory: /srv/docs
nats_context: prod
system_prompt: You help operators.
include:
  tools: ["^stream_", "info$"]
  tags: [safe, ""]
exclude:
  tools: [_rm$]
  tags: [dangerous]
global_flags: [--context, server]
remote_tools:
  - name: other-agent
    alias: oa
    include:
      tools: [^x]
    exclude:
      tools: [^y]
mcp_servers:
  - name: github
    alias: gh
    url: https://mcp.example.com/mcp
    bearer_token_env: GITHUB_TOKEN
    timeout: 45s
    confirm: true
    include:
      tools: [^search_]
    exclude:
      tools: [_delete$]
  - name: local
    command: [/usr/local/bin/some-mcp-server, --stdio]
remote_agents:
  - name: a
    alias: b
expose:
  agent:
    agent_to_agent: true
    mcp:
      port: 9090
      address: 0.0.0.0
      instructions: Use carefully.
      confirm_over_mcp: Auto
      max_concurrent_tools: 8
      tool_timeout: 1m
    a2a:
      max_concurrent_tools: 4
      tool_timeout: 45s
    tools:
      include:
        tools: [^stream_]
      exclude:
        tags: [internal]
harness:
  human_in_the_loop:
    enabled: true
  confirm_tags: [ai:destructive, " prod ", ai:destructive]
  no_tui: true
  no_bell: true
  tools:
    - name: read_file
      confirm: true
      options:
        root: docs
        max_bytes: 4096
    - name: base64_encode
  memory:
    enabled: true
    backend: jetstream
    no_index: true
    options:
      bucket: AGENT_MEMORY
      prefix: ""
      no_require_read_before_update: true
  sessions:
    backend: jetstream
    options:
      stream: AGENT_SESSIONS
llm:
  model: claude-sonnet-4-5
  provider: anthropic
  budget:
    max_tokens: 100000
    max_output_tokens: 4096
    max_iterations: 12
    call_timeout: 90s
  thinking:
    enabled: true
  no_prompt_cache: true
  no_tool_search: true
"#;

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

// ---- CFG-13 --------------------------------------------------------------------------------------------------------

#[test]
fn cfg_13_harness_knowledge_is_rejected_as_unsupported() {
    let e = err("harness:\n  no_tui: true\n  knowledge:\n    enabled: true\n");
    assert_eq!(e.key(), Some("harness.knowledge"));
    assert_eq!(loc(&e), (3, 3));
    assert_contains(&e, &["knowledge is not supported in this build"]);
    assert!(!e.to_string().contains("unknown field"), "{e}");
}

#[test]
fn cfg_13_mcp_builtins_is_rejected_as_unsupported() {
    let e = err("expose:\n  agent:\n    mcp:\n      builtins: [knowledge_search]\n");
    assert_eq!(e.key(), Some("expose.agent.mcp.builtins"));
    assert_eq!(loc(&e), (4, 7));
    assert_contains(&e, &["knowledge is not supported in this build"]);
    assert!(!e.to_string().contains("unknown field"), "{e}");
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

// ---- GLOBAL-2 / CFG-11 ---------------------------------------------------------------------------------------------

#[test]
fn global_2_global_flags_are_trimmed_undashed_deduplicated() {
    let c = parse(
        "application_path: /bin/app\nglobal_flags: [\"--context\", \" context \", \"-server\", \"\", \"  \", \"--\", \"server\", \"trace\"]\n",
    );
    assert_eq!(c.global_flags, ["context", "server", "trace"]);
    assert_eq!(c.global_flags(), ["context", "server", "trace"]);
    let mut code = Config::default();
    code.global_flags = vec!["--a".into(), "a".into(), " -b".into()];
    assert_eq!(code.global_flags(), ["a", "b"]);
}

#[test]
fn cfg_11_confirm_tags_are_trimmed_and_deduplicated() {
    let c = parse("harness:\n  confirm_tags: [\" ai:destructive \", \"\", \"prod\", \"ai:destructive\", \"  \"]\n");
    assert_eq!(c.harness.confirm_tags, ["ai:destructive", "prod"]);
    assert_eq!(c.harness.confirm_tags(), ["ai:destructive", "prod"]);
}

// ---- CFG-5 ---------------------------------------------------------------------------------------------------------

#[test]
fn cfg_5_identity_is_derived_from_application_path_base_name() {
    let c = parse("application_path: /usr/bin/nats\n");
    assert_eq!(c.identity().unwrap(), "nats");
    let c = parse("application_path: ./bin/my-app_2\n");
    assert_eq!(c.identity().unwrap(), "my-app_2");
}

#[test]
fn cfg_5_identity_defaults_to_fisk_without_application_path() {
    assert_eq!(parse("").identity().unwrap(), "fisk");
    assert_eq!(parse("identity: \"\"\n").identity().unwrap(), "fisk");
}

#[test]
fn cfg_5_explicit_identity_wins_over_derived() {
    let c = parse("identity: ops\napplication_path: /x/my.app\n");
    assert_eq!(c.identity().unwrap(), "ops");
}

#[test]
fn cfg_5_invalid_derived_identity_is_rejected_asking_for_explicit_identity() {
    let e = err("application_path: /x/my.app\n");
    assert_eq!(e.key(), Some("identity"));
    assert_contains(&e, &["my.app", "set identity explicitly"]);
}

#[test]
fn cfg_5_invalid_explicit_identity_is_rejected_with_location() {
    let e = err("system_prompt: x\nidentity: my agent\n");
    assert_eq!(e.key(), Some("identity"));
    assert_eq!(loc(&e), (2, 11));
    assert_contains(&e, &["my agent", "^[a-zA-Z0-9_-]+$"]);
    let mut c = Config::default();
    c.identity = Some("a.b".into());
    let e = c.validate(Mode::Lenient).unwrap_err();
    assert_eq!(e.key(), Some("identity"));
    assert_contains(&e, &["a.b"]);
}

// ---- GLOBAL-10 -----------------------------------------------------------------------------------------------------

#[test]
fn global_10_global_flags_without_application_path_is_rejected() {
    let e = err("global_flags: [context]\n");
    assert_eq!(e.key(), Some("global_flags"));
    assert_contains(&e, &["global_flags", "application_path"]);
    // Entries that normalize away do not count.
    parse("global_flags: [\"\", \"--\"]\n");
}

// ---- IMPORT-1 / IMPORT-3 -------------------------------------------------------------------------------------------

#[test]
fn import_1_remote_tools_name_with_bad_charset_is_rejected() {
    let e = err("remote_tools:\n  - name: other agent\n");
    assert_eq!(e.key(), Some("remote_tools[0].name"));
    assert_eq!(loc(&e), (2, 11));
    assert_contains(&e, &["other agent"]);
    let e = err("remote_tools:\n  - name: \"\"\n");
    assert_eq!(e.key(), Some("remote_tools[0].name"));
}

#[test]
fn import_1_remote_tools_alias_with_bad_charset_is_rejected() {
    let e = err("remote_tools:\n  - name: a\n  - name: b\n    alias: b.b\n");
    assert_eq!(e.key(), Some("remote_tools[1].alias"));
    assert_eq!(loc(&e), (4, 12));
    assert_contains(&e, &["b.b"]);
}

#[test]
fn import_1_alias_defaults_to_name() {
    let c = parse("remote_tools:\n  - name: a\n  - name: b\n    alias: \"\"\n");
    assert_eq!(c.remote_tools[0].alias(), "a");
    assert_eq!(c.remote_tools[1].alias(), "b");
}

#[test]
fn import_3_host_exclude_tags_is_rejected_naming_host() {
    let e = err("remote_tools:\n  - name: other\n    exclude:\n      tags: [x]\n");
    assert_eq!(e.key(), Some("remote_tools[0].exclude.tags"));
    assert_contains(&e, &["remote_tools[0].exclude.tags", "\"other\""]);
}

#[test]
fn import_3_host_include_tags_is_a_warning_naming_host() {
    let c = parse("remote_tools:\n  - name: other\n    include:\n      tags: [x]\n");
    let w = c.validate(Mode::Lenient).unwrap();
    assert_eq!(w, vec![Warning::ImportIncludeTagsIgnored { section: "remote_tools", name: "other".into() }]);
    assert!(w[0].to_string().contains("other"));
}

// ---- MCPI ----------------------------------------------------------------------------------------------------------

#[test]
fn mcpi_1_name_with_bad_charset_is_rejected() {
    let e = err("mcp_servers:\n  - name: git/hub\n    url: https://x.example\n");
    assert_eq!(e.key(), Some("mcp_servers[0].name"));
    assert_eq!(loc(&e), (2, 11));
    assert_contains(&e, &["git/hub"]);
}

#[test]
fn mcpi_1_alias_with_bad_charset_is_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n    alias: \"g h\"\n    url: https://x.example\n");
    assert_eq!(e.key(), Some("mcp_servers[0].alias"));
    assert_contains(&e, &["g h"]);
}

#[test]
fn mcpi_1_duplicate_names_are_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n    url: https://x.example\n  - name: gh\n    command: [srv]\n");
    assert_eq!(e.key(), Some("mcp_servers[1].name"));
    assert_contains(&e, &["duplicate", "\"gh\"", "mcp_servers[0]"]);
}

#[test]
fn mcpi_1_both_url_and_command_is_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n    url: https://x.example\n    command: [srv]\n");
    assert_eq!(e.key(), Some("mcp_servers[0]"));
    assert_contains(&e, &["\"gh\"", "url", "command", "exactly one"]);
}

#[test]
fn mcpi_1_neither_url_nor_command_is_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n");
    assert_eq!(e.key(), Some("mcp_servers[0]"));
    assert_contains(&e, &["\"gh\"", "neither", "exactly one"]);
}

#[test]
fn mcpi_2_url_must_be_https_unless_loopback() {
    let e = err("mcp_servers:\n  - name: gh\n    url: http://mcp.example.com/mcp\n");
    assert_eq!(e.key(), Some("mcp_servers[0].url"));
    assert_eq!(loc(&e), (3, 10));
    assert_contains(&e, &["http://mcp.example.com/mcp", "loopback"]);
    for ok in [
        "http://localhost:3000/mcp",
        "http://LOCALHOST/",
        "http://127.0.0.1:8080",
        "http://127.5.6.7/x",
        "http://[::1]:9/",
        "https://x.example:443/mcp?q=1",
    ] {
        parse(&format!("mcp_servers:\n  - name: a\n    url: \"{ok}\"\n"));
    }
}

#[test]
fn mcpi_2_url_with_userinfo_or_other_scheme_is_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n    url: https://u:p@x.example/\n");
    assert_eq!(e.key(), Some("mcp_servers[0].url"));
    assert_contains(&e, &["credentials"]);
    let e = err("mcp_servers:\n  - name: gh\n    url: ftp://x.example/\n");
    assert_contains(&e, &["ftp"]);
    let e = err("mcp_servers:\n  - name: gh\n    url: x.example/mcp\n");
    assert_eq!(e.key(), Some("mcp_servers[0].url"));
}

// The PROV-7 / MCPI-2 URL table is in prov_7_base_url.rs, shared with the provider.

#[test]
fn mcpi_3_empty_command_is_rejected() {
    let e = err("mcp_servers:\n  - name: local\n    command: []\n");
    assert_eq!(e.key(), Some("mcp_servers[0].command"));
    assert_eq!(loc(&e), (3, 14));
    assert_contains(&e, &["non-empty"]);
    let e = err("mcp_servers:\n  - name: local\n    command: [\"\", --stdio]\n");
    assert_eq!(e.key(), Some("mcp_servers[0].command"));
}

#[test]
fn mcpi_4_bearer_token_env_with_command_is_rejected() {
    let e = err("mcp_servers:\n  - name: local\n    command: [srv]\n    bearer_token_env: TOKEN\n");
    assert_eq!(e.key(), Some("mcp_servers[0].bearer_token_env"));
    assert_contains(&e, &["\"local\"", "bearer_token_env", "url"]);
}

#[test]
fn mcpi_5_exclude_tags_is_rejected_and_include_tags_warns() {
    let e = err("mcp_servers:\n  - name: gh\n    url: https://x.example\n    exclude:\n      tags: [a]\n");
    assert_eq!(e.key(), Some("mcp_servers[0].exclude.tags"));
    assert_contains(&e, &["\"gh\""]);
    let c = parse("mcp_servers:\n  - name: gh\n    url: https://x.example\n    include:\n      tags: [a]\n");
    for mode in [Mode::Lenient, Mode::Server] {
        let mut c = c.clone();
        c.application_path = Some("/bin/x".into());
        c.nats_context = Some("n".into());
        assert_eq!(
            c.validate(mode).unwrap(),
            vec![Warning::ImportIncludeTagsIgnored { section: "mcp_servers", name: "gh".into() }]
        );
    }
}

#[test]
fn mcpi_12_non_positive_timeout_is_rejected() {
    for (v, shown) in [("0s", "0s"), ("-5s", "-5s")] {
        let e = err(&format!("mcp_servers:\n  - name: gh\n    url: https://x.example\n    timeout: {v}\n"));
        assert_eq!(e.key(), Some("mcp_servers[0].timeout"));
        assert_eq!(loc(&e), (4, 14));
        assert_contains(&e, &["positive", shown]);
    }
}

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

#[test]
fn mem_18_unknown_memory_backend_is_rejected_listing_known() {
    let e = err("harness:\n  memory:\n    backend: redis\n");
    assert_eq!(e.key(), Some("harness.memory.backend"));
    assert_eq!(loc(&e), (3, 14));
    assert_contains(&e, &["\"redis\"", "file", "jetstream"]);
}

#[test]
fn sess_25_unknown_sessions_backend_is_rejected_listing_known() {
    let e = err("harness:\n  sessions:\n    backend: sqlite\n");
    assert_eq!(e.key(), Some("harness.sessions.backend"));
    assert_contains(&e, &["\"sqlite\"", "file", "jetstream"]);
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

// ---- Modes (CFG-2) -------------------------------------------------------------------------------------------------

const RUNNABLE: &str = "identity: ops\nsystem_prompt: help\nllm:\n  model: m\n";

#[test]
fn cfg_2_agent_mode_requires_llm_model_exactly() {
    let c = parse("identity: ops\nsystem_prompt: help\n");
    let e = c.validate(Mode::Agent).unwrap_err();
    assert_eq!(e.to_string(), "llm.model is required");
    assert_eq!(e.key(), Some("llm.model"));
    assert!(c.validate(Mode::Lenient).is_ok());
    parse(RUNNABLE).validate(Mode::Agent).unwrap();
}

#[test]
fn cfg_2_agent_mode_requires_identity_and_system_prompt_without_mcp_block() {
    let e = parse("system_prompt: help\nllm:\n  model: m\n").validate(Mode::Agent).unwrap_err();
    assert_eq!(e.key(), Some("identity"));
    assert_contains(&e, &["identity", "required"]);
    let e = parse("identity: ops\nllm:\n  model: m\n").validate(Mode::Agent).unwrap_err();
    assert_eq!(e.key(), Some("system_prompt"));
    assert_contains(&e, &["system_prompt", "required"]);
    // An expose.agent.mcp block waives both, not llm.model.
    parse("expose:\n  agent:\n    mcp: {}\nllm:\n  model: m\n").validate(Mode::Agent).unwrap();
    let e = parse("expose:\n  agent:\n    mcp: {}\n").validate(Mode::Agent).unwrap_err();
    assert_eq!(e.to_string(), "llm.model is required");
}

#[test]
fn cfg_2_agent_mode_requires_nats_context_with_remote_tools() {
    let yaml = format!("{RUNNABLE}remote_tools:\n  - name: other\n");
    let c = parse(&yaml);
    let e = c.validate(Mode::Agent).unwrap_err();
    assert_eq!(e.key(), Some("nats_context"));
    assert_contains(&e, &["nats_context", "remote_tools"]);
    assert!(c.validate(Mode::Lenient).is_ok());
    parse(&format!("{yaml}nats_context: prod\n")).validate(Mode::Agent).unwrap();
}

#[test]
fn cfg_2_server_mode_requires_application_path_and_nats_context() {
    let e = parse("nats_context: prod\n").validate(Mode::Server).unwrap_err();
    assert_eq!(e.key(), Some("application_path"));
    assert_contains(&e, &["application_path", "required"]);
    let e = parse("application_path: /bin/nats\n").validate(Mode::Server).unwrap_err();
    assert_eq!(e.key(), Some("nats_context"));
    parse("application_path: /bin/nats\nnats_context: prod\n").validate(Mode::Server).unwrap();
}

#[test]
fn cfg_2_lenient_mode_needs_nothing_extra() {
    assert_eq!(parse("").validate(Mode::Lenient).unwrap(), vec![]);
}

#[test]
fn cfg_2_validate_rechecks_every_mode_rules_for_configs_built_in_code() {
    let mut c = Config::default();
    c.global_flags = vec!["context".into()];
    assert_eq!(c.validate(Mode::Lenient).unwrap_err().key(), Some("global_flags"));

    let mut c = Config::default();
    let mut s = McpServerEntry::new("gh");
    s.url = Some("http://example.com".into());
    c.mcp_servers.push(s);
    assert_eq!(c.validate(Mode::Lenient).unwrap_err().key(), Some("mcp_servers[0].url"));

    let mut c = Config::default();
    c.remote_tools.push(RemoteToolsHost::new("bad name"));
    assert_eq!(c.validate(Mode::Lenient).unwrap_err().key(), Some("remote_tools[0].name"));

    let mut c = Config::default();
    c.llm.budget.call_timeout = Some(GoDuration::ZERO);
    assert_eq!(c.validate(Mode::Lenient).unwrap_err().key(), Some("llm.budget.call_timeout"));

    let mut c = Config::default();
    c.harness.memory.backend = "redis".into();
    assert_eq!(c.validate(Mode::Lenient).unwrap_err().key(), Some("harness.memory.backend"));

    let mut c = Config::default();
    c.harness.tools = vec![HarnessTool::new("read_file"), HarnessTool::new("read_file")];
    assert_eq!(c.validate(Mode::Lenient).unwrap_err().key(), Some("harness.tools[1].name"));

    let mut c = Config::default();
    c.expose.agent.a2a.max_concurrent_tools = 2000;
    assert_eq!(c.validate(Mode::Lenient).unwrap_err().key(), Some("expose.agent.a2a.max_concurrent_tools"));
}

// ---- CFG-6 ---------------------------------------------------------------------------------------------------------

#[test]
fn cfg_6_relative_root_directory_resolves_against_working_directory() {
    let c = parse("root_directory: docs/site\n");
    let want = std::env::current_dir().unwrap().join("docs/site");
    assert_eq!(c.root_directory, Some(want));
}

// ---- load ----------------------------------------------------------------------------------------------------------

#[test]
fn cfg_1_load_missing_file_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.yaml");
    let e = Config::load(&path).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
}

#[test]
fn cfg_1_load_parses_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.yaml");
    std::fs::write(&path, FULL).unwrap();
    let c = Config::load(&path).unwrap();
    assert_eq!(c, parse(FULL));
    std::fs::write(&path, "").unwrap();
    assert_eq!(Config::load(&path).unwrap(), Config::default());
}

#[test]
fn cfg_1_load_errors_name_the_file_with_and_without_location() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("agent.yaml");
    std::fs::write(&path, "identity: x\nllm:\n  budget:\n    max_token: 3\n").unwrap();
    let e = Config::load(&path).unwrap_err();
    let l = e.location().expect("location");
    assert_eq!((l.file.as_deref(), l.line, l.column), (Some(path.as_path()), 4, 5));
    assert!(
        e.to_string().starts_with(&format!("{}:4:5: llm.budget: unknown field `max_token`", path.display())),
        "{e}"
    );

    std::fs::write(&path, "global_flags: [context]\n").unwrap();
    let e = Config::load(&path).unwrap_err();
    assert!(e.to_string().starts_with(&path.display().to_string()), "{e}");
    assert_eq!(e.key(), Some("global_flags"));
}

#[test]
fn cfg_2_errors_found_after_decoding_point_at_their_key() {
    let e =
        err("identity: a\nmcp_servers:\n  - name: gh\n    url: https://x.example\n  - name: gh\n    command: [srv]\n");
    assert_eq!(e.key(), Some("mcp_servers[1].name"));
    assert_eq!(loc(&e), (5, 11));
    let e = err("identity: a\nglobal_flags: [context]\n");
    assert_eq!(loc(&e), (2, 15));
    let e = err("mcp_servers:\n  - name: gh\n");
    assert_eq!(e.key(), Some("mcp_servers[0]"));
    assert_eq!(loc(&e), (2, 5));
    // A derived identity points at application_path.
    let e = err("system_prompt: x\napplication_path: /x/my.app\n");
    assert_eq!(loc(&e), (2, 19));
    // A missing required key points at the enclosing block.
    let e = err("harness:\n  memory:\n    backend: jetstream\n");
    assert_eq!(e.key(), Some("harness.memory.options.bucket"));
    assert_eq!(loc(&e), (3, 5));
}

#[test]
fn cfg_1_duplicate_key_is_rejected_naming_it() {
    let e = err("identity: x\nidentity: y\n");
    assert_eq!(e.key(), Some("identity"));
    assert_contains(&e, &["duplicate field `identity`"]);
}
