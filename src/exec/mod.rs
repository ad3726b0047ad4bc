//! The shared process runner: every child the crate starts (command tools, introspection, stdio MCP servers) gets
//! its environment, process group and output bounds from here.
//!
//! - [`ChildEnv`]: the inherited environment minus every credential variable of every attached provider and
//!   source (EXEC-8), and the tool working directory (EXEC-9).
//! - Each child leads its own process group, killed on cancellation, timeout and drop (EXEC-10).
//! - No descendant outlives its call (EXEC-17): on Linux this process becomes a child subreaper when it starts its
//!   first child, marks each child's environment with [`CALL_MARKER`], and when a call, a stdio MCP server or an
//!   introspection run ends, kills every remaining descendant of that child, in its group or not. A host embedding
//!   the crate therefore gets the orphans of its own children reparented to it (see below).
//! - Captured output is bounded in memory: head and tail around a marker (EXEC-12).
//!
//! ```
//! use fisk_ai::exec::ChildEnv;
//!
//! let env = ChildEnv::new().with_scrubbed("GITHUB_TOKEN");
//! assert!(env.scrubbed().any(|n| n == "GITHUB_TOKEN"));
//! ```
//!
//! # Descendants: what a host embedding the crate gets (EXEC-17)
//!
//! Being a subreaper is process-wide: orphans of the host's own children are reparented to the host too (they used
//! to go to init). The crate ends and reaps only what it can attribute to a call; a host that starts processes of
//! its own which orphan theirs should reap them (by pid), or zombies accumulate.
//!
//! After a call whose child exited normally, what may remain (a daemon that left the group and closed its output)
//! is looked for off the call's path: the calls that end within 10 ms of each other are checked against one read
//! of `/proc` by a blocking task of the caller's runtime (dropping the runtime waits for it), so such a daemon is
//! killed about 10 ms after its call's end, later if a batch is already being checked.
//!
//! # Descendants: what cannot be caught without a cgroup per call
//!
//! Without a cgroup per call (what `harness.sandbox.limits.processes` or `memory` sets up where it can: see
//! [`sandbox`](crate::sandbox)) a descendant is attributed to its call by ancestry and by the
//! [`CALL_MARKER`] it inherited, so:
//!
//! - A double fork that also clears or rewrites its environment (`env -i`, or overwriting its own environ memory)
//!   and whose middle process exits before the sweep walks `/proc` is reparented to this process with nothing tying it to the
//!   call: it survives. So does a process that moves to another uid (setuid), whose environment this process
//!   cannot read.
//! - A descendant that left the group and exits on its own before the sweep stays a zombie of this process (a
//!   zombie's environment cannot be read), until the host reaps it.
//! - A process stuck in uninterruptible sleep dies (and is reaped) when it wakes; reaping waits for it up to
//!   10 seconds in the background.
//! - Signalling by pid has the usual race with pid reuse for a descendant that exits and is reaped by its own
//!   parent between the `/proc` walk and the signal; orphans parented to this process cannot be reused before we reap them.
//!
//! Elsewhere than Linux there is no subreaper and no `/proc` walk: only the group kill of EXEC-10.

mod descendants;
mod env;
mod process;

pub use descendants::CALL_MARKER;
pub(crate) use env::ChildKind;
#[cfg(feature = "nats")]
pub use env::NATS_CREDENTIALS;
pub use env::{CORE_VARIABLES, ChildEnv, EnvPolicy, Inherit, PROVIDER_CREDENTIALS};
#[doc(hidden)]
pub use process::captured_output;
pub(crate) use process::{Capture, RunError, into_text, run};
// The MCP import's stdio child and its result capping share them.
#[cfg(feature = "mcp")]
pub(crate) use descendants::Sweep;
#[cfg(feature = "mcp")]
pub(crate) use descendants::settle;
#[cfg(feature = "mcp")]
pub(crate) use descendants::{Descendants, Marker};
#[cfg(feature = "mcp")]
pub(crate) use process::{HeadTail, TRUNCATION_MARKER};
// Both imports cap what a server sent as EXEC-12 caps a command's output.
#[cfg(any(feature = "mcp", feature = "nats"))]
pub(crate) use process::OUTPUT_CAP;
