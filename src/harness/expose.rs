//! Per-surface exposure: what of a harness's tool set each server may offer (MCP-7, MCP-20, MCP-21, A2A-2, A2A-4,
//! A2A-5, SEL-11). Roles are data ([`Exposure`](crate::tool::Exposure)): a tool's maker says whether it may be served; nothing here looks at
//! names.

use crate::config::{Config, Mode};
use crate::error::{Error, Result};
use crate::gate::sanitize;
use crate::select::{Rule, SelectedTool, Toolset, is_valid_tool_name};
#[cfg(feature = "mcp")]
use crate::tool::Exposure;
use crate::tool::ToolKind;
use crate::warning::Warning;

/// What one surface serves, and what it has to say about it.
pub(crate) struct Served {
    pub(crate) tools: Toolset,
    pub(crate) warnings: Vec<Warning>,
    /// The harness's policy hook (POL-1), which the server consults on every call.
    pub(crate) policy: Option<std::sync::Arc<dyn crate::policy::PolicyHook>>,
    /// The harness's audit trail (AUD-1), which the server writes on every call.
    pub(crate) audit: Option<std::sync::Arc<crate::audit::AuditTrail>>,
    /// The harness's approvals bucket (REPL-1), where an MCP server keeps its pending approvals.
    #[cfg(all(feature = "mcp", feature = "nats"))]
    pub(crate) approvals: Option<crate::nats::approvals::ApprovalBook>,
}

impl Served {
    fn new(tools: Toolset, warnings: Vec<Warning>) -> Served {
        Served {
            tools,
            warnings,
            policy: None,
            audit: None,
            #[cfg(all(feature = "mcp", feature = "nats"))]
            approvals: None,
        }
    }
}

/// The knowledge built-in's name (the harness adds it only with the `knowledge` feature).
#[cfg(feature = "mcp")]
const KNOWLEDGE_SEARCH: &str = "knowledge_search";

#[cfg(feature = "mcp")]
/// MCP's checks before anything loads: validated leniently (MCP-1), with MCP serving enabled.
pub(crate) fn check_mcp(config: &Config) -> Result<Vec<Warning>> {
    let warnings = config.validate(Mode::Lenient)?;
    config.check_supported()?;
    if config.expose.agent.mcp.is_none() {
        return Err(Error::config_key(
            "expose.agent.mcp",
            "MCP serving is not enabled: add an expose.agent.mcp block to the configuration (an empty {} suffices)",
        ));
    }
    Ok(warnings)
}

/// What MCP serves of `selected` (a harness's tool set, or one handed over): commands, servable built-ins and host
/// tools that say [`Exposure::Servable`], narrowed by `expose.agent.tools`. `warnings` holds the checks' and the
/// harness's warnings already.
#[cfg(feature = "mcp")]
pub(crate) fn mcp(config: &Config, selected: &Toolset, mut warnings: Vec<Warning>) -> Result<Served> {
    // MCP-21: agent-only settings have no effect here; MCPI-9 and IMPORT-11: imported tools are never re-served.
    for (on, setting) in [
        (config.harness.human_in_the_loop.enabled, "harness.human_in_the_loop"),
        (config.harness.memory.enabled, "harness.memory"),
        (!config.mcp_servers.is_empty(), "mcp_servers"),
        (!config.remote_tools.is_empty(), "remote_tools"),
    ] {
        if on {
            warnings.push(Warning::NoEffectOverMcp { setting });
        }
    }
    let loaded = selected.len();
    let listed = config.expose.agent.mcp.as_ref().and_then(|m| m.builtins.as_deref());
    if let Some(list) = listed {
        check_builtins(config, list, selected)?;
    }
    let mut kept: Vec<SelectedTool> = Vec::with_capacity(loaded);
    for t in selected.iter() {
        let spec = t.spec();
        // KNOW-12: a `builtins` list is exactly the built-ins served. Without one, built-ins are served as before,
        // except `knowledge_search`, which the reference serves only when listed: enabling knowledge for the agent
        // must not also publish the documents to every MCP client.
        let served_builtin = match listed {
            Some(l) => l.iter().any(|x| x == spec.name()),
            None => spec.name() != KNOWLEDGE_SEARCH,
        };
        if spec.kind() == ToolKind::Builtin && !served_builtin {
            continue;
        }
        match spec.exposure() {
            Exposure::Servable => {}
            // A host tool the host may have meant to serve: say why it is not, once, at start.
            Exposure::AgentOnly if spec.kind() == ToolKind::Custom => {
                let reason = "it is an agent-only tool; its ToolSpec must say Exposure::Servable to be served";
                let tool = sanitize(spec.name(), 200);
                warnings.push(Warning::NotServed { surface: "mcp", tool, reason: reason.to_owned() });
                continue;
            }
            _ => continue,
        }
        if !is_valid_tool_name(spec.name()) {
            let (name, display) = (sanitize(spec.name(), 200), sanitize(&spec.display_path(), 200));
            warnings.push(Warning::InvalidToolName { name, display });
            continue;
        }
        kept.push(t.clone());
    }
    let served = narrow(config, Toolset::new(kept, Vec::new()))?;
    if served.is_empty() {
        return Err(Error::selection(if loaded == 0 && config.application_path.is_none() {
            "no tools can be served over MCP: no application is wrapped (set application_path), no host source gave \
             any tool, and no servable built-in is listed under harness.tools (read_file, base64_encode)"
        } else {
            "no tools can be served over MCP: none of the loaded tools is servable after include/exclude, ai:deny \
             and expose.agent.tools (commands are; built-ins listed under harness.tools such as read_file and \
             base64_encode are; a host tool is when its ToolSpec says Exposure::Servable; ask_human_*, memory_* and \
             imported tools never are)"
        }));
    }
    Ok(Served::new(served, warnings))
}

