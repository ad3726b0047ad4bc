//! Tools from a fisk-built application: introspection, the leaf walk, argument mapping and safe execution.
//!
//! ```no_run
//! use fisk_ai::source::{ToolSource, fisk::FiskApp};
//!
//! # async fn demo() -> fisk_ai::Result<()> {
//! let app = FiskApp::new("/usr/local/bin/nats").with_global_flags(["context"]);
//! let loaded = app.load().await?;
//! for tool in &loaded.tools {
//!     println!("{}", tool.spec().name());
//! }
//! # Ok(()) }
//! ```

mod argv;
mod doc;
mod model;

mod walk;

#[doc(hidden)]
pub use crate::exec::captured_output;
pub use argv::{ArgvError, CommandShape};
pub use model::{AppModel, ArgModel, CmdModel, FlagModel};

use super::{Loaded, ToolSource};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::exec::{self as process, Capture, ChildEnv, ChildKind, RunError};
use crate::tool::{
    Argv, CallContext, ExecReport, InputError, MakeSchema, Prepared, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec,
};
use crate::warning::Warning;
use async_trait::async_trait;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Largest introspection document accepted (TOOL-3).
pub const INTROSPECTION_LIMIT: usize = 16 * 1024 * 1024;
/// Default introspection deadline (TOOL-4).
pub const INTROSPECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// The wrapped application as a [`ToolSource`]: each runnable leaf command becomes one tool.
#[derive(Debug, Clone)]
pub struct FiskApp {
    binary: Arc<Path>,
    global_flags: Vec<String>,
    env: ChildEnv,
    introspect_timeout: Duration,
}

/// A global flag of the application, as `info` lists it (INFO-10).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GlobalFlag {
    /// Long name without dashes.
    pub name: String,
    /// Help text.
    pub help: String,
    /// Whether the model may set it (allowlisted, or required).
    pub exposed: bool,
    /// Whether the application marks it required (and so it is always exposed, GLOBAL-5).
    pub required: bool,
}

