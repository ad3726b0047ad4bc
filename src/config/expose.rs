//! The `expose` block: serving over MCP (section 15) and agent-to-agent (section 16).

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::{FilterPair, GoDuration, de};

/// Default MCP listen port (MCP-2).
pub const DEFAULT_MCP_PORT: u16 = 8080;
/// Default MCP bind address (MCP-3).
pub const DEFAULT_MCP_ADDRESS: &str = "127.0.0.1";
/// Default `max_concurrent_tools` for MCP and a2a serving (MCP-16, A2A-11).
pub const DEFAULT_MAX_CONCURRENT_TOOLS: usize = 2;
/// Default `expose.agent.mcp.max_sessions`: open MCP sessions at once.
pub const DEFAULT_MCP_MAX_SESSIONS: usize = 256;
/// Largest `expose.agent.mcp.max_sessions`.
pub const MAX_MCP_SESSIONS: usize = 65536;
/// Default `expose.agent.mcp.session_idle_timeout`: an MCP session with no request for this long is closed.
pub const DEFAULT_MCP_SESSION_IDLE: Duration = Duration::from_secs(300);

/// Default `expose.agent.mcp.tasks.ttl` (TASK-3): how long a task and its result are kept, from its creation.
pub const DEFAULT_MCP_TASK_TTL: Duration = Duration::from_secs(900);
/// Default `expose.agent.mcp.tasks.max` (TASK-3): tasks kept at once, running or finished.
pub const DEFAULT_MCP_TASK_MAX: usize = 64;
/// Largest `expose.agent.mcp.tasks.max`: each finished task holds its result (up to 64 KiB of output).
pub const MAX_MCP_TASKS: usize = 1024;

/// Default `tool_timeout` for MCP and a2a serving (MCP-17, A2A-11).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// `expose`: what this agent serves to other programs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct Expose {
    /// `expose.agent`.
    #[serde(deserialize_with = "de::nullable")]
    pub agent: ExposeAgent,
}

/// `expose.agent`: serving settings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct ExposeAgent {
    /// `expose.agent.agent_to_agent` (A2A-1): serve the tools to other agents over NATS.
    #[serde(deserialize_with = "de::nullable")]
    pub agent_to_agent: bool,
    /// `expose.agent.mcp`: present (even as `{}`) enables MCP serving (MCP-1); `mcp:` with no value counts as
    /// absent.
    pub mcp: Option<McpExpose>,
    /// `expose.agent.a2a`: agent-to-agent serving limits.
    #[serde(deserialize_with = "de::nullable")]
    pub a2a: A2aExpose,
    /// `expose.agent.tools` (SEL-11): narrows the served set after the top-level filters.
    pub tools: Option<FilterPair>,
    /// `expose.agent.worker` (WORK-1): runs taken from a JetStream work queue by `cli worker`; `worker:` with no
    /// value counts as absent.
    pub worker: Option<super::WorkerExpose>,
}

/// How a confirmation-gated tool behaves over MCP (CFG-10, MCP-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ConfirmOverMcp {
    /// Ask clients that can elicit; refuse the call for clients that cannot. The default.
    #[default]
    Always,
    /// Ask clients that can elicit; run the call ungated for clients that cannot.
    Auto,
    /// Never ask; run gated calls ungated.
    Never,
}

impl ConfirmOverMcp {
    /// Parses a `confirm_over_mcp` value: trimmed, case-insensitive, empty meaning [`ConfirmOverMcp::Always`];
    /// anything else is an error listing the three values.
    ///
    /// # Errors
    ///
    /// A message listing `always`, `auto` and `never` for any other value.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t.is_empty() || t.eq_ignore_ascii_case("always") {
            Ok(ConfirmOverMcp::Always)
        } else if t.eq_ignore_ascii_case("auto") {
            Ok(ConfirmOverMcp::Auto)
        } else if t.eq_ignore_ascii_case("never") {
            Ok(ConfirmOverMcp::Never)
        } else {
            Err(format!("invalid value {s:?}: must be one of always, auto, never"))
        }
    }

    /// The canonical lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmOverMcp::Always => "always",
            ConfirmOverMcp::Auto => "auto",
            ConfirmOverMcp::Never => "never",
        }
    }
}

impl fmt::Display for ConfirmOverMcp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ConfirmOverMcp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de::str_opt(d, |s| ConfirmOverMcp::parse(s.unwrap_or_default()))
    }
}

