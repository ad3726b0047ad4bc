//! One imported tool: the server's description and schema as given, called through its connection.

use super::McpImport;
use super::connection::Connection;
use crate::tool::{CallContext, Prepared, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
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
    /// MCPI-6: a tool with an empty description or a non-object input schema is refused, with the reason.
    pub(crate) fn new(
        import: &McpImport,
        conn: &Arc<Connection>,
        tool: rmcp::model::Tool,
    ) -> Result<Self, (String, String)> {
        let name = tool.name.into_owned();
        let description = tool.description.as_deref().map(str::trim).unwrap_or_default();
        if description.is_empty() {
            return Err((crate::gate::sanitize(&name, 200), "it has an empty description".to_owned()));
        }
        // rmcp types the schema as an object already; `type`, when present, must say so too.
        let schema = Arc::unwrap_or_clone(tool.input_schema);
        if schema.get("type").is_some_and(|t| t != "object") {
            return Err((crate::gate::sanitize(&name, 200), "its inputSchema is not an object schema".to_owned()));
        }
        let description = tool.description.map(|d| d.into_owned()).unwrap_or_default();
        let spec = ToolSpec::new(name.clone(), ToolKind::Imported, Value::Object(schema))
            .with_description(description)
            .with_origin(super::ToolSource::origin(import))
            .with_confirm(import.confirm);
        Ok(ImportedTool { spec, remote_name: name, conn: Arc::clone(conn), timeout: import.timeout })
    }
}

#[async_trait]
impl Tool for ImportedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// MCPI-10: the (final) name followed by the compact JSON input.
    fn display(&self, input: &ToolInput) -> String {
        format!("{} {}", self.spec.name(), compact_json(input.as_str()))
    }

    fn prepare(&self, input: &ToolInput) -> Prepared {
        Prepared::new(self.display(input))
    }

    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput {
        // MCPI-8: `null` or empty input is `{}`.
        let arguments = if input.is_null() || input.as_str().trim().is_empty() {
            None
        } else {
            match serde_json::from_str::<JsonObject>(input.as_str()) {
                Ok(map) => Some(map),
                Err(e) => {
                    return ToolOutput::error(format!("the input to {} is not a JSON object: {e}", self.spec.name()));
                }
            }
        };
        let timeout = ctx.timeout().map_or(self.timeout, |t| t.min(self.timeout));
        self.conn.call(&self.remote_name, arguments, timeout, ctx.cancel_token()).await
    }
}

/// JSON text without insignificant whitespace, every value kept exactly as written (numbers are not re-printed).
pub(crate) fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !c.is_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::compact_json;

    #[test]
    fn compact_json_strips_only_insignificant_whitespace() {
        assert_eq!(
            compact_json("{ \"a b\" : 1.50,\n \"c\": [ 1, \"x \\\" y\" ] }"),
            r#"{"a b":1.50,"c":[1,"x \" y"]}"#
        );
        assert_eq!(compact_json(""), "");
    }
}
