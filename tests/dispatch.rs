//! LOOP-10 per-call dispatch through `Agent::run`: every call is counted, declined or not, and only calls of
//! imported tools count as remote (the `remote_tool_calls=` of the run summary).

use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, async_trait};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// An in-process tool of a given kind that counts its calls.
struct Counting {
    spec: ToolSpec,
    calls: Arc<AtomicUsize>,
}

impl Counting {
    fn new(name: &str, kind: ToolKind) -> (Self, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        (
            Counting { spec: ToolSpec::new(name, kind, serde_json::json!({"type": "object"})), calls: calls.clone() },
            calls,
        )
    }
}

#[async_trait]
impl Tool for Counting {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        self.calls.fetch_add(1, Ordering::SeqCst);
        ToolOutput::success("ok")
    }
}

fn call(id: &str, name: &str) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input: ToolInput::from_json("{}").unwrap() }
}

#[tokio::test]
async fn loop_10_every_call_is_counted_and_only_imported_calls_are_remote() {
    let (local, local_calls) = Counting::new("local", ToolKind::Custom);
    let (remote, remote_calls) = Counting::new("remote", ToolKind::Imported);
    let provider = Arc::new(ScriptedProvider::new([
        Response::new(
            vec![call("1", "local"), call("2", "remote"), call("3", "nosuch"), call("4", "remote")],
            StopReason::ToolUse,
            Usage::default(),
        ),
        Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default()),
    ]));
    let config = Config::from_yaml_str("identity: d\nsystem_prompt: s\nllm:\n  model: m\n").unwrap();
    let agent = match Agent::builder().config(config).provider_arc(provider).tool(local).tool(remote).build().await {
        Ok(agent) => agent,
        Err(e) => panic!("{e}"),
    };
    let out = agent.run("x", RunOptions::default()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    assert_eq!((local_calls.load(Ordering::SeqCst), remote_calls.load(Ordering::SeqCst)), (1, 2));
    assert_eq!(out.stats.tool_calls, 4, "the unknown name is counted too (LOOP-10 step 1)");
    assert_eq!(out.stats.remote_tool_calls, 2, "only the imported tool's calls are remote");
}
