//! Command tags and the reserved `ai:` vocabulary (SPEC section 3).

use std::fmt;

/// `ai:deny`: never exposed to any model or client (TAG-2).
pub const DENY: &str = "ai:deny";
/// `ai:no_defer`: always sent to the model directly, never deferred behind tool search (TAG-3).
pub const NO_DEFER: &str = "ai:no_defer";
/// `ai:confirm`: operator approval before every run (TAG-4).
pub const CONFIRM: &str = "ai:confirm";
/// `ai:read_only`: a behavior tag (TAG-5).
pub const READ_ONLY: &str = "ai:read_only";
/// `ai:destructive`: a behavior tag (TAG-5).
pub const DESTRUCTIVE: &str = "ai:destructive";
/// `ai:additive`: a behavior tag (TAG-5).
pub const ADDITIVE: &str = "ai:additive";
/// `ai:idempotent`: a behavior tag (TAG-5).
pub const IDEMPOTENT: &str = "ai:idempotent";

/// `ai:progress`: a running call's progress reports may quote its last output line (PROG-2). Off without the tag,
/// since a command's output may carry secrets.
pub const PROGRESS: &str = "ai:progress";

/// `ai:sandbox=readonly`: the command's process may write nowhere but `/dev/null`, whatever the operator's
/// `harness.sandbox.fs.write` allows (SBX-7). Confinement tags only narrow; behaviour tags never confine.
pub const SANDBOX_READONLY: &str = "ai:sandbox=readonly";
/// `ai:net=none`: the command's process may open no socket (SBX-7).
pub const NET_NONE: &str = "ai:net=none";
/// `ai:net=loopback`: the command needs at most loopback: its process reaches only the confinement's own loopback
/// (a network namespace holding only `lo`), and no Unix socket (SBX-3, SBX-7). Under `network: none` it stays
/// `none`, since a tag may only narrow.
pub const NET_LOOPBACK: &str = "ai:net=loopback";

/// Every reserved `ai:` tag; any other `ai:` tag is unknown (TAG-6).
pub const RESERVED: [&str; 11] = [
    DENY,
    NO_DEFER,
    CONFIRM,
    READ_ONLY,
    DESTRUCTIVE,
    ADDITIVE,
    IDEMPOTENT,
    PROGRESS,
    SANDBOX_READONLY,
    NET_NONE,
    NET_LOOPBACK,
];

/// The tags of a tool, in the application's declared order.
///
/// Only command tools carry tags (TAG-1); every other tool has an empty set.
///
/// ```
/// use fisk_ai::tool::Tags;
///
/// let tags = Tags::new(["impact:rw", "ai:confirm"]);
/// assert!(tags.contains("ai:confirm"));
/// assert_eq!(tags.to_string(), "impact:rw, ai:confirm");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Tags(Vec<String>);

impl Tags {
    /// Tags from any list of strings, keeping their order.
    pub fn new<I, S>(tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Tags(tags.into_iter().map(Into::into).collect())
    }

    /// Whether `tag` is present (exact string equality).
    pub fn contains(&self, tag: &str) -> bool {
        self.0.iter().any(|t| t == tag)
    }

    /// Whether there are no tags.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of tags.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The tags in declared order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// The tags as a slice.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// `ai:` tags that are not reserved (TAG-6), in declared order. The prefix is matched case-insensitively so
    /// that `AI:deny`, which denies nothing, is reported too.
    pub fn unknown_ai_tags(&self) -> impl Iterator<Item = &str> {
        self.iter().filter(|t| t.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("ai:")) && !RESERVED.contains(t))
    }

    /// Behavior tags that contradict each other (TAG-7): `ai:read_only` with `ai:destructive` or `ai:additive`,
    /// or `ai:destructive` with `ai:additive`. Empty when consistent.
    pub fn behavior_conflicts(&self) -> Vec<String> {
        let ro = self.contains(READ_ONLY);
        let de = self.contains(DESTRUCTIVE);
        let ad = self.contains(ADDITIVE);
        if (ro && (de || ad)) || (de && ad) {
            self.iter().filter(|t| [READ_ONLY, DESTRUCTIVE, ADDITIVE].contains(t)).map(str::to_owned).collect()
        } else {
            Vec::new()
        }
    }
}

impl fmt::Display for Tags {
    /// The tags joined by `, ` (the form of the TAGS column and the `Tags:` line).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(t)?;
        }
        Ok(())
    }
}

impl<S: Into<String>> FromIterator<S> for Tags {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Tags::new(iter)
    }
}
