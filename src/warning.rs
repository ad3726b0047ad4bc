//! Typed warnings.
//!
//! The SDK never prints. Everything an operator should hear about but that does not stop the work is a
//! [`Warning`]: a kind with its parameters, plus a [`Display`](std::fmt::Display) rendering the example CLI
//! prints as `warning: <text>`.

use std::fmt;
use std::path::PathBuf;

/// Something worth telling the operator that does not stop the work.
///
/// ```
/// use fisk_ai::Warning;
///
/// let w = Warning::UnmatchedConfirmTag { tag: "impact:wr".into() };
/// assert_eq!(w.kind(), "unmatched_confirm_tag");
/// assert!(w.to_string().contains("impact:wr"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// TAG-6: a tag starting with `ai:` that is not reserved ([`RESERVED`](crate::tool::tags::RESERVED)).
    UnknownAiTag {
        /// The tag as written.
        tag: String,
        /// The command path, space separated.
        command: String,
    },
    /// TAG-7: behavior tags that contradict each other.
    ConflictingBehaviorTags {
        /// The command path, space separated.
        command: String,
        /// The conflicting tags, in the command's tag order.
        tags: Vec<String>,
    },
    /// GATE-4: a `harness.confirm_tags` entry that matches no loaded tool.
    UnmatchedConfirmTag {
        /// The entry.
        tag: String,
    },
    /// TOOL-10: the application carries no precomputed schemas (fisk older than v0.9.0).
    DerivedSchemas {
        /// The binary.
        binary: PathBuf,
        /// How many leaves had their schema derived from flags and args.
        commands: usize,
    },
    /// A tool whose name is not `^[a-zA-Z0-9_-]{1,128}$` cannot be addressed by a model or client; it is
    /// skipped.
    InvalidToolName {
        /// The tool name.
        name: String,
        /// The command path, space separated (the tool name for tools that are not commands).
        display: String,
    },
    /// A2A-4: a command a server leaves out (gated, or with an empty description).
    NotServed {
        /// The surface: `a2a`.
        surface: &'static str,
        /// The tool name, sanitized.
        tool: String,
        /// Why, as a phrase.
        reason: String,
    },
    /// TOOL-21: a call left out required parameters; it was neither gated nor run.
    MissingRequired {
        /// The tool.
        tool: String,
        /// The missing parameters, in schema order.
        missing: Vec<String>,
    },
    /// EXEC-3: a call's arguments failed the tool's schema; it was neither gated nor run.
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What was wrong, naming the property.
        reason: String,
    },
    /// LOOP-10: the model called a tool that is not in the set.
    UnknownTool {
        /// The name the model used.
        name: String,
    },
    /// SEARCH-6: many tools, but the provider has no tool search, so all are sent directly.
    ToolSearchUnavailable {
        /// The provider id.
        provider: String,
        /// How many tools.
        count: usize,
    },
    /// SEARCH-6: many tools, but `llm.no_tool_search` is set, so all are sent directly.
    ToolSearchDisabled {
        /// How many tools.
        count: usize,
    },
    /// HITL-11: the `ask_human_*` tools are enabled but no operator can be asked, so they will decline.
    HitlWithoutOperator,
    /// MEM-16: the memory index could not be read at run start; the run goes on without it.
    MemoryIndexUnavailable {
        /// Why.
        reason: String,
    },
    /// GATE-5: gated tools exist but no operator can be asked, so they will be declined.
    GatedWithoutOperator {
        /// How many tools are gated.
        count: usize,
    },
    /// IMPORT-3 / MCPI-5: `include.tags` on an import is ignored, since imports carry no tags.
    ImportIncludeTagsIgnored {
        /// `remote_tools` or `mcp_servers`.
        section: &'static str,
        /// The host or server entry name.
        name: String,
    },
    /// IMPORT-4 / MCPI-6: an imported tool is skipped (an empty description, a non-object input schema).
    ImportSkipped {
        /// The `mcp_servers` entry or `remote_tools` host.
        source: String,
        /// The tool's name as the source gave it (sanitized).
        tool: String,
        /// Why.
        reason: String,
    },
    /// IMPORT-8: an import contributes no tools after its filters.
    ImportEmpty {
        /// `remote_tools` or `mcp_servers`.
        section: &'static str,
        /// The host or server entry name.
        name: String,
    },
    /// HARNESS-6: a source whose policy is [`OnFailure::Warn`](crate::source::OnFailure::Warn) failed to load; it
    /// contributes no tools.
    SourceFailed {
        /// The source's name (sanitized).
        source: String,
        /// Why (sanitized).
        reason: String,
    },
    /// SESS-22: the resumed session's last turn paused on the server (`pause_turn`); that server-side state may
    /// have expired.
    PausedTurnMayHaveExpired {
        /// The session.
        session: String,
    },
    /// SESS-33: the run's end could not be recorded in its journal; the session stays resumable.
    SessionEndUnrecorded {
        /// The session.
        session: String,
        /// Why.
        reason: String,
    },
    /// MCP-21: an agent-only setting (`harness.human_in_the_loop`, `harness.memory`) has no effect over MCP.
    NoEffectOverMcp {
        /// The setting's key.
        setting: &'static str,
    },
    /// MCP-12: under `confirm_over_mcp: auto`, a gated tool ran without approval for a client that cannot be
    /// asked.
    UngatedOverMcp {
        /// The tool.
        tool: String,
        /// The resolved command line (sanitized).
        command: String,
        /// The tag that gates it.
        tag: String,
    },
    /// AUTH-9: MCP is served on an address that is not loopback without `expose.agent.mcp.auth`, because
    /// `insecure_no_auth` is set: anyone who can reach the address can call the tools.
    InsecureNoAuth {
        /// The address served.
        address: String,
    },
    /// AUTH-5: an `auth:scope=` tag that does not take effect as written.
    ScopeTag {
        /// The tool.
        tool: String,
        /// The tag as written.
        tag: String,
        /// What happens instead.
        reason: String,
    },
    /// PIN-2, PIN-3: an imported tool's description or input schema differs from its pin.
    PinChanged {
        /// The server key (`mcp_servers.github`).
        server: String,
        /// The tool (sanitized).
        tool: String,
        /// What changed: `description`, `input schema`.
        changed: Vec<&'static str>,
        /// Whether it is offered anyway (`pins: warn`).
        offered: bool,
    },
    /// PIN-2, PIN-3: a server with pins lists a tool it did not list when pinned.
    PinNew {
        /// The server key.
        server: String,
        /// The tool (sanitized).
        tool: String,
        /// Whether it is offered anyway (`pins: warn`).
        offered: bool,
    },
    /// PIN-1: a server seen for the first time: its tools are pinned as listed now. Said once per server, so a pin
    /// record that disappeared (and was re-made on trust) does not go unnoticed.
    PinFirstUse {
        /// The server key.
        server: String,
        /// How many tools were pinned.
        tools: usize,
    },
    /// PIN-4: a `pins: warn` source's pins could not be checked, so its tools are offered unchecked.
    PinUnchecked {
        /// The server key.
        server: String,
        /// Why (sanitized).
        reason: String,
    },
    /// AUD-6: `harness.audit.fail_open` is set: a call whose records cannot be written runs unrecorded.
    AuditFailOpen {
        /// The sinks.
        sinks: String,
    },
    /// AUD-6: records of a call could not be written and it went on (`fail_open`), or its last records were lost
    /// after it ran.
    AuditUnwritten {
        /// The tool.
        tool: String,
        /// Why.
        error: String,
    },
    /// SBX-6: `harness.sandbox.best_effort` is set and the kernel cannot enforce a setting, so children run
    /// without it.
    SandboxUnenforced {
        /// The setting under `harness.sandbox` (`fs`, `network`, `limits.processes`, ...).
        setting: String,
        /// The missing kernel feature or privilege.
        why: String,
    },
}

