//! Scripted model turns for `ScriptedProvider`: the builders the agent-level tests share.

use fisk_ai::llm::{Block, Message, Response, Role, StopReason, Usage};
use fisk_ai::tool::ToolInput;

/// A tool call `id` of `name` with `{}` as input.
pub fn call(id: &str, name: &str) -> Block {
    call_with(id, name, "{}")
}

/// A tool call `id` of `name` with `input` (JSON text, kept as written).
pub fn call_with(id: &str, name: &str, input: &str) -> Block {
    Block::ToolUse { id: id.into(), name: name.into(), input: ToolInput::from_json(input).unwrap() }
}

/// A turn asking for `blocks` (its tool calls) to run.
pub fn turn(blocks: Vec<Block>) -> Response {
    Response::new(blocks, StopReason::ToolUse, Usage::default())
}

/// The final answer `done`.
pub fn done() -> Response {
    Response::new(vec![Block::text("done")], StopReason::EndTurn, Usage::default())
}

/// The result content sent back for call `id`, and whether it was an error; panics when there is none.
pub fn result_of(messages: &[Message], id: &str) -> (String, bool) {
    for m in messages.iter().filter(|m| m.role == Role::User) {
        for b in &m.content {
            if let Block::ToolResult { tool_use_id, content, is_error } = b
                && tool_use_id == id
            {
                return (content.clone(), *is_error);
            }
        }
    }
    panic!("no result for {id}");
}