impl FiskApp {
    /// Wrap the application at `binary` (a path, or a name looked up on `PATH`), exposing no global flag.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        FiskApp {
            binary: Arc::from(binary.into()),
            global_flags: Vec::new(),
            env: ChildEnv::new(),
            introspect_timeout: INTROSPECTION_TIMEOUT,
        }
    }

    /// The source `application_path` and `global_flags` describe, or `None` when no application is wrapped
    /// (TOOL-7).
    pub fn from_config(config: &Config) -> Option<Self> {
        let path = config.application_path.as_ref()?;
        Some(FiskApp::new(path.clone()).with_global_flags(config.global_flags.iter().cloned()))
    }

    /// Allow the model to set these global flags (GLOBAL-2; `--context` and `context` are the same).
    #[must_use]
    pub fn with_global_flags<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        self.global_flags = walk::normalize_flag_names(&names);
        self
    }

    /// The child environment for introspection and tool calls (credential scrubbing, working directory).
    #[must_use]
    pub fn with_env(mut self, env: ChildEnv) -> Self {
        self.env = env;
        self
    }

    /// The introspection deadline; 30 s by default (TOOL-4).
    #[must_use]
    pub fn with_introspect_timeout(mut self, timeout: Duration) -> Self {
        self.introspect_timeout = timeout;
        self
    }

    /// The binary.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// Why a binary that failed to start may not be where the operator thinks.
    fn path_hint(&self, e: &std::io::Error) -> String {
        if self.binary.is_dir() {
            return " (it is a directory)".to_owned();
        }
        let relative = self.binary.is_relative() && self.binary.components().count() > 1;
        match (e.kind(), relative, std::env::current_dir()) {
            (std::io::ErrorKind::NotFound, true, Ok(cwd)) => {
                format!(" (a relative application_path resolves against the working directory {})", cwd.display())
            }
            _ => String::new(),
        }
    }

    /// Run `<binary> --fisk-introspect` once and decode the document (TOOL-1..5): scrubbed environment, the process
    /// working directory, own process group, 16 MiB cap (rejected, never truncated), bounded by the deadline; no
    /// descendant outlives it (EXEC-17).
    ///
    /// # Errors
    ///
    /// An introspection error when the binary cannot be started, exits non-zero, times out, prints more than 16 MiB, or
    /// prints a document that does not decode.
    pub async fn introspect(&self) -> Result<AppModel> {
        let output = self.introspect_bytes().await?;
        self.decode(&output)
    }

    /// Introspect once and build the tools, in this application's own environment
    /// ([`with_env`](FiskApp::with_env); by default every compiled-in provider's credentials are scrubbed). The
    /// harness calls [`ToolSource::load`] instead, with the scrub set of every registered plug-in.
    ///
    /// # Errors
    ///
    /// An introspection error (the binary cannot run, fails, times out or prints too much) or a decoding error.
    pub async fn load(&self) -> Result<Loaded> {
        self.tools_from_vec(self.introspect_bytes().await?)
    }

    /// Run `<binary> --fisk-introspect` and return what it printed, failing as [`introspect`](Self::introspect)
    /// does on everything but the decode.
    async fn introspect_bytes(&self) -> Result<Vec<u8>> {
        let bin = self.binary.display();
        let args = ["--fisk-introspect".to_owned()];
        let cap = Capture::Reject(INTROSPECTION_LIMIT);
        let ctx = CallContext::new().with_timeout(self.introspect_timeout);
        let done = process::run(&self.binary, &args, &self.env, ChildKind::Introspection, cap, &ctx).await;
        let done = done.map_err(|e| match e {
            RunError::Spawn(e) => {
                Error::introspection(format!("cannot run {bin} --fisk-introspect: {e}{}", self.path_hint(&e)))
                    .with_source(e)
            }
            RunError::Io(e) => {
                Error::introspection(format!("reading the output of {bin} --fisk-introspect failed: {e}"))
                    .with_source(e)
            }
            RunError::TimedOut(d) => Error::introspection(format!(
                "{bin} --fisk-introspect did not finish within {}; its process group was killed",
                crate::config::format_duration(d)
            )),
            RunError::Cancelled => Error::introspection(format!("introspection of {bin} was cancelled")),
            RunError::TooLarge(limit) => Error::introspection(format!(
                "{bin} --fisk-introspect printed more than the {} MiB limit ({limit} bytes); the document is never \
                 truncated",
                limit / (1024 * 1024)
            )),
        })?;
        if done.exit_code != 0 {
            let text = process::into_text(done.output);
            let text: String = text.trim().chars().take(500).collect();
            return Err(Error::introspection(format!(
                "{bin} --fisk-introspect exited with status {}{}",
                done.exit_code,
                if text.is_empty() { String::new() } else { format!(": {text}") }
            )));
        }
        Ok(done.output)
    }

    /// The classic decode of a document, with the introspection error wording.
    fn decode(&self, bytes: &[u8]) -> Result<AppModel> {
        AppModel::from_slice(bytes).map_err(|e| {
            Error::introspection(format!(
                "{} --fisk-introspect printed a document that is not a fisk application model: {e}",
                self.binary.display()
            ))
            .with_source(e)
        })
    }

    /// The application's exposable global flags (hidden and framework flags left out), marking the exposed ones.
    /// Fails like [`load`](ToolSource::load) on an allowlist entry that names no exposable global.
    ///
    /// # Errors
    ///
    /// A configuration error naming a `global_flags` entry that names no exposable global flag.
    pub fn describe_globals(&self, app: &AppModel) -> Result<Vec<GlobalFlag>> {
        let exposed = walk::exposed_globals(&app.flags, &self.global_flags, &self.binary)?;
        Ok(app
            .flags
            .iter()
            .filter(|f| walk::exposable(f))
            .map(|f| GlobalFlag {
                name: f.name.clone(),
                help: f.help.clone(),
                exposed: exposed.iter().any(|e| e.name == f.name),
                required: f.required,
            })
            .collect())
    }

    /// Turn a decoded document into tools, without running anything: walk, names, descriptions, schemas with
    /// exposed globals merged, and the TAG-6/TAG-7/TOOL-10 warnings.
    ///
    /// # Errors
    ///
    /// A configuration error naming a `global_flags` entry that names no exposable global flag.
    pub fn tools_from_model(&self, app: AppModel) -> Result<Loaded> {
        let shared = self.shared(walk::exposed_globals(&app.flags, &self.global_flags, &self.binary)?);
        let (mut tools, mut warnings) = (Vec::new(), Vec::new());
        let derived = walk::leaves(app.commands, &mut warnings, |leaf| tools.push(command_tool(leaf, &shared)));
        Ok(self.loaded(tools, warnings, derived))
    }

    /// Decode an introspection document and turn it into tools, as [`tools_from_model`](Self::tools_from_model)
    /// after [`AppModel::from_slice`] would, but faster and in less memory: the document is kept whole and each
    /// tool decodes its own schema, flags and args from it only when first needed. This is what
    /// [`load`](ToolSource::load) does.
    ///
    /// # Errors
    ///
    /// An introspection error when the document does not decode; otherwise as
    /// [`tools_from_model`](Self::tools_from_model).
    pub fn tools_from_slice(&self, bytes: &[u8]) -> Result<Loaded> {
        self.tools_from_vec(bytes.to_vec())
    }

    /// [`tools_from_slice`](Self::tools_from_slice), taking the document by value: the tools keep it without a
    /// copy. This is what [`load`](ToolSource::load) does with the introspection output.
    ///
    /// # Errors
    ///
    /// As [`tools_from_slice`](Self::tools_from_slice).
    pub fn tools_from_vec(&self, bytes: Vec<u8>) -> Result<Loaded> {
        let text = match String::from_utf8(bytes) {
            Ok(text) => Arc::new(text),
            Err(e) => return self.tools_from_model(self.decode(e.as_bytes())?),
        };
        // Whatever is wrong with the document, the classic decode reports it exactly as it always has.
        let classic = || self.tools_from_model(self.decode(text.as_bytes())?);
        let Some(app) = doc::parse(&text) else {
            return classic();
        };
        let globals = match walk::exposed_globals(&app.flags, &self.global_flags, &self.binary) {
            Ok(globals) => globals,
            Err(e) if doc::checked(&app.commands) => return Err(e),
            Err(_) => return classic(),
        };
        let shared = self.shared(globals);
        let (mut tools, mut warnings) = (Vec::new(), Vec::new());
        let (ok, derived) = doc::checked_while(&app.commands, text.len(), || {
            walk::doc_leaves(&text, &app.commands, &mut warnings, |leaf| tools.push(command_tool(leaf, &shared)))
        });
        if !ok {
            return classic();
        }
        Ok(self.loaded(tools, warnings, derived))
    }

    fn shared(&self, globals: Vec<FlagModel>) -> Arc<AppShared> {
        Arc::new(AppShared { globals, binary: self.binary.clone(), env: self.env.clone() })
    }

    /// The tools, after the walk's warnings and TOOL-10's count of derived schemas.
    fn loaded(&self, tools: Vec<Arc<dyn Tool>>, mut warnings: Vec<Warning>, derived: usize) -> Loaded {
        if derived > 0 {
            warnings.push(Warning::DerivedSchemas { binary: self.binary.to_path_buf(), commands: derived });
        }
        Loaded { tools, warnings }
    }
}

