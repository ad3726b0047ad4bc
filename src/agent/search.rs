//! Client-side tool search, for providers without server-side search (SEARCH-1..3 applied by the agent).
//!
//! When the active provider declares no tool search, `llm.no_tool_search` is off and the run has at least
//! [`TOOL_SEARCH_THRESHOLD`](crate::llm::TOOL_SEARCH_THRESHOLD) tools, the tools SEARCH-3 would defer are left out
//! of the request. In their place the request carries two tools of the agent's own:
//!
//! - `search_tools {query, limit?}`: BM25 over each deferred tool's command path and description, ranking first
//!   the commands whose path the request names (the `index` module), returning the best matches with their command
//!   paths and input schemas;
//! - `call_tool {name, input}`: runs a found tool. The agent routes it to the real tool before anything else
//!   happens, so the real tool's validation, gate, journal record, trace line and statistics apply exactly as if
//!   the model had called it directly.
//!
//! **Why a `call_tool` route, not revealing found tools in the request:** the request prefix (system prompt and
//! tools) stays byte-identical on every turn of a run, so the provider's prompt cache keeps working; a reveal that
//! changed the tools array would throw the cached prefix away on every search. The cost is one indirection the
//! model must follow (it reads the schema from the search result, not from a tool definition), and providers that
//! constrain arguments to a tool's schema cannot do so for the routed input; the dispatch path still validates it
//! against the real schema before the gate.

use crate::select::{SelectedTool, Toolset};
use crate::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::sync::Arc;

mod index;
#[cfg(feature = "knowledge")]
mod semantic;
mod text;

use index::Index;
#[cfg(feature = "knowledge")]
pub use semantic::ToolEmbeddings;

/// The hybrid tier's configuration, when the crate has it (feature `knowledge`); `()` without it.
#[cfg(feature = "knowledge")]
pub(crate) type Hybrid = Option<ToolEmbeddings>;
#[cfg(not(feature = "knowledge"))]
pub(crate) type Hybrid = ();

pub use crate::tool::{CALL_TOOL, SEARCH_TOOLS};
/// Matches returned when the model gives no limit.
const DEFAULT_LIMIT: usize = 5;
/// The most matches one search returns.
const MAX_LIMIT: usize = 20;

/// Whether SEARCH-3 would defer `tool`.
pub(crate) fn deferrable(tool: &SelectedTool) -> bool {
    match tool.spec().kind() {
        ToolKind::Builtin => false,
        ToolKind::Imported => true,
        _ => !tool.spec().no_defer(),
    }
}

/// The request's tools under client-side search: every direct tool, then `search_tools` (fused with `hybrid`'s
/// embeddings when set) and `call_tool`. `None` when nothing would be deferred, or when a selected tool already
/// holds one of the two names.
pub(crate) fn request_tools(full: &Toolset, hybrid: &Hybrid) -> Option<(Toolset, Arc<dyn Tool>)> {
    let deferred: Vec<&SelectedTool> = full.iter().filter(|t| deferrable(t)).collect();
    if deferred.is_empty() || full.get(SEARCH_TOOLS).is_some() || full.get(CALL_TOOL).is_some() {
        return None;
    }
    let search: Arc<dyn Tool> = Arc::new(SearchTools::new(&deferred, hybrid));
    let call: Arc<dyn Tool> = Arc::new(CallTool(call_spec()));
    let mut direct: Vec<SelectedTool> = full.iter().filter(|t| !deferrable(t)).cloned().collect();
    direct.push(SelectedTool::new(search.clone(), None));
    direct.push(SelectedTool::new(call, None));
    Some((Toolset::new(direct, Vec::new()), search))
}

/// Where a call goes: itself, or (for `call_tool`) the named tool with its input.
pub(crate) enum Route {
    /// Not a routed call.
    Direct,
    /// `call_tool` naming `name` with `input` (the model's JSON text, kept as written).
    To { name: String, input: ToolInput },
    /// A `call_tool` the model got wrong: this is its error result.
    Bad(String),
}

