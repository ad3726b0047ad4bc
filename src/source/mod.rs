//! Where tools come from.
//!
//! A [`ToolSource`] loads a list of tools once, at agent build time. The crate ships [`fisk::FiskApp`] (the wrapped
//! application's leaf commands); hosts can add their own sources.

pub mod fisk;

use crate::Result;
use crate::tool::{Origin, Tool};
use crate::warning::Warning;
use async_trait::async_trait;
use std::sync::Arc;

/// Tools a source loaded, with the warnings loading produced.
#[derive(Default)]
#[non_exhaustive]
pub struct Loaded {
    /// The tools, in the source's order.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Warnings for the operator (unknown `ai:` tags, derived schemas, ...).
    pub warnings: Vec<Warning>,
}

impl Loaded {
    /// Tools without warnings.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Loaded { tools, warnings: Vec::new() }
    }

    /// Add warnings.
    #[must_use]
    pub fn with_warnings(mut self, warnings: Vec<Warning>) -> Self {
        self.warnings.extend(warnings);
        self
    }
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("tools", &self.tools.iter().map(|t| t.spec().name()).collect::<Vec<_>>())
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// A provider of tools, loaded once per agent build.
///
/// ```
/// use async_trait::async_trait;
/// use fisk_ai::source::{Loaded, ToolSource};
/// use fisk_ai::tool::Origin;
///
/// /// A source with no tools, e.g. while a feature flag is off.
/// struct Nothing;
///
/// #[async_trait]
/// impl ToolSource for Nothing {
///     fn name(&self) -> &str {
///         "nothing"
///     }
///
///     async fn load(&self) -> fisk_ai::Result<Loaded> {
///         Ok(Loaded::default())
///     }
/// }
///
/// # futures::executor::block_on(async {
/// assert!(Nothing.load().await.unwrap().tools.is_empty());
/// assert_eq!(Nothing.origin(), Origin::Local);
/// # });
/// ```
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// A name for errors and listings (the binary, the host, the server).
    fn name(&self) -> &str;

    /// Where the tools come from; `local` unless overridden.
    fn origin(&self) -> Origin {
        Origin::Local
    }

    /// Load the tools. An error fails the agent build.
    async fn load(&self) -> Result<Loaded>;
}
