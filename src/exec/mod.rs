//! The shared process runner: every child the crate starts (command tools, introspection, stdio MCP servers) gets
//! its environment, process group and output bounds from here.
//!
//! - [`ChildEnv`]: the inherited environment minus every credential variable of every attached provider and
//!   source (EXEC-8), and the tool working directory (EXEC-9).
//! - Each child leads its own process group, killed on cancellation, timeout and drop (EXEC-10).
//! - Captured output is bounded in memory: head and tail around a marker (EXEC-12).
//!
//! ```
//! use fisk_ai::exec::ChildEnv;
//!
//! let env = ChildEnv::new().with_scrubbed("GITHUB_TOKEN");
//! assert!(env.scrubbed().any(|n| n == "GITHUB_TOKEN"));
//! ```

mod env;
mod process;

pub use env::{ChildEnv, PROVIDER_CREDENTIALS};
#[doc(hidden)]
pub use process::captured_output;
pub(crate) use process::{Capture, RunError, into_text, run};
// The MCP import's stdio child and its result capping share them.
#[cfg(feature = "mcp")]
pub(crate) use process::{GroupGuard, HeadTail, TRUNCATION_MARKER};
// Both imports cap what a server sent as EXEC-12 caps a command's output.
#[cfg(any(feature = "mcp", feature = "nats"))]
pub(crate) use process::OUTPUT_CAP;
