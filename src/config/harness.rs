//! The `harness` block: operator interaction, built-in tools, memory and sessions.

use std::path::PathBuf;

use serde::Deserialize;

use super::de;

/// `harness`: how the agent runs around the model.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Harness {
    /// `harness.human_in_the_loop` (section 11).
    #[serde(deserialize_with = "de::nullable")]
    pub human_in_the_loop: HumanInTheLoop,
    /// `harness.confirm_tags` (GATE-1, GATE-4), normalized at parse per CFG-11 (trimmed, empties dropped,
    /// duplicates removed keeping the first). [`Harness::confirm_tags()`] normalizes again for values set in code.
    #[serde(deserialize_with = "de::confirm_tags")]
    pub confirm_tags: Vec<String>,
    /// `harness.no_tui` (CFG-12): accepted and ignored by the line output.
    #[serde(deserialize_with = "de::nullable")]
    pub no_tui: bool,
    /// `harness.no_bell` (CFG-12): accepted and ignored by the line output.
    #[serde(deserialize_with = "de::nullable")]
    pub no_bell: bool,
    /// `harness.tools` (section 12): the enabled built-in tools, in list order. A name listed twice is rejected at
    /// parse; unknown names are rejected by the built-in registry when the tool set is built.
    #[serde(deserialize_with = "de::nullable")]
    pub tools: Vec<HarnessTool>,
    /// `harness.memory` (section 13).
    #[serde(deserialize_with = "de::nullable")]
    pub memory: Memory,
    /// `harness.sessions` (section 14).
    #[serde(deserialize_with = "de::nullable")]
    pub sessions: Sessions,
    /// `harness.approvals` (EXACT-1..5): what an operator's "for the conversation" answer covers.
    #[serde(deserialize_with = "de::nullable")]
    pub approvals: Approvals,
    /// `harness.policy` (POL-6): an external policy hook asked about every call on every surface.
    #[serde(deserialize_with = "de::nullable")]
    pub policy: Policy,
    /// `harness.audit` (AUD-1..12): the hash-chained record of every decision point on every surface.
    #[serde(deserialize_with = "de::nullable")]
    pub audit: Audit,
    /// `harness.sandbox` (SBX-1..): the confinement of every child.
    #[serde(deserialize_with = "de::nullable")]
    pub sandbox: super::sandbox::SandboxSettings,
    /// `harness.env` (ENV-1..): what children inherit of the agent's environment.
    #[serde(deserialize_with = "de::nullable")]
    pub env: super::sandbox::EnvSettings,
    /// `harness.compaction` (COMP-1..): summarising older turns when a request nears the context window. Off when
    /// absent; `{}` turns it on with the defaults.
    #[serde(deserialize_with = "de::nullable")]
    pub compaction: Option<Compaction>,
    /// `harness.knowledge` (KNOW-1..): the local document index behind `knowledge_search`.
    #[serde(deserialize_with = "de::nullable")]
    pub knowledge: super::knowledge::Knowledge,
}

/// Default `harness.compaction.trigger`: a share of the context window.
pub const DEFAULT_COMPACTION_TRIGGER: f64 = 0.8;
/// Default `harness.compaction.keep_recent_turns`.
pub const DEFAULT_KEEP_RECENT_TURNS: u64 = 4;

/// `harness.compaction`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Compaction {
    /// `trigger`: the share of the context window (above 0, at most 1) a request may reach before older turns are
    /// summarised.
    #[serde(deserialize_with = "de::share")]
    pub trigger: f64,
    /// `keep_recent_turns`: how many of the latest model turns (each with its tool results) stay verbatim; at least 1.
    #[serde(deserialize_with = "de::positive")]
    pub keep_recent_turns: u64,
    /// `prompt`: the instructions of the summarising request; unset means the built-in one.
    #[serde(deserialize_with = "de::opt_string")]
    pub prompt: Option<String>,
    /// `context_window`: the model's window in tokens, over what the provider knows; required when it knows none.
    #[serde(deserialize_with = "de::nullable")]
    pub context_window: Option<u64>,
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            trigger: DEFAULT_COMPACTION_TRIGGER,
            keep_recent_turns: DEFAULT_KEEP_RECENT_TURNS,
            prompt: None,
            context_window: None,
        }
    }
}

