//! `base64_encode` (BUILTIN-14).

use super::{BuiltinEnv, BuiltinFactory, reject_unknown_options};
use crate::tool::{CallContext, Exposure, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use async_trait::async_trait;
use base64::Engine;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The `base64_encode` factory; it takes no options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Base64Factory;

impl BuiltinFactory for Base64Factory {
    fn name(&self) -> &str {
        "base64_encode"
    }

    fn build(&self, options: &Map<String, Value>, _env: &BuiltinEnv) -> crate::error::Result<Arc<dyn Tool>> {
        reject_unknown_options(self.name(), options, &[])?;
        let schema = json!({
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to encode (its UTF-8 bytes)"}},
            "required": ["text"],
            "additionalProperties": false
        });
        let spec = ToolSpec::new("base64_encode", ToolKind::Builtin, schema)
            .with_exposure(Exposure::Servable)
            .with_output_schema(json!({
                "type": "object",
                "properties": {"encoded": {"type": "string", "description": "The base64 text"}},
                "required": ["encoded"],
                "additionalProperties": false
            }))
            .with_description(
                "Encode text as standard base64 (with = padding) over its UTF-8 bytes. Returns {\"encoded\": \"...\"}.",
            );
        Ok(Arc::new(Base64Encode(spec)))
    }
}

#[derive(Debug)]
struct Base64Encode(ToolSpec);

#[derive(serde::Deserialize)]
struct Args {
    text: String,
}

#[async_trait]
impl Tool for Base64Encode {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn display(&self, _input: &ToolInput) -> String {
        "base64_encode".to_owned()
    }

    async fn call(&self, input: &ToolInput, _ctx: &CallContext) -> ToolOutput {
        // The dispatch path validated the input against the schema.
        match input.parse::<Args>() {
            Ok(args) => {
                ToolOutput::json(&json!({"encoded": base64::engine::general_purpose::STANDARD.encode(args.text)}))
            }
            Err(e) => ToolOutput::error(format!("base64_encode: {e}")),
        }
    }
}
