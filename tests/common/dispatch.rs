//! Calling one tool the way every surface does: through `fisk_ai::dispatch`, whose checks run before the tool.

use fisk_ai::async_trait;
use fisk_ai::dispatch::{Approval, Gated, Outcome, Surface, dispatch};
use fisk_ai::select::Selection;
use fisk_ai::tool::{Tool, ToolInput, ToolOutput};
use std::sync::Arc;

/// A surface that approves every gated call.
pub struct Approving;

#[async_trait]
impl Surface for Approving {
    type Halt = ();
    async fn approve(&mut self, _call: &Gated<'_>) -> Approval<()> {
        Approval::Approved(fisk_ai::dispatch::Answer::Ungated)
    }
}

/// Dispatch `input` (JSON text) to `tool`; a refusal becomes the error result every surface sends.
pub async fn dispatched(tool: Arc<dyn Tool>, input: &str) -> ToolOutput {
    let name = tool.spec().name().to_owned();
    let tools = Selection::new().apply(vec![tool]).unwrap();
    let input = ToolInput::from_json(input).unwrap();
    match dispatch(&mut Approving, &tools, &name, &input).await {
        Outcome::Refused(why) => ToolOutput::error(why.to_string()),
        Outcome::Ran(out) | Outcome::Declined(out) => out,
        Outcome::Halted(()) | Outcome::Cancelled => panic!("an approving surface neither halts nor cancels"),
    }
}
