use super::Tags;
use super::compiled::{self, Compiled};
use super::schema::{self, InputError};
use serde_json::Value;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// What kind of tool this is; it decides ordering (SEL-12), serving (MCP-7) and deferral (SEARCH-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolKind {
    /// A runnable leaf command of the wrapped application.
    Command,
    /// An in-process built-in enabled by configuration.
    Builtin,
    /// A tool imported from another agent (a2a) or an MCP server.
    Imported,
    /// A tool a host injected programmatically.
    Custom,
}

/// Where a tool may be exposed besides the agent's own model (MCP-7, A2A-2), set by the source or factory that made
/// it. [`ToolSpec::new`] picks the default for the tool's kind ([`Exposure::default_for`]);
/// [`ToolSpec::with_exposure`] overrides it.
///
/// ```
/// use fisk_ai::tool::{Exposure, ToolKind, ToolSpec};
/// use serde_json::json;
///
/// // A host's own tool is agent-only unless it says otherwise.
/// let spec = ToolSpec::new("uptime", ToolKind::Custom, json!({"type": "object"}));
/// assert_eq!(spec.exposure(), Exposure::AgentOnly);
/// let spec = spec.with_exposure(Exposure::Servable);
/// assert!(spec.exposure().is_servable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Exposure {
    /// Only the agent's own model may call it: it needs the run (an operator for `ask_human_*`, the run's memory
    /// store for `memory_*`), or its maker did not say it may be served. The default for built-ins and custom tools.
    AgentOnly,
    /// It may also be served to MCP clients (a command tool also to other agents over a2a). The default for
    /// command tools.
    Servable,
    /// The agent's model may call it, but it is never served on: a tool imported from an MCP server or another agent
    /// (MCPI-9, IMPORT-11). The default for imported tools.
    NeverServed,
}

impl Exposure {
    /// The exposure of a tool of `kind` that did not choose one.
    pub fn default_for(kind: ToolKind) -> Self {
        match kind {
            ToolKind::Command => Exposure::Servable,
            ToolKind::Imported => Exposure::NeverServed,
            ToolKind::Builtin | ToolKind::Custom => Exposure::AgentOnly,
        }
    }

    /// Whether a server may offer it.
    pub fn is_servable(self) -> bool {
        self == Exposure::Servable
    }
}

/// Where a tool comes from, as `info` and events show it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Origin {
    /// This process: command tools, built-ins and custom tools.
    #[default]
    Local,
    /// Another agent over NATS, under its alias.
    #[non_exhaustive]
    Remote {
        /// The effective alias of the host.
        alias: String,
        /// The host's `remote_tools` name, its identity (the alias when built with [`Origin::remote`]).
        host: String,
    },
    /// An MCP server, under its alias.
    #[non_exhaustive]
    Mcp {
        /// The effective alias of the server.
        alias: String,
        /// The server's `mcp_servers` name (the alias when built with [`Origin::mcp`]).
        server: String,
    },
}

impl Origin {
    /// A tool imported from another agent over NATS under `alias`.
    pub fn remote(alias: impl Into<String>) -> Self {
        let alias = alias.into();
        Origin::Remote { host: alias.clone(), alias }
    }

    /// A tool imported from the agent `host` (its identity) under `alias`.
    pub fn remote_host(host: impl Into<String>, alias: impl Into<String>) -> Self {
        Origin::Remote { alias: alias.into(), host: host.into() }
    }

    /// A tool imported from an MCP server under `alias` (the server's name too).
    pub fn mcp(alias: impl Into<String>) -> Self {
        let alias = alias.into();
        Origin::Mcp { server: alias.clone(), alias }
    }

    /// A tool imported from the MCP server `server` under `alias`.
    pub fn mcp_server(server: impl Into<String>, alias: impl Into<String>) -> Self {
        Origin::Mcp { alias: alias.into(), server: server.into() }
    }

