//! The scripted run the session benches share: an in-process tool that answers at once and five turns of two calls
//! each, so the journal is the only I/O of a checkpointed run.

use fisk_ai::llm::{Block, Response, StopReason, Usage};
use fisk_ai::tool::ToolInput;

// The tests' own double: a tool that answers `ok` at once.
#[path = "../../tests/common/tools.rs"]
#[allow(dead_code, reason = "the benches use the tool, not its shared form")]
mod tools;
pub use tools::FakeTool;

/// Five turns of two `nop` calls and an answer: meta, 5 x (turn + 2 results), the answer and terminal = 17 records.
pub fn script() -> Vec<Response> {
    let usage = Usage { input_tokens: 100, output_tokens: 20, ..Usage::default() };
    let mut out: Vec<Response> = (0..5)
        .map(|t| {
            let call = |k: u32| Block::ToolUse {
                id: format!("c{t}{k}"),
                name: "nop".into(),
                input: ToolInput::from_json(format!(r#"{{"n":{k}}}"#)).unwrap(),
            };
            Response::new(vec![Block::text("working"), call(1), call(2)], StopReason::ToolUse, usage)
        })
        .collect();
    out.push(Response::new(vec![Block::text("done")], StopReason::EndTurn, usage));
    out
}
