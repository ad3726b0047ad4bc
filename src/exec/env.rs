//! The child environment (EXEC-8, EXEC-9): what every spawned process inherits.

use crate::error::{Error, Result};
use crate::sandbox::{CallGroup, Confinement, Narrowing};
use std::ffi::OsString;
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
    vars: Option<Arc<Vars>>,
    confinement: Option<Arc<Confinement>>,
}

/// The variables an [`EnvPolicy`] resolved to: with `clear`, the whole environment; else additions to the
/// inherited one.
#[derive(Debug)]
struct Vars {
    clear: bool,
    vars: Vec<(OsString, OsString)>,
}

/// Which kind of child a command is, which decides what of the [`ChildEnv`] it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildKind {
    /// A command tool: the working directory, the environment policy, the confinement narrowed by its tags.
    Tool(Narrowing),
    /// Introspection, or a program a source runs while loading: the policy, the read-only confinement.
    Introspection,
    /// A stdio MCP server: the policy and the full confinement, in the process working directory.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    Server,
    /// The operator's own policy hook: only the scrub (it is not a tool, and is not confined).
    Hook,
}

impl Default for ChildEnv {
    fn default() -> Self {
        let floor = PROVIDER_CREDENTIALS.iter();
        #[cfg(feature = "nats")]
        let floor = floor.chain(NATS_CREDENTIALS);
        ChildEnv { scrub: floor.map(|s| (*s).to_owned()).collect(), working_dir: None, vars: None, confinement: None }
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

    /// Build children's environments by `policy` (ENV-1), resolved now against this process's environment: a
    /// variable set later in this process does not reach children under `core` or `none`. The scrub set still
    /// applies on top, always.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::ErrorKind::Config) for an `include` pattern or `set` name that is not a
    /// variable name, a value holding a NUL, or `include` under `inherit: all` (where it would mean nothing).
    pub fn with_env_policy(mut self, policy: &EnvPolicy) -> Result<Self> {
        policy.check()?;
        let set = policy.set.iter().map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let vars = match policy.inherit {
            Inherit::All if policy.set.is_empty() => None,
            Inherit::All => Some(Vars { clear: false, vars: set.collect() }),
            Inherit::Core | Inherit::None => {
                let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
                    .filter(|(name, _)| name.to_str().is_some_and(|n| policy.passes(n)))
                    .filter(|(name, _)| !policy.set.iter().any(|(k, _)| name == k.as_str()))
                    .collect();
                vars.extend(set);
                vars.sort();
                Some(Vars { clear: true, vars })
            }
        };
        self.vars = vars.map(Arc::new);
        Ok(self)
    }

    /// Confine every child (SBX-1): command tools and stdio MCP servers with the profile, introspection with its
    /// read-only form.
    #[must_use]
    pub fn with_confinement(mut self, confinement: Arc<Confinement>) -> Self {
        self.confinement = Some(confinement);
        self
    }

    /// The confinement children get, if any.
    pub fn confinement(&self) -> Option<&Arc<Confinement>> {
        self.confinement.as_ref()
    }

    /// Whether children inherit this process's whole environment (minus the scrub set): `inherit: all`.
    pub fn inherits_all(&self) -> bool {
        self.vars.as_ref().is_none_or(|v| !v.clear)
    }

    /// The names of the variables a command tool gets (ENV-4), sorted, never their values: the inherited or
    /// resolved ones, minus the scrub set, plus `LLMFORMAT`.
    pub fn variable_names(&self) -> Vec<String> {
        let mut names: Vec<String> = match &self.vars {
            Some(v) if v.clear => v.vars.iter().filter_map(|(k, _)| k.to_str().map(str::to_owned)).collect(),
            other => std::env::vars_os()
                .map(|(k, _)| k)
                .chain(other.iter().flat_map(|v| v.vars.iter().map(|(k, _)| k.clone())))
                .filter_map(|k| k.into_string().ok())
                .collect(),
        };
        names.retain(|n| !self.scrub.contains(n));
        names.push("LLMFORMAT".to_owned());
        names.sort();
        names.dedup();
        names
    }

    /// This environment with `other`'s scrub set added, and `other`'s working directory, policy and confinement
    /// where this one has none.
    #[must_use]
    pub fn merged(&self, other: &ChildEnv) -> Self {
        let mut env = self.clone().with_scrubbed_all(other.scrubbed().map(str::to_owned));
        if env.working_dir.is_none() {
            env.working_dir.clone_from(&other.working_dir);
        }
        if env.vars.is_none() {
            env.vars.clone_from(&other.vars);
        }
        if env.confinement.is_none() {
            env.confinement.clone_from(&other.confinement);
        }
        env
    }

    /// Give `cmd`, which runs `program`, what a child of `kind` gets: the policy's variables, minus every scrubbed
    /// name; for a tool, the working directory with `PWD` set to it; and the confinement, armed.
    pub(crate) fn apply(
        &self,
        cmd: &mut std::process::Command,
        program: &Path,
        kind: ChildKind,
    ) -> std::io::Result<Option<CallGroup>> {
        let Some(narrowing) = self.apply_env(cmd, kind) else { return Ok(None) };
        match self.confinement_for(narrowing)? {
            Some(c) => c.arm(cmd, program, narrowing),
            None => Ok(None),
        }
    }

    /// The confinement step's path when a tool running `program` is confined and the step can start it (SBX-9).
    /// The caller then runs the step with `program` as its first argument, and arms it with
    /// [`apply_stepped`](Self::apply_stepped) instead of [`apply`](Self::apply). A `program` without a `/` is left
    /// to the standard library's search of `PATH`, through the hook.
    #[cfg(all(target_os = "linux", fisk_confine))]
    pub(crate) fn step(&self, program: &Path, kind: ChildKind) -> Option<&'static Path> {
        let ChildKind::Tool(narrowing) = kind else { return None };
        if !program.as_os_str().as_encoded_bytes().contains(&b'/') {
            return None;
        }
        match self.confinement_for(narrowing) {
            Ok(Some(c)) if c.spawns_through_step() => crate::sandbox::step::path(),
            _ => None,
        }
    }

