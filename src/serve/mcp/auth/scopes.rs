//! Per-tool scopes (AUTH-5): a command tagged `auth:scope=<scope>` is listed and callable only for callers whose
//! token grants that scope (every such tag, when it has several).

use super::Caller;
use crate::select::Toolset;
use crate::warning::Warning;

/// The tag prefix.
pub(crate) const SCOPE_TAG: &str = "auth:scope=";

/// The scopes each served tool needs, by its position in the served set; empty when no tool carries the tag.
#[derive(Debug, Default)]
pub(crate) struct ToolScopes {
    per_tool: Vec<Box<[String]>>,
    /// Tools with a tag that names no valid scope: served to nobody.
    never: Vec<usize>,
}

impl ToolScopes {
    /// Read the tags of `tools`. A tag naming no valid scope is kept as written, so its tool is never shown (no
    /// token can grant it), and warned about.
    pub(crate) fn of(tools: &Toolset) -> (Self, Vec<Warning>) {
        let mut warnings = Vec::new();
        let mut any = false;
        let mut never = Vec::new();
        let per_tool = tools
            .iter()
            .enumerate()
            .map(|(i, tool)| {
                let scopes: Box<[String]> = tool
                    .spec()
                    .tags()
                    .iter()
                    .filter_map(|t| t.strip_prefix(SCOPE_TAG).map(|s| (t, s)))
                    .map(|(tag, scope)| {
                        if let Err(why) = crate::config::check_scope_text(scope) {
                            never.push(i);
                            warnings.push(Warning::ScopeTag {
                                tool: tool.spec().name().to_owned(),
                                tag: tag.to_owned(),
                                reason: format!("{why}; the tool is never served to a caller with a token"),
                            });
                        }
                        scope.to_owned()
                    })
                    .collect();
                any |= !scopes.is_empty();
                scopes
            })
            .collect();
        (if any { ToolScopes { per_tool, never } } else { ToolScopes::default() }, warnings)
    }

    /// AUTH-5 without `auth`: every `auth:scope=` tag of `tools`, as a warning that it is not enforced.
    pub(crate) fn unenforced(tools: &Toolset) -> Vec<Warning> {
        let mut out = Vec::new();
        for tool in tools.iter() {
            for tag in tool.spec().tags().iter().filter(|t| t.starts_with(SCOPE_TAG)) {
                out.push(Warning::ScopeTag {
                    tool: tool.spec().name().to_owned(),
                    tag: tag.to_owned(),
                    reason: "not enforced without expose.agent.mcp.auth: the tool is served to every client".to_owned(),
                });
            }
        }
        out
    }

    /// Whether any tool needs a scope.
    pub(crate) fn any(&self) -> bool {
        !self.per_tool.is_empty()
    }

    /// Every scope a tag names, once each, in tool order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &str> {
        let mut seen: Vec<&str> = Vec::new();
        for s in self.per_tool.iter().flat_map(|v| v.iter()) {
            if !seen.contains(&s.as_str()) {
                seen.push(s);
            }
        }
        seen.into_iter()
    }

    /// Whether tool `i` is shown to `caller`. A request without a caller (stdio, which carries no token) sees none
    /// of the tagged tools. (A server without `auth` builds no scopes, so every tool is shown there.)
    pub(crate) fn visible(&self, i: usize, caller: Option<&Caller>) -> bool {
        if self.never.contains(&i) {
            return false;
        }
        match self.per_tool.get(i) {
            None => true,
            Some(need) if need.is_empty() => true,
            Some(need) => caller.is_some_and(|c| need.iter().all(|s| c.has_scope(s))),
        }
    }
}
