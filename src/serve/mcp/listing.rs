//! How a selected tool looks to an MCP client (MCP-14, MCP-15).

use crate::select::{SelectedTool, Toolset};
use crate::tool::{ToolKind, ToolSpec, tags};
use rmcp::model::{JsonObject, ListToolsResult, Tool as McpTool, ToolAnnotations};
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

/// MCP-15: the input schema verbatim; an absent (non-object) schema becomes `{"type": "object"}`. In a listing
/// that is kept parsed, identical schemas share one object (`interned`); a longer one keeps no parsed schema, so
/// nothing is interned (`None`) and each schema is dropped once serialized.
fn schema(spec: &ToolSpec, interned: Option<&mut HashMap<String, Arc<JsonObject>>>) -> Arc<JsonObject> {
    let map = match spec.input_schema_owned() {
        Value::Object(map) => map,
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), Value::String("object".to_owned()));
            map
        }
    };
    let Some(interned) = interned else { return Arc::new(map) };
    // Keyed by the serialized form: maps are sorted, so equal schemas serialize equally.
    let key = serde_json::to_string(&map).unwrap_or_default();
    interned.entry(key).or_insert_with(|| Arc::new(map)).clone()
}

/// The most tools one `tools/list` page built by rmcp holds (MCP-25): a listing at most this long is kept parsed
/// and sent whole, as before; a longer one is kept only as its serialized text and parsed back a page at a time, so
/// a 10,000-command tree does not hold 10,000 parsed schemas (about 4.5 KiB each) for the server's life.
pub(crate) const PAGE: usize = 1000;

/// The served listing, built once: each tool's serialized object, and how to put the `tools/list` result together
/// from them (what a legacy session over HTTP receives, see the HTTP layer).
///
/// A command tool's text leaves out its `outputSchema`, which is the same for every command (EXEC-13's envelope,
/// about 500 bytes): it is spliced back from one shared copy whenever the tool is sent or parsed, so a
/// 10,000-command listing does not hold 10,000 copies of it.
pub(crate) struct Listing {
    /// The tools' objects, one after another, without separators.
    text: bytes::Bytes,
    /// Each tool's object within `text`, in tool order, and whether the shared output schema goes into it.
    spans: Vec<(u32, u32, bool)>,
    /// `EXEC_SCHEMA`'s text, spliced into command tools.
    exec: bytes::Bytes,
    /// The whole listing parsed, when it is at most [`PAGE`] long.
    all: Option<Vec<McpTool>>,
    /// Whether each tool declares an output schema (TYPED-1, TYPED-2).
    typed: Vec<bool>,
}

/// Which tools (by position) one request may see (AUTH-5).
pub(crate) type Visible = Arc<dyn Fn(usize) -> bool + Send + Sync>;

/// Tools put into one chunk of a streamed listing: large enough that a 10,000-tool listing is a few hundred writes,
/// small enough that a chunk is some 100 KiB.
const CHUNK_TOOLS: usize = 64;

impl Listing {
    /// How many tools are listed.
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether tool `i` declares an output schema.
    pub(crate) fn typed(&self, i: usize) -> bool {
        self.typed.get(i).copied().unwrap_or(false)
    }

    /// Append tool `i`'s object, with the shared output schema spliced in when it takes it.
    fn write_tool(&self, i: usize, out: &mut Vec<u8>) {
        let Some(&(start, end, exec)) = self.spans.get(i) else { return };
        let text = &self.text[start as usize..end as usize];
        match text.split_last() {
            Some((b'}', body)) if exec => {
                out.extend_from_slice(body);
                out.extend_from_slice(b",\"outputSchema\":");
                out.extend_from_slice(&self.exec);
                out.push(b'}');
            }
            _ => out.extend_from_slice(text),
        }
    }

    /// The `tools/list` result (`{"tools":[...]}`) in chunks of [`CHUNK_TOOLS`] tools, built as they are sent;
    /// only the tools `visible` keeps, when given (AUTH-5).
    pub(crate) fn chunks(
        self: &Arc<Self>,
        visible: Option<Visible>,
    ) -> impl Iterator<Item = bytes::Bytes> + Send + 'static {
        let listing = self.clone();
        let n = listing.len();
        let groups = n.div_ceil(CHUNK_TOOLS).max(1);
        let mut first = true;
        (0..groups).map(move |g| {
            let mut out = Vec::with_capacity(CHUNK_TOOLS * 1200);
            if g == 0 {
                out.extend_from_slice(b"{\"tools\":[");
            }
            for i in g * CHUNK_TOOLS..((g + 1) * CHUNK_TOOLS).min(n) {
                if visible.as_ref().is_some_and(|v| !v(i)) {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                listing.write_tool(i, &mut out);
            }
            if g + 1 == groups {
                out.extend_from_slice(b"]}");
            }
            bytes::Bytes::from(out)
        })
    }

