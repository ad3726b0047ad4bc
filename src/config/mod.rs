//! The agent configuration (`agent.yaml`, SPEC section 18).
//!
//! Parse once with [`Config::from_yaml_str`] or [`Config::load`], then check the rules of the mode you are about
//! to run with [`Config::validate`] (OVR-1):
//!
//! ```yaml
//! identity: ops
//! application_path: /usr/local/bin/nats
//! nats_context: prod
//! system_prompt: You help operators inspect NATS streams. Never delete anything.
//! include:
//!   tools: ["^stream_"]
//! exclude:
//!   tags: [dangerous]
//! harness:
//!   confirm_tags: [ai:destructive]
//!   tools:
//!     - name: read_file
//!       options: {root: docs}
//! llm:
//!   model: claude-sonnet-4-5
//!   budget:
//!     max_iterations: 20
//!     call_timeout: 90s
//! ```
//!
//! Parsing is strict: an unknown key at any level (including backend `options` blocks) is an error that carries
//! the key path in its message (`llm.budget: unknown field `max_token`, expected one of ...`), the key path in
//! [`Error::key`] and the line and column in [`Error::location`]. Parsing also applies the checks CFG-2 runs in
//! every mode, so a parsed [`Config`] already satisfies them; value errors found while decoding (a negative
//! budget, a bad duration, an invalid pattern or name) carry a location too.
//!
//! Fields hold the values as written, normalized where the SPEC says so (`global_flags`,
//! `harness.confirm_tags`, `confirm_over_mcp`, empty strings meaning unset); zero values mean "unset". Use the
//! accessors ([`Budget::max_tokens()`], [`McpExpose::port()`], [`Config::identity()`], ...) for effective values
//! with the SPEC defaults applied.
//!
//! Durations are Go duration strings ([`GoDuration`]).

mod auth;
mod de;
mod duration;
mod expose;
mod fleet;
mod harness;
mod knowledge;
mod llm;
mod locate;
mod origin;
mod pins;
mod sandbox;
mod validate;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use auth::{McpAuth, McpOAuth};
pub use duration::{GoDuration, ParseDurationError, format_duration};
pub use expose::{
    A2aExpose, ConfirmOverMcp, DEFAULT_A2A_QUEUE, DEFAULT_MAX_CONCURRENT_TOOLS, DEFAULT_MCP_ADDRESS,
    DEFAULT_MCP_MAX_SESSIONS, DEFAULT_MCP_PORT, DEFAULT_MCP_SESSION_IDLE, DEFAULT_MCP_TASK_MAX, DEFAULT_MCP_TASK_TTL,
    DEFAULT_TOOL_TIMEOUT, Expose, ExposeAgent, MAX_A2A_QUEUE, MAX_MCP_SESSIONS, MAX_MCP_TASKS, McpExpose, McpTasks,
};
pub use fleet::{
    ApprovalBackend, DEFAULT_ACK_WAIT, DEFAULT_APPROVAL_TIMEOUT, DEFAULT_MAX_CONCURRENT_RUNS, DEFAULT_MAX_DELIVER,
    MAX_CONCURRENT_RUNS, WorkerExpose,
};
pub use harness::{
    Approvals, Audit, Compaction, DEFAULT_COMPACTION_TRIGGER, DEFAULT_KEEP_RECENT_TURNS, Harness, HarnessTool,
    HumanInTheLoop, Memory, MemoryOptions, Policy, Remember, SessionOptions, Sessions,
};
pub use knowledge::{
    DEFAULT_EMBEDDINGS_TIMEOUT, DEFAULT_KNOWLEDGE_TOP_K, DEFAULT_MAX_INJECTED_TOKENS, Embeddings, Knowledge,
    MAX_KNOWLEDGE_TOP_K,
};
pub use llm::{
    Budget, DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_TOKENS, DEFAULT_PROVIDER, Llm, PricingSettings,
    SCRIPTED_PROVIDER, Thinking,
};
pub use pins::PinMode;
pub use sandbox::{EnvSettings, InheritSetting, NetworkSetting, SandboxFs, SandboxLimits, SandboxSettings};
pub use validate::check_http_url;
#[cfg(any(feature = "mcp", feature = "nats"))]
pub(crate) use validate::check_name as check_identity_name;
pub(crate) use validate::check_pattern;
#[cfg(feature = "mcp")]
pub(crate) use validate::check_scope as check_scope_text;

