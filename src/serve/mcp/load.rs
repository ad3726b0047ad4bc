//! The served tool set (MCP-1, MCP-7, MCP-20, MCP-21): the agent's own loading and selection pipeline, then only
//! command tools and MCP-servable `harness.tools` built-ins, narrowed by `expose.agent.tools`.

use crate::assemble;
use crate::builtin::{BuiltinEnv, BuiltinRegistry};
use crate::config::{Config, Mode};
use crate::error::{Error, Result};
use crate::gate::sanitize;
use crate::operator::NoOperator;
use crate::select::{Rule, SelectedTool, Toolset, is_valid_tool_name};
use crate::source::ToolSource;
use crate::tool::{Exposure, ToolKind};
use crate::warning::Warning;
use std::path::Path;
use std::sync::Arc;

/// What [`load`] needs besides the configuration.
pub(crate) struct Inputs<'a> {
    pub(crate) sources: Vec<Arc<dyn ToolSource>>,
    pub(crate) registry: &'a BuiltinRegistry,
    pub(crate) toolset: Option<Toolset>,
    pub(crate) working_dir: Option<&'a Path>,
    /// Credential variables scrubbed from every child (PROV-16).
    pub(crate) credentials: Vec<String>,
}

/// Validate `config` for MCP (lenient, MCP-1), select its tools as a run would, and keep what MCP may serve.
pub(crate) async fn load(config: &Config, inputs: Inputs<'_>) -> Result<(Toolset, Vec<Warning>)> {
    let mut warnings = config.validate(Mode::Lenient)?;
    config.check_supported()?;
    if config.expose.agent.mcp.is_none() {
        return Err(Error::config_key(
            "expose.agent.mcp",
            "MCP serving is not enabled: add an expose.agent.mcp block to the configuration (an empty {} suffices)",
        ));
    }
    let selected = match inputs.toolset {
        Some(toolset) => toolset,
        None => {
            // PROV-16: no provider runs here, but every registered one's credentials stay out of every child.
            let credentials = inputs.credentials;
            let pipeline = assemble::Inputs {
                sources: inputs.sources,
                credentials,
                working_dir: inputs.working_dir,
                imports: false,
                #[cfg(feature = "nats")]
                nats: None,
            };
            let mut candidates = assemble::load(config, pipeline, &mut warnings).await?;
            // MCP-20: built-ins served over MCP can reach no operator.
            let env = BuiltinEnv::new(config, Arc::new(NoOperator))?;
            candidates.extend(inputs.registry.build_enabled(config, &env)?);
            candidates.select(config, &mut warnings)?
        }
    };
    // MCP-21: agent-only tools have no effect here.
    if config.harness.human_in_the_loop.enabled {
        warnings.push(Warning::NoEffectOverMcp { setting: "harness.human_in_the_loop" });
    }
    if config.harness.memory.enabled {
        warnings.push(Warning::NoEffectOverMcp { setting: "harness.memory" });
    }
    // MCPI-9: imported tools are never re-served, so the server does not even connect to them.
    if !config.mcp_servers.is_empty() {
        warnings.push(Warning::NoEffectOverMcp { setting: "mcp_servers" });
    }
    // IMPORT-11: likewise for the tools of remote agents.
    if !config.remote_tools.is_empty() {
        warnings.push(Warning::NoEffectOverMcp { setting: "remote_tools" });
    }
    let loaded = selected.len();
    let mut kept: Vec<SelectedTool> = Vec::with_capacity(loaded);
    for t in selected.iter() {
        let spec = t.spec();
        // MCP-7, MCP-24: what the tool's maker said (ToolSpec::exposure): commands and servable built-ins and host
        // tools are served; ask_human_*, memory_* and other agent-only tools, and imported tools, never.
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
    let served = Toolset::new(kept, Vec::new());
    // SEL-11: expose.agent.tools narrows, never re-adds.
    let served = match &config.expose.agent.tools {
        Some(pair) => {
            let include =
                pair.include.as_ref().map(|f| Rule::from_filter("expose.agent.tools.include", f)).transpose()?;
            let exclude =
                pair.exclude.as_ref().map(|f| Rule::from_filter("expose.agent.tools.exclude", f)).transpose()?;
            served.narrow(include.as_ref(), exclude.as_ref())
        }
        None => served,
    };
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
    Ok((served, warnings))
}
