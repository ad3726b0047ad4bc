//! The scripted run the session benches share: an in-process tool that answers at once and five turns of two calls
//! each, so the journal is the only I/O of a checkpointed run.

use fisk_ai::async_trait;
use fisk_ai::llm::{Block, Response, StopReason, Usage};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolOutput, ToolSpec};

/// A tool that does nothing and succeeds.
pub struct Nop(pub ToolSpec);

#[async_trait]
impl Tool for Nop {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        ToolOutput::success("ok")
    }
}

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
