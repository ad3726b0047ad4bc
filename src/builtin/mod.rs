//! In-process tools: the [`BuiltinFactory`] factories `harness.tools` enables (SPEC section 12), and the registry a
//! host extends with its own.
//!
//! A factory has a name and builds a [`Tool`] from the entry's `options`; only listed tools are enabled, an unknown
//! name, a duplicate or an unknown option key is a configuration error naming it, and `confirm: true` gates the
//! tool exactly like `ai:confirm` gates a command (BUILTIN-1..3).

mod base64;
mod read_file;

pub use base64::Base64Factory;
pub use read_file::ReadFileFactory;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::operator::Prompter;
use crate::tool::Tool;
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a factory may need to build its tool.
#[derive(Clone)]
#[non_exhaustive]
pub struct BuiltinEnv {
    /// The top-level `root_directory`, absolute, when set.
    pub root_directory: Option<PathBuf>,
    /// The process working directory when the agent was built.
    pub working_dir: PathBuf,
    /// The agent's identity.
    pub identity: String,
    /// Who answers questions (the agent's prompter; one that can reach nobody when serving).
    pub prompter: Arc<dyn Prompter>,
}

impl fmt::Debug for BuiltinEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltinEnv")
            .field("root_directory", &self.root_directory)
            .field("working_dir", &self.working_dir)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl BuiltinEnv {
    /// An environment for `config`, with the process working directory and `prompter`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when the working directory cannot be read; a configuration error when
    /// the configuration's identity is invalid.
    pub fn new(config: &Config, prompter: Arc<dyn Prompter>) -> Result<Self> {
        let working_dir = std::env::current_dir()
            .map_err(|e| Error::new(crate::error::ErrorKind::Io, format!("cannot read the working directory: {e}")))?;
        Ok(BuiltinEnv {
            root_directory: config.root_directory.clone(),
            working_dir,
            identity: config.identity()?,
            prompter,
        })
    }

    /// The directory relative paths of a tool resolve under: `root_directory`, else the working directory.
    pub fn base_dir(&self) -> &Path {
        self.root_directory.as_deref().unwrap_or(&self.working_dir)
    }
}

/// A factory for one in-process tool, enabled by a `harness.tools` entry of the same name.
///
/// ```
/// use fisk_ai::builtin::{BuiltinEnv, BuiltinFactory, reject_unknown_options};
/// use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
/// use fisk_ai::async_trait;
/// use serde_json::{Map, Value, json};
/// use std::sync::Arc;
///
/// /// `harness.tools: [{name: uptime, options: {unit: s}}]`
/// struct UptimeFactory;
///
/// impl BuiltinFactory for UptimeFactory {
///     fn name(&self) -> &str {
///         "uptime"
///     }
///
///     fn build(&self, options: &Map<String, Value>, _env: &BuiltinEnv) -> fisk_ai::Result<Arc<dyn Tool>> {
///         reject_unknown_options(self.name(), options, &["unit"])?;
///         let spec = ToolSpec::new("uptime", ToolKind::Builtin, json!({"type": "object", "properties": {}}))
///             .with_description("Seconds since the host booted");
///         Ok(Arc::new(Uptime(spec)))
///     }
/// }
///
/// struct Uptime(ToolSpec);
///
/// #[async_trait]
/// impl Tool for Uptime {
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
///         ToolOutput::json(&json!({"uptime": 42}))
///     }
/// }
/// # let _ = UptimeFactory;
/// ```
pub trait BuiltinFactory: Send + Sync {
    /// The tool name, as listed under `harness.tools`.
    fn name(&self) -> &str;

    /// Build the tool from the entry's `options`. An unknown option key must be an error naming it and the tool
    /// ([`reject_unknown_options`]).
    ///
    /// # Errors
    ///
    /// A configuration error naming the tool and the option for an unknown or invalid option; any error the tool's own
    /// setup meets (a directory that cannot be read, say).
    fn build(&self, options: &Map<String, Value>, env: &BuiltinEnv) -> Result<Arc<dyn Tool>>;
}