/// `harness.audit`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Audit {
    /// `file`: the JSON-lines trail; a relative path is taken from the configuration file's directory.
    #[serde(deserialize_with = "de::opt_path")]
    pub file: Option<PathBuf>,
    /// `stream`: a JetStream stream (feature `nats`) the operator made, with one subject.
    #[serde(deserialize_with = "de::opt_name")]
    pub stream: Option<String>,
    /// `include_input`: put the input text in `requested` records, not only its digest.
    #[serde(deserialize_with = "de::nullable")]
    pub include_input: bool,
    /// `fail_open`: run calls whose records cannot be written (with a warning) instead of refusing them.
    #[serde(deserialize_with = "de::nullable")]
    pub fail_open: bool,
    /// `rotate_bytes`: the size a file may reach before it is rotated; unset means 64 MiB.
    #[serde(deserialize_with = "de::nullable")]
    pub rotate_bytes: Option<u64>,
}

impl Audit {
    /// Whether any sink is configured.
    pub fn is_enabled(&self) -> bool {
        self.file.is_some() || self.stream.is_some()
    }
}

/// `harness.policy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Policy {
    /// `command`: the hook's executable path and arguments, started without a shell for each decision; unset means
    /// no hook.
    #[serde(deserialize_with = "de::command")]
    pub command: Option<Vec<String>>,
    /// `timeout` for each answer; unset means 5s. Use [`Policy::timeout()`].
    #[serde(deserialize_with = "de::positive_duration")]
    pub timeout: Option<super::GoDuration>,
}

impl Policy {
    /// The bound on one answer: `timeout`, else 5 seconds.
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout
            .and_then(super::GoDuration::to_std)
            .filter(|d| !d.is_zero())
            .unwrap_or(std::time::Duration::from_secs(5))
    }
}

/// `harness.approvals`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Approvals {
    /// `remember`: `tool` (the default) or `exact`.
    pub remember: Remember,
    /// `backend` (APPR-1): `terminal` (the default) or `nats`.
    pub backend: super::ApprovalBackend,
    /// `bucket`: the existing JetStream KV bucket pending approvals are kept in (required with `backend: nats`).
    #[serde(deserialize_with = "de::opt_string")]
    pub bucket: Option<String>,
    /// `timeout`: how long a gated call waits for a decision under `backend: nats`. Use
    /// [`Approvals::timeout()`].
    #[serde(deserialize_with = "de::positive_duration")]
    pub timeout: Option<super::GoDuration>,
}

impl Approvals {
    /// How long a gated call waits for a decision: `timeout`, else
    /// [`DEFAULT_APPROVAL_TIMEOUT`](super::DEFAULT_APPROVAL_TIMEOUT).
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout
            .and_then(super::GoDuration::to_std)
            .filter(|d| !d.is_zero())
            .unwrap_or(super::DEFAULT_APPROVAL_TIMEOUT)
    }
}

/// What a remembered approval covers (EXACT-1, EXACT-2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase", expecting = "`tool` or `exact`")]
#[non_exhaustive]
pub enum Remember {
    /// `tool`: the operator may allow a tool with any arguments, or with these exact arguments, for the rest of the
    /// conversation.
    #[default]
    Tool,
    /// `exact`: only "these exact arguments" is remembered; an answer for any arguments is taken as exact.
    Exact,
}

impl Harness {
    /// `confirm_tags` normalized per CFG-11.
    pub fn confirm_tags(&self) -> Vec<String> {
        super::validate::normalize_tags(&self.confirm_tags)
    }
}

/// `harness.human_in_the_loop`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct HumanInTheLoop {
    /// `enabled`: offer the `ask_human_*` tools.
    #[serde(deserialize_with = "de::nullable")]
    pub enabled: bool,
}

/// One `harness.tools` entry (BUILTIN-1).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct HarnessTool {
    /// `name`: the built-in tool, such as `read_file` or `base64_encode` (required).
    pub name: String,
    /// `confirm` (BUILTIN-3): gate every call.
    #[serde(default, deserialize_with = "de::nullable")]
    pub confirm: bool,
    /// `options` (BUILTIN-2): free-form here; the tool's factory decodes it strictly when the tool is built.
    #[serde(default, deserialize_with = "de::options_map")]
    pub options: serde_json::Map<String, serde_json::Value>,
}

impl HarnessTool {
    /// An entry for the built-in tool `name` with no options.
    pub fn new(name: impl Into<String>) -> Self {
        HarnessTool { name: name.into(), ..Default::default() }
    }
}

