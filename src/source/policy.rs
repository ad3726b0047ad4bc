//! What the assembly pipeline decides for each source, so no source has to (HARNESS-6): which of its tools are
//! kept, by the source's own names, and what a failure to load does to the build.
//!
//! The pipeline builds one [`SourcePolicy`] per source (from an `mcp_servers` entry's or a `remote_tools` host's
//! `include`/`exclude`, or as a host passed it to
//! [`HarnessBuilder::source_with`](crate::harness::HarnessBuilder::source_with)) and hands it to the source in the
//! [`LoadContext`](super::LoadContext). A source that lists its tools in pages asks
//! [`LoadContext::keeps`](super::LoadContext::keeps) per tool so what it drops is never held; the pipeline applies
//! the same rule to whatever a source returns, so a source that ignores it loses nothing but memory.

use crate::error::Result;
use crate::select::Rule;

/// What a source's failure to load does to the build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnFailure {
    /// The build stops at once with the source's error (the default for the application, MCP imports and host
    /// sources: MCPI-6, TOOL-7).
    Abort,
    /// The build goes on loading the other sources, then fails with every such error together, in order (the
    /// default for `remote_tools` hosts: IMPORT-7, docs/nats-wire.md §2).
    Report,
    /// The source contributes no tools and a [`Warning::SourceFailed`](crate::Warning::SourceFailed) says why; the
    /// build goes on. For a surface that must come up without an optional source.
    Warn,
}

/// Per-source rules the pipeline applies: `include` then `exclude` on the source's own tool names (before final
/// naming, IMPORT-5), and what a load failure does. Builders by value.
///
/// The rules match names only: tags are for the configuration's top-level `include`/`exclude`, which select over
/// every source at once (and imported tools carry none: IMPORT-3, MCPI-5).
///
/// ```
/// use fisk_ai::select::Rule;
/// use fisk_ai::source::{OnFailure, SourcePolicy};
///
/// let policy = SourcePolicy::new()
///     .include(Rule::tools(["^stream_"])?)
///     .exclude(Rule::tools(["_rm$"])?)
///     .on_failure(OnFailure::Warn);
/// assert!(policy.keeps("stream_ls"));
/// assert!(!policy.keeps("stream_rm"));
/// assert!(!policy.keeps("kv_get"));
/// # Ok::<(), fisk_ai::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct SourcePolicy {
    include: Option<Rule>,
    exclude: Option<Rule>,
    on_failure: Option<OnFailure>,
    pins: Option<(String, crate::config::PinMode)>,
}

impl SourcePolicy {
    /// Keep every tool; the surface's failure policy.
    pub fn new() -> Self {
        SourcePolicy::default()
    }

    /// The policy of a configured import (`mcp_servers[i]`, `remote_tools[i]`, whose key is `key`): only the
    /// `tools` patterns of its filters count, and a filter of tags alone is no filter (IMPORT-3, MCPI-5: validation
    /// warns about it).
    ///
    /// # Errors
    ///
    /// A configuration error naming `key.include` or `key.exclude` for a pattern that is not a valid regex.
    pub fn from_filters(
        key: &str,
        include: Option<&crate::config::Filter>,
        exclude: Option<&crate::config::Filter>,
    ) -> Result<Self> {
        let rule = |which: &str, filter: Option<&crate::config::Filter>| {
            (filter.filter(|f| !f.tools.is_empty()))
                .map(|f| Rule::from_filter(&format!("{key}.{which}"), f))
                .transpose()
        };
        Ok(SourcePolicy {
            include: rule("include", include)?,
            exclude: rule("exclude", exclude)?,
            on_failure: None,
            pins: None,
        })
    }

    /// Keep only tools whose names match `rule` (an empty rule keeps every tool).
    #[must_use]
    pub fn include(mut self, rule: Rule) -> Self {
        self.include = Some(rule);
        self
    }

    /// Then drop tools whose names match `rule`.
    #[must_use]
    pub fn exclude(mut self, rule: Rule) -> Self {
        self.exclude = Some(rule);
        self
    }

    /// What a load failure does, instead of the surface's choice
    /// ([`HarnessBuilder::on_source_failure`](crate::harness::HarnessBuilder::on_source_failure)).
    #[must_use]
    pub fn on_failure(mut self, on_failure: OnFailure) -> Self {
        self.on_failure = Some(on_failure);
        self
    }

    /// Whether a tool the source names `name` survives `include` (when set, and not empty) then `exclude`.
    pub fn keeps(&self, name: &str) -> bool {
        let matches = |r: Option<&Rule>| r.filter(|r| !r.is_empty()).map(|r| r.matches_name(name));
        matches(self.include.as_ref()).unwrap_or(true) && !matches(self.exclude.as_ref()).unwrap_or(false)
    }

    /// Whether any filter is set (no filter keeps every tool without a look).
    pub fn filters(&self) -> bool {
        [&self.include, &self.exclude].into_iter().flatten().any(|r| !r.is_empty())
    }

    /// The failure policy set on this source, if any.
    pub fn failure(&self) -> Option<OnFailure> {
        self.on_failure
    }

    /// Pin this source's tools under `server` (PIN-1..4, [`pins`](crate::source::pins)): the harness fingerprints
    /// them the first time, then holds every later load to those pins under `mode`. A pin check that fails is
    /// this source's load failure under `refuse` and a warning under `warn`.
    ///
    /// `server` is the key the pins are stored under (ASCII letters, digits, `_`, `-` and inner `.`); the
    /// configured imports use `mcp_servers.<name>` and `remote_tools.<name>`.
    #[must_use]
    pub fn pinned(mut self, server: impl Into<String>, mode: crate::config::PinMode) -> Self {
        self.pins = Some((server.into(), mode));
        self
    }

    /// The pin key and mode set on this source, if any.
    pub fn pins(&self) -> Option<(&str, crate::config::PinMode)> {
        self.pins.as_ref().map(|(key, mode)| (key.as_str(), *mode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Filter;

    fn filter(tools: &[&str], tags: &[&str]) -> Filter {
        Filter::new(tools.iter().copied(), tags.iter().copied())
    }

    #[test]
    fn harness_6_import_filters_match_names_and_a_tags_only_include_keeps_everything() {
        let include = filter(&[], &["ai:read_only"]);
        let policy = SourcePolicy::from_filters("mcp_servers[0]", Some(&include), None).unwrap();
        assert!(!policy.filters());
        assert!(policy.keeps("anything"));

        let (include, exclude) = (filter(&["^kv_"], &[]), filter(&["_del$"], &[]));
        let policy = SourcePolicy::from_filters("remote_tools[1]", Some(&include), Some(&exclude)).unwrap();
        assert!(policy.filters());
        assert!(policy.keeps("kv_get"));
        assert!(!policy.keeps("kv_del"));
        assert!(!policy.keeps("stream_ls"));
    }

    #[test]
    fn harness_6_a_bad_pattern_names_its_key() {
        let bad = filter(&["("], &[]);
        let e = SourcePolicy::from_filters("mcp_servers[2]", None, Some(&bad)).unwrap_err();
        assert!(e.to_string().contains("mcp_servers[2].exclude"), "{e}");
    }
}