/// The design card's name for a host built-in: the same trait as [`BuiltinFactory`], which builds the tool from its
/// `harness.tools` entry.
///
/// ```
/// use fisk_ai::builtin::{BuiltinEnv, BuiltinTool};
/// use fisk_ai::tool::Tool;
/// use serde_json::{Map, Value};
/// use std::sync::Arc;
///
/// struct Nothing;
///
/// impl BuiltinTool for Nothing {
///     fn name(&self) -> &str {
///         "nothing"
///     }
///     fn build(&self, _: &Map<String, Value>, _: &BuiltinEnv) -> fisk_ai::Result<Arc<dyn Tool>> {
///         Err(fisk_ai::Error::config("nothing to build"))
///     }
/// }
/// # let _ = Nothing;
/// ```
pub use self::BuiltinFactory as BuiltinTool;

/// Fail with a configuration error naming the first key of `options` not in `allowed` (BUILTIN-2).
///
/// # Errors
///
/// [`ErrorKind::Config`](crate::ErrorKind::Config), naming `tool`, the key, and the options it takes, for the first key
/// of `options` not in `allowed`.
pub fn reject_unknown_options(tool: &str, options: &Map<String, Value>, allowed: &[&str]) -> Result<()> {
    match options.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(Error::config_key(
            format!("harness.tools.{tool}.options.{key}"),
            format!(
                "harness.tools entry {tool}: unknown option \"{key}\"; {}",
                if allowed.is_empty() {
                    "it takes no options".to_owned()
                } else {
                    format!("known: {}", allowed.join(", "))
                }
            ),
        )),
    }
}

/// The built-in tools `harness.tools` entries can enable, by name ([`Registry`](crate::registry::Registry)).
pub type BuiltinRegistry = crate::registry::Registry<dyn BuiltinFactory>;

impl crate::registry::Named for dyn BuiltinFactory {
    fn registered_name(&self) -> &str {
        self.name()
    }
}

impl Default for BuiltinRegistry {
    fn default() -> Self {
        Self::empty()
    }
}

impl BuiltinRegistry {
    /// A registry with the crate's own `harness.tools` built-ins.
    pub fn with_defaults() -> Self {
        Self::empty().with(ReadFileFactory).with(Base64Factory)
    }

    /// Add (or replace) a factory.
    #[must_use]
    pub fn with(mut self, factory: impl BuiltinFactory + 'static) -> Self {
        self.register(Arc::new(factory));
        self
    }

    /// Build every `harness.tools` entry of `config` in list order (BUILTIN-1..3): an unknown name is an error
    /// listing the known ones; `confirm: true` gates the tool.
    ///
    /// # Errors
    ///
    /// A configuration error for a name no registered factory has (listing the known ones), or whatever a factory's
    /// [`build`](BuiltinFactory::build) returns for its entry's options.
    pub fn build_enabled(&self, config: &Config, env: &BuiltinEnv) -> Result<Vec<Arc<dyn Tool>>> {
        let mut out = Vec::with_capacity(config.harness.tools.len());
        for (i, entry) in config.harness.tools.iter().enumerate() {
            let factory = self.get(&entry.name).ok_or_else(|| {
                // Located like a parse error: file, line and column of the entry's name.
                config.locate(Error::config_key(
                    format!("harness.tools[{i}].name"),
                    format!(
                        "harness.tools[{i}].name: unknown built-in tool \"{}\"; known: {}",
                        entry.name,
                        self.listed()
                    ),
                ))
            })?;
            let tool = factory.build(&entry.options, env)?;
            out.push(if entry.confirm {
                // The one decorator: every method (prepare included) is forwarded to the built-in.
                let spec = tool.spec().clone().with_confirm(true);
                Arc::new(crate::tool::Decorated::new(tool, spec))
            } else {
                tool
            });
        }
        Ok(out)
    }
}
