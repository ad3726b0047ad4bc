//! One imported tool: the server's description and schema as the listing checked and cleaned them
//! ([`super::listing`]), called through its connection.

use super::McpImport;
use super::connection::Connection;
use crate::tool::{CallContext, InputError, Prepared, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use async_trait::async_trait;
use rmcp::model::JsonObject;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct ImportedTool {
    spec: ToolSpec,
    /// The server's own name for it (the spec may be renamed by final naming).
    remote_name: String,
    conn: Arc<Connection>,
    timeout: Duration,
}

impl ImportedTool {
    /// A tool the listing kept (MCPI-6: a description, an object input schema, both cleaned for the model).
    pub(crate) fn new(import: &McpImport, conn: &Arc<Connection>, tool: rmcp::model::Tool) -> Self {
        let name = tool.name.into_owned();
        // rmcp's HTTP transport may keep a copy of the schema (for its parameter headers); otherwise this is a move.
        let schema = Arc::unwrap_or_clone(tool.input_schema);
        let description = tool.description.map(|d| d.into_owned()).unwrap_or_default();
        let spec = ToolSpec::new(name.clone(), ToolKind::Imported, Value::Object(schema))
            .with_description(description)
            .with_origin(super::ToolSource::origin(import))
            .with_confirm(import.confirm);
        ImportedTool { spec, remote_name: name, conn: Arc::clone(conn), timeout: import.timeout }
    }
}

#[async_trait]
impl Tool for ImportedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// MCPI-10: the (final) name followed by the compact JSON of exactly the arguments that are sent.
    fn display(&self, input: &ToolInput) -> String {
        let shown = match arguments(input) {
            Ok(Some(map)) => serde_json::to_string(&map).unwrap_or_default(),
            Ok(None) => "{}".to_owned(),
            Err(_) => input.as_str().to_owned(),
        };
        format!("{} {shown}", self.spec.name())
    }

    /// The arguments are parsed once, here; the display is their serialization, so an operator approves what is
    /// sent (a number too long for a float is shown as the float it becomes).
    /// An input that is not a JSON object is refused before any operator is asked.
    fn prepare(&self, input: &ToolInput, _: &serde_json::Value) -> Result<Prepared, InputError> {
        let arguments = arguments(input).map_err(|e| InputError::invalid(None, format!("not a JSON object: {e}")))?;
        let shown = match &arguments {
            Some(map) => serde_json::to_string(map).unwrap_or_default(),
            None => "{}".to_owned(),
        };
        Ok(Prepared::new(format!("{} {shown}", self.spec.name())).with_state(Arguments(Ok(arguments))))
    }

    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput {
        let arguments = match ctx.prepared::<Arguments>() {
            Some(Arguments(parsed)) => parsed.clone(),
            None => arguments(input),
        };
        let arguments = match arguments {
            Ok(arguments) => arguments,
            Err(e) => return ToolOutput::error(format!("the input to {} is not a JSON object: {e}", self.spec.name())),
        };
        let timeout = ctx.timeout().map_or(self.timeout, |t| t.min(self.timeout));
        self.conn.call(&self.remote_name, arguments, timeout, ctx.cancel_token()).await
    }
}

/// The parsed arguments of one call, handed from [`Tool::prepare`] to [`Tool::call`].
struct Arguments(Result<Option<JsonObject>, String>);

/// MCPI-8: `null` or empty input is no arguments (`{}`); anything else must be an object.
fn arguments(input: &ToolInput) -> Result<Option<JsonObject>, String> {
    if input.is_null() || input.as_str().trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str::<JsonObject>(input.as_str()).map(Some).map_err(|e| e.to_string())
}
