//! Final naming of imported tools in the assembly pipeline (IMPORT-5, IMPORT-6, MCPI-7): `<alias>_<name>` when a
//! command tool or built-in holds the name or more than one importing source exposes it, whatever the order the
//! sources are discovered in; a collision that prefixing cannot resolve fails the build naming the tools.

mod common;

use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::{Block, Response, ScriptedProvider, StopReason, Usage};
use fisk_ai::source::{Loaded, ToolSource};
use fisk_ai::tool::{CallContext, Origin, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, ErrorKind, async_trait};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

/// An importing source (as an MCP server or remote host would be): its tools are `Imported` under its alias, and
/// each answers with `<alias>:<bare name>` so a call shows which source's tool ran.
struct Importing {
    alias: &'static str,
    names: Vec<&'static str>,
}

struct Imported {
    spec: ToolSpec,
    answer: String,
}

#[async_trait]
impl Tool for Imported {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _input: &ToolInput, _ctx: &CallContext) -> ToolOutput {
        ToolOutput::success(self.answer.clone())
    }
}

#[async_trait]
impl ToolSource for Importing {
    fn name(&self) -> &str {
        self.alias
    }

    fn origin(&self) -> Origin {
        Origin::mcp(self.alias)
    }

    async fn load(&self, _ctx: &fisk_ai::source::LoadContext) -> fisk_ai::Result<Loaded> {
        let tools = self
            .names
            .iter()
            .map(|name| {
                let schema = json!({"type": "object", "properties": {}});
                let spec = ToolSpec::new(*name, ToolKind::Imported, schema)
                    .with_description(format!("{name} from {}", self.alias))
                    .with_origin(Origin::mcp(self.alias));
                Arc::new(Imported { spec, answer: format!("{}:{name}", self.alias) }) as Arc<dyn Tool>
            })
            .collect();
        Ok(Loaded::new(tools))
    }
}

/// The cowsay demo (commands `say`, `cow_say`, `feed`, `list`, ...) with `base64_encode` enabled.
fn config(dir: &std::path::Path) -> Config {
    let app = common::fake_app(dir, "cowsay");
    Config::from_yaml_str(&format!(
        "identity: n\napplication_path: {}\nsystem_prompt: s\nllm:\n  model: m\nharness:\n  tools:\n    - name: \
         base64_encode\n",
        app.display()
    ))
    .unwrap()
}

fn sources() -> Vec<Importing> {
    vec![
        // `say` is a command, `status` is also exposed by b, `only_a` is a's alone.
        Importing { alias: "a", names: vec!["say", "status", "only_a"] },
        // `base64_encode` is a built-in.
        Importing { alias: "b", names: vec!["status", "base64_encode", "only_b"] },
        Importing { alias: "c", names: vec!["unique_c"] },
    ]
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

async fn build(order: &[usize], provider: Arc<ScriptedProvider>) -> fisk_ai::Result<Agent> {
    let dir = tempfile::tempdir().unwrap();
    let mut all: Vec<Option<Importing>> = sources().into_iter().map(Some).collect();
    let mut builder = Agent::builder().config(config(dir.path())).provider_arc(provider);
    for &i in order {
        builder = builder.source(all[i].take().unwrap());
    }
    let agent = builder.build().await;
    drop(dir);
    agent
}

#[tokio::test]
async fn import_5_mcpi_7_aliases_apply_on_collision_with_commands_built_ins_and_other_sources_in_every_order() {
    let want: BTreeSet<&str> =
        ["a_say", "a_status", "only_a", "b_status", "b_base64_encode", "only_b", "unique_c"].into();
    for order in permutations(3) {
        let agent = build(&order, Arc::new(ScriptedProvider::new([]))).await.unwrap();
        let imported: BTreeSet<&str> =
            agent.toolset().iter().filter(|t| t.spec().kind() == ToolKind::Imported).map(|t| t.spec().name()).collect();
        assert_eq!(imported, want, "discovery order {order:?}");
        // The command and the built-in keep their names.
        assert!(agent.toolset().get("say").is_some_and(|t| t.spec().kind() == ToolKind::Command), "{order:?}");
        assert!(agent.toolset().get("base64_encode").is_some_and(|t| t.spec().kind() == ToolKind::Builtin));
        // A renamed tool keeps its source's description, schema and origin.
        let renamed = agent.toolset().get("b_status").unwrap().spec();
        assert_eq!((renamed.description(), renamed.origin()), ("status from b", &Origin::mcp("b")));
    }
}

#[tokio::test]
async fn import_5_a_renamed_tool_runs_its_own_sources_tool() {
    let call = |id: &str, name: &str| Block::ToolUse { id: id.into(), name: name.into(), input: ToolInput::empty() };
    let provider = Arc::new(ScriptedProvider::new([
        Response::new(vec![call("1", "a_status"), call("2", "b_status")], StopReason::ToolUse, Usage::default()),
        Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default()),
    ]));
    let agent = build(&[2, 1, 0], provider).await.unwrap();
    let outcome = agent.run("go", RunOptions::new()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed, "{:?}", outcome.error);
    let results: Vec<String> = outcome.messages[2]
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results, ["a:status", "b:status"]);
    assert_eq!(outcome.stats.remote_tool_calls, 2, "imported calls count as remote");
}

#[tokio::test]
async fn import_6_a_collision_prefixing_cannot_resolve_fails_naming_the_tools_in_every_order() {
    // Two sources under one alias both expose `status`: both become `x_status`.
    for order in [[0usize, 1], [1, 0]] {
        let dir = tempfile::tempdir().unwrap();
        let mut all = [
            Some(Importing { alias: "x", names: vec!["status"] }),
            Some(Importing { alias: "x", names: vec!["status", "other"] }),
        ];
        let mut builder = Agent::builder().config(config(dir.path())).provider_arc(Arc::new(ScriptedProvider::new([])));
        for i in order {
            builder = builder.source(all[i].take().unwrap());
        }
        let err = builder.build().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Selection, "{err}");
        let msg = err.to_string();
        assert!(msg.contains("\"x_status\"") && msg.contains("distinct aliases"), "{order:?}: {msg}");
    }
}