/// `expose.agent.mcp`: MCP serving (section 15).
///
/// Zero values mean "unset"; the accessors apply the defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct McpExpose {
    /// `port` as written; 0 means unset. Use [`McpExpose::port()`] for the effective value.
    #[serde(deserialize_with = "de::port")]
    pub port: u16,
    /// `address` as written; empty is unset. Use [`McpExpose::address()`].
    #[serde(deserialize_with = "de::opt_string")]
    pub address: Option<String>,
    /// `instructions` (MCP-6): sent to clients when non-empty.
    #[serde(deserialize_with = "de::nullable")]
    pub instructions: String,
    /// `confirm_over_mcp` (CFG-10), already normalized.
    pub confirm_over_mcp: ConfirmOverMcp,
    /// `max_concurrent_tools` as written (0..=1024, checked at parse); 0 means unset. Use
    /// [`McpExpose::max_concurrent_tools()`].
    #[serde(deserialize_with = "de::concurrency")]
    pub max_concurrent_tools: u32,
    /// `tool_timeout` as written (never negative after parsing). Use [`McpExpose::tool_timeout()`].
    #[serde(deserialize_with = "de::non_negative_duration")]
    pub tool_timeout: Option<GoDuration>,
    /// `max_sessions` as written (0..=65536, checked at parse); 0 means unset. Use
    /// [`McpExpose::max_sessions()`].
    #[serde(deserialize_with = "de::max_sessions")]
    pub max_sessions: u32,
    /// `session_idle_timeout` as written (above zero when set, checked at parse). Use
    /// [`McpExpose::session_idle_timeout()`].
    #[serde(deserialize_with = "de::positive_duration")]
    pub session_idle_timeout: Option<GoDuration>,
    /// `tasks`: tool calls run as MCP tasks for clients that declare the tasks extension (TASK-1..6).
    #[serde(deserialize_with = "de::nullable")]
    pub tasks: McpTasks,
    /// `auth`: OAuth 2.1 bearer tokens for MCP over HTTP (AUTH-1..10). Absent, a loopback server takes any
    /// request as before, and a server on any other address refuses to start unless
    /// [`insecure_no_auth`](McpExpose::insecure_no_auth) is set (AUTH-9). Not used over stdio.
    pub auth: Option<super::McpAuth>,
    /// `insecure_no_auth`: serve on an address that is not loopback without `auth` (with a warning at start),
    /// for a server behind a gateway that authenticates for it (AUTH-9).
    #[serde(deserialize_with = "de::nullable")]
    pub insecure_no_auth: bool,
    /// `builtins` (KNOW-12): when set, exactly the built-in tools MCP serves, by name (`[knowledge_search]`). Each
    /// must be a built-in this harness has whose role allows serving; an agent-only one (`ask_human_*`,
    /// `memory_*`) is refused with its location. Unset, servable built-ins are served as
    /// before, except `knowledge_search`, which is served only when listed.
    #[serde(deserialize_with = "de::nullable")]
    pub builtins: Option<Vec<String>>,
}

/// `expose.agent.mcp.tasks`: how many MCP tasks are kept, and for how long (TASK-3).
///
/// Zero values mean "unset"; the accessors apply the defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct McpTasks {
    /// `ttl` as written (above zero when set, and at least `tool_timeout`; checked at load). Use
    /// [`McpTasks::ttl()`].
    #[serde(deserialize_with = "de::positive_duration")]
    pub ttl: Option<GoDuration>,
    /// `max` as written (0..=1024, checked at parse); 0 means unset. Use [`McpTasks::max()`].
    #[serde(deserialize_with = "de::task_max")]
    pub max: u32,
}

impl McpTasks {
    /// How long a task is kept from its creation, [`DEFAULT_MCP_TASK_TTL`] when unset (serving uses
    /// [`McpExpose::task_ttl`], which is never shorter than `tool_timeout`). A task still running then is
    /// stopped (its process group killed) and reported `failed`; a finished one is dropped with its result once it
    /// has been finished for this long.
    pub fn ttl(&self) -> Duration {
        self.ttl.and_then(GoDuration::to_std).filter(|d| !d.is_zero()).unwrap_or(DEFAULT_MCP_TASK_TTL)
    }

    /// How many tasks are kept at once, running or finished, [`DEFAULT_MCP_TASK_MAX`] when 0/unset. Past it a new
    /// task is refused, never queued.
    pub fn max(&self) -> usize {
        if self.max == 0 { DEFAULT_MCP_TASK_MAX } else { self.max as usize }
    }
}