/// One leaf as a tool, its schema built when first needed.
fn command_tool(leaf: walk::Leaf, shared: &Arc<AppShared>) -> Arc<dyn Tool> {
    let command = Arc::new(CommandParts { parts: leaf.parts, app: shared.clone() });
    let spec = ToolSpec::new_lazy_from(leaf.name, ToolKind::Command, command.clone())
        .with_description(leaf.description)
        .with_plain_description(leaf.plain_description)
        .with_tags(leaf.tags)
        .with_command_path(leaf.path);
    Arc::new(CommandTool { spec, command })
}

#[async_trait]
impl ToolSource for FiskApp {
    fn name(&self) -> &str {
        self.binary.to_str().unwrap_or("application")
    }

    /// Introspection and every call run with the pipeline's scrub set added to this source's own.
    /// The application's own environment ([`with_env`](FiskApp::with_env)) merged with the context's.
    async fn load(&self, ctx: &super::LoadContext) -> Result<Loaded> {
        self.clone().with_env(self.env.merged(ctx.env())).load().await
    }
}

/// What every tool of one application shares.
struct AppShared {
    globals: Vec<FlagModel>,
    binary: Arc<Path>,
    env: ChildEnv,
}

/// What a command tool and its lazily built schema share.
struct CommandParts {
    parts: doc::LeafParts,
    app: Arc<AppShared>,
}

impl MakeSchema for CommandParts {
    fn make(&self) -> Value {
        let (p, app) = (&self.parts, &self.app);
        // Only a global merge needs the names.
        let names = if app.globals.is_empty() { Vec::new() } else { p.names() };
        if let Some(v) = p.schema().and_then(|raw| walk::input_schema_named(raw, &app.globals, &names)) {
            return v;
        }
        let shape = p.shape_for_schema();
        walk::input_schema(p.schema(), &app.globals, &shape.flags, &shape.args)
    }
}

/// One leaf command as a tool.
struct CommandTool {
    spec: ToolSpec,
    command: Arc<CommandParts>,
}

impl CommandTool {
    /// A command tool child, narrowed by the command's confinement tags (SBX-7).
    fn child_kind(&self) -> ChildKind {
        ChildKind::Tool(crate::sandbox::Narrowing::from_tags(self.spec.tags()))
    }

