//! How a selected tool looks to an MCP client (MCP-14, MCP-15).

use crate::select::{SelectedTool, Toolset};
use crate::tool::{ToolKind, ToolSpec, tags};
use rmcp::model::{JsonObject, Tool as McpTool, ToolAnnotations};
use serde_json::Value;
use std::collections::HashMap;
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

/// MCP-15: the input schema verbatim; an absent (non-object) schema becomes `{"type": "object"}`. Identical schemas
/// share one object: many commands of a large tree take the same flags, and 10,000 copies of one schema would be
/// most of what a listing weighs.
fn schema(spec: &ToolSpec, interned: &mut HashMap<String, Arc<JsonObject>>) -> Arc<JsonObject> {
    let map = match spec.input_schema_owned() {
        Value::Object(map) => map,
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), Value::String("object".to_owned()));
            map
        }
    };
    // Keyed by the serialized form: maps are sorted, so equal schemas serialize equally.
    let key = serde_json::to_string(&map).unwrap_or_default();
    interned.entry(key).or_insert_with(|| Arc::new(map)).clone()
}

/// A `tools/list` result as a legacy (2025-11-25 and earlier) peer receives it: rmcp clears the 2026-07-28 fields
/// for those peers, so the result is the tools alone.
#[derive(serde::Serialize)]
pub(crate) struct Wire<'a> {
    pub(crate) tools: &'a [McpTool],
}

/// EXEC-13's envelope as a JSON Schema (2020-12): the `outputSchema` of every command tool (TYPED-1).
pub(crate) fn exec_schema() -> JsonObject {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line that ran"},
            "exit_code": {"type": "integer", "description": "Its exit status; -1 when a signal ended it"},
            "output": {
                "type": "string",
                "description": "Stdout and stderr as one stream, in the order written; the first and last 32 KiB \
                                when truncated"
            },
            "truncated": {"type": "boolean", "description": "Present and true when the output was cut"}
        },
        "required": ["command", "exit_code", "output"],
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The listing `tools/list` serves, in tool order, built once when the server is built. Command tools share one
/// output schema; a built-in's comes from its spec (TYPED-1, TYPED-2).
pub(crate) fn build(tools: &Toolset) -> Vec<McpTool> {
    let mut interned = HashMap::new();
    let exec = Arc::new(exec_schema());
    tools
        .iter()
        .map(|t| {
            let output = match (t.spec().kind(), t.spec().output_schema()) {
                (ToolKind::Command, _) => Some(exec.clone()),
                (_, Some(Value::Object(schema))) => Some(Arc::new(schema.clone())),
                _ => None,
            };
            let tool = to_mcp(t, schema(t.spec(), &mut interned));
            match output {
                Some(schema) => tool.with_raw_output_schema(schema),
                None => tool,
            }
        })
        .collect()
}

/// The tool as `tools/list` sends it: name, title (the space-separated command path; built-ins: the name),
/// the model description with its Tags line, the schema, and the hints. Confirmation is never an annotation.
fn to_mcp(tool: &SelectedTool, schema: Arc<JsonObject>) -> McpTool {
    let spec = tool.spec();
    let title = spec.display_path();
    let h = hints(spec);
    let mut annotations = ToolAnnotations::with_title(title.clone());
    annotations.read_only_hint = h.read_only;
    annotations.destructive_hint = h.destructive;
    annotations.idempotent_hint = h.idempotent;
    McpTool::new(spec.name().to_owned(), spec.description().to_owned(), schema)
        .with_title(title)
        .with_annotations(annotations)
}
