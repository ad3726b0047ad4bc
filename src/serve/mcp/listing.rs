//! How a selected tool looks to an MCP client (MCP-14, MCP-15).

use crate::select::SelectedTool;
use crate::tool::{ToolKind, ToolSpec, tags};
use rmcp::model::{JsonObject, Tool as McpTool, ToolAnnotations};
use serde_json::Value;
use std::sync::Arc;

/// Built-ins that only read (MCP-14).
const READ_ONLY_BUILTINS: [&str; 2] = ["read_file", "base64_encode"];

/// The behavior hints of a tool (MCP-14): `None` means the hint is omitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Hints {
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
}

/// MCP-14: hints from the behavior tags. On a TAG-7 conflict `readOnlyHint` wins and `destructiveHint` is omitted.
pub(crate) fn hints(spec: &ToolSpec) -> Hints {
    let t = spec.tags();
    let builtin_ro = spec.kind() == ToolKind::Builtin && READ_ONLY_BUILTINS.contains(&spec.name());
    let read_only = t.contains(tags::READ_ONLY) || builtin_ro;
    let conflict = !t.behavior_conflicts().is_empty();
    let destructive = if conflict || read_only {
        None
    } else if t.contains(tags::DESTRUCTIVE) {
        Some(true)
    } else if t.contains(tags::ADDITIVE) {
        Some(false)
    } else {
        None
    };
    Hints {
        read_only: read_only.then_some(true),
        destructive,
        idempotent: t.contains(tags::IDEMPOTENT).then_some(true),
    }
}

/// MCP-15: the input schema verbatim; an absent (non-object) schema becomes `{"type": "object"}`.
pub(crate) fn schema(spec: &ToolSpec) -> JsonObject {
    match spec.input_schema() {
        Value::Object(map) => map.clone(),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), Value::String("object".to_owned()));
            map
        }
    }
}

/// The tool as `tools/list` sends it: name, title (the space-separated command path; built-ins: the name),
/// the model description with its Tags line, the schema, and the hints. Confirmation is never an annotation.
pub(crate) fn to_mcp(tool: &SelectedTool) -> McpTool {
    let spec = tool.spec();
    let title = spec.display_path();
    let h = hints(spec);
    let mut annotations = ToolAnnotations::with_title(title.clone());
    annotations.read_only_hint = h.read_only;
    annotations.destructive_hint = h.destructive;
    annotations.idempotent_hint = h.idempotent;
    McpTool::new(spec.name().to_owned(), spec.description().to_owned(), Arc::new(schema(spec)))
        .with_title(title)
        .with_annotations(annotations)
}