use crate::error::{Error, ErrorKind, Result};
use crate::warning::Warning;

/// The identity used when neither `identity` nor `application_path` is set (CFG-5).
pub const DEFAULT_IDENTITY: &str = "fisk";

/// The validation mode (CFG-2): which command the configuration is about to be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// Running the agent loop (`run`): needs `llm.model`, and `identity` and `system_prompt` unless an
    /// `expose.agent.mcp` block is present, and `nats_context` when `remote_tools` is set.
    Agent,
    /// `mcp`, `info`, `session --config`: only the every-mode checks.
    Lenient,
    /// Serving agent-to-agent (`a2a`): needs `application_path` and `nats_context`.
    Server,
}

/// A parsed `agent.yaml`.
///
/// Build one with [`Config::from_yaml_str`] or [`Config::load`] (or [`Config::default`] and field assignment in
/// code, then [`Config::validate`]).
///
/// ```
/// use std::time::Duration;
/// use fisk_ai::config::{Config, Mode};
///
/// let cfg = Config::from_yaml_str(r#"
/// identity: ops
/// application_path: /usr/local/bin/nats
/// system_prompt: You help operators inspect NATS streams.
/// global_flags: ["--context", "context", " server "]
/// include:
///   tools: ["^stream_"]
/// llm:
///   model: claude-sonnet-4-5
///   budget:
///     call_timeout: 90s
/// "#)?;
/// let warnings = cfg.validate(Mode::Agent)?;
/// assert!(warnings.is_empty());
/// assert_eq!(cfg.identity()?, "ops");
/// assert_eq!(cfg.global_flags, ["context", "server"]);
/// assert_eq!(cfg.llm.budget.max_iterations(), 50);
/// assert_eq!(cfg.llm.budget.call_timeout(), Duration::from_secs(90));
///
/// let err = Config::from_yaml_str("llm:\n  budget:\n    max_token: 5\n").unwrap_err();
/// assert_eq!(err.key(), Some("llm.budget.max_token"));
/// assert_eq!(err.location().map(|l| (l.line, l.column)), Some((3, 5)));
/// # Ok::<(), fisk_ai::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Config {
    /// `identity` as written (empty is unset). Use [`Config::identity()`] for the effective name.
    #[serde(deserialize_with = "de::opt_name")]
    pub identity: Option<String>,
    /// `application_path`: the fisk application to wrap; required for a2a.
    #[serde(deserialize_with = "de::opt_path")]
    pub application_path: Option<PathBuf>,
    /// `root_directory` (CFG-6), made absolute against the working directory at parse time.
    #[serde(deserialize_with = "de::opt_path")]
    pub root_directory: Option<PathBuf>,
    /// `nats_context`: the NATS CLI context for a2a, `remote_tools` and jetstream backends.
    #[serde(deserialize_with = "de::opt_string")]
    pub nats_context: Option<String>,
    /// `system_prompt`; required for run (CFG-2).
    #[serde(deserialize_with = "de::opt_string")]
    pub system_prompt: Option<String>,
    /// `include` (section 4).
    pub include: Option<Filter>,
    /// `exclude` (section 4).
    pub exclude: Option<Filter>,
    /// `global_flags` (section 5), normalized at parse per GLOBAL-2. [`Config::global_flags()`] normalizes again
    /// for values set in code.
    #[serde(deserialize_with = "de::global_flags")]
    pub global_flags: Vec<String>,
    /// `remote_tools` (section 16.2).
    #[serde(deserialize_with = "de::nullable")]
    pub remote_tools: Vec<RemoteToolsHost>,
    /// `mcp_servers` (section 17).
    #[serde(deserialize_with = "de::nullable")]
    pub mcp_servers: Vec<McpServerEntry>,
    /// `remote_agents` (CFG-7): accepted for forward compatibility, no effect.
    #[serde(deserialize_with = "de::nullable")]
    pub remote_agents: Vec<RemoteAgent>,
    /// `expose`.
    #[serde(deserialize_with = "de::nullable")]
    pub expose: Expose,
    /// `harness`.
    #[serde(deserialize_with = "de::nullable")]
    pub harness: Harness,
    /// `llm`; an absent block is the same as an empty one.
    #[serde(deserialize_with = "de::nullable")]
    pub llm: Llm,
    /// The text and file this configuration was parsed from, so later errors can point into it.
    #[serde(skip)]
    origin: origin::Origin,
}

