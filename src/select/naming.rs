//! Final naming of imported tools (IMPORT-5, IMPORT-6, MCPI-7): one namespace for every `remote_tools` host and
//! `mcp_servers` entry.
//!
//! An imported tool keeps its bare name unless a command tool or built-in holds that name, or more than one
//! importing source exposes it; then it becomes `<alias>_<name>`. The decision looks only at the whole candidate
//! set, never at discovery order.

use crate::error::{Error, Result};
use crate::tool::{Decorated, Origin, Tool, ToolKind, ToolSpec};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The alias an imported tool's source gave it, if it has one.
fn alias(spec: &ToolSpec) -> Option<&str> {
    match spec.origin() {
        Origin::Remote { alias, .. } | Origin::Mcp { alias, .. } => Some(alias),
        Origin::Local => None,
    }
}

/// Rename imported tools where IMPORT-5 says so. Fails when final names still collide among imported tools
/// (IMPORT-6), naming them and suggesting a distinct alias.
pub(crate) fn final_names(candidates: Vec<Arc<dyn Tool>>) -> Result<Vec<Arc<dyn Tool>>> {
    // Nothing imported, the usual case: no name changes, and no tables over a large tree's every name.
    if !candidates.iter().any(|t| t.spec().kind() == ToolKind::Imported) {
        return Ok(candidates);
    }
    let mut held: HashSet<&str> = candidates
        .iter()
        .map(|t| t.spec())
        .filter(|s| matches!(s.kind(), ToolKind::Command | ToolKind::Builtin))
        .map(ToolSpec::name)
        .collect();
    // The client-side search meta-tools' names are the agent's own: an imported tool never takes them.
    held.extend([crate::tool::SEARCH_TOOLS, crate::tool::CALL_TOOL]);
    // Counted per tool, not per alias: two sources sharing an alias both expose the name too.
    let mut exposers: HashMap<&str, usize> = HashMap::new();
    for spec in candidates.iter().map(|t| t.spec()).filter(|s| s.kind() == ToolKind::Imported) {
        *exposers.entry(spec.name()).or_default() += 1;
    }
    let prefixed: HashSet<String> = exposers
        .iter()
        .filter(|(name, count)| held.contains(**name) || **count > 1)
        .map(|(name, _)| (*name).to_owned())
        .collect();
    let mut finals: HashSet<String> = HashSet::new();
    let renamed: Vec<Arc<dyn Tool>> = candidates
        .into_iter()
        .map(|t| {
            let spec = t.spec();
            if spec.kind() != ToolKind::Imported || !prefixed.contains(spec.name()) {
                return t;
            }
            let name = format!("{}_{}", alias(spec).unwrap_or("imported"), spec.name());
            finals.insert(name.clone());
            let spec = spec.clone().renamed(name);
            under_final_name(t, spec)
        })
        .collect();
    // Only a prefixed name can still collide here; any other collision is the selection's to report.
    if !finals.is_empty() {
        still_colliding(&renamed, &finals)?;
    }
    Ok(renamed)
}

/// IMPORT-6: prefixed tools whose final names still collide, with each other or with any other tool. Other
/// collisions get the selection's own messages.
fn still_colliding(tools: &[Arc<dyn Tool>], finals: &HashSet<String>) -> Result<()> {
    let mut by_name: HashMap<&str, Vec<&ToolSpec>> = HashMap::new();
    for t in tools {
        by_name.entry(t.spec().name()).or_default().push(t.spec());
    }
    // A name no model can call is skipped with a warning by the selection (IMPORT-6), never a collision.
    let mut clashes: Vec<String> = by_name
        .iter()
        .filter(|(name, specs)| specs.len() > 1 && finals.contains(**name) && super::is_valid_tool_name(name))
        .map(|(name, specs)| {
            let from: Vec<String> = specs
                .iter()
                .map(|s| match alias(s) {
                    Some(a) => format!("source {a}"),
                    None => format!("a {} tool", super::kind_word(s.kind())),
                })
                .collect();
            format!("\"{name}\" ({})", from.join(", "))
        })
        .collect();
    if clashes.is_empty() {
        return Ok(());
    }
    clashes.sort();
    Err(Error::selection(format!(
        "imported tools still collide after prefixing with their alias: {}; give the sources distinct aliases",
        clashes.join("; ")
    )))
}

/// An imported tool under its final name; everything else is the source's tool (the one decorator forwards every
/// method). A display line that starts with the source's name for the tool shows the final name instead (MCPI-10:
/// the operator approves what the model called).
fn under_final_name(inner: Arc<dyn Tool>, spec: ToolSpec) -> Arc<dyn Tool> {
    let (bare, name) = (inner.spec().name().to_owned(), spec.name().to_owned());
    let tool = Decorated::new(inner, spec).with_display_map(move |display| match display.strip_prefix(&bare) {
        Some(rest) if rest.is_empty() || rest.starts_with(' ') => format!("{name}{rest}"),
        _ => display,
    });
    Arc::new(tool)
}
