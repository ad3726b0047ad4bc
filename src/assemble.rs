//! The one assembly pipeline (DESIGN §4.1) the agent, the MCP server and a2a share:
//!
//! 1. sources: the configured application first (TOOL-7), then every other source, each declaring the credential
//!    variables it owns;
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
}

/// The loaded candidates.
pub(crate) struct Candidates {
    tools: Vec<Arc<dyn Tool>>,
}

/// Steps 1 and 2: fix the child environment, then load every source once, in order. Warnings are appended.
pub(crate) async fn load(config: &Config, inputs: Inputs<'_>, warnings: &mut Vec<Warning>) -> Result<Candidates> {
    let mut sources = inputs.sources;
    if let Some(app) = FiskApp::from_config(config) {
        sources.insert(0, Arc::new(app));
    }
    let mut env = ChildEnv::new().with_scrubbed_all(inputs.credentials);
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