/// An `include` or `exclude` rule (section 4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Filter {
    /// `tools`: regular expressions searched (unanchored) in tool names (SEL-6); each compiles, checked at parse.
    #[serde(deserialize_with = "de::patterns")]
    pub tools: Vec<String>,
    /// `tags`: exact tag strings (SEL-7); `""` matches a tool with no tags.
    #[serde(deserialize_with = "de::nullable")]
    pub tags: Vec<String>,
}

impl Filter {
    /// A rule with these `tools` patterns and `tags`.
    pub fn new<T: Into<String>, G: Into<String>>(
        tools: impl IntoIterator<Item = T>,
        tags: impl IntoIterator<Item = G>,
    ) -> Self {
        Filter { tools: tools.into_iter().map(Into::into).collect(), tags: tags.into_iter().map(Into::into).collect() }
    }

    /// Whether the rule has no entries, in which case it is ignored (SEL-3, SEL-4).
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.tags.is_empty()
    }
}

/// An `include`/`exclude` pair (`expose.agent.tools`, SEL-11).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct FilterPair {
    /// `include`.
    pub include: Option<Filter>,
    /// `exclude`.
    pub exclude: Option<Filter>,
}

/// One `remote_tools` host (IMPORT-1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct RemoteToolsHost {
    /// `name`: the remote agent's identity (required, `^[a-zA-Z0-9_-]+$`).
    #[serde(deserialize_with = "de::name")]
    pub name: String,
    /// `alias` as written (same charset; empty is unset). Use [`RemoteToolsHost::alias()`].
    #[serde(default, deserialize_with = "de::opt_name")]
    pub alias: Option<String>,
    /// `include`: matched on the remote tool name only; `include.tags` is ignored with a warning (IMPORT-3).
    #[serde(default)]
    pub include: Option<Filter>,
    /// `exclude`: matched on the remote tool name only; `exclude.tags` is an error (IMPORT-3).
    #[serde(default)]
    pub exclude: Option<Filter>,
    /// `pins` (PIN-2): what a changed or new tool from this host does.
    #[serde(default)]
    pub pins: PinMode,
}

impl RemoteToolsHost {
    /// A host entry for the remote identity `name`.
    pub fn new(name: impl Into<String>) -> Self {
        RemoteToolsHost { name: name.into(), ..Default::default() }
    }

    /// The prefix for colliding names (IMPORT-5): `alias`, or `name` when unset.
    pub fn alias(&self) -> &str {
        self.alias.as_deref().filter(|a| !a.is_empty()).unwrap_or(&self.name)
    }
}

