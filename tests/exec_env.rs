//! Invariant 4 (EXEC-8, PROV-16, TOOL-2): no child, command or introspection, ever carries a credential variable.
//! Alone in its own test binary because it sets variables in this process's environment before any other thread
//! exists.
//!
//! The credential names are written out here from SPEC PROV-16 on purpose: checking the library's own constant
//! against itself cannot notice a name dropped from it.

// Setting this process's environment (before any other thread exists) is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;

use common::*;
use fisk_ai::ToolSource;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::exec::ChildEnv;
use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::source::fisk::FiskApp;
use fisk_ai::tool::{CallContext, ToolInput};
use std::path::Path;
use std::sync::Arc;

/// PROV-16, verbatim (written out in tests/common).
const SPEC_CREDENTIALS: [&str; 5] = SPEC_PROV_16;

/// An operator-named credential (MCPI-4), scrubbed only when the host asks.
const OPERATOR_CREDENTIAL: &str = "MY_SERVICE_TOKEN";

/// A credential a host's provider factory declares (PROV-16: every registered provider's names are scrubbed).
const HOST_PROVIDER_CREDENTIAL: &str = "HOST_PROVIDER_TOKEN";

/// A credential a tool source declares (an MCP server's `bearer_token_env`, say): scrubbed from every child the
/// pipeline starts, the configured application's introspection included, though this source starts none.
const SOURCE_CREDENTIAL: &str = "IMPORTED_SERVICE_TOKEN";

/// A source with no tools that owns a credential variable.
struct DeclaringSource;

#[fisk_ai::async_trait]
impl ToolSource for DeclaringSource {
    fn name(&self) -> &str {
        "declaring"
    }

    fn credentials(&self) -> Vec<String> {
        vec![SOURCE_CREDENTIAL.to_owned()]
    }

    async fn load(&self, _ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<fisk_ai::source::Loaded> {
        Ok(fisk_ai::source::Loaded::default())
    }
}

/// A registered, never-built provider that declares a credential.
struct HostProvider;

impl fisk_ai::llm::ProviderFactory for HostProvider {
    fn name(&self) -> &str {
        "host"
    }

    fn credentials(&self) -> Vec<String> {
        vec![HOST_PROVIDER_CREDENTIAL.to_owned()]
    }

    fn build(&self, _: &fisk_ai::llm::ProviderSettings<'_>) -> fisk_ai::Result<Arc<dyn fisk_ai::llm::ModelProvider>> {
        Err(fisk_ai::Error::config("not used"))
    }
}

/// The variables a child saw, as `NAME=value` lines from the `envdump` fake app's files.
fn dumped(dir: &Path, file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file} not written: {e}"));
    text.lines().map(str::to_owned).collect()
}

/// EXEC-8 for one child's environment: no credential, the pass-through variable unchanged, LLMFORMAT forced to 1.
fn assert_scrubbed(env: &[String], extra: &[&str], what: &str) {
    for name in SPEC_CREDENTIALS.iter().chain(extra) {
        assert!(!env.iter().any(|l| l.starts_with(&format!("{name}="))), "{what}: {name} leaked");
        // Not under another name either (each value names its variable).
        assert!(!env.iter().any(|l| l.contains(&format!("secret-{name}"))), "{what}: the value of {name} leaked");
    }
    assert!(env.iter().any(|l| l == "ANTHROPIC_BASE_URL=http://127.0.0.1:9"), "{what}: scrubbing is by name only");
    assert!(env.iter().any(|l| l == "LLMFORMAT=1"), "{what}: LLMFORMAT=1 is forced");
    assert!(env.iter().any(|l| l.starts_with("PATH=")), "{what}: the rest of the environment passes through");
}

#[test]
fn invariant_4_exec_8_prov_16_tool_2_no_child_sees_a_credential_variable() {
    // SAFETY: this test binary holds one test, and no other thread runs yet.
    unsafe {
        for name in SPEC_CREDENTIALS.iter().chain(&[OPERATOR_CREDENTIAL, HOST_PROVIDER_CREDENTIAL, SOURCE_CREDENTIAL]) {
            std::env::set_var(name, format!("secret-{name}"));
        }
        std::env::set_var("ANTHROPIC_BASE_URL", "http://127.0.0.1:9");
        std::env::set_var("LLMFORMAT", "0");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // Through the source: introspection and a command call, with an operator-named credential added.
        let dir = tempfile::tempdir().unwrap();
        let app =
            FiskApp::new(fake_app(dir.path(), "envdump")).with_env(ChildEnv::new().with_scrubbed(OPERATOR_CREDENTIAL));
        let mut loaded = app.load().await.unwrap_or_else(|e| panic!("{e}"));
        assert_scrubbed(&dumped(dir.path(), "introspect.env"), &[OPERATOR_CREDENTIAL], "introspection");
        let tool = loaded.tools.remove(0);
        let out = tool.call(&ToolInput::from_json("{}").unwrap(), &CallContext::new()).await;
        assert!(!out.is_error(), "{}", out.content());
        assert_scrubbed(&dumped(dir.path(), "command.env"), &[OPERATOR_CREDENTIAL], "command");

        // Through the agent, whose (scripted) provider declares no credentials: PROV-16's names are still scrubbed,
        // because the set is the union over every provider compiled in, not the active one's.
        let dir = tempfile::tempdir().unwrap();
        let bin = fake_app(dir.path(), "envdump");
        let config = fisk_ai::Config::from_yaml_str(&format!(
            "identity: e\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\n",
            bin.display()
        ))
        .unwrap();
        let dump = Block::ToolUse { id: "1".into(), name: "dump".into(), input: ToolInput::from_json("{}").unwrap() };
        let provider = Arc::new(ScriptedProvider::new([
            Response::new(vec![dump], StopReason::ToolUse, Usage::default()),
            Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default()),
        ]));
        let agent = Agent::builder()
            .config(config)
            .provider_arc(provider)
            .provider_factory(HostProvider)
            .source(DeclaringSource)
            .build()
            .await
            .unwrap();
        let declared = [HOST_PROVIDER_CREDENTIAL, SOURCE_CREDENTIAL];
        assert_scrubbed(&dumped(dir.path(), "introspect.env"), &declared, "agent introspection");
        let outcome = agent.run("x", RunOptions::default()).await;
        assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
        assert_scrubbed(&dumped(dir.path(), "command.env"), &declared, "agent command");

        // The MCP server assembles through the same pipeline: its introspection child gets the same scrub set.
        #[cfg(feature = "mcp")]
        {
            let dir = tempfile::tempdir().unwrap();
            let bin = fake_app(dir.path(), "envdump");
            let config = fisk_ai::Config::from_yaml_str(&format!(
                "identity: e\napplication_path: {}\nexpose:\n  agent:\n    mcp: {{}}\n",
                bin.display()
            ))
            .unwrap();
            let server = fisk_ai::serve::mcp::McpServer::builder().config(config).source(DeclaringSource).build().await;
            server.unwrap_or_else(|e| panic!("{e}"));
            assert_scrubbed(&dumped(dir.path(), "introspect.env"), &[SOURCE_CREDENTIAL], "MCP introspection");
        }
    });
}
