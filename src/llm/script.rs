//! The `scripted` provider by name (DEMO-1..4): `llm: {provider: scripted, script: FILE}` replays a file of model
//! turns through a [`ScriptedProvider`], so the whole loop (tool calls, the gate, the final answer, the run summary)
//! runs with no API key and no network: the README's first command, and a host's own dry runs.
//!
//! The file is YAML (JSON is YAML too): one entry per model turn, in order. A turn has text, tool calls, or both; a
//! turn with calls ends with `tool_use` and the loop runs them, a turn without ends the run with its text as the
//! answer. The replayed model does not read what it is sent: each turn is played whatever the tools answered.
//!
//! ```yaml
//! turns:
//!   - text: Let me ask a cow.
//!     calls:
//!       - tool: say
//!         input: {message: "moo"}
//!   - text: The cow said moo.
//! ```

use super::registry::{ProviderFactory, ProviderSettings};
use super::{Block, Caps, ModelProvider, Response, ScriptedProvider, StopReason, Usage};
use crate::config::SCRIPTED_PROVIDER;
use crate::error::{Error, Result};
use crate::tool::ToolInput;
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;

/// The largest script read: a demo's turns, not a corpus.
const MAX_SCRIPT: u64 = 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    calls: Vec<Call>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    tool: String,
    #[serde(default)]
    input: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The model turns the script file at `path` holds, as provider responses.
///
/// # Errors
///
/// A configuration error on `llm.script` naming the file: it cannot be read or is over 1 MiB; it is not a script
/// (with the line and column); it has no turns, or a turn with neither text nor calls, or a call with no tool name
/// (each named by its place, `turns[2].calls[0]`).
pub fn load_script(path: &Path) -> Result<Vec<Response>> {
    let shown = path.display();
    let fail = |msg: String| Error::config_key("llm.script", format!("llm.script: {msg}"));
    let file = std::fs::File::open(path).map_err(|e| fail(format!("cannot read {shown}: {e}")))?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_SCRIPT + 1), &mut bytes)
        .map_err(|e| fail(format!("cannot read {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_SCRIPT {
        return Err(fail(format!("{shown} is larger than {MAX_SCRIPT} bytes")));
    }
    let script: Script = serde_yaml::from_slice(&bytes).map_err(|e| match e.location() {
        Some(at) => fail(format!("{shown}:{}:{}: {e}", at.line(), at.column())),
        None => fail(format!("{shown}: {e}")),
    })?;
    if script.turns.is_empty() {
        return Err(fail(format!("{shown} has no turns")));
    }
    script
        .turns
        .into_iter()
        .enumerate()
        .map(|(i, turn)| response(i, turn).map_err(|m| fail(format!("{shown}: {m}"))))
        .collect()
}

/// Turn `i` as the response the model would have sent.
fn response(i: usize, turn: Turn) -> std::result::Result<Response, String> {
    if turn.text.as_deref().is_none_or(str::is_empty) && turn.calls.is_empty() {
        return Err(format!("turns[{i}] has neither text nor calls"));
    }
    let mut content: Vec<Block> = turn.text.into_iter().filter(|t| !t.is_empty()).map(Block::text).collect();
    let calls = turn.calls.len();
    for (j, call) in turn.calls.into_iter().enumerate() {
        if call.tool.trim().is_empty() {
            return Err(format!("turns[{i}].calls[{j}] has no tool name"));
        }
        let input = call.input.as_ref().map_or_else(ToolInput::empty, ToolInput::from_map);
        content.push(Block::ToolUse { id: format!("toolu_script_{i}_{j}"), name: call.tool, input });
    }
    let stop = if calls == 0 { StopReason::EndTurn } else { StopReason::ToolUse };
    Ok(Response::new(content, stop, Usage::default()))
}

/// The factory of `llm.provider: scripted` (DEMO-1), registered by default: it reads `llm.script` when built.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedFactory;

impl ProviderFactory for ScriptedFactory {
    fn name(&self) -> &str {
        SCRIPTED_PROVIDER
    }

    fn capabilities(&self) -> Caps {
        Caps::new(SCRIPTED_PROVIDER)
    }

    fn build(&self, settings: &ProviderSettings<'_>) -> Result<Arc<dyn ModelProvider>> {
        let Some(path) = settings.config.llm.script.as_deref() else {
            return Err(Error::config_key(
                "llm.provider",
                "llm.provider: the scripted provider replays llm.script, the file of model turns, and it is not set",
            ));
        };
        Ok(Arc::new(ScriptedProvider::new(load_script(path)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(text: &str) -> Result<Vec<Response>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.yaml");
        std::fs::write(&path, text).unwrap();
        load_script(&path)
    }

    #[test]
    fn demo_2_turns_become_responses_in_order() {
        let turns = script(
            "turns:\n  - text: asking\n    calls:\n      - tool: say\n        input: {message: moo}\n      - tool: \
             list\n  - text: done\n",
        )
        .unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].stop_reason, StopReason::ToolUse);
        assert_eq!(turns[0].content.len(), 3);
        match &turns[0].content[1] {
            Block::ToolUse { id, name, input } => {
                assert_eq!((id.as_str(), name.as_str()), ("toolu_script_0_0", "say"));
                assert_eq!(input.as_str(), r#"{"message":"moo"}"#);
            }
            other => panic!("a tool call, got {other:?}"),
        }
        assert!(matches!(&turns[0].content[2], Block::ToolUse { input, .. } if input.as_str() == "{}"));
        assert_eq!(
            (turns[1].stop_reason.clone(), turns[1].content.clone()),
            (StopReason::EndTurn, vec![Block::text("done")])
        );
    }

    #[test]
    fn demo_3_bad_scripts_are_refused_naming_the_file_and_the_place() {
        let msg = |text: &str| script(text).unwrap_err().to_string();
        let err = msg("turns:\n  - text: a\n    cals: []\n");
        assert!(err.contains("llm.script") && err.contains("turns.yaml:3:5") && err.contains("cals"), "{err}");
        assert!(msg("turns: []\n").contains("has no turns"));
        assert!(msg("turns:\n  - text: ''\n").contains("turns[0] has neither text nor calls"));
        assert!(msg("turns:\n  - calls:\n      - tool: ' '\n").contains("turns[0].calls[0] has no tool name"));
        assert!(msg("turns:\n  - calls:\n      - tool: say\n        input: [1]\n").contains("turns.yaml:4:"));
        let err = load_script(Path::new("/nonexistent/turns.yaml")).unwrap_err().to_string();
        assert!(err.contains("cannot read /nonexistent/turns.yaml"), "{err}");
        let big = format!("turns:\n  - text: '{}'\n", "x".repeat(MAX_SCRIPT as usize));
        assert!(msg(&big).contains("larger than"));
    }
}
