//! The deny-then-select pipeline (SPEC section 4) and its output, the [`Toolset`].
//!
//! 1. Every tool tagged `ai:deny` is removed, always and first; no rule can bring it back (SEL-2).
//! 2. Imported tools get their final names (`<alias>_<name>` when a command or built-in holds the name or several
//!    importing sources expose it, IMPORT-5). Names are checked: a built-in or custom tool may not take a command's
//!    name (SEL-14), custom tools may not collide with anything (OVR-8), and a name no model can address is skipped
//!    with a warning (IMPORT-6).
//! 3. `include`, when it has entries, keeps only matching tools (SEL-3).
//! 4. `exclude`, when it has entries, removes matching tools (SEL-4).
//!
//! The same [`Toolset`] feeds the agent loop, the MCP server and A2A, so selection, naming, schemas and gating
//! never drift between them.

mod naming;
mod rule;
mod toolset;

pub use rule::Rule;
pub use toolset::{SelectedTool, Toolset};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::gate::sanitize;
use crate::tool::{Tool, ToolKind, tags};
use crate::warning::Warning;
use std::collections::HashMap;
use std::sync::Arc;

/// The selection rules of one configuration: include, exclude and the confirmation tags.
///
/// ```
/// use fisk_ai::select::{Rule, Selection};
/// use fisk_ai::source::fisk::{AppModel, FiskApp};
///
/// let doc = br#"{"name":"cowsay","commands":[{"name":"cow","commands":[
///   {"name":"say","restricted_schema":{"type":"object"}},
///   {"name":"think","restricted_schema":{"type":"object"}},
///   {"name":"feed","tags":["impact:rw"],"restricted_schema":{"type":"object"}}]}]}"#;
/// let loaded = FiskApp::new("cowsay").tools_from_model(AppModel::from_slice(doc).unwrap()).unwrap();
///
/// let selection = Selection::new()
///     .with_include(Rule::tools(["^cow"]).unwrap())
///     .with_exclude(Rule::tools(["^cow_think"]).unwrap())
///     .with_confirm_tags(["impact:rw"]);
/// let tools = selection.apply(loaded.tools).unwrap();
/// assert_eq!(tools.iter().map(|t| t.spec().name()).collect::<Vec<_>>(), ["cow_say", "cow_feed"]);
/// assert_eq!(tools.get("cow_feed").unwrap().gate_trigger(), Some("impact:rw"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Selection {
    include: Option<Rule>,
    exclude: Option<Rule>,
    confirm_tags: Vec<String>,
}

