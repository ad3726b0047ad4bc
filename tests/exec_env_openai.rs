//! Invariant 4 (EXEC-8, PROV-16) for the openai provider: `OPENAI_API_KEY` reaches no child, command or
//! introspection, whether the application is wrapped directly or run by an agent talking to a (fake) OpenAI
//! server. Alone in its own test binary because it sets variables in this process's environment before any other
//! thread exists.
#![cfg(feature = "openai")]
// Setting this process's environment (before any other thread exists) is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;
#[path = "common/openai.rs"]
mod fake_openai;

use common::*;
use fake_openai::{FakeOpenAi, calls, text};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::openai::OpenAiProvider;
use fisk_ai::source::fisk::FiskApp;
use fisk_ai::tool::{CallContext, ToolInput};
use std::path::Path;

const KEY: &str = "OPENAI_API_KEY";

fn dumped(dir: &Path, file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file} not written: {e}"));
    text.lines().map(str::to_owned).collect()
}

fn assert_scrubbed(env: &[String], what: &str) {
    for name in SPEC_PROV_16.iter().chain(&[KEY]) {
        assert!(!env.iter().any(|l| l.starts_with(&format!("{name}="))), "{what}: {name} leaked");
        assert!(!env.iter().any(|l| l.contains(&format!("secret-{name}"))), "{what}: the value of {name} leaked");
    }
    assert!(env.iter().any(|l| l == "OPENAI_BASE_URL=http://127.0.0.1:9/v1"), "{what}: scrubbing is by name only");
    assert!(env.iter().any(|l| l == "LLMFORMAT=1"), "{what}: LLMFORMAT=1 is forced");
}

#[test]
fn invariant_4_exec_8_prov_16_no_child_sees_openai_api_key() {
    // SAFETY: this test binary holds one test, and no other thread runs yet.
    unsafe {
        for name in SPEC_PROV_16.iter().chain(&[KEY]) {
            std::env::set_var(name, format!("secret-{name}"));
        }
        std::env::set_var("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // Through the source alone: the default child environment scrubs every compiled-in provider's key.
        let dir = tempfile::tempdir().unwrap();
        let app = FiskApp::new(fake_app(dir.path(), "envdump"));
        let mut loaded = app.load().await.unwrap_or_else(|e| panic!("{e}"));
        assert_scrubbed(&dumped(dir.path(), "introspect.env"), "introspection");
        let tool = loaded.tools.remove(0);
        let out = tool.call(&ToolInput::from_json("{}").unwrap(), &CallContext::new()).await;
        assert!(!out.is_error(), "{}", out.content());
        assert_scrubbed(&dumped(dir.path(), "command.env"), "command");

        // Through an agent whose model is a (fake) OpenAI server calling the tool.
        let dir = tempfile::tempdir().unwrap();
        let bin = fake_app(dir.path(), "envdump");
        let server =
            FakeOpenAi::with_replies([calls(&[("c1", "dump", "{}")]).reply(), text("done", "stop").reply()]).await;
        let config = fisk_ai::Config::from_yaml_str(&format!(
            "identity: e\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: gpt-4.1\n  provider: openai\n",
            bin.display()
        ))
        .unwrap();
        let provider = OpenAiProvider::new("secret-key").with_base_url(server.url()).unwrap().with_streaming(false);
        let agent = Agent::builder().config(config).provider(provider).build().await.unwrap();
        assert_scrubbed(&dumped(dir.path(), "introspect.env"), "agent introspection");
        let outcome = agent.run("x", RunOptions::default()).await;
        assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
        assert_scrubbed(&dumped(dir.path(), "command.env"), "agent command");
    });
}