    /// As [`apply`](Self::apply), for a `cmd` that runs the confinement step (see [`step`](Self::step)): its
    /// stdin becomes the step's channel, and the returned launch must be confirmed once `cmd` is spawned and
    /// dropped.
    #[cfg(all(target_os = "linux", fisk_confine))]
    pub(crate) fn apply_stepped(
        &self,
        cmd: &mut std::process::Command,
        program: &Path,
        kind: ChildKind,
    ) -> std::io::Result<(Option<CallGroup>, crate::sandbox::step::Launch)> {
        let narrowing = self.apply_env(cmd, kind).unwrap_or_default();
        let confinement = self.confinement_for(narrowing)?;
        confinement
            .ok_or_else(|| std::io::Error::other("the confinement step was asked for an unconfined child"))?
            .arm_step(cmd, program, narrowing)
    }

    /// The environment and working directory of a child of `kind`; the narrowing its confinement gets, or `None`
    /// for a hook, which is never confined.
    fn apply_env(&self, cmd: &mut std::process::Command, kind: ChildKind) -> Option<Narrowing> {
        if kind != ChildKind::Hook
            && let Some(vars) = &self.vars
        {
            if vars.clear {
                cmd.env_clear();
            }
            cmd.envs(vars.vars.iter().map(|(k, v)| (k, v)));
        }
        for name in self.scrub.iter() {
            cmd.env_remove(name);
        }
        if matches!(kind, ChildKind::Tool(_))
            && let Some(dir) = &self.working_dir
        {
            cmd.current_dir(dir).env("PWD", dir);
        }
        match kind {
            ChildKind::Tool(n) => Some(n),
            ChildKind::Introspection => Some(Narrowing::READ_ONLY),
            ChildKind::Server => Some(Narrowing::default()),
            ChildKind::Hook => None,
        }
    }

    /// The confinement a child with `narrowing` gets: the profile's, or, for a command's own tags without one, the
    /// empty profile's (SBX-7).
    fn confinement_for(&self, narrowing: Narrowing) -> std::io::Result<Option<&Confinement>> {
        match &self.confinement {
            Some(c) => Ok(Some(c.as_ref())),
            None if narrowing.tagged => unconfined().map(Some),
            None => Ok(None),
        }
    }
}

