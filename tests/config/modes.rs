use super::*;

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
    c.harness.memory.backend = "red is".into();
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
