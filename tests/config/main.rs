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

mod fleet;
mod keys;
mod knowledge;
mod modes;
mod names;
mod values;
