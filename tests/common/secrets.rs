//! Marked content for the telemetry tests (tests/telemetry.rs, tests/otel_export.rs): each text a run can carry is
//! tagged `...-SECRET`, so a test can prove none of it reaches spans unless content capture is on.

use fisk_ai::async_trait;
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolOutput, ToolSpec};

pub const PROMPT: &str = "PROMPT-SECRET count the cows";
pub const SYSTEM: &str = "SYSTEM-SECRET be terse";
pub const ARGUMENT: &str = "ARGUMENT-SECRET";
pub const OUTPUT: &str = "OUTPUT-SECRET";
pub const ANSWER: &str = "ANSWER-SECRET there are three";
pub const SECRETS: [&str; 5] = ["PROMPT-SECRET", "SYSTEM-SECRET", ARGUMENT, OUTPUT, "ANSWER-SECRET"];

/// Echoes its `text` argument inside a result that also carries [`OUTPUT`].
pub struct Echo(pub ToolSpec);

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, input: &ToolInput, _: &CallContext) -> ToolOutput {
        ToolOutput::success(format!("{OUTPUT}: {}", input.as_str()))
    }
}
