//! Checkpointed sessions through the SDK (SPEC section 14, GATE-12..16, LOOP-14): the file journal, folding,
//! fingerprint refusals, resume, recorded answers and suspend. The example CLI's crash and signal suites are in
//! `session_crash.rs` and `session_signals.rs`.

#[path = "../common/mod.rs"]
mod common;

use common::gate::RecordingGate;
use fisk_ai::agent::{Agent, RunEvent, RunOptions, TerminalReason};
use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision};
use fisk_ai::llm::{Block, Caps, Message, Response, Role, ScriptedProvider, StopReason, Usage};
use fisk_ai::session::{
    AssistantRecord, ConfirmChoice, ConfirmRecord, FileSessionStore, Journal, JournalRecord, JournalWriter, Meta,
    Payload, SessionEntry, SessionId, SessionStore, TerminalRecord, ToolResultRecord,
};
use fisk_ai::tool::{CallContext, CancellationToken, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, Warning, async_trait};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

fn config(extra: &str) -> Config {
    Config::from_yaml_str(&format!("identity: t\nsystem_prompt: Be careful.\nllm:\n  model: m1\n{extra}")).unwrap()
}

fn tool_use(id: &str, name: &str, n: u32) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input: ToolInput::from_json(format!(r#"{{"n":{n}}}"#)).unwrap() }
}

fn calls(blocks: Vec<Block>) -> Response {
    Response::new(blocks, StopReason::ToolUse, Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() })
}

fn answer(t: &str) -> Response {
    Response::new(
        vec![Block::text(t)],
        StopReason::EndTurn,
        Usage { input_tokens: 7, output_tokens: 3, ..Usage::default() },
    )
}

/// An in-process tool that logs the `n` of each call, and may run a hook (e.g. request a suspend) while running.
#[derive(Clone)]
struct Logger {
    spec: Arc<ToolSpec>,
    log: Arc<Mutex<Vec<u64>>>,
    hook: Option<CancellationToken>,
}

impl Logger {
    fn new(name: &str) -> Self {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        Logger { spec: Arc::new(ToolSpec::new(name, ToolKind::Custom, schema)), log: Arc::default(), hook: None }
    }
    fn gated(name: &str) -> Self {
        let mut l = Self::new(name);
        l.spec = Arc::new((*l.spec).clone().with_confirm(true));
        l
    }
    fn calls(&self) -> Vec<u64> {
        self.log.lock().unwrap().clone()
    }
}

#[async_trait]
impl Tool for Logger {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, input: &ToolInput, _: &CallContext) -> ToolOutput {
        let n = input.to_value().ok().and_then(|v| v["n"].as_u64()).unwrap_or(0);
        self.log.lock().unwrap().push(n);
        if let Some(t) = &self.hook {
            t.cancel();
        }
        ToolOutput::success(format!("did {n}"))
    }
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        Setup { dir: tempfile::tempdir().unwrap() }
    }
    fn store(&self) -> FileSessionStore {
        FileSessionStore::new(self.dir.path().join("runs"))
    }
    fn lines(&self, id: &SessionId) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.store().journal_path(id)).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
    fn protocols(&self, id: &SessionId) -> Vec<String> {
        self.lines(id)
            .iter()
            .map(|l| l["protocol"].as_str().unwrap().trim_start_matches("io.choria.fisk-ai.v1.session.").to_owned())
            .collect()
    }
    async fn agent(&self, config: Config, provider: &Arc<ScriptedProvider>, tools: &[&Logger]) -> Agent {
        let mut b = Agent::builder().config(config).provider_arc(provider.clone()).session_store(self.store());
        for t in tools {
            b = b.tool((*t).clone());
        }
        b.build().await.unwrap()
    }
    async fn agent_gated(
        &self,
        config: Config,
        provider: &Arc<ScriptedProvider>,
        tools: &[&Logger],
        gate: impl ConfirmGate + 'static,
    ) -> Agent {
        let mut b =
            Agent::builder().config(config).provider_arc(provider.clone()).session_store(self.store()).gate(gate);
        for t in tools {
            b = b.tool((*t).clone());
        }
        b.build().await.unwrap()
    }
    /// Write a journal by hand: the meta record of `agent`'s fingerprint, then `rest`.
    async fn journal(&self, agent: &Agent, id: &SessionId, prompt: &str, rest: Vec<Payload>) {
        let mut w = self.store().create(id).await.unwrap();
        let meta = Meta::new(id.as_str(), agent.fingerprint().clone(), prompt);
        w.append(&JournalRecord::new(1, Payload::Meta(meta))).await.unwrap();
        for (i, p) in rest.into_iter().enumerate() {
            w.append(&JournalRecord::new(i as u64 + 2, p)).await.unwrap();
        }
    }
}

fn assistant(iteration: u32, blocks: Vec<Block>) -> Payload {
    Payload::Assistant(AssistantRecord::new(
        iteration,
        Message::assistant(blocks),
        StopReason::ToolUse,
        Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() },
    ))
}

fn result(id: &str, content: &str) -> Payload {
    Payload::ToolResult(ToolResultRecord::new(id, content, false, false))
}

fn id(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

mod fold;
mod journal;
mod resume;
mod stores;