impl Warning {
    /// A stable, machine-readable name for the kind of warning.
    pub fn kind(&self) -> &'static str {
        match self {
            Warning::UnknownAiTag { .. } => "unknown_ai_tag",
            Warning::ConflictingBehaviorTags { .. } => "conflicting_behavior_tags",
            Warning::UnmatchedConfirmTag { .. } => "unmatched_confirm_tag",
            Warning::DerivedSchemas { .. } => "derived_schemas",
            Warning::InvalidToolName { .. } => "invalid_tool_name",
            Warning::NotServed { .. } => "not_served",
            Warning::ImportIncludeTagsIgnored { .. } => "import_include_tags_ignored",
            Warning::ImportSkipped { .. } => "import_skipped",
            Warning::ImportEmpty { .. } => "import_empty",
            Warning::SourceFailed { .. } => "source_failed",
            Warning::MissingRequired { .. } => "missing_required",
            Warning::InvalidArguments { .. } => "invalid_arguments",
            Warning::UnknownTool { .. } => "unknown_tool",
            Warning::ToolSearchUnavailable { .. } => "tool_search_unavailable",
            Warning::ToolSearchDisabled { .. } => "tool_search_disabled",
            Warning::GatedWithoutOperator { .. } => "gated_without_operator",
            Warning::HitlWithoutOperator => "hitl_without_operator",
            Warning::MemoryIndexUnavailable { .. } => "memory_index_unavailable",
            Warning::PausedTurnMayHaveExpired { .. } => "paused_turn_may_have_expired",
            Warning::SessionEndUnrecorded { .. } => "session_end_unrecorded",
            Warning::NoEffectOverMcp { .. } => "no_effect_over_mcp",
            Warning::UngatedOverMcp { .. } => "ungated_over_mcp",
            Warning::InsecureNoAuth { .. } => "insecure_no_auth",
            Warning::ScopeTag { .. } => "scope_tag",
            Warning::PinChanged { .. } => "pin_changed",
            Warning::PinNew { .. } => "pin_new",
            Warning::PinFirstUse { .. } => "pin_first_use",
            Warning::PinUnchecked { .. } => "pin_unchecked",
            Warning::AuditFailOpen { .. } => "audit_fail_open",
            Warning::AuditUnwritten { .. } => "audit_unwritten",
            Warning::SandboxUnenforced { .. } => "sandbox_unenforced",
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::UnknownAiTag { tag, command } => write!(
                f,
                "command \"{command}\" has unknown tag \"{tag}\"; known ai: tags are ai:deny, ai:confirm, \
                 ai:no_defer, ai:read_only, ai:destructive, ai:additive, ai:idempotent"
            ),
            Warning::ConflictingBehaviorTags { command, tags } => {
                write!(f, "command \"{command}\" has conflicting behavior tags: {}", tags.join(", "))
            }
            Warning::UnmatchedConfirmTag { tag } => {
                write!(f, "harness.confirm_tags entry \"{tag}\" matches no loaded tool; nothing is gated by it")
            }
            Warning::DerivedSchemas { binary, commands } => write!(
                f,
                "{} carries no precomputed schemas (built with fisk older than v0.9.0); derived schemas for {commands} \
                 command(s) from their flags and arguments; rebuild it with a current fisk for exact types",
                binary.display()
            ),
            Warning::InvalidToolName { name, display } => write!(
                f,
                "tool \"{display}\" is skipped: its name \"{name}\" is not made of ASCII letters, digits, '_' and '-' \
                 (at most 128), so no model or client can call it"
            ),
            Warning::NotServed { surface, tool, reason } => {
                write!(f, "tool \"{tool}\" is not served over {surface}: {reason}")
            }
            Warning::ImportSkipped { source, tool, reason } => {
                write!(f, "tool \"{tool}\" from {source} is skipped: {reason}")
            }
            Warning::ImportEmpty { section, name } => {
                write!(f, "{section} entry {name} contributes no tools after its include/exclude filters")
            }
            Warning::SourceFailed { source, reason } => {
                write!(f, "source {source} contributes no tools: it failed to load: {reason}")
            }
            Warning::MissingRequired { tool, missing } => write!(
                f,
                "the model called {tool} without required parameter(s) {}; it was not run",
                missing.join(", ")
            ),
            Warning::InvalidArguments { tool, reason } => {
                write!(f, "the model called {tool} with invalid arguments ({reason}); it was not run")
            }
            Warning::UnknownTool { name } => write!(f, "the model called unknown tool \"{name}\""),
            Warning::ToolSearchUnavailable { provider, count } => write!(
                f,
                "all {count} tools are sent directly: provider {provider} does not support tool search, which would \
                 defer them; consider narrowing the set with include/exclude"
            ),
            Warning::ToolSearchDisabled { count } => write!(
                f,
                "all {count} tools are sent directly because llm.no_tool_search is set; unset it to defer them \
                 behind tool search"
            ),
            Warning::HitlWithoutOperator => f.write_str(
                "the ask_human_* tools are enabled but no operator can be asked (no interactive terminal); they will \
                 decline every question",
            ),
            Warning::MemoryIndexUnavailable { reason } => {
                write!(f, "the memory index could not be read, so the run starts without it: {reason}")
            }
            Warning::GatedWithoutOperator { count } => write!(
                f,
                "{count} tool(s) need operator approval but no operator can be asked (no interactive terminal); \
                 they will be declined"
            ),
            Warning::ImportIncludeTagsIgnored { section, name } => {
                write!(f, "{section} entry \"{name}\": include.tags is ignored because imported tools carry no tags")
            }
            Warning::PausedTurnMayHaveExpired { session } => write!(
                f,
                "session {session} was suspended after a paused server-side turn; that server state may have expired, \
                 so the model may have to start that step again"
            ),
            Warning::SessionEndUnrecorded { session, reason } => {
                write!(f, "the end of session {session} could not be recorded (it stays resumable): {reason}")
            }
            Warning::NoEffectOverMcp { setting } => {
                write!(f, "{setting} is enabled but has no effect over MCP: its tools exist only in agent runs")
            }
            Warning::UngatedOverMcp { tool, command, tag } => write!(
                f,
                "ran {tool} without approval (tag {tag}; confirm_over_mcp is auto and the client cannot be asked): \
                 {command}"
            ),
            Warning::InsecureNoAuth { address } => write!(
                f,
                "serving MCP on {address} without authentication (expose.agent.mcp.insecure_no_auth): anyone who \
                 can reach it can call the tools"
            ),
            Warning::ScopeTag { tool, tag, reason } => write!(f, "tool {tool}: tag {tag}: {reason}"),
            Warning::PinChanged { server, tool, changed, offered } => write!(
                f,
                "{server}: tool \"{tool}\" changed its {} since it was pinned; {}",
                changed.join(" and "),
                pin_outcome(*offered)
            ),
            Warning::PinNew { server, tool, offered } => {
                write!(f, "{server}: tool \"{tool}\" is new since the server was pinned; {}", pin_outcome(*offered))
            }
            Warning::PinFirstUse { server, tools } => write!(
                f,
                "{server}: first use: its {tools} tool(s) are pinned as listed now; review them (pins list) if this \
                 server was pinned before"
            ),
            Warning::PinUnchecked { server, reason } => {
                write!(
                    f,
                    "{server}: its tools are offered unchecked (pins: warn) because its pins cannot be read: {reason}"
                )
            }
            Warning::AuditFailOpen { sinks } => write!(
                f,
                "harness.audit.fail_open is set: a call whose records cannot be written to {sinks} runs unrecorded"
            ),
            Warning::AuditUnwritten { tool, error } => {
                write!(f, "the audit records of a call of \"{tool}\" were not written: {error}")
            }
            Warning::SandboxUnenforced { setting, why } => {
                write!(f, "harness.sandbox.{setting} is not enforced (best_effort): {why}")
            }
        }
    }
}

fn pin_outcome(offered: bool) -> &'static str {
    if offered {
        "it is offered anyway (pins: warn)"
    } else {
        "it is not offered until an operator accepts it (pins accept)"
    }
}