    /// How a trace or `info` names the source of an imported tool: `mcp <server>` or `remote <host>`; `None`
    /// for local tools (MCPI-9, IMPORT-10).
    pub fn imported_from(&self) -> Option<String> {
        match self {
            Origin::Local => None,
            Origin::Remote { host, .. } => Some(format!("remote {host}")),
            Origin::Mcp { server, .. } => Some(format!("mcp {server}")),
        }
    }
}

impl fmt::Display for Origin {
    /// `local`, or the alias for imported tools (the INFO-4 SOURCE column).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Local => f.write_str("local"),
            Origin::Remote { alias, .. } | Origin::Mcp { alias, .. } => f.write_str(alias),
        }
    }
}

/// The description of a tool: everything but how to run it.
///
/// Built by value:
///
/// ```
/// use fisk_ai::tool::{Tags, ToolKind, ToolSpec};
/// use serde_json::json;
///
/// let spec = ToolSpec::new("cow_say", ToolKind::Command, json!({"type": "object"}))
///     .with_description("A named cow says something\n\nTags: impact:ro")
///     .with_plain_description("A named cow says something")
///     .with_command_path(["cow", "say"])
///     .with_tags(Tags::new(["impact:ro"]));
/// assert_eq!(spec.display_path(), "cow say");
/// ```
pub struct ToolSpec {
    name: String,
    kind: ToolKind,
    origin: Origin,
    command_path: Vec<String>,
    description: String,
    plain_description: String,
    input_schema: Schema,
    tags: Tags,
    no_defer: bool,
    confirm: bool,
    exposure: Exposure,
    /// The JSON Schema of a normal result's JSON, where the tool declares one (TYPED-2).
    output_schema: Option<Arc<Value>>,
    // Compiled on first use, for a schema given up front; lazy schemas are compiled through `compiled`'s cache.
    validator: OnceLock<compiled::Validator>,
}

impl ToolSpec {
    /// A spec with a name, a kind and an input schema; everything else empty.
    pub fn new(name: impl Into<String>, kind: ToolKind, input_schema: Value) -> Self {
        ToolSpec {
            name: name.into(),
            kind,
            origin: Origin::Local,
            command_path: Vec::new(),
            description: String::new(),
            plain_description: String::new(),
            input_schema: Schema::Ready(input_schema),
            tags: Tags::default(),
            no_defer: false,
            confirm: false,
            exposure: Exposure::default_for(kind),
            output_schema: None,
            validator: OnceLock::new(),
        }
    }

    /// A spec whose input schema is built by `make` the first time it is needed (a large application's tools
    /// then load without decoding every schema).
    pub fn new_lazy(name: impl Into<String>, kind: ToolKind, make: impl Fn() -> Value + Send + Sync + 'static) -> Self {
        Self::new_lazy_from(name, kind, Arc::new(FnSchema(make)))
    }

    /// [`new_lazy`](Self::new_lazy) with a maker the tool shares (a command tool's parts build its schema, so
    /// each of a large tree's tools costs one allocation less).
    pub(crate) fn new_lazy_from(name: impl Into<String>, kind: ToolKind, make: Arc<dyn MakeSchema>) -> Self {
        let mut spec = Self::new(name, kind, Value::Null);
        spec.input_schema = Schema::Lazy { cell: OnceLock::new(), make };
        spec
    }

    /// Set the model description (for command tools: helps plus the `Tags:` line, TOOL-13/14). When no plain
    /// description is set, this one is used for human listings too.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Set the plain description used by human listings such as `info` (TOOL-12).
    #[must_use]
    pub fn with_plain_description(mut self, description: impl Into<String>) -> Self {
        self.plain_description = description.into();
        self
    }

    /// Set the origin.
    #[must_use]
    pub fn with_origin(mut self, origin: Origin) -> Self {
        self.origin = origin;
        self
    }

    /// Set the command path (command tools).
    #[must_use]
    pub fn with_command_path<I, S>(mut self, path: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.command_path = path.into_iter().map(Into::into).collect();
        self
    }

    /// Say where the tool may be exposed ([`Exposure`]); the default follows the kind.
    #[must_use]
    pub fn with_exposure(mut self, exposure: Exposure) -> Self {
        self.exposure = exposure;
        self
    }

