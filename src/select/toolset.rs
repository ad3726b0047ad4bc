use super::Rule;
use crate::error::{Error, Result};
use crate::tool::{Tool, ToolSpec};
use crate::warning::Warning;
use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A tool that survived selection, with its gating decision.
#[derive(Clone)]
pub struct SelectedTool {
    tool: Arc<dyn Tool>,
    // Shared with every tool the same tag gates: a large tree would otherwise copy it once per tool.
    gate: Option<Arc<str>>,
}

impl SelectedTool {
    pub(crate) fn new(tool: Arc<dyn Tool>, gate: Option<Arc<str>>) -> Self {
        SelectedTool { tool, gate }
    }

    /// The tool.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.tool
    }

    /// Its spec.
    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    /// The tag that gates it behind operator approval (GATE-2), or `None` when ungated.
    pub fn gate_trigger(&self) -> Option<&str> {
        self.gate.as_deref()
    }

    /// Whether calls need operator approval.
    pub fn is_gated(&self) -> bool {
        self.gate.is_some()
    }
}

impl fmt::Debug for SelectedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectedTool").field("name", &self.spec().name()).field("gate", &self.gate).finish()
    }
}

struct Inner {
    // Dropped before `tools` (fields drop in order): the tools are then freed in their own order, not the index's
    // random one, which on a large tree is several times slower.
    index: HashSet<Slot>,
    tools: Vec<SelectedTool>,
    warnings: Vec<Warning>,
}

/// An index entry: a tool's position, found by the tool's own name rather than a copy of it (10,000 names would
/// be 10,000 allocations per selection).
struct Slot {
    tool: Arc<dyn Tool>,
    at: usize,
}

impl Borrow<str> for Slot {
    fn borrow(&self) -> &str {
        self.tool.spec().name()
    }
}

// Hash and equality are the name's, as `Borrow<str>` requires.
impl Hash for Slot {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Borrow::<str>::borrow(self).hash(state);
    }
}

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        Borrow::<str>::borrow(self) == Borrow::<str>::borrow(other)
    }
}

impl Eq for Slot {}

/// The ordered, uniquely named set of tools a run may use: the one output of selection that the agent loop, the
/// MCP server and A2A all consume. Cheap to clone.
///
/// ```
/// use fisk_ai::select::Selection;
/// use fisk_ai::source::fisk::{AppModel, FiskApp};
///
/// let doc = br#"{"name":"app","commands":[
///   {"name":"status","tags":["ai:read_only"],"restricted_schema":{"type":"object"}},
///   {"name":"purge","tags":["ai:confirm"],"restricted_schema":{"type":"object"}},
///   {"name":"wipe","tags":["ai:deny"],"restricted_schema":{"type":"object"}}]}"#;
/// let loaded = FiskApp::new("app").tools_from_model(AppModel::from_slice(doc).unwrap()).unwrap();
/// let tools = Selection::new().apply(loaded.tools).unwrap();
///
/// let names: Vec<&str> = tools.iter().map(|t| t.spec().name()).collect();
/// assert_eq!(names, ["status", "purge"]); // ai:deny never makes it
/// assert_eq!(tools.get("purge").unwrap().gate_trigger(), Some("ai:confirm"));
/// assert!(!tools.get("status").unwrap().is_gated());
/// ```
#[derive(Clone)]
pub struct Toolset {
    inner: Arc<Inner>,
}

impl Toolset {
    pub(crate) fn new(tools: Vec<SelectedTool>, warnings: Vec<Warning>) -> Self {
        let index = tools.iter().enumerate().map(|(at, t)| Slot { tool: t.tool.clone(), at }).collect();
        Toolset { inner: Arc::new(Inner { index, tools, warnings }) }
    }

    /// The tools in request order (SEL-12).
    pub fn iter(&self) -> std::slice::Iter<'_, SelectedTool> {
        self.inner.tools.iter()
    }

    /// The tool with final name `name`.
    pub fn get(&self, name: &str) -> Option<&SelectedTool> {
        self.inner.index.get(name).map(|slot| &self.inner.tools[slot.at])
    }

    /// Where `name` is in request order.
    #[cfg(feature = "mcp")]
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.inner.index.get(name).map(|slot| slot.at)
    }

    /// How many tools.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// How many tools are gated.
    pub fn gated_count(&self) -> usize {
        self.iter().filter(|t| t.is_gated()).count()
    }

    /// Warnings selection produced (unmatched confirm tags, unaddressable names).
    pub fn warnings(&self) -> &[Warning] {
        &self.inner.warnings
    }

    /// SEL-13: fail when nothing is left, explaining how to get tools. `application` says whether an application
    /// is wrapped.
    ///
    /// # Errors
    ///
    /// A selection error when the set is empty, saying how to get tools (include rules, `ai:deny` tags, the
    /// application).
    pub fn ensure_not_empty(&self, application: bool) -> Result<()> {
        if !self.is_empty() {
            return Ok(());
        }
        Err(Error::selection(if application {
            "no tools remain after filtering; check the include and exclude rules (and ai:deny tags)"
        } else {
            "no application is wrapped and no tools are enabled; set application_path, enable \
             harness.human_in_the_loop or harness.memory, or list built-ins under harness.tools"
        }))
    }

    /// SEL-11: a narrower set for serving (`expose.agent.tools`); it can only remove tools.
    #[must_use]
    pub fn narrow(&self, include: Option<&Rule>, exclude: Option<&Rule>) -> Toolset {
        let tools = self
            .iter()
            .filter(|t| include.is_none_or(|r| r.is_empty() || r.matches(t.spec())))
            .filter(|t| exclude.is_none_or(|r| r.is_empty() || !r.matches(t.spec())))
            .cloned()
            .collect();
        // The warnings belong to the set this one was narrowed from; reporting them again would duplicate them.
        Toolset::new(tools, Vec::new())
    }
}

impl<'a> IntoIterator for &'a Toolset {
    type Item = &'a SelectedTool;
    type IntoIter = std::slice::Iter<'a, SelectedTool>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