/// Whether `name` can be addressed by a model or MCP client: `^[a-zA-Z0-9_-]{1,128}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 128 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Selection {
    /// No rules and no confirmation tags: only `ai:deny` is stripped and `ai:confirm` gates.
    pub fn new() -> Self {
        Self::default()
    }

    /// The top-level `include`, `exclude` and `harness.confirm_tags` of a configuration. An invalid pattern is an
    /// error naming it (SEL-6).
    ///
    /// # Errors
    ///
    /// A configuration error naming the key and the pattern when a name pattern does not compile (SEL-6).
    pub fn from_config(config: &Config) -> Result<Self> {
        let include = config.include.as_ref().map(|f| Rule::from_filter("include", f)).transpose()?;
        let exclude = config.exclude.as_ref().map(|f| Rule::from_filter("exclude", f)).transpose()?;
        Ok(Selection { include, exclude, confirm_tags: Vec::new() }
            .with_confirm_tags(config.harness.confirm_tags.iter().cloned()))
    }

    /// Keep only tools matching `rule` (ignored when the rule is empty, SEL-3).
    #[must_use]
    pub fn with_include(mut self, rule: Rule) -> Self {
        self.include = Some(rule);
        self
    }

    /// Remove tools matching `rule` (ignored when empty, SEL-4).
    #[must_use]
    pub fn with_exclude(mut self, rule: Rule) -> Self {
        self.exclude = Some(rule);
        self
    }

    /// Gate tools carrying any of these tags, besides `ai:confirm` (GATE-1), whatever their source (GATE-18).
    /// Normalized: trimmed, empties dropped, duplicates removed (CFG-11).
    #[must_use]
    pub fn with_confirm_tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.confirm_tags.clear();
        for t in tags {
            let t: String = t.into();
            let t = t.trim();
            if !t.is_empty() && !self.confirm_tags.iter().any(|c| c == t) {
                self.confirm_tags.push(t.to_owned());
            }
        }
        self
    }

    /// The trigger tag that gates `tool`, if any (GATE-1..3, GATE-18), out of `triggers`: `ai:confirm` first, then
    /// the confirmation tags in order. Every kind of tool is gated by its tags, not only commands: a host tool or a
    /// remote agent's tool tagged `ai:confirm` must never run unasked, as `ai:deny` strips any tool.
    fn gate_for(tool: &dyn Tool, triggers: &[Arc<str>]) -> Option<Arc<str>> {
        let spec = tool.spec();
        if spec.tags().contains(tags::CONFIRM) || spec.confirm_opt_in() {
            return Some(triggers[0].clone());
        }
        spec.tags().iter().find_map(|t| triggers[1..].iter().find(|c| &***c == t).cloned())
    }

    /// Run the pipeline over every candidate (SEL-1), returning the ordered, uniquely named tool set.
    ///
    /// Fails on a name collision (SEL-14, OVR-8). Never fails for being empty: a run checks that with
    /// [`Toolset::ensure_not_empty`] (SEL-13), while `info` shows the empty set.
    ///
    /// # Errors
    ///
    /// A selection error naming both tools when two candidates end up with the same name.
    pub fn apply(&self, candidates: Vec<Arc<dyn Tool>>) -> Result<Toolset> {
        let mut warnings = Vec::new();

        // Step 1, always first: strip ai:deny.
        let kept: Vec<Arc<dyn Tool>> =
            candidates.into_iter().filter(|t| !t.spec().tags().contains(tags::DENY)).collect();
        // Final naming of imported tools, over what survived the strip (IMPORT-5, IMPORT-6).
        let mut kept = naming::final_names(kept)?;

        // Step 2: names.
        let mut seen: HashMap<&str, ToolKind> = HashMap::with_capacity(kept.len());
        let mut invalid = Vec::new();
        for (i, t) in kept.iter().enumerate() {
            let spec = t.spec();
            let (name, kind) = (spec.name(), spec.kind());
            if !is_valid_tool_name(name) {
                // An imported name is whatever its server sent: kept printable (GATE-8).
                let (name, display) = (sanitize(name, 200), sanitize(&spec.display_path(), 200));
                warnings.push(Warning::InvalidToolName { name, display });
                invalid.push(i);
                continue;
            }
            if let Some(prev) = seen.insert(name, kind) {
                return Err(collision(name, prev, kind));
            }
        }
        for i in invalid.into_iter().rev() {
            kept.remove(i);
        }

        // GATE-4: confirm tags matching no loaded (deny-stripped) tool, whatever its source (GATE-18).
        for tag in &self.confirm_tags {
            let used = kept.iter().any(|t| t.spec().tags().contains(tag));
            if !used {
                warnings.push(Warning::UnmatchedConfirmTag { tag: tag.clone() });
            }
        }

        // Steps 3 and 4.
        if let Some(rule) = self.include.as_ref().filter(|r| !r.is_empty()) {
            kept.retain(|t| rule.matches(t.spec()));
        }
        if let Some(rule) = self.exclude.as_ref().filter(|r| !r.is_empty()) {
            kept.retain(|t| !rule.matches(t.spec()));
        }

        // SEL-12 order: commands (walk order), imported (source order), custom (by name), built-ins (list order).
        let rank = |k: ToolKind| match k {
            ToolKind::Command => 0,
            ToolKind::Imported => 1,
            ToolKind::Custom => 2,
            _ => 3,
        };
        kept.sort_by(|a, b| {
            let (a, b) = (a.spec(), b.spec());
            rank(a.kind()).cmp(&rank(b.kind())).then_with(|| {
                if a.kind() == ToolKind::Custom && b.kind() == ToolKind::Custom {
                    a.name().cmp(b.name())
                } else {
                    std::cmp::Ordering::Equal
                }
            })
        });

        let triggers: Vec<Arc<str>> =
            std::iter::once(tags::CONFIRM).chain(self.confirm_tags.iter().map(String::as_str)).map(Arc::from).collect();
        let entries = kept
            .into_iter()
            .map(|tool| {
                let gate = Self::gate_for(tool.as_ref(), &triggers);
                SelectedTool::new(tool, gate)
            })
            .collect();
        Ok(Toolset::new(entries, warnings))
    }
}

fn collision(name: &str, a: ToolKind, b: ToolKind) -> Error {
    use ToolKind::*;
    let msg = match (a, b) {
        (Command, Command) => format!(
            "two commands both become the tool \"{name}\" (their paths joined with '_' are equal); tag one of them \
             ai:deny or rename it in the application"
        ),
        (Command, other) | (other, Command) => format!(
            "the {} tool \"{name}\" has the same name as a command of the application; rename the command, tag it \
             ai:deny, or {}",
            kind_word(other),
            if other == Custom { "rename the custom tool" } else { "disable the built-in" }
        ),
        (x, y) if x == y => format!("two {} tools are both named \"{name}\"", kind_word(x)),
        (x, y) => format!("two tools are named \"{name}\" (a {} tool and a {} tool)", kind_word(x), kind_word(y)),
    };
    Error::selection(msg)
}

fn kind_word(k: ToolKind) -> &'static str {
    match k {
        ToolKind::Command => "command",
        ToolKind::Builtin => "built-in",
        ToolKind::Imported => "imported",
        ToolKind::Custom => "custom",
    }
}
