//! Where tools come from.
//!
//! A [`ToolSource`] loads a list of tools once, at agent build time. The crate ships [`fisk::FiskApp`] (the wrapped
//! application's leaf commands), with the `mcp` feature `mcp::McpImport` (an MCP server's tools) and, with the
//! `nats` feature, `remote::RemoteAgent` (another agent's tools over NATS); hosts can add their own sources.

#[cfg(any(feature = "mcp", feature = "nats"))]
pub(crate) mod bound;
#[cfg(any(feature = "mcp", feature = "nats"))]
pub(crate) mod clean;
pub mod fisk;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod pins;
mod policy;
#[cfg(feature = "nats")]
pub mod remote;

pub use policy::{OnFailure, SourcePolicy};

use crate::error::{Error, Result};
use crate::exec::ChildEnv;
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
/// The tags on each tool's [`ToolSpec`](crate::tool::ToolSpec) are honoured whatever the source (GATE-18): a tool
/// tagged `ai:deny` is stripped, and one tagged `ai:confirm` or with any `harness.confirm_tags` entry is gated
/// before it runs, on every surface. A source whose tools cannot carry tags says so (MCP imports and remote agents:
/// their protocols carry none, so gate them with the entry's `confirm` instead).
///
/// ```
/// use async_trait::async_trait;
/// use fisk_ai::source::{LoadContext, Loaded, ToolSource};
/// use fisk_ai::tool::Origin;
/// use std::time::Duration;
///
/// /// A source that asks a program which tools exist, through the context's hardened runner (its own process
/// /// group, the scrubbed environment, bounded output, a timeout).
/// struct Inventory;
///
/// #[async_trait]
/// impl ToolSource for Inventory {
///     fn name(&self) -> &str {
///         "inventory"
///     }
///
///     async fn load(&self, ctx: &LoadContext) -> fisk_ai::Result<Loaded> {
///         let listed = ctx.run("/bin/sh", &["-c".into(), "echo none".into()], Duration::from_secs(5)).await?;
///         assert_eq!(listed.output.trim(), "none");
///         Ok(Loaded::default()) // build a Tool per line of listed.output here
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// assert!(Inventory.load(&LoadContext::default()).await.unwrap().tools.is_empty());
/// assert_eq!(Inventory.origin(), Origin::Local);
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

    /// Credential variable names this source owns (a bearer token variable, say). The assembly pipeline scrubs
    /// them, with every provider's, from every child process it starts, introspection included (EXEC-8). None by
    /// default.
    fn credentials(&self) -> Vec<String> {
        Vec::new()
    }

    /// Load the tools, once per harness. `ctx` carries the child environment (the scrub set of every registered
    /// provider and source, fixed before the first source loads) and a hardened process runner
    /// ([`LoadContext::run`]); a source that starts processes must use them. It also carries the pipeline's
    /// [`SourcePolicy`] for this source ([`LoadContext::keeps`]). What an error does to the build is the policy's
    /// [`OnFailure`], never the source's choice.
    async fn load(&self, ctx: &LoadContext) -> Result<Loaded>;
}

/// What the assembly pipeline hands every source at load time: the child environment, and a process runner that
/// applies it. [`LoadContext::default`] scrubs the credentials of every provider this build compiles in.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LoadContext {
    env: ChildEnv,
    policy: SourcePolicy,
}

/// What a process run through [`LoadContext::run`] left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcessOutput {
    /// The exit code (128 + the signal number for a child killed by one).
    pub exit_code: i32,
    /// Standard output and error merged in arrival order, bounded as a command's output is (EXEC-12), lossily
    /// decoded.
    pub output: String,
    /// Whether the middle of the output was cut.
    pub truncated: bool,
}

impl LoadContext {
    /// A context whose children get `env`.
    pub fn new(env: ChildEnv) -> Self {
        LoadContext { env, policy: SourcePolicy::default() }
    }

    /// The same context with `policy` for the source it is handed to.
    #[must_use]
    pub fn with_policy(mut self, policy: SourcePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The environment of every child process a source starts.
    pub fn env(&self) -> &ChildEnv {
        &self.env
    }

    /// The pipeline's rules for this source.
    pub fn policy(&self) -> &SourcePolicy {
        &self.policy
    }

    /// Whether the pipeline keeps a tool this source names `name` ([`SourcePolicy::keeps`]). A source that lists
    /// many tools asks before building each, so what is dropped is never held; the pipeline filters what a source
    /// returns either way.
    pub fn keeps(&self, name: &str) -> bool {
        self.policy.keeps(name)
    }

    /// Run `program` with `args` the way the crate runs its own children: no shell, stdin closed, the scrubbed
    /// environment, its own process group (killed when it times out), output merged and bounded in memory however
    /// much it writes; when it ends, however it ends, every descendant still running is killed, in its group or
    /// not (EXEC-17, see [`crate::exec`]).
    ///
    /// ```no_run
    /// use fisk_ai::source::LoadContext;
    /// use std::time::Duration;
    ///
    /// # async fn demo() -> fisk_ai::Result<()> {
    /// let ctx = LoadContext::default();
    /// let listed = ctx.run("/usr/local/bin/inventory", &["--list".to_owned()], Duration::from_secs(10)).await?;
    /// assert_eq!(listed.exit_code, 0, "{}", listed.output);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// A source error naming the program when it cannot start, cannot be read, or does not finish within
    /// `timeout`.
    pub async fn run(
        &self,
        program: impl AsRef<std::path::Path>,
        args: &[String],
        timeout: std::time::Duration,
    ) -> Result<ProcessOutput> {
        use crate::exec::{Capture, RunError};
        let program = program.as_ref();
        let ctx = crate::tool::CallContext::new().with_timeout(timeout);
        let shown = program.display();
        match crate::exec::run(program, args, &self.env, crate::exec::ChildKind::Introspection, Capture::HeadTail, &ctx)
            .await
        {
            Ok(done) => Ok(ProcessOutput {
                exit_code: done.exit_code,
                output: crate::exec::into_text(done.output),
                truncated: done.truncated,
            }),
            Err(RunError::Spawn(e)) => Err(Error::source_failed(format!("cannot start {shown}: {e}"))),
            Err(RunError::Io(e)) => Err(Error::source_failed(format!("cannot read the output of {shown}: {e}"))),
            Err(RunError::TimedOut(t)) => Err(Error::source_failed(format!(
                "{shown} did not finish within {}",
                crate::config::format_duration(t)
            ))),
            Err(RunError::Cancelled) => Err(Error::source_failed(format!("{shown} was cancelled"))),
            Err(RunError::TooLarge(n)) => Err(Error::source_failed(format!("{shown} wrote more than {n} bytes"))),
        }
    }
}

/// OVR-6: a directory option, when set, must be an absolute path to an existing directory.
pub(crate) fn checked_dir<'a>(what: &str, dir: Option<&'a std::path::Path>) -> Result<Option<&'a std::path::Path>> {
    match dir {
        Some(d) if !d.is_absolute() || !d.is_dir() => Err(crate::error::Error::config(format!(
            "the {what} {} must be an absolute path to an existing directory",
            d.display()
        ))),
        other => Ok(other),
    }
}
