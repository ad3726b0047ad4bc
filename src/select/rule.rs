use crate::config::Filter;
use crate::error::{Error, Result};
use crate::tool::ToolSpec;
use regex::Regex;

/// One `include` or `exclude` rule: name patterns and exact tags (SEL-5..9).
///
/// A tool matches when any pattern matches its final name anywhere (unanchored search, SEL-6) or any tag entry
/// equals one of its tags; the entry `""` matches a tool with no tags (SEL-7).
///
/// ```
/// use fisk_ai::select::Rule;
///
/// let rule = Rule::new(["^auth_user"], ["scope:system", ""]).unwrap();
/// assert!(!rule.is_empty());
/// assert!(Rule::new(["("], [] as [&str; 0]).unwrap_err().to_string().contains("\"(\""));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Rule {
    tools: Vec<Regex>,
    tags: Vec<String>,
}

impl Rule {
    /// A rule from name patterns and tags. An invalid pattern is an error naming it.
    ///
    /// # Errors
    ///
    /// A configuration error naming the pattern when one does not compile.
    pub fn new<P, T>(patterns: P, tags: T) -> Result<Self>
    where
        P: IntoIterator,
        P::Item: AsRef<str>,
        T: IntoIterator,
        T::Item: Into<String>,
    {
        Self::build("rule", patterns, tags)
    }

    /// A rule from a configuration filter (`include`, `exclude`, or one half of `expose.agent.tools`); `key` names
    /// it in errors.
    ///
    /// # Errors
    ///
    /// A configuration error naming `key` and the pattern when one does not compile.
    pub fn from_filter(key: &str, filter: &Filter) -> Result<Self> {
        Self::build(key, &filter.tools, filter.tags.iter().cloned())
    }

    /// A rule matching tool names only.
    ///
    /// # Errors
    ///
    /// A configuration error naming the pattern when one does not compile.
    pub fn tools<P>(patterns: P) -> Result<Self>
    where
        P: IntoIterator,
        P::Item: AsRef<str>,
    {
        Self::build("rule", patterns, std::iter::empty::<String>())
    }

    /// A rule matching exact tags only (`""` matches untagged tools).
    pub fn tags<T>(tags: T) -> Self
    where
        T: IntoIterator,
        T::Item: Into<String>,
    {
        Rule { tools: Vec::new(), tags: tags.into_iter().map(Into::into).collect() }
    }

    fn build<P, T>(key: &str, patterns: P, tags: T) -> Result<Self>
    where
        P: IntoIterator,
        P::Item: AsRef<str>,
        T: IntoIterator,
        T::Item: Into<String>,
    {
        let tools = patterns
            .into_iter()
            .map(|p| {
                let p = p.as_ref();
                crate::config::check_pattern(p)
                    .and_then(|()| Regex::new(p).map_err(|e| e.to_string()))
                    .map_err(|e| Error::config_key(format!("{key}.tools"), format!("{key}.tools: {e}")))
            })
            .collect::<Result<_>>()?;
        Ok(Rule { tools, tags: tags.into_iter().map(Into::into).collect() })
    }

    /// Whether the rule has no entries (and is then ignored).
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.tags.is_empty()
    }

    /// Whether a tool named `name` matches the rule's name patterns; tags play no part. Used for imported tools,
    /// which carry no tags (MCPI-6, IMPORT-2).
    pub fn matches_name(&self, name: &str) -> bool {
        self.tools.iter().any(|r| r.is_match(name))
    }

    /// Whether `spec` matches.
    pub fn matches(&self, spec: &ToolSpec) -> bool {
        let tags = spec.tags();
        self.tools.iter().any(|r| r.is_match(spec.name()))
            || self.tags.iter().any(|t| if t.is_empty() { tags.is_empty() } else { tags.contains(t) })
    }
}