/// Resolve a `call_tool` call.
pub(crate) fn route(name: &str, input: &ToolInput) -> Route {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args<'a> {
        name: String,
        #[serde(borrow)]
        input: Option<&'a RawValue>,
    }
    if name != CALL_TOOL {
        return Route::Direct;
    }
    let text = if input.is_null() { "{}" } else { input.as_str() };
    match serde_json::from_str::<Args<'_>>(text) {
        Ok(args) if args.name == CALL_TOOL => Route::Bad("call_tool cannot call call_tool".to_owned()),
        Ok(args) => {
            let inner = args.input.map_or("{}", RawValue::get);
            match ToolInput::from_json(inner) {
                Ok(input) => Route::To { name: args.name, input },
                Err(e) => Route::Bad(format!("call_tool: invalid input: {e}")),
            }
        }
        Err(e) => Route::Bad(format!(
            "call_tool needs {{\"name\": <a tool name from search_tools>, \"input\": {{...}}}}: {e}; nothing was run"
        )),
    }
}

/// The tool name a `call_tool` call routes to, for matching a recorded answer on resume (GATE-14).
pub(crate) fn routed_name(name: &str, input: &ToolInput) -> Option<String> {
    match route(name, input) {
        Route::To { name, .. } => Some(name),
        _ => None,
    }
}

fn call_spec() -> ToolSpec {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name, exactly as search_tools returned it."},
            "input": {"type": "object", "description": "The tool's input, matching the input_schema search_tools returned."}
        },
        "required": ["name"],
        "additionalProperties": false
    });
    ToolSpec::new(CALL_TOOL, ToolKind::Builtin, schema).with_no_defer(true).with_description(
        "Run a tool found with search_tools: give its name and its input. The tool is validated, gated and run \
         exactly as if it were called directly.",
    )
}

/// `call_tool` as a tool: the agent routes its calls, so this is only reached when something else calls it.
struct CallTool(ToolSpec);

#[async_trait]
impl Tool for CallTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    async fn call(&self, _input: &ToolInput, _ctx: &CallContext) -> ToolOutput {
        ToolOutput::error("call_tool is routed by the agent loop; it cannot be called on its own")
    }
}

/// `search_tools`: BM25 over the deferred tools (fused with their embeddings in the hybrid tier), built once per
/// agent.
struct SearchTools {
    spec: ToolSpec,
    index: Index,
    #[cfg(feature = "knowledge")]
    semantic: Option<semantic::Semantic>,
    tools: Vec<Arc<dyn Tool>>,
}

impl SearchTools {
    fn new(deferred: &[&SelectedTool], hybrid: &Hybrid) -> Self {
        let index = Index::new(deferred.iter().map(|t| t.spec()));
        #[cfg(feature = "knowledge")]
        let semantic = hybrid.clone().map(|h| semantic::Semantic::new(h, deferred.iter().map(|t| t.spec())));
        #[cfg(not(feature = "knowledge"))]
        let () = *hybrid;
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words describing what the tool should do."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                          "description": "How many matches to return (default 5)."}
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let description = format!(
            "Search {} more tools that are not listed here, by what they do (words from their names or command \
             paths and descriptions). Returns the best matches with their command paths and input schemas; run one \
             with call_tool.",
            deferred.len()
        );
        let spec =
            ToolSpec::new(SEARCH_TOOLS, ToolKind::Builtin, schema).with_no_defer(true).with_description(description);
        SearchTools {
            spec,
            index,
            #[cfg(feature = "knowledge")]
            semantic,
            tools: deferred.iter().map(|t| t.tool().clone()).collect(),
        }
    }

