//! The one assembly pipeline (DESIGN §4.1) the agent, the MCP server and a2a share:
//!
//! 1. sources: the configured application first (TOOL-7), then each `mcp_servers` entry (when the surface
//!    imports), then every other source, each declaring the credential variables it owns;
//! 2. the child environment: the scrub set is the union of every attached provider's and source's credentials,
//!    fixed before the first child (introspection included) starts (EXEC-8);
//! 3. built-ins, which each surface adds ([`Candidates::extend`]);
//! 4. [`Selection`]: the deny strip, final naming (IMPORT-5/6), include, exclude, and the [`Toolset`].

use crate::config::Config;
use crate::error::Result;
use crate::exec::ChildEnv;
use crate::select::{Selection, Toolset};
use crate::source::fisk::FiskApp;
use crate::source::{LoadContext, ToolSource, checked_dir};
use crate::tool::Tool;
use crate::warning::Warning;
use std::path::Path;
use std::sync::Arc;

/// What goes into the pipeline besides the configuration.
pub(crate) struct Inputs<'a> {
    /// The host's sources, after the configured application.
    pub(crate) sources: Vec<Arc<dyn ToolSource>>,
    /// Every attached provider's credential variables (PROV-16).
    pub(crate) credentials: Vec<String>,
    /// The tool working directory (OVR-6).
    pub(crate) working_dir: Option<&'a Path>,
    /// Whether the configured imports (`mcp_servers`) join: an agent imports, a server never re-serves imported
    /// tools (MCPI-9), so it does not connect to them.
    pub(crate) imports: bool,
}

/// The loaded candidates.
pub(crate) struct Candidates {
    tools: Vec<Arc<dyn Tool>>,
}

/// Steps 1 and 2: fix the child environment, then load every source once, in order. Warnings are appended.
pub(crate) async fn load(config: &Config, inputs: Inputs<'_>, warnings: &mut Vec<Warning>) -> Result<Candidates> {
    let mut sources = configured(config, inputs.imports)?;
    sources.extend(inputs.sources);
    // Every configured bearer variable, whether or not this surface imports (a server that does not connect to
    // `mcp_servers` still must not hand the token to its children: MCPI-4).
    let mut env = ChildEnv::new().with_scrubbed_all(inputs.credentials).with_scrubbed_all(config.bearer_token_envs());
    for source in &sources {
        env = env.with_scrubbed_all(source.credentials());
    }
    if let Some(dir) = checked_dir("tool working directory", inputs.working_dir)? {
        env = env.with_working_dir(dir);
    }
    let ctx = LoadContext::new(env);
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for source in &sources {
        let loaded = source.load_with(&ctx).await?;
        tools.extend(loaded.tools);
        warnings.extend(loaded.warnings);
    }
    Ok(Candidates { tools })
}

/// The sources the configuration names: the application (TOOL-7), then the MCP imports in entry order.
fn configured(config: &Config, imports: bool) -> Result<Vec<Arc<dyn ToolSource>>> {
    let mut sources: Vec<Arc<dyn ToolSource>> = Vec::new();
    if let Some(app) = FiskApp::from_config(config) {
        sources.push(Arc::new(app));
    }
    if !imports {
        return Ok(sources);
    }
    #[cfg(feature = "mcp")]
    for (i, entry) in config.mcp_servers.iter().enumerate() {
        let import = crate::source::mcp::McpImport::from_entry(i, entry, config.llm.budget.call_timeout())
            .map_err(|e| config.locate(e))?;
        sources.push(Arc::new(import));
    }
    Ok(sources)
}

impl Candidates {
    /// Step 3: add built-ins or custom tools.
    pub(crate) fn extend(&mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) {
        self.tools.extend(tools);
    }

    /// Step 4: select, keeping the selection's warnings.
    pub(crate) fn select(self, config: &Config, warnings: &mut Vec<Warning>) -> Result<Toolset> {
        let toolset = Selection::from_config(config)?.apply(self.tools)?;
        warnings.extend(toolset.warnings().iter().cloned());
        Ok(toolset)
    }
}