/// The empty profile, checked once: what a tagged command narrows when the operator set no `harness.sandbox`.
fn unconfined() -> std::io::Result<&'static Confinement> {
    static EMPTY: std::sync::OnceLock<std::result::Result<Confinement, String>> = std::sync::OnceLock::new();
    EMPTY
        .get_or_init(|| Confinement::new(crate::sandbox::Sandbox::new()).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| std::io::Error::other(e.clone()))
}

/// What children inherit of this process's environment (`harness.env.inherit`, ENV-1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Inherit {
    /// `all`: everything but the scrubbed credentials (the default).
    #[default]
    All,
    /// `core`: only [`CORE_VARIABLES`], plus `include`.
    Core,
    /// `none`: only `include`.
    None,
}

/// The variables `inherit: core` passes (ENV-2): what locates programs, files and the user, and formats text.
/// `LC_*` is a pattern.
pub const CORE_VARIABLES: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "TMPDIR"];

/// The environment policy (`harness.env`, ENV-1..4): what children inherit, what passes besides, what is fixed.
///
/// Credential scrubbing applies on top, always: a scrubbed name never reaches a child, even when `include`
/// matches it or `set` sets it.
///
/// ```
/// use fisk_ai::exec::{ChildEnv, EnvPolicy, Inherit};
///
/// let policy = EnvPolicy::new(Inherit::None).include("AWS_REGION").include("KUBECONFIG").set("NO_COLOR", "1");
/// let env = ChildEnv::new().with_env_policy(&policy)?;
/// assert!(env.variable_names().contains(&"NO_COLOR".to_owned()));
/// # Ok::<(), fisk_ai::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvPolicy {
    inherit: Inherit,
    include: Vec<String>,
    set: Vec<(String, String)>,
}

impl EnvPolicy {
    /// A policy inheriting per `inherit`, with nothing included or set.
    pub fn new(inherit: Inherit) -> Self {
        EnvPolicy { inherit, ..Self::default() }
    }

    /// Also pass variables named `pattern`: a name, or a name with `*` wildcards (`AWS_*`).
    #[must_use]
    pub fn include(mut self, pattern: impl Into<String>) -> Self {
        self.include.push(pattern.into());
        self
    }

    /// Set `name` to `value` in every child.
    #[must_use]
    pub fn set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.set.retain(|(k, _)| *k != name);
        self.set.push((name, value.into()));
        self
    }

    /// Whether a variable named `name` passes `inherit` and `include`.
    fn passes(&self, name: &str) -> bool {
        let core = self.inherit == Inherit::Core && CORE_VARIABLES.iter().any(|p| matches(p, name));
        core || self.include.iter().any(|p| matches(p, name))
    }

    fn check(&self) -> Result<()> {
        if self.inherit == Inherit::All && !self.include.is_empty() {
            return Err(Error::config_key(
                "harness.env.include",
                "harness.env.include: has no effect under `inherit: all`, which passes every variable; use `core` or `none`",
            ));
        }
        let name_ok = |n: &str, wild: bool| {
            !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || (wild && c == '*'))
        };
        if let Some(bad) = self.include.iter().find(|p| !name_ok(p, true)) {
            return Err(Error::config_key(
                "harness.env.include",
                format!(
                    "harness.env.include: {bad:?} is not a variable name or a pattern of one (letters, digits, `_`, `*`)"
                ),
            ));
        }
        for (name, value) in &self.set {
            let key = format!("harness.env.set.{name}");
            if !name_ok(name, false) {
                return Err(Error::config_key(key, format!("harness.env.set: {name:?} is not a variable name")));
            }
            if value.contains('\0') {
                return Err(Error::config_key(key.clone(), format!("{key}: a value cannot hold a NUL byte")));
            }
        }
        Ok(())
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else { return false };
            (0..=tail.len()).filter(|i| tail.is_char_boundary(*i)).any(|i| matches(rest, &tail[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn env_1_patterns_match_names_with_wildcards() {
        assert!(matches("AWS_*", "AWS_REGION"));
        assert!(matches("AWS_*", "AWS_"));
        assert!(!matches("AWS_*", "XAWS_REGION"));
        assert!(matches("*_TOKEN", "GITHUB_TOKEN"));
        assert!(matches("A*B*C", "AxxBxxC"));
        assert!(!matches("A*B*C", "AxxBxx"));
        assert!(matches("PATH", "PATH"));
        assert!(!matches("PATH", "PATHS"));
    }
}