/// `harness.memory` (section 13).
///
/// `backend` names any registered backend (the harness refuses an unregistered one, listing the registered ones). For
/// the backends this crate ships ([`Memory::KNOWN_BACKENDS`]) `options` holds only that backend's keys (CFG-4) and
/// `jetstream` has a non-empty `bucket`; a host backend gets [`backend_options`](Memory::backend_options) as written
/// and checks them itself.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Memory {
    /// `enabled`: offer the `memory_*` tools.
    #[serde(deserialize_with = "de::nullable")]
    pub enabled: bool,
    /// `backend` (MEM-18): `file` (the default; empty means `file`) or `jetstream`.
    #[serde(deserialize_with = "de::memory_backend")]
    pub backend: String,
    /// `no_index` (MEM-15): do not inject the memory index into the conversation.
    #[serde(deserialize_with = "de::nullable")]
    pub no_index: bool,
    /// `options` (MEM-19..26), typed for the backends this crate ships.
    #[serde(deserialize_with = "de::nullable")]
    pub options: MemoryOptions,
    /// `options` as written, for the selected backend's factory ([`MemorySettings::options`](crate::memory::MemorySettings::options)).
    #[serde(skip)]
    pub backend_options: serde_json::Map<String, serde_json::Value>,
}

impl Memory {
    /// The backends this crate ships (a host registers more).
    pub const KNOWN_BACKENDS: &'static [&'static str] = &["file", "jetstream"];
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            enabled: false,
            backend: "file".to_owned(),
            no_index: false,
            options: MemoryOptions::default(),
            backend_options: serde_json::Map::new(),
        }
    }
}

/// `harness.memory.options`, typed: the union of the shipped backends' keys; only the selected backend's keys may be
/// set when it is one of them (other keys are a host backend's, in [`Memory::backend_options`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct MemoryOptions {
    /// `directory` (file backend, MEM-19); unset means `memory/<identity>`.
    #[serde(deserialize_with = "de::opt_path")]
    pub directory: Option<PathBuf>,
    /// `bucket` (jetstream backend, MEM-22): an existing KV bucket; required for that backend.
    #[serde(deserialize_with = "de::opt_string")]
    pub bucket: Option<String>,
    /// `prefix` (jetstream backend, MEM-24): `None` means the identity, `Some("")` means no prefix.
    pub prefix: Option<String>,
    /// `no_require_read_before_update` (jetstream backend, MEM-26): allow blind overwrites.
    #[serde(deserialize_with = "de::nullable")]
    pub no_require_read_before_update: bool,
}

/// `harness.sessions` (section 14).
///
/// `backend` names any registered backend (the harness refuses an unregistered one). For the backends this crate ships
/// ([`Sessions::KNOWN_BACKENDS`]) `options` holds only that backend's keys (CFG-4) and `jetstream` has a non-empty
/// `stream`; a host backend gets [`backend_options`](Sessions::backend_options) as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Sessions {
    /// `backend` (SESS-25): `file` (the default; empty means `file`) or `jetstream`.
    #[serde(deserialize_with = "de::sessions_backend")]
    pub backend: String,
    /// `options` (SESS-26..31), typed for the backends this crate ships.
    #[serde(deserialize_with = "de::nullable")]
    pub options: SessionOptions,
    /// `options` as written, for the selected backend's factory.
    #[serde(skip)]
    pub backend_options: serde_json::Map<String, serde_json::Value>,
}

impl Sessions {
    /// The backends this crate ships (a host registers more).
    pub const KNOWN_BACKENDS: &'static [&'static str] = &["file", "jetstream"];
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            backend: "file".to_owned(),
            options: SessionOptions::default(),
            backend_options: serde_json::Map::new(),
        }
    }
}

/// `harness.sessions.options`, typed: the union of the shipped backends' keys; only the selected backend's keys may
/// be set when it is one of them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct SessionOptions {
    /// `directory` (file backend, SESS-26).
    #[serde(deserialize_with = "de::opt_path")]
    pub directory: Option<PathBuf>,
    /// `stream` (jetstream backend, SESS-31): an existing stream; required for that backend.
    #[serde(deserialize_with = "de::opt_string")]
    pub stream: Option<String>,
    /// `pins_bucket` (jetstream backend, PIN-6): the existing KV bucket imported tools are pinned in; unset means
    /// [`DEFAULT_PINS_BUCKET`](crate::source::pins::DEFAULT_PINS_BUCKET).
    #[serde(deserialize_with = "de::opt_string")]
    pub pins_bucket: Option<String>,
}