impl McpExpose {
    /// The TTL tasks get (TASK-3): `tasks.ttl` as written, else the larger of [`DEFAULT_MCP_TASK_TTL`] and
    /// [`tool_timeout`](McpExpose::tool_timeout), so a call run as a task is never cut shorter than the same call
    /// run directly.
    pub fn task_ttl(&self) -> Duration {
        match self.tasks.ttl {
            Some(_) => self.tasks.ttl(),
            None => self.tasks.ttl().max(self.tool_timeout()),
        }
    }

    /// The configured port, or 8080 when 0/unset (MCP-2; the CLI flag and environment come first).
    pub fn port(&self) -> u16 {
        if self.port == 0 { DEFAULT_MCP_PORT } else { self.port }
    }

    /// The configured bind address, or `127.0.0.1` when unset (MCP-3).
    pub fn address(&self) -> &str {
        self.address.as_deref().filter(|a| !a.is_empty()).unwrap_or(DEFAULT_MCP_ADDRESS)
    }

    /// The concurrency bound, 2 when 0/unset (MCP-16).
    pub fn max_concurrent_tools(&self) -> usize {
        concurrency_or_default(self.max_concurrent_tools)
    }

    /// The per-call timeout, 30s when unset or zero (MCP-17).
    pub fn tool_timeout(&self) -> Duration {
        timeout_or_default(self.tool_timeout)
    }

    /// How many MCP sessions may be open at once, [`DEFAULT_MCP_MAX_SESSIONS`] when 0/unset. At the cap a new
    /// session replaces the least recently used one with no request in progress (whose next request gets `404`, on
    /// which clients open a new session); only when every session is busy does a new one get
    /// `503 Service Unavailable` (MCP-24).
    pub fn max_sessions(&self) -> usize {
        if self.max_sessions == 0 { DEFAULT_MCP_MAX_SESSIONS } else { self.max_sessions as usize }
    }

    /// How long a session may go without a request before it is closed, [`DEFAULT_MCP_SESSION_IDLE`] when unset.
    pub fn session_idle_timeout(&self) -> Duration {
        self.session_idle_timeout
            .and_then(GoDuration::to_std)
            .filter(|d| !d.is_zero())
            .unwrap_or(DEFAULT_MCP_SESSION_IDLE)
    }
}

/// `expose.agent.a2a`: agent-to-agent serving limits (A2A-11), separate from the MCP ones.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct A2aExpose {
    /// `max_concurrent_tools` as written (0..=1024); 0 means unset. Use [`A2aExpose::max_concurrent_tools()`].
    #[serde(deserialize_with = "de::concurrency")]
    pub max_concurrent_tools: u32,
    /// `tool_timeout` as written (never negative after parsing). Use [`A2aExpose::tool_timeout()`].
    #[serde(deserialize_with = "de::non_negative_duration")]
    pub tool_timeout: Option<GoDuration>,
    /// `queue` as written (0..=1024); 0 means unset. Use [`A2aExpose::queue()`].
    #[serde(deserialize_with = "de::a2a_queue")]
    pub queue: u32,
    /// `any_reply_subject` (A2A-15): also answer a request whose reply subject is not an inbox. Off by default: a
    /// reply published onto another subject (another agent's tool subject, say) is a request the server forged.
    pub any_reply_subject: bool,
}

/// Default `expose.agent.a2a.queue` (A2A-14): tool requests waiting for a slot, beyond the running ones.
pub const DEFAULT_A2A_QUEUE: usize = 32;
/// The largest `expose.agent.a2a.queue`: each waiting request holds its body (up to 768 KiB).
pub const MAX_A2A_QUEUE: usize = 1024;

impl A2aExpose {
    /// How many tool requests may wait for a slot (A2A-14): 32 when 0/unset. Past them a request is answered at
    /// once with the framework's `503` error ("busy, retry"), never dropped.
    pub fn queue(&self) -> usize {
        if self.queue == 0 { DEFAULT_A2A_QUEUE } else { self.queue as usize }
    }

    /// The concurrency bound, 2 when 0/unset.
    pub fn max_concurrent_tools(&self) -> usize {
        concurrency_or_default(self.max_concurrent_tools)
    }

    /// The per-call timeout, 30s when unset or zero.
    pub fn tool_timeout(&self) -> Duration {
        timeout_or_default(self.tool_timeout)
    }
}

fn concurrency_or_default(v: u32) -> usize {
    if v == 0 { DEFAULT_MAX_CONCURRENT_TOOLS } else { v as usize }
}

fn timeout_or_default(v: Option<GoDuration>) -> Duration {
    v.and_then(GoDuration::to_std).filter(|d| !d.is_zero()).unwrap_or(DEFAULT_TOOL_TIMEOUT)
}
