//! In-process tool doubles.

use fisk_ai::async_trait;
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolOutput, ToolSpec};
use std::sync::Arc;

/// A tool with a given spec that answers `ok` to every call.
pub struct FakeTool(pub ToolSpec);

#[async_trait]
impl Tool for FakeTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        ToolOutput::success("ok")
    }
}

/// [`FakeTool`] as a shared tool.
pub fn fake_tool(spec: ToolSpec) -> Arc<dyn Tool> {
    Arc::new(FakeTool(spec))
}
