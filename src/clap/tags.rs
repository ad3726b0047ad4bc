//! The side table of tags (CLAP-3): clap has no tags, so the author names each command by its path and lists the
//! tags it carries (`ai:confirm`, `ai:deny`, `ai:no_defer`, any `key:value`).

use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// Tags for commands of a clap tree, keyed by command path (`"stream rm"`: the subcommand names below the root,
/// joined by single spaces).
///
/// A path the tree does not have is an error when the document is rendered
/// ([`introspection_with_tags`](super::introspection_with_tags)), naming the path: a misspelt `ai:deny` must never
/// leave a command silently exposed.
///
/// ```
/// use fisk_ai::clap::Tags;
///
/// let tags = Tags::new().tag("stream rm", ["ai:confirm"]).tag("stream  rm", ["impact:high"]).tag("debug", ["ai:deny"]);
/// assert_eq!(tags.get("stream rm"), ["ai:confirm", "impact:high"]);
/// assert!(tags.get("stream ls").is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags {
    by_path: BTreeMap<String, Vec<String>>,
}

impl Tags {
    /// An empty table.
    pub fn new() -> Self {
        Tags::default()
    }

    /// Add `tags` to the command at `path`. Whitespace in the path is normalised (`" stream  rm "` is
    /// `"stream rm"`); tags already given for the path are kept, in order, and a repeated tag is added once.
    #[must_use]
    pub fn tag<I, S>(mut self, path: &str, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let list = self.by_path.entry(normalize(path)).or_default();
        for tag in tags.into_iter().map(Into::into) {
            if !list.contains(&tag) {
                list.push(tag);
            }
        }
        self
    }

    /// The tags given for `path` (normalised as [`tag`](Tags::tag) does), empty when none were.
    pub fn get(&self, path: &str) -> &[String] {
        self.by_path.get(&normalize(path)).map_or(&[], Vec::as_slice)
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }

    /// CLAP-3: an error naming the first path of the table that is not one of `known`.
    pub(crate) fn check_paths(&self, root: &str, known: &[String]) -> Result<()> {
        let Some(unknown) = self.by_path.keys().find(|p| !known.contains(p)) else {
            return Ok(());
        };
        let shown: Vec<&str> = known.iter().map(String::as_str).take(20).collect();
        Err(Error::config(format!(
            "clap tags name the command \"{unknown}\", which {root} does not have (its commands: {}{})",
            if shown.is_empty() { "none".to_owned() } else { shown.join(", ") },
            if known.len() > shown.len() { ", ..." } else { "" }
        )))
    }
}

fn normalize(path: &str) -> String {
    path.split_whitespace().collect::<Vec<_>>().join(" ")
}