    /// Set the tags (command tools only carry tags, TAG-1).
    #[must_use]
    pub fn with_tags(mut self, tags: Tags) -> Self {
        self.tags = tags;
        self
    }

    /// Keep this tool out of tool-search deferral (custom tools; command tools use `ai:no_defer`).
    #[must_use]
    pub fn with_no_defer(mut self, no_defer: bool) -> Self {
        self.no_defer = no_defer;
        self
    }

    /// Gate every call behind operator approval with trigger `ai:confirm` (GATE-3: built-ins, imports, custom
    /// tools; command tools are gated by their tags, though this works for them too).
    #[must_use]
    pub fn with_confirm(mut self, confirm: bool) -> Self {
        self.confirm = confirm;
        self
    }

    /// Declare the JSON Schema (2020-12) that every normal result's content, parsed as JSON, conforms to. MCP serves
    /// it as the tool's `outputSchema` and each result's JSON as `structuredContent` (TYPED-2). Command tools need
    /// none: their EXEC-13 envelope has one of its own.
    ///
    /// MCP takes only an object schema (`"type": "object"`): serving a tool that declares anything else fails to
    /// build, naming the tool. A normal result that is not a JSON object reaches the client as an error result
    /// naming the tool, since a success without `structuredContent` would break the declaration.
    ///
    /// ```
    /// use fisk_ai::tool::{ToolKind, ToolSpec};
    /// use serde_json::json;
    ///
    /// let spec = ToolSpec::new("disk_free", ToolKind::Custom, json!({"type": "object"}))
    ///     .with_output_schema(json!({"type": "object", "properties": {"free_bytes": {"type": "integer"}}}));
    /// assert_eq!(spec.output_schema().unwrap()["type"], "object");
    /// ```
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(Arc::new(schema));
        self
    }

    /// The schema declared with [`with_output_schema`](Self::with_output_schema).
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_deref()
    }

    /// The same spec under another name (final naming of imported tools, IMPORT-5).
    pub(crate) fn renamed(mut self, name: String) -> Self {
        self.name = name;
        self
    }

    /// The final name the model addresses the tool by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind of tool.
    pub fn kind(&self) -> ToolKind {
        self.kind
    }

    /// Where the tool comes from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The command path (empty for non-command tools).
    pub fn command_path(&self) -> &[String] {
        &self.command_path
    }

    /// The command path joined by single spaces, or the tool name for non-command tools (TOOL-9).
    pub fn display_path(&self) -> String {
        if self.command_path.is_empty() { self.name.clone() } else { self.command_path.join(" ") }
    }

    /// The description models and clients see (TOOL-15).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The description human listings show (TOOL-12).
    pub fn plain_description(&self) -> &str {
        if self.plain_description.is_empty() { &self.description } else { &self.plain_description }
    }

    /// The JSON Schema the input must satisfy.
    pub fn input_schema(&self) -> &Value {
        match &self.input_schema {
            Schema::Ready(v) => v,
            Schema::Lazy { cell, make } => cell.get_or_init(|| make.make()),
        }
    }

    /// The input schema as an owned value, without keeping it: a lazy schema not yet built is built just for the
    /// caller. Serving builds every schema once for its listing, and caching them here too would hold two copies.
    #[cfg(feature = "mcp")]
    pub(crate) fn input_schema_owned(&self) -> Value {
        match &self.input_schema {
            Schema::Ready(v) => v.clone(),
            Schema::Lazy { cell, make } => cell.get().cloned().unwrap_or_else(|| make.make()),
        }
    }

    /// The tags in declared order.
    pub fn tags(&self) -> &Tags {
        &self.tags
    }

    /// Whether the tool is never deferred behind tool search (`ai:no_defer` or [`ToolSpec::no_defer`]).
    pub fn no_defer(&self) -> bool {
        self.no_defer || self.tags.contains(super::tags::NO_DEFER)
    }

    /// Whether the tool opted into the confirmation gate regardless of tags (GATE-3). This is not the gating
    /// decision: a command tagged `ai:confirm` or a `confirm_tags` entry is gated too; ask
    /// [`SelectedTool::is_gated`](crate::select::SelectedTool::is_gated).
    pub fn confirm_opt_in(&self) -> bool {
        self.confirm
    }

    /// Where the tool may be exposed.
    pub fn exposure(&self) -> Exposure {
        self.exposure
    }

    /// Required parameters absent from `input` (TOOL-18, TOOL-19), in schema order. `None` when nothing is missing.
    pub fn missing_required(&self, input: &str) -> Option<schema::MissingRequired> {
        schema::missing_required(&self.name, self.checker().schema(), input)
    }

    /// Validate `input` against the input schema. An unknown property, a wrong type, or a value outside an enum
    /// or pattern is an [`InputError`] naming the property.
    ///
    /// # Errors
    ///
    /// An [`InputError`] naming the property, for the first violation the schema finds.
    pub fn validate_input(&self, input: &Value) -> Result<(), InputError> {
        self.checker().validate(input)
    }

    /// The input schema and its validator for one check. A lazy schema comes from the cache of recently checked
    /// tools ([`compiled`](super::compiled)) and is not kept here; a schema given up front keeps its validator.
    pub(crate) fn checker(&self) -> Checker<'_> {
        match &self.input_schema {
            Schema::Ready(_) => Checker::Kept(self),
            Schema::Lazy { make, .. } => Checker::Recent(&self.name, compiled::lookup(make)),
        }
    }
}