/// One `mcp_servers` entry (section 17).
///
/// After parsing, exactly one of `url` and `command` is set, `url` passes [`check_http_url`], `command` is a
/// non-empty list, `bearer_token_env` is only set with `url`, and `timeout` is positive (MCPI-1..5, MCPI-12).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct McpServerEntry {
    /// `name` (required, `^[a-zA-Z0-9_-]+$`, unique among entries).
    #[serde(deserialize_with = "de::name")]
    pub name: String,
    /// `alias` as written (same charset; empty is unset). Use [`McpServerEntry::alias()`].
    #[serde(default, deserialize_with = "de::opt_name")]
    pub alias: Option<String>,
    /// `url`: a streamable HTTP endpoint.
    #[serde(default, deserialize_with = "de::url")]
    pub url: Option<String>,
    /// `command`: the executable path and its arguments, started over stdio without a shell.
    #[serde(default, deserialize_with = "de::command")]
    pub command: Option<Vec<String>>,
    /// `bearer_token_env`: the name of an environment variable holding a bearer token (url only).
    #[serde(default, deserialize_with = "de::opt_string")]
    pub bearer_token_env: Option<String>,
    /// `oauth`: get tokens with the OAuth client-credentials grant (url only; not with `bearer_token_env`).
    #[serde(default)]
    pub oauth: Option<McpOAuth>,
    /// `timeout` per call; unset means `llm.budget.call_timeout`. Use [`McpServerEntry::timeout()`].
    #[serde(default, deserialize_with = "de::positive_duration")]
    pub timeout: Option<GoDuration>,
    /// `confirm` (MCPI-10): gate every tool from this server.
    #[serde(default, deserialize_with = "de::nullable")]
    pub confirm: bool,
    /// `include`, on the server's tool names; `include.tags` is ignored with a warning (MCPI-5).
    #[serde(default)]
    pub include: Option<Filter>,
    /// `exclude`, on the server's tool names; `exclude.tags` is an error (MCPI-5).
    #[serde(default)]
    pub exclude: Option<Filter>,
    /// `pins` (PIN-2): what a changed or new tool from this server does.
    #[serde(default)]
    pub pins: PinMode,
}

impl McpServerEntry {
    /// An entry named `name` with no transport yet.
    pub fn new(name: impl Into<String>) -> Self {
        McpServerEntry { name: name.into(), ..Default::default() }
    }

    /// The prefix for colliding names (MCPI-7): `alias`, or `name` when unset.
    pub fn alias(&self) -> &str {
        self.alias.as_deref().filter(|a| !a.is_empty()).unwrap_or(&self.name)
    }

    /// The per-call timeout when set; `None` means use `llm.budget.call_timeout` (MCPI-8).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout.and_then(GoDuration::to_std).filter(|d| !d.is_zero())
    }
}

/// One `remote_agents` entry (CFG-7): accepted for forward compatibility, no effect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct RemoteAgent {
    /// `name`.
    #[serde(deserialize_with = "de::opt_string")]
    pub name: Option<String>,
    /// `alias`.
    #[serde(deserialize_with = "de::opt_string")]
    pub alias: Option<String>,
}

/// Gives an error found after decoding the line and column of its key (or of the nearest enclosing block present).
fn locate_error(yaml: &str, err: Error) -> Error {
    if err.location().is_some() {
        return err;
    }
    let Some(key) = err.key() else { return err };
    match origin::locate_key(yaml, key) {
        Some((line, column)) => err.with_location(crate::error::Location { file: None, line, column }),
        None => err,
    }
}

/// A YAML error as it is, or, for the few the YAML library reports without a position (a second document, an
/// unexpected end), with the position [`locate::fallback`] finds, so every parse error says where to look.
fn with_some_location(yaml: &str, err: Error) -> Error {
    if err.location().is_some() {
        return err;
    }
    let (line, column) = locate::fallback(yaml);
    err.with_location(crate::error::Location { file: None, line, column })
}