    /// The best matches for `query`, best first, and why the hybrid tier was left out of this search if it was.
    async fn matches(&self, query: &str, limit: usize) -> (Vec<&Arc<dyn Tool>>, Option<String>) {
        #[cfg(feature = "knowledge")]
        if let Some(semantic) = &self.semantic {
            let lexical = self.index.rank(query, semantic::POOL);
            return match semantic.fuse(query, &lexical).await {
                Ok(fused) => (self.pick(fused, limit), None),
                Err(e) => {
                    let why = crate::gate::sanitize(&e.to_string(), 300);
                    tracing::warn!(target: "fisk_ai::search", error = %why, "search_tools: embeddings failed; ranked by words only");
                    (self.pick(lexical, limit), Some(format!("ranked by words only: the embedder failed ({why})")))
                }
            };
        }
        (self.pick(self.index.rank(query, limit), limit), None)
    }

    fn pick(&self, ranked: Vec<usize>, limit: usize) -> Vec<&Arc<dyn Tool>> {
        ranked.into_iter().take(limit).filter_map(|i| self.tools.get(i)).collect()
    }
}

/// The ranking `search_tools` uses, on its own: for measuring search quality (`benches/search_quality.rs`) without
/// running an agent. It indexes the tools of `toolset` that client-side search would defer, exactly as the agent's
/// `search_tools` does.
#[doc(hidden)]
pub struct Ranker(SearchTools);

impl std::fmt::Debug for Ranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ranker").field("tools", &self.0.tools.len()).finish()
    }
}

impl Ranker {
    /// Index the deferrable tools of `toolset` (built once; each [`rank`](Self::rank) reuses it).
    pub fn new(toolset: &Toolset) -> Self {
        let deferred: Vec<&SelectedTool> = toolset.iter().filter(|t| deferrable(t)).collect();
        Ranker(SearchTools::new(&deferred, &Hybrid::default()))
    }

    /// As [`new`](Self::new), with the hybrid tier over `embeddings`.
    #[cfg(feature = "knowledge")]
    pub fn hybrid(toolset: &Toolset, embeddings: ToolEmbeddings) -> Self {
        let deferred: Vec<&SelectedTool> = toolset.iter().filter(|t| deferrable(t)).collect();
        Ranker(SearchTools::new(&deferred, &Some(embeddings)))
    }

    /// The names of the best `limit` matches for `query`, best first (fewer when fewer tools match at all), and
    /// why the hybrid tier was left out of this search if it was.
    pub async fn rank(&self, query: &str, limit: usize) -> (Vec<String>, Option<String>) {
        let (found, note) = self.0.matches(query, limit).await;
        (found.into_iter().map(|t| t.spec().name().to_owned()).collect(), note)
    }
}

#[async_trait]
impl Tool for SearchTools {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput {
        #[derive(Deserialize)]
        struct Args {
            query: String,
            limit: Option<usize>,
        }
        let args: Args = match input.parse() {
            Ok(a) => a,
            Err(e) => return ToolOutput::error(format!("search_tools: {e}")),
        };
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        // A cancelled run does not wait for the hybrid tier's embedder.
        let (found, degraded) = tokio::select! {
            biased;
            () = ctx.cancel_token().cancelled() => return ToolOutput::cancelled("search_tools was cancelled"),
            m = self.matches(&args.query, limit) => m,
        };
        let found: Vec<Value> = found
            .into_iter()
            .map(|t| {
                let s = t.spec();
                // The command path tells alike names apart (`stream info`, `consumer info`) in the CLI's own words.
                let mut found = json!({"name": s.name(), "description": s.description()});
                if !s.command_path().is_empty() {
                    found["command"] = json!(s.display_path());
                }
                found["input_schema"] = s.input_schema().clone();
                found
            })
            .collect();
        let mut out = if found.is_empty() {
            json!({"tools": [], "note": format!("no tool matches {:?}; try other words", args.query)})
        } else {
            json!({"tools": found})
        };
        if let Some(why) = degraded {
            out["ranking"] = json!(why);
        }
        ToolOutput::json(&out)
    }
}
