//! [`ClapSource`]: a clap CLI's tools, loaded without spawning it (CLAP-4).

use super::tags::Tags;
use crate::error::Result;
use crate::exec::ChildEnv;
use crate::source::fisk::FiskApp;
use crate::source::{LoadContext, Loaded, ToolSource};
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A clap CLI as a [`ToolSource`]: the document is rendered in process from the `Command` value
/// ([`introspection_with_tags`](super::introspection_with_tags)), so loading never starts the binary; each call
/// runs `binary <path> <flags> -- <positionals>` through the same hardened runner as a [`FiskApp`]'s tools (own
/// process group, scrubbed environment, bounded output, the sandbox).
///
/// The `Command` must be the one the binary parses with (share the function that builds it), or the schemas
/// describe a different CLI from the one that runs.
///
/// ```
/// use clap::{Arg, ArgAction, Command};
/// use fisk_ai::clap::{ClapSource, Tags};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let cli = Command::new("backup")
///     .arg(Arg::new("verbose").long("verbose").global(true).action(ArgAction::SetTrue))
///     .subcommand(Command::new("list").about("List backups"))
///     .subcommand(Command::new("prune").about("Delete old backups"));
/// let source = ClapSource::new(cli, "/usr/local/bin/backup")
///     .with_tags(Tags::new().tag("prune", ["ai:confirm"]))
///     .with_global_flags(["verbose"]);
/// let loaded = source.tools().unwrap();
/// let names: Vec<&str> = loaded.tools.iter().map(|t| t.spec().name()).collect();
/// assert_eq!(names, ["list", "prune"]);
/// assert!(loaded.tools[1].spec().tags().iter().any(|t| t == "ai:confirm"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ClapSource {
    command: Arc<::clap::Command>,
    tags: Tags,
    app: FiskApp,
    env: ChildEnv,
}

impl ClapSource {
    /// The CLI `command` describes, run as `binary` (a path, or a name looked up on `PATH`), untagged and exposing
    /// no global flag.
    pub fn new(command: ::clap::Command, binary: impl Into<PathBuf>) -> Self {
        ClapSource { command: Arc::new(command), tags: Tags::new(), app: FiskApp::new(binary), env: ChildEnv::new() }
    }

    /// The tag table; a path it names that the tree lacks fails [`load`](ToolSource::load) (CLAP-3).
    #[must_use]
    pub fn with_tags(mut self, tags: Tags) -> Self {
        self.tags = tags;
        self
    }

    /// Allow the model to set these global arguments of the root (as [`FiskApp::with_global_flags`]).
    #[must_use]
    pub fn with_global_flags<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.app = self.app.with_global_flags(names);
        self
    }

    /// The child environment for tool calls (credential scrubbing, working directory).
    #[must_use]
    pub fn with_env(mut self, env: ChildEnv) -> Self {
        self.env = env;
        self
    }

    /// The binary calls run.
    pub fn binary(&self) -> &Path {
        self.app.binary()
    }

    /// The introspection document this source loads from (what the binary should print for `--fisk-introspect`).
    ///
    /// # Errors
    ///
    /// A configuration error when the tag table names a path the tree does not have.
    pub fn document(&self) -> Result<String> {
        super::introspection_with_tags(&self.command, &self.tags)
    }

    /// The tools, in this source's own environment ([`with_env`](Self::with_env)), without starting anything. The
    /// harness calls [`ToolSource::load`] instead, with the scrub set of every registered plug-in.
    ///
    /// # Errors
    ///
    /// A configuration error when the tag table names a path the tree does not have, or a global flag allowed by
    /// [`with_global_flags`](Self::with_global_flags) is not an exposable global of the tree.
    pub fn tools(&self) -> Result<Loaded> {
        self.tools_in(self.env.clone())
    }

    fn tools_in(&self, env: ChildEnv) -> Result<Loaded> {
        let document = self.document()?;
        self.app.clone().with_env(env).tools_from_vec(document.into_bytes())
    }
}

#[async_trait]
impl ToolSource for ClapSource {
    fn name(&self) -> &str {
        self.app.binary().to_str().unwrap_or("application")
    }

    /// The tools, every call running with the pipeline's scrub set added to this source's own environment.
    async fn load(&self, ctx: &LoadContext) -> Result<Loaded> {
        self.tools_in(self.env.merged(ctx.env()))
    }
}
