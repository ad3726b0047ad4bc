//! The one public error type.
//!
//! [`Error`] is for the host: a bad configuration, a source that cannot load, a provider that keeps failing.
//! Failures the model should read (a bad argument, a non-zero exit, a declined gate) are never errors; they are
//! [`ToolOutput`](crate::tool::ToolOutput) values.

use std::fmt;
use std::path::{Path, PathBuf};

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, broadly, so a host can branch without matching message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The configuration is invalid: a bad key, value, type or combination.
    Config,
    /// The wrapped application could not be introspected (start failure, exit status, garbage, limits).
    Introspection,
    /// The tool set could not be built: an invalid rule, a name collision, no tools left.
    Selection,
    /// A tool source other than introspection failed to load.
    Source,
    /// An I/O failure outside a tool call, such as reading the configuration file.
    Io,
    /// A session journal could not be created, read, locked, appended to or resumed (SPEC section 14).
    Session,
    /// The model provider failed (after its retries), so a run ended (LOOP-11).
    Provider,
    /// A NATS connection could not be made, or a NATS request failed outside a tool call (a context that does not
    /// resolve is [`ErrorKind::Config`]).
    Nats,
    /// A run ended short of an answer: a budget, the iteration limit, cancellation, a truncated or refused reply,
    /// an interrupted approval, or an internal failure (SPEC section 9).
    Run,
    /// The audit trail could not be opened or written (AUD-6).
    Audit,
    /// The knowledge index could not be built, opened or searched (KNOW-1..).
    Knowledge,
    /// The OpenTelemetry export could not be set up: an `OTEL_*` variable that is not usable, or a subscriber that is
    /// already installed (OTEL-2; feature `otel`).
    Telemetry,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Config => "configuration error",
            ErrorKind::Introspection => "introspection error",
            ErrorKind::Selection => "tool selection error",
            ErrorKind::Source => "tool source error",
            ErrorKind::Io => "I/O error",
            ErrorKind::Session => "session error",
            ErrorKind::Provider => "model provider error",
            ErrorKind::Nats => "NATS error",
            ErrorKind::Run => "run error",
            ErrorKind::Audit => "audit error",
            ErrorKind::Knowledge => "knowledge index error",
            ErrorKind::Telemetry => "telemetry error",
        })
    }
}

/// Where in a configuration file an error was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Location {
    /// The file, when the configuration came from one.
    pub file: Option<PathBuf>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}:{}:{}", file.display(), self.line, self.column),
            None => write!(f, "line {} column {}", self.line, self.column),
        }
    }
}

