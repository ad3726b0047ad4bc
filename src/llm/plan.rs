use crate::select::{SelectedTool, Toolset};
use crate::tool::ToolKind;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// At this many tools the set is deferred behind tool search, when the provider allows it (SEARCH-1).
pub const TOOL_SEARCH_THRESHOLD: usize = 10;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The tools a run sends, with the deferral decision for each (SEARCH-1..5). Built once per agent; every request
/// of every run carries the same plan, so a provider can render it once and send byte-identical tool definitions
/// on every turn.
///
/// ```
/// use fisk_ai::llm::ToolPlan;
/// use fisk_ai::select::Selection;
///
/// let plan = ToolPlan::new(Selection::new().apply(Vec::new()).unwrap(), true);
/// assert!(!plan.search());
/// ```
#[derive(Debug, Clone)]
pub struct ToolPlan {
    toolset: Toolset,
    deferred: Arc<[bool]>,
    search: bool,
    id: u64,
}

impl ToolPlan {
    /// Plan `toolset`. With `search_allowed` (the provider supports tool search and `llm.no_tool_search` is off)
    /// and at least [`TOOL_SEARCH_THRESHOLD`] tools, command tools are deferred unless tagged `ai:no_defer`,
    /// imported tools always, built-ins never, custom tools unless they opted out (SEARCH-3). The search tool is
    /// requested only when something was actually deferred (SEARCH-4).
    pub fn new(toolset: Toolset, search_allowed: bool) -> Self {
        let defer_all = search_allowed && toolset.len() >= TOOL_SEARCH_THRESHOLD;
        let deferred: Arc<[bool]> = toolset
            .iter()
            .map(|t| {
                defer_all
                    && match t.spec().kind() {
                        ToolKind::Builtin => false,
                        ToolKind::Imported => true,
                        _ => !t.spec().no_defer(),
                    }
            })
            .collect();
        let search = deferred.iter().any(|d| *d);
        ToolPlan { toolset, deferred, search, id: NEXT_ID.fetch_add(1, Ordering::Relaxed) }
    }

    /// The tools with their deferral flag, in request order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&SelectedTool, bool)> {
        self.toolset.iter().zip(self.deferred.iter().copied())
    }

    /// The tool set.
    pub fn toolset(&self) -> &Toolset {
        &self.toolset
    }

    /// Whether the provider's search tool goes into the request (SEARCH-4).
    pub fn search(&self) -> bool {
        self.search
    }

    /// How many tools the model sees (SEARCH-1).
    pub fn len(&self) -> usize {
        self.deferred.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.deferred.is_empty()
    }

    /// A process-unique id: a provider may cache its rendering of the plan under it.
    pub fn id(&self) -> u64 {
        self.id
    }
}