/// What checks one input: see [`ToolSpec::checker`].
pub(crate) enum Checker<'a> {
    /// A schema given up front, with the spec's own validator.
    Kept(&'a ToolSpec),
    /// A lazily built schema from the recently-used cache, with its tool's name.
    Recent(&'a str, Arc<Compiled>),
}

impl Checker<'_> {
    /// The input schema.
    pub(crate) fn schema(&self) -> &Value {
        match self {
            Checker::Kept(spec) => spec.input_schema(),
            Checker::Recent(_, c) => c.schema(),
        }
    }

    /// Check `input` against the schema.
    pub(crate) fn validate(&self, input: &Value) -> Result<(), InputError> {
        match self {
            Checker::Kept(spec) => {
                let schema = spec.input_schema();
                compiled::check(&spec.name, schema, spec.validator.get_or_init(|| compiled::compile(schema)), input)
            }
            Checker::Recent(name, c) => c.validate(name, input),
        }
    }
}

/// A schema given up front, or built on first use.
enum Schema {
    Ready(Value),
    Lazy { cell: OnceLock<Value>, make: Arc<dyn MakeSchema> },
}

/// What builds a lazy input schema.
pub(crate) trait MakeSchema: Send + Sync {
    /// The schema.
    fn make(&self) -> Value;
}

/// A closure as a [`MakeSchema`].
struct FnSchema<F>(F);

impl<F: Fn() -> Value + Send + Sync> MakeSchema for FnSchema<F> {
    fn make(&self) -> Value {
        (self.0)()
    }
}

impl Clone for ToolSpec {
    fn clone(&self) -> Self {
        ToolSpec {
            name: self.name.clone(),
            kind: self.kind,
            origin: self.origin.clone(),
            command_path: self.command_path.clone(),
            description: self.description.clone(),
            plain_description: self.plain_description.clone(),
            input_schema: Schema::Ready(self.input_schema().clone()),
            tags: self.tags.clone(),
            no_defer: self.no_defer,
            confirm: self.confirm,
            exposure: self.exposure,
            output_schema: self.output_schema.clone(),
            validator: OnceLock::new(),
        }
    }
}

impl fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("origin", &self.origin)
            .field("command_path", &self.command_path)
            .field("tags", &self.tags)
            .field("no_defer", &self.no_defer)
            .field("confirm", &self.confirm)
            .field("exposure", &self.exposure)
            .field("output_schema", &self.output_schema.is_some())
            .finish_non_exhaustive()
    }
}