/// The error type of this crate.
///
/// The message names the culprit (file and line/column, key path, tool, binary or pattern); [`Error::kind`] says
/// which family it belongs to, and [`Error::key`] / [`Error::location`] expose the structured parts for tools.
///
/// ```
/// use fisk_ai::{Config, ErrorKind};
///
/// let err = Config::from_yaml_str("identitty: x\n").unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Config);
/// assert!(err.to_string().contains("identitty"));
/// ```
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    key: Option<String>,
    location: Option<Location>,
    // Shared, so an error can be cloned (a RunOutcome is).
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error of `kind` with a complete, human-readable `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), key: None, location: None, source: None }
    }

    /// A configuration error.
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, message)
    }

    /// A configuration error about `key` (a dotted key path such as `llm.budget.max_tokens`).
    pub fn config_key(key: impl Into<String>, message: impl Into<String>) -> Self {
        let key = key.into();
        let message = message.into();
        Error { key: Some(key), ..Self::config(message) }
    }

    /// An introspection error.
    pub fn introspection(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Introspection, message)
    }

    /// A selection error.
    pub fn selection(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Selection, message)
    }

    /// Attach the underlying cause, reported by [`source`](std::error::Error::source) and not by `Display`.
    ///
    /// A message that ends with the cause's own text (`"cannot read x: {e}"`, the usual way to build one) has that
    /// suffix dropped, so the cause appears once under `{:#}` or an error-chain reporter.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        let cause = format!(": {source}");
        if let Some(kept) = self.message.strip_suffix(&cause).filter(|kept| !kept.is_empty()) {
            self.message.truncate(kept.len());
        }
        self.source = Some(std::sync::Arc::new(source));
        self
    }

    /// Attach a location in a configuration file.
    #[must_use]
    pub fn with_location(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// Attach the file the error was found in, keeping any line and column already known.
    pub(crate) fn in_file(mut self, file: &Path) -> Self {
        match &mut self.location {
            Some(loc) => loc.file = Some(file.to_path_buf()),
            None => {
                // No line is known: name the file in the message itself.
                self.message = format!("{}: {}", file.display(), self.message);
            }
        }
        self
    }

    /// The family of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The key path the error is about, when it is about one.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Where in the configuration file the error was found, when known.
    pub fn location(&self) -> Option<&Location> {
        self.location.as_ref()
    }

    /// Whether this is a configuration error.
    pub fn is_config(&self) -> bool {
        self.kind == ErrorKind::Config
    }

    /// Whether this is an introspection error.
    pub fn is_introspection(&self) -> bool {
        self.kind == ErrorKind::Introspection
    }

    /// Whether this is a selection error.
    pub fn is_selection(&self) -> bool {
        self.kind == ErrorKind::Selection
    }

    /// Whether this is a tool source error.
    pub fn is_source(&self) -> bool {
        self.kind == ErrorKind::Source
    }

    /// Whether this is an I/O error.
    pub fn is_io(&self) -> bool {
        self.kind == ErrorKind::Io
    }

    /// Whether this is a session error.
    pub fn is_session(&self) -> bool {
        self.kind == ErrorKind::Session
    }

    /// A session error, for [`SessionStore`](crate::session::SessionStore) implementations.
    pub fn session(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Session, message)
    }

    /// Whether a model provider failure ended a run.
    pub fn is_provider(&self) -> bool {
        self.kind == ErrorKind::Provider
    }

    /// Whether a run ended short of an answer for another reason (budget, cancellation, ...).
    pub fn is_run(&self) -> bool {
        self.kind == ErrorKind::Run
    }

    /// A model provider failure that ended a run.
    pub fn provider(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Provider, message)
    }

    /// A run that ended short of an answer.
    pub fn run(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Run, message)
    }

    /// An [`ErrorKind::Audit`] error: `message` names the sink.
    pub fn audit(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Audit, message)
    }

    /// An [`ErrorKind::Knowledge`] error: `message` names the index, file or endpoint.
    pub fn knowledge(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Knowledge, message)
    }

    /// An [`ErrorKind::Telemetry`] error: `message` names the variable or the setting at fault.
    pub fn telemetry(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Telemetry, message)
    }

    /// Whether the OpenTelemetry export could not be set up.
    pub fn is_telemetry(&self) -> bool {
        self.kind == ErrorKind::Telemetry
    }

    /// A NATS connection or request error.
    pub fn nats(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Nats, message)
    }

    /// Whether this is a NATS connection or request error.
    pub fn is_nats(&self) -> bool {
        self.kind == ErrorKind::Nats
    }

    /// A tool source error, for [`ToolSource`](crate::source::ToolSource) implementations.
    pub fn source_failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Source, message)
    }
}

/// `{}` is the location and the message; the cause is left to [`source`](std::error::Error::source), as the Rust
/// API guidelines ask, so error-chain reporters print it once. `{:#}` appends the whole chain (`: cause: its
/// cause`), like `anyhow`, for a program that prints one line.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{loc}: {}", self.message)?,
            None => f.write_str(&self.message)?,
        }
        if f.alternate() {
            let mut next = std::error::Error::source(self);
            while let Some(cause) = next {
                write!(f, ": {cause}")?;
                next = cause.source();
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(key) = &self.key {
            d.field("key", key);
        }
        if let Some(loc) = &self.location {
            d.field("location", loc);
        }
        if let Some(src) = &self.source {
            d.field("source", src);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}