/// Keys this version parses and checks but whose behaviour is not built yet: [`Config::check_supported`] (which the
/// agent and the MCP server call before anything starts) refuses them with their location rather than silently
/// ignoring them (a `bearer_token_env` that was ignored would otherwise have reached every child).
fn refuse_unbuilt(cfg: &Config) -> Result<()> {
    let unbuilt: [(&str, bool, &str); 8] = [
        // Built with the `mcp` feature (source::mcp).
        (
            "mcp_servers",
            !cfg!(feature = "mcp") && !cfg.mcp_servers.is_empty(),
            "this build has no `mcp` feature, which imports tools from MCP servers",
        ),
        // Built with the `nats` feature (source::remote).
        (
            "remote_tools",
            !cfg!(feature = "nats") && !cfg.remote_tools.is_empty(),
            "this build has no `nats` feature, which imports tools from remote agents over NATS",
        ),
        // Built with the `nats` feature (serve::a2a).
        (
            "expose.agent.agent_to_agent",
            !cfg!(feature = "nats") && cfg.expose.agent.agent_to_agent,
            "this build has no `nats` feature, which serves tools to other agents over NATS",
        ),
        (
            "harness.memory.backend",
            cfg!(not(feature = "nats")) && cfg.harness.memory.backend == "jetstream",
            "the jetstream memory backend needs the nats feature",
        ),
        // Built with the `nats` feature (session::jetstream).
        (
            "harness.sessions.backend",
            !cfg!(feature = "nats") && cfg.harness.sessions.backend == "jetstream",
            "this build has no `nats` feature, which keeps sessions in JetStream",
        ),
        (
            "harness.audit.stream",
            !cfg!(feature = "nats") && cfg.harness.audit.stream.is_some(),
            "this build has no `nats` feature, which writes the audit trail to a JetStream stream",
        ),
        // Built with the `knowledge` feature.
        (
            "harness.knowledge",
            !cfg!(feature = "knowledge") && cfg.harness.knowledge.enabled,
            "this build has no `knowledge` feature, which indexes and searches local documents",
        ),
        (
            "harness.knowledge.embeddings.tool_search",
            !cfg!(feature = "knowledge") && cfg.harness.knowledge.embeddings.as_ref().is_some_and(|e| e.tool_search),
            "this build has no `knowledge` feature, whose embeddings rank search_tools' results",
        ),
    ];
    match unbuilt.into_iter().find(|(_, used, _)| *used) {
        Some((key, _, why)) => {
            Err(Error::config_key(key, format!("{key}: not supported by this version ({why}); remove it")))
        }
        None => Ok(()),
    }
}

impl Config {
    /// Parses a configuration from YAML text and applies the every-mode checks of CFG-2.
    ///
    /// An empty document (or one holding only comments) is a valid empty configuration. Errors are
    /// [`ErrorKind::Config`] and name the culprit; every one carries [`Error::location`] (line and column: of the
    /// offending value, of the second occurrence of a duplicate key, of the key an error found after decoding is
    /// about or its nearest enclosing block) and, when it is about a key, [`Error::key`] (for an unknown key the
    /// path of the key itself). Warnings (IMPORT-3, MCPI-5) are not returned here: [`Config::validate`] returns
    /// them in every mode.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`] for YAML that does not parse, an unknown key, a duplicate key, a value of the wrong type,
    /// a bad duration, filter or URL, or a rule of the every-mode checks; located as described above.
    pub fn from_yaml_str(yaml: &str) -> Result<Config> {
        let cfg: Option<Config> =
            serde_yaml::from_str(yaml).map_err(|e| with_some_location(yaml, de::yaml_error(yaml, e)))?;
        let mut cfg = cfg.unwrap_or_default();
        de::check_backend_options(yaml, &cfg.harness.memory.backend, &cfg.harness.sessions.backend)
            .map_err(|e| with_some_location(yaml, e))?;
        (cfg.harness.memory.backend_options, cfg.harness.sessions.backend_options) = de::backend_option_maps(yaml);
        if let Some(root) = &cfg.root_directory {
            let abs = std::path::absolute(root).map_err(|e| {
                Error::config_key(
                    "root_directory",
                    format!("root_directory: cannot resolve {} against the working directory: {e}", root.display()),
                )
                .with_source(e)
            });
            cfg.root_directory = Some(abs.map_err(|e| locate_error(yaml, e))?);
        }
        validate::common(&cfg).map_err(|e| locate_error(yaml, e))?;
        cfg.origin = origin::Origin::from_text(yaml);
        // Kept for `check_supported`, which refuses it: every consumer checks before anything starts.
        cfg.origin.unbuilt_at = refuse_unbuilt(&cfg).err().and_then(|e| locate_error(yaml, e).location().cloned());
        Ok(cfg)
    }