/// KNOW-12: every name in `expose.agent.mcp.builtins` is a built-in this harness has, whose role allows serving.
/// An agent-only one (`ask_human_*`, `memory_*`) is refused by its role even when this harness did not build it.
#[cfg(feature = "mcp")]
fn check_builtins(config: &Config, list: &[String], selected: &Toolset) -> Result<()> {
    let agent_only: Vec<crate::tool::ToolSpec> =
        crate::operator::hitl_tools(std::sync::Arc::new(crate::operator::NoOperator))
            .iter()
            .map(|t| t.spec().clone())
            .chain(crate::memory::memory_specs())
            .collect();
    for (i, name) in list.iter().enumerate() {
        let key = format!("expose.agent.mcp.builtins[{i}]");
        let have = selected.iter().find(|t| t.spec().kind() == ToolKind::Builtin && t.spec().name() == name);
        let role = have
            .map(|t| t.spec().exposure())
            .or_else(|| agent_only.iter().find(|s| s.name() == name).map(crate::tool::ToolSpec::exposure));
        let why = match (have.is_some(), role) {
            (_, Some(Exposure::AgentOnly | Exposure::NeverServed)) => {
                format!("{name} is an agent-only built-in; it is never served over MCP")
            }
            (true, _) => continue,
            (false, _) => format!(
                "no built-in named {name} is enabled here (knowledge_search needs harness.knowledge.enabled;                  read_file and base64_encode are listed under harness.tools)"
            ),
        };
        return Err(config.locate(Error::config_key(key.clone(), format!("{key}: {why}"))));
    }
    Ok(())
}

#[cfg(feature = "nats")]
/// A2A's checks before anything loads: serving enabled, validated for serving (A2A-1).
pub(crate) fn check_a2a(config: &Config) -> Result<Vec<Warning>> {
    if !config.expose.agent.agent_to_agent {
        return Err(Error::config_key(
            "expose.agent.agent_to_agent",
            "agent-to-agent serving is not enabled: set expose.agent.agent_to_agent: true",
        ));
    }
    let warnings = config.validate(Mode::Server)?;
    config.check_supported()?;
    Ok(warnings)
}

/// What a2a serves of `selected`: servable command tools only, without gated, invalid-name and empty-description
/// ones, narrowed by `expose.agent.tools`.
#[cfg(feature = "nats")]
pub(crate) fn a2a(config: &Config, selected: &Toolset, mut warnings: Vec<Warning>) -> Result<Served> {
    let mut kept: Vec<SelectedTool> = Vec::with_capacity(selected.len());
    for t in selected.iter() {
        let spec = t.spec();
        // A2A-2: only servable command tools; built-in, imported and custom tools never are (the reply carries a
        // command's execution report).
        if spec.kind() != ToolKind::Command || !spec.exposure().is_servable() {
            continue;
        }
        let name = sanitize(spec.name(), 200);
        if !is_valid_tool_name(spec.name()) {
            warnings.push(Warning::InvalidToolName { name, display: sanitize(&spec.display_path(), 200) });
            continue;
        }
        // A2A-4: nobody can approve a gated call over a2a.
        if let Some(tag) = t.gate_trigger() {
            let reason = format!("it is gated by {tag} and no operator can approve a call over a2a");
            warnings.push(Warning::NotServed { surface: "a2a", tool: name, reason });
            continue;
        }
        if spec.description().trim().is_empty() {
            let reason = "it has an empty description".to_owned();
            warnings.push(Warning::NotServed { surface: "a2a", tool: name, reason });
            continue;
        }
        kept.push(t.clone());
    }
    let served = narrow(config, Toolset::new(kept, Vec::new()))?;
    if served.is_empty() {
        // A2A-5.
        return Err(Error::selection(
            "no tools can be served over a2a: none remain after include/exclude, ai:deny, expose.agent.tools and \
             the removal of gated, invalid-name and empty-description commands",
        ));
    }
    Ok(Served::new(served, warnings))
}

/// SEL-11: `expose.agent.tools` narrows, never re-adds.
fn narrow(config: &Config, served: Toolset) -> Result<Toolset> {
    let Some(pair) = &config.expose.agent.tools else {
        return Ok(served);
    };
    let include = pair.include.as_ref().map(|f| Rule::from_filter("expose.agent.tools.include", f)).transpose()?;
    let exclude = pair.exclude.as_ref().map(|f| Rule::from_filter("expose.agent.tools.exclude", f)).transpose()?;
    Ok(served.narrow(include.as_ref(), exclude.as_ref()))
}