    /// `f` of the command's shape; an error naming the tool when its flags and args do not decode.
    fn with_shape<R>(&self, f: impl FnOnce(&CommandShape<'_>) -> R) -> std::result::Result<R, String> {
        let shape = self.command.parts.shape().map_err(|e| format!("tool \"{}\": {e}", self.spec.name()))?;
        Ok(f(&CommandShape {
            path: self.spec.command_path(),
            globals: &self.command.app.globals,
            flags: &shape.flags,
            args: &shape.args,
        }))
    }
}

impl std::fmt::Debug for CommandTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandTool")
            .field("spec", &self.spec)
            .field("binary", &self.command.app.binary)
            .finish_non_exhaustive()
    }
}

impl CommandTool {
    /// The input validated against the schema and mapped (a call that did not come through the dispatch path).
    fn checked_argv(&self, input: &ToolInput) -> std::result::Result<Vec<String>, ToolOutput> {
        let name = self.spec.name();
        let text = normalized(input);
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| ToolOutput::error(format!("tool \"{name}\": invalid JSON arguments: {e}")))?;
        self.spec
            .validate_input(&value)
            .map_err(|e| ToolOutput::error(format!("tool \"{name}\": {e}; the command did not run")))?;
        let argv = self
            .with_shape(|shape| shape.argv(text))
            .map_err(|e| ToolOutput::error(format!("{e}; the command did not run")))?;
        argv.map_err(|e| ToolOutput::error(format!("tool \"{name}\": {e}; the command did not run")))
    }
}

fn normalized(input: &ToolInput) -> &str {
    if input.is_null() { "{}" } else { input.as_str() }
}

#[async_trait]
impl Tool for CommandTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The argument vector joined by single spaces, without the binary (EXEC-6), each element that is empty or not
    /// plain shell-quoted so an operator can tell where one ends ([`display_argv`](crate::gate::display_argv)).
    /// The EXEC-13 `command` of the result is the plain join.
    fn display(&self, input: &ToolInput) -> String {
        match self.with_shape(|s| s.argv(normalized(input))) {
            Ok(Ok(argv)) => crate::gate::display_argv(&argv),
            _ => format!("{} {}", self.spec.display_path(), input.as_str()),
        }
    }

    /// The argv is mapped once: the operator approves exactly the vector that runs, and an input that cannot be
    /// mapped is refused before any operator is asked. The mapping reads the model's own text, not `arguments`:
    /// a number reaches argv exactly as written, which a parsed JSON value cannot promise.
    fn prepare(&self, input: &ToolInput, _arguments: &serde_json::Value) -> Result<Prepared, InputError> {
        let argv = self.with_shape(|shape| shape.argv(normalized(input))).map_err(|e| InputError::invalid(None, e))?;
        let argv = argv.map_err(|e| InputError::invalid(None, e.to_string()))?;
        let prepared = Prepared::new(crate::gate::display_argv(&argv)).with_state(Argv(argv));
        Ok(prepared.with_program(self.command.app.binary.clone()))
    }

    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput {
        let argv = match ctx.prepared::<Argv>() {
            // The dispatch path validated the input and mapped it already.
            Some(Argv(argv)) => std::borrow::Cow::Borrowed(argv),
            // Called directly: argv is a security boundary, so the input is checked here instead.
            None => match self.checked_argv(input) {
                Ok(argv) => std::borrow::Cow::Owned(argv),
                Err(out) => return out,
            },
        };
        let command = argv.join(" ");
        let ran = process::run(
            &self.command.app.binary,
            &argv[..],
            &self.command.app.env,
            self.child_kind(),
            Capture::HeadTail,
            ctx,
        )
        .await;
        match ran {
            Ok(done) => {
                let mut output = process::into_text(done.output);
                // SBX-4: a child ended by a limit says which one.
                let signalled = || done.signal.and_then(|s| self.command.app.env.confinement()?.explain_signal(s));
                if let Some(note) = done.limit.as_ref().map(|l| format!("\n[sandbox: {l}]\n")).or_else(signalled) {
                    output.push_str(&note);
                }
                let report = ExecReport { command, exit_code: done.exit_code, truncated: done.truncated };
                ToolOutput::exec(report, output)
            }
            Err(RunError::Spawn(e)) => {
                ToolOutput::error(format!("cannot run {} for \"{command}\": {e}", self.command.app.binary.display()))
            }
            Err(RunError::Io(e)) => ToolOutput::error(format!("reading the output of \"{command}\" failed: {e}")),
            Err(RunError::TimedOut(d)) => {
                crate::telemetry::tool_timeout(d, "the command did not finish within its timeout and was killed");
                ToolOutput::timed_out(format!(
                    "\"{command}\" did not finish within {} and was killed",
                    crate::config::format_duration(d)
                ))
            }
            Err(RunError::Cancelled) => ToolOutput::cancelled(format!("\"{command}\" was cancelled and killed")),
            Err(RunError::TooLarge(_)) => ToolOutput::error("output exceeded its limit"),
        }
    }
}
