//! The provider-neutral conversation model (PROV-1, PROV-2) and the [`ModelProvider`] seam.
//!
//! A conversation is a list of [`Message`]s; each holds [`Block`]s. Anything a provider returns that the neutral
//! model does not name (a server tool call, a tool-search result, redacted thinking) travels as
//! [`Block::Provider`] with its raw JSON, and goes back to the provider byte for byte on the next turn.

#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub mod anthropic;
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub mod openai;
mod plan;
mod script;
mod scripted;
pub(crate) mod spans;

pub use plan::{TOOL_SEARCH_THRESHOLD, ToolPlan};

pub use script::{ScriptedFactory, load_script};
pub use scripted::{RecordedRequest, ScriptedProvider};

mod delta;
mod error;
#[cfg(any(feature = "anthropic", feature = "openai"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "anthropic", feature = "openai"))))]
pub mod http;
mod message;
mod observe;
mod output;
mod provider;
mod registry;
#[cfg(any(feature = "anthropic", feature = "openai"))]
pub(crate) mod schema;

pub use delta::{Delta, DeltaSink};
pub use error::{ProviderError, ProviderErrorKind};
pub use message::{Block, Message, Role, StopReason, Usage};
pub use observe::{WireError, WireObserver, WireRequest, WireResponse, WireRetry};
pub use output::{FINAL_ANSWER_TOOL, OutputSchema};
pub use provider::{CacheMode, Caps, ModelProvider, Request, Response};
pub use registry::{ProviderFactory, ProviderRegistry, ProviderSettings};
mod pricing;
pub use pricing::{Cost, PriceTable, Pricing};
