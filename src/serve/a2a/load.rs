//! The served set (A2A-1, A2A-2, A2A-4, A2A-5): the agent's own assembly pipeline, then only command tools,
//! narrowed by `expose.agent.tools`, without gated, invalid-name and empty-description tools.

use crate::assemble;
use crate::config::{Config, Mode};
use crate::error::{Error, Result};
use crate::gate::sanitize;
use crate::select::{Rule, SelectedTool, Toolset, is_valid_tool_name};
use crate::source::ToolSource;
use crate::tool::ToolKind;
use crate::warning::Warning;
use std::path::Path;
use std::sync::Arc;

/// What [`load`] needs besides the configuration.
pub(crate) struct Inputs<'a> {
    pub(crate) sources: Vec<Arc<dyn ToolSource>>,
    pub(crate) toolset: Option<Toolset>,
    pub(crate) working_dir: Option<&'a Path>,
    /// Credential variables scrubbed from every child (PROV-16).
    pub(crate) credentials: Vec<String>,
}

/// Validate `config` for serving (A2A-1), select its tools as a run would, and keep what a2a may serve.
pub(crate) async fn load(config: &Config, inputs: Inputs<'_>) -> Result<(Toolset, Vec<Warning>)> {
    if !config.expose.agent.agent_to_agent {
        return Err(Error::config_key(
            "expose.agent.agent_to_agent",
            "agent-to-agent serving is not enabled: set expose.agent.agent_to_agent: true",
        ));
    }
    let mut warnings = config.validate(Mode::Server)?;
    config.check_supported()?;
    let selected = match inputs.toolset {
        Some(toolset) => toolset,
        None => {
            // IMPORT-11: imported tools are never re-served, so the server does not connect to them.
            let pipeline = assemble::Inputs {
                sources: inputs.sources,
                credentials: inputs.credentials,
                working_dir: inputs.working_dir,
                imports: false,
                nats: None,
            };
            let candidates = assemble::load(config, pipeline, &mut warnings).await?;
            candidates.select(config, &mut warnings)?
        }
    };
    let mut kept: Vec<SelectedTool> = Vec::with_capacity(selected.len());
    for t in selected.iter() {
        let spec = t.spec();
        // A2A-2: only command tools the application (or a host source) lets be served; built-in, imported and
        // custom tools never are (the reply carries a command's execution report).
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
    Ok((served, warnings))
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