    /// Parses a configuration from YAML bytes, like [`Config::from_yaml_str`]. Bytes that are not UTF-8 are a
    /// configuration error located at the first invalid byte.
    ///
    /// # Errors
    ///
    /// As [`Config::from_yaml_str`], and a configuration error at the first byte that is not UTF-8.
    pub fn from_yaml_bytes(bytes: &[u8]) -> Result<Config> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Config::from_yaml_str(text),
            Err(e) => {
                let valid = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
                let line = valid.matches('\n').count() + 1;
                let column = valid.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                let byte = bytes.get(e.valid_up_to()).copied().unwrap_or_default();
                Err(Error::config(format!("the configuration is not UTF-8 text (byte 0x{byte:02x} is invalid here)"))
                    .with_location(crate::error::Location { file: None, line, column }))
            }
        }
    }

    /// Reads and parses the configuration file at `path` (which must exist), like [`Config::from_yaml_str`].
    /// Every error names the file: an unreadable file is [`ErrorKind::Io`]; a located error gets the file in its
    /// [`Error::location`], any other has it prefixed to the message.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the file cannot be read; otherwise the errors of [`Config::from_yaml_bytes`], naming the
    /// file.
    pub fn load(path: impl AsRef<Path>) -> Result<Config> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| {
            Error::new(ErrorKind::Io, format!("cannot read configuration file {}: {e}", path.display())).with_source(e)
        })?;
        let mut cfg = Config::from_yaml_bytes(&bytes).map_err(|e| e.in_file(path))?;
        if let Some(at) = &mut cfg.origin.unbuilt_at {
            at.file = Some(path.to_path_buf());
        }
        cfg.origin.file = Some(path.to_path_buf());
        Ok(cfg)
    }

    /// The file this configuration was read from by [`Config::load`], if it was.
    pub fn file(&self) -> Option<&Path> {
        self.origin.file.as_deref()
    }

    /// Gives `err`, an error about one of this configuration's keys ([`Error::key`], such as
    /// `harness.tools[1].name`), the file, line and column where that key (or its nearest enclosing block) is
    /// written, so an error found by the part that consumes the key reads like a parse error. An error that already
    /// has a location keeps it (and gets the file); one without a key only gets the file, in its message.
    ///
    /// ```
    /// use fisk_ai::{Config, Error};
    ///
    /// let cfg = Config::from_yaml_str("harness:\n  tools:\n    - name: nope\n")?;
    /// let err = cfg.locate(Error::config_key("harness.tools[0].name", "unknown built-in tool \"nope\""));
    /// assert_eq!(err.location().map(|l| (l.line, l.column)), Some((3, 13)));
    /// # Ok::<(), fisk_ai::Error>(())
    /// ```
    pub fn locate(&self, err: Error) -> Error {
        self.origin.locate(err)
    }

    /// Checks that `application_path`, when set, names an executable file (a bare name: one on `PATH`), so a
    /// typo is reported as a configuration error with the key's file, line and column rather than as a failed
    /// introspection. Not part of [`validate`](Config::validate), which never touches the file system.
    ///
    /// # Errors
    ///
    /// A configuration error on `application_path`, with the file, line and column, when it names nothing, a directory,
    /// or a file that is not executable (a bare name: none on `PATH`).
    pub fn check_application(&self) -> Result<()> {
        let Some(app) = self.application_path.as_deref() else { return Ok(()) };
        match origin::application_problem(app) {
            None => Ok(()),
            Some(problem) => Err(self.locate(Error::config_key(
                "application_path",
                format!("application_path: {} {problem}", app.display()),
            ))),
        }
    }

    /// Checks the configuration for `mode` (CFG-2): the every-mode checks (again, so a configuration built or
    /// changed in code is covered too), then the checks of `mode`. An error gets the position of its key (or of
    /// the nearest enclosing block written) and the file, as [`Config::locate`] gives them. Returns the
    /// configuration-level warnings (IMPORT-3 / MCPI-5 `include.tags` ignored), which do not depend on the mode.
    ///
    /// # Errors
    ///
    /// The first configuration error the checks find (every-mode, then `mode`'s), with its key and location.
    pub fn validate(&self, mode: Mode) -> Result<Vec<Warning>> {
        // Located like parse errors when the configuration came from text (and a file).
        validate::common(self).map_err(|e| self.locate(e))?;
        validate::mode(self, mode).map_err(|e| self.locate(e))?;
        Ok(validate::warnings(self))
    }

    /// Refuses a key this version parses and checks but does not act on yet (`mcp_servers`, `remote_tools`,
    /// `expose.agent.agent_to_agent`, a `jetstream` memory or session backend), with the key's location, so it is
    /// never silently ignored. The agent and the MCP server call this when they are built, before any process
    /// starts; [`validate`](Config::validate) does not, so a configuration for a later version still checks.
    ///
    /// # Errors
    ///
    /// A configuration error on the first key that is set but not supported yet, with its location.
    pub fn check_supported(&self) -> Result<()> {
        refuse_unbuilt(self).map_err(|e| match &self.origin.unbuilt_at {
            Some(at) => e.with_location(at.clone()),
            None => e,
        })
    }

    /// The effective identity (CFG-5): `identity`, else the base name of `application_path`, else `fisk`.
    ///
    /// Fails when the name does not match `^[a-zA-Z0-9_-]+$`; for a derived name (a binary called `my.app`) the
    /// error tells the operator to set `identity` explicitly.
    ///
    /// # Errors
    ///
    /// A configuration error on `identity` when the effective name is not `^[a-zA-Z0-9_-]+$`.
    pub fn identity(&self) -> Result<String> {
        if let Some(id) = self.identity.as_deref().filter(|s| !s.is_empty()) {
            validate::check_name(id).map_err(|e| Error::config_key("identity", format!("identity: {e}")))?;
            return Ok(id.to_owned());
        }
        match self.application_path.as_deref().filter(|p| !p.as_os_str().is_empty()) {
            None => Ok(DEFAULT_IDENTITY.to_owned()),
            Some(app) => {
                let base = app.file_name().map(|b| b.to_string_lossy().into_owned()).unwrap_or_default();
                if validate::is_name(&base) {
                    Ok(base)
                } else {
                    Err(Error::config_key(
                        "identity",
                        format!(
                            "identity is not set and the name derived from application_path {} is {base:?}, which \
                             is not a valid identity (only ASCII letters, digits, '_' and '-'); set identity \
                             explicitly",
                            app.display()
                        ),
                    ))
                }
            }
        }
    }

    /// Every `mcp_servers[].bearer_token_env`, `mcp_servers[].oauth.client_secret_env` and
    /// `harness.knowledge.embeddings.api_key_env` name: credentials
    /// scrubbed from every child process (MCPI-4, OAUTHC-4), by every surface, whether it imports or not.
    pub fn bearer_token_envs(&self) -> Vec<String> {
        let tokens = self.mcp_servers.iter().filter_map(|s| s.bearer_token_env.as_deref());
        let secrets = self.mcp_servers.iter().filter_map(|s| s.oauth.as_ref().map(|o| o.client_secret_env.as_str()));
        // KNOW-9: the embeddings key never reaches a child either.
        let embeddings = self.harness.knowledge.embeddings.as_ref().and_then(|e| e.api_key_env.as_deref());
        tokens.chain(secrets).chain(embeddings).filter(|n| !n.is_empty()).map(str::to_owned).collect()
    }

    /// `global_flags` normalized per GLOBAL-2: trimmed, leading dashes removed, empties dropped, duplicates
    /// removed keeping the first occurrence. Parsed configurations already hold the normalized list.
    pub fn global_flags(&self) -> Vec<String> {
        validate::normalize_global_flags(&self.global_flags)
    }
}
