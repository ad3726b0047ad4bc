//! Questions for the operator (SPEC OVR-3, section 11): the [`Prompter`] the `ask_human_*` tools use.
//!
//! Deny by default: when nobody can be asked, or the prompt is interrupted, ends, or fails, the answer is a
//! negative outcome with a reason, never a guess and never a hang (HITL-7).

mod hitl;
#[cfg(feature = "terminal")]
#[cfg_attr(docsrs, doc(cfg(feature = "terminal")))]
mod terminal;

pub use hitl::{HITL_MAX_OPTIONS, HITL_TEXT_LIMIT, hitl_note, hitl_tools};
#[cfg(feature = "terminal")]
pub use terminal::TerminalPrompter;

use async_trait::async_trait;

/// An operator's answer, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer<T> {
    /// The operator answered.
    Given(T),
    /// Nobody can be asked (no interactive terminal, serving over MCP).
    Unavailable,
    /// The prompt was interrupted or hit end of input.
    Interrupted,
    /// The prompt failed.
    Failed(String),
}

/// Asks the operator questions.
///
/// ```
/// use fisk_ai::async_trait;
/// use fisk_ai::operator::{Answer, Prompter};
///
/// /// Answers from a script, e.g. in tests or a non-interactive pipeline.
/// struct Canned;
///
/// #[async_trait]
/// impl Prompter for Canned {
///     fn can_ask(&self) -> bool {
///         true
///     }
///     async fn confirm(&self, _question: &str) -> Answer<bool> {
///         Answer::Given(false)
///     }
///     async fn select(&self, _question: &str, options: &[String]) -> Answer<usize> {
///         if options.is_empty() { Answer::Failed("no options".into()) } else { Answer::Given(0) }
///     }
///     async fn input(&self, _question: &str, default: Option<&str>) -> Answer<String> {
///         Answer::Given(default.unwrap_or_default().to_owned())
///     }
/// }
/// # let _ = Canned;
/// ```
#[async_trait]
pub trait Prompter: Send + Sync {
    /// Whether an operator can be asked at all.
    fn can_ask(&self) -> bool;

    /// A yes/no question; the prompt defaults to no.
    async fn confirm(&self, question: &str) -> Answer<bool>;

    /// One choice from `options` (the index); no default choice.
    async fn select(&self, question: &str, options: &[String]) -> Answer<usize>;

    /// A free-text value, offering `default`; an empty string is a valid answer.
    async fn input(&self, question: &str, default: Option<&str>) -> Answer<String>;
}

/// A prompter that can reach nobody: every question is [`Answer::Unavailable`]. Used when serving (MCP-20) and as
/// the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoOperator;

#[async_trait]
impl Prompter for NoOperator {
    fn can_ask(&self) -> bool {
        false
    }

    async fn confirm(&self, _question: &str) -> Answer<bool> {
        Answer::Unavailable
    }

    async fn select(&self, _question: &str, _options: &[String]) -> Answer<usize> {
        Answer::Unavailable
    }

    async fn input(&self, _question: &str, _default: Option<&str>) -> Answer<String> {
        Answer::Unavailable
    }
}
