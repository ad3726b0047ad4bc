//! The child environment (EXEC-8, EXEC-9): what every spawned process inherits.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The floor of the scrub set (PROV-16): the credential variables the providers this crate ships declare
/// (`llm::anthropic::CREDENTIALS`, `llm::openai::CREDENTIALS`; a unit test keeps this list their union). Every child
/// gets at least this, even one a host starts through [`ChildEnv::new`] without a harness; the harness adds every
/// registered provider's, source's and host-named credential.
pub const PROVIDER_CREDENTIALS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_WEBHOOK_SIGNING_KEY",
    "ANTHROPIC_CUSTOM_HEADERS",
    // The openai provider's key (crate::llm::openai::CREDENTIALS), scrubbed whenever the provider is compiled in.
    #[cfg(feature = "openai")]
    "OPENAI_API_KEY",
];

/// The credential variables of the `nats` feature (EXEC-18): the names the NATS tools read a user, password,
/// token, nkey seed or credentials file from. No child ever gets them, whether or not this process connects to
/// NATS: a NATS credential in the agent's environment is the operator's, never a tool's.
#[cfg(feature = "nats")]
pub const NATS_CREDENTIALS: &[&str] = &["NATS_USER", "NATS_PASSWORD", "NATS_TOKEN", "NATS_NKEY", "NATS_CREDS"];

/// The environment and working directory of child processes (EXEC-8, EXEC-9).
///
/// The child inherits this process's environment minus every credential variable (at least
/// [`PROVIDER_CREDENTIALS`] and, with the `nats` feature, `NATS_CREDENTIALS`), plus `LLMFORMAT=1`.
///
/// ```
/// use fisk_ai::exec::ChildEnv;
///
/// let env = ChildEnv::new().with_scrubbed("GITHUB_TOKEN");
/// assert!(env.scrubbed().any(|n| n == "ANTHROPIC_API_KEY"));
/// assert!(env.scrubbed().any(|n| n == "GITHUB_TOKEN"));
/// ```
#[derive(Debug, Clone)]
pub struct ChildEnv {
    scrub: Arc<[String]>,
    working_dir: Option<PathBuf>,
}

impl Default for ChildEnv {
    fn default() -> Self {
        let floor = PROVIDER_CREDENTIALS.iter();
        #[cfg(feature = "nats")]
        let floor = floor.chain(NATS_CREDENTIALS);
        ChildEnv { scrub: floor.map(|s| (*s).to_owned()).collect(), working_dir: None }
    }
}

impl ChildEnv {
    /// Scrub the provider credentials; run in the process working directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also remove the variable `name` (an operator-named credential, MCPI-4).
    #[must_use]
    pub fn with_scrubbed(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        if !self.scrub.contains(&name) {
            let mut v = self.scrub.to_vec();
            v.push(name);
            self.scrub = v.into();
        }
        self
    }

    /// Run command tools in `dir`, with `PWD` set to it (EXEC-9). Introspection ignores this (TOOL-2).
    #[must_use]
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// The variable names removed from the child environment.
    pub fn scrubbed(&self) -> impl Iterator<Item = &str> {
        self.scrub.iter().map(String::as_str)
    }

    /// The tool working directory, if set.
    pub fn working_dir(&self) -> Option<&Path> {
        self.working_dir.as_deref()
    }

    /// The scrub set grown by `names` (the credentials sources and providers declare).
    #[must_use]
    pub fn with_scrubbed_all<I, S>(self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        names.into_iter().fold(self, |env, n| env.with_scrubbed(n))
    }

    /// This environment with `other`'s scrub set added, and `other`'s working directory when this one has none.
    #[must_use]
    pub fn merged(&self, other: &ChildEnv) -> Self {
        let mut env = self.clone().with_scrubbed_all(other.scrubbed().map(str::to_owned));
        if env.working_dir.is_none() {
            env.working_dir.clone_from(&other.working_dir);
        }
        env
    }

    /// Remove every scrubbed name from `cmd`'s environment, and, with `use_working_dir`, run it in the working
    /// directory with `PWD` set to it.
    pub(crate) fn apply(&self, cmd: &mut std::process::Command, use_working_dir: bool) {
        for name in self.scrub.iter() {
            cmd.env_remove(name);
        }
        if use_working_dir && let Some(dir) = &self.working_dir {
            cmd.current_dir(dir).env("PWD", dir);
        }
    }
}