    /// Tool `i` as listed.
    pub(crate) fn tool(&self, i: usize) -> Option<McpTool> {
        if let Some(all) = &self.all {
            return all.get(i).cloned();
        }
        // Parsed back each time (rmcp asks for a called tool's schema on every 2026-07-28 call): a few
        // microseconds against the spawn, where keeping each called tool parsed would hold some 4.5 KiB per tool
        // for the server's life, growing with every distinct tool a client calls.
        self.parse(i)
    }

    fn parse(&self, i: usize) -> Option<McpTool> {
        let mut text = Vec::new();
        self.write_tool(i, &mut text);
        serde_json::from_slice(&text)
            .map_err(|e| tracing::warn!(target: "fisk_ai::serve::mcp", error = %e, "a listed tool does not parse back"))
            .ok()
    }

    /// One `tools/list` page (MCP-25): everything when the listing is at most [`PAGE`] long; otherwise [`PAGE`]
    /// tools from the cursor (a decimal index this server handed out), with the next cursor while more remain.
    ///
    /// # Errors
    ///
    /// `-32602` for a cursor this server did not hand out.
    pub(crate) fn page(
        &self,
        cursor: Option<&str>,
        visible: Option<&Visible>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        // With tools hidden from this caller (AUTH-5), pages run over the visible ones only, so neither a cursor
        // nor a short page says how many are hidden or where.
        let shown: Option<Vec<usize>> = visible.map(|v| (0..self.len()).filter(|&i| v(i)).collect());
        let count = shown.as_ref().map_or(self.len(), Vec::len);
        let start = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0 && n < count && n % PAGE == 0)
                .ok_or_else(|| rmcp::ErrorData::invalid_params(format!("unknown cursor {c:?}"), None))?,
        };
        let index = |k: usize| shown.as_ref().map_or(k, |s| s[k]);
        if let Some(all) = &self.all {
            let tools = (0..count).filter_map(|k| all.get(index(k)).cloned()).collect();
            return Ok(ListToolsResult::with_all_items(tools));
        }
        let end = (start + PAGE).min(count);
        let tools = (start..end).filter_map(|k| self.parse(index(k))).collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = (end < count).then(|| end.to_string());
        Ok(result)
    }
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
/// output schema; a built-in's comes from its spec (TYPED-1, TYPED-2). Each tool is serialized as soon as it is
/// built and, in a listing longer than [`PAGE`], dropped: only the text stays.
///
/// # Errors
///
/// When a tool cannot be serialized, or the listing passes 4 GiB.
pub(crate) fn build(tools: &Toolset) -> Result<Listing, String> {
    let mut interned = HashMap::new();
    let exec = Arc::new(exec_schema());
    let exec_text = serde_json::to_vec(&*exec).map_err(|e| format!("the output schema: {e}"))?;
    let keep = tools.len() <= PAGE;
    let mut text = Vec::new();
    let (mut spans, mut typed) = (Vec::with_capacity(tools.len()), Vec::with_capacity(tools.len()));
    let mut all = Vec::with_capacity(if keep { tools.len() } else { 0 });
    for t in tools.iter() {
        let command = t.spec().kind() == ToolKind::Command;
        let own = match t.spec().output_schema() {
            None => None,
            Some(_) if command => None,
            // MCP's outputSchema is an object schema: anything else is the host's mistake, reported by name.
            Some(Value::Object(schema)) if schema.get("type").and_then(Value::as_str) == Some("object") => {
                Some(Arc::new(schema.clone()))
            }
            Some(other) => {
                return Err(format!(
                    "tool {:?}: its output schema must be a JSON Schema object with \"type\": \"object\" (MCP's \
                     outputSchema), not {other}",
                    t.spec().name()
                ));
            }
        };
        typed.push(command || own.is_some());
        let mut tool = to_mcp(t, schema(t.spec(), keep.then_some(&mut interned)));
        if let Some(schema) = own {
            tool = tool.with_raw_output_schema(schema);
        }
        let start = text.len();
        // A command's text leaves its output schema out; `Listing::write_tool` splices the shared one back.
        serde_json::to_writer(&mut text, &tool).map_err(|e| format!("tool {:?}: {e}", t.spec().name()))?;
        let span = (u32::try_from(start), u32::try_from(text.len()));
        let (Ok(start), Ok(end)) = span else { return Err("the tool listing is over 4 GiB".to_owned()) };
        spans.push((start, end, command));
        if keep {
            if command {
                tool = tool.with_raw_output_schema(exec.clone());
            }
            all.push(tool);
        }
    }
    text.shrink_to_fit();
    Ok(Listing { text: text.into(), spans, exec: exec_text.into(), all: keep.then_some(all), typed })
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
