use serde::Serialize;

/// The result of a tool call, as the model or client reads it.
///
/// Never an `Err`: a failure is an output with [`is_error`](ToolOutput::is_error) set and text naming the
/// problem. A command that ran carries an [`ExecReport`] (EXEC-13).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    content: String,
    is_error: bool,
    // Boxed: most outputs are not a command's, and the captured text is kept beside the JSON for a2a (A2A-9).
    exec: Option<Box<(ExecReport, String)>>,
    interrupted: Option<Interrupted>,
}

/// Why a call stopped before it finished on its own (AUD-1: recorded as `timed_out` or `cancelled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Interrupted {
    /// Its deadline passed.
    TimedOut,
    /// It was cancelled: by the caller, the run, or a shutting-down server.
    Cancelled,
}

/// What happened when a command ran: the facts of the EXEC-13 result, kept apart for serving paths (A2A-9) so
/// they need not re-parse the JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecReport {
    /// The display command line (EXEC-6).
    pub command: String,
    /// The exit status; `-1` when the process was ended by a signal.
    pub exit_code: i32,
    /// Whether the output was cut to its head and tail (EXEC-12).
    pub truncated: bool,
}

#[derive(Serialize)]
struct ExecJson<'a> {
    command: &'a str,
    exit_code: i32,
    output: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

impl ExecReport {
    /// The facts of a command that ran.
    pub fn new(command: impl Into<String>, exit_code: i32, truncated: bool) -> Self {
        ExecReport { command: command.into(), exit_code, truncated }
    }
}

impl ToolOutput {
    /// A normal result with `content` as its text.
    pub fn success(content: impl Into<String>) -> Self {
        ToolOutput { content: content.into(), is_error: false, exec: None, interrupted: None }
    }

    /// An error result the model reads; `message` names what went wrong.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput { content: message.into(), is_error: true, exec: None, interrupted: None }
    }

    /// A normal result holding `value` serialized as compact JSON.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Self {
        match serde_json::to_string(value) {
            Ok(s) => Self::success(s),
            Err(e) => Self::error(format!("could not encode the tool result: {e}")),
        }
    }

    /// The EXEC-13 result of a command that ran:
    /// `{"command": ..., "exit_code": ..., "output": ..., "truncated": true}` (`truncated` omitted when false).
    pub fn exec(report: ExecReport, output: impl Into<String>) -> Self {
        let output = output.into();
        let json = ExecJson {
            command: &report.command,
            exit_code: report.exit_code,
            output: &output,
            truncated: report.truncated,
        };
        // Serializing strings and integers cannot fail.
        let content = serde_json::to_string(&json).unwrap_or_default();
        ToolOutput { content, is_error: false, exec: Some(Box::new((report, output))), interrupted: None }
    }

    /// An error result for a call stopped by its deadline; `message` says so.
    pub fn timed_out(message: impl Into<String>) -> Self {
        ToolOutput { interrupted: Some(Interrupted::TimedOut), ..Self::error(message) }
    }

    /// An error result for a call that was cancelled; `message` says by whom.
    pub fn cancelled(message: impl Into<String>) -> Self {
        ToolOutput { interrupted: Some(Interrupted::Cancelled), ..Self::error(message) }
    }

    /// Why the call stopped before it finished, if it did.
    pub fn interrupted(&self) -> Option<Interrupted> {
        self.interrupted
    }

    /// The text the model reads.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The text, by value.
    pub fn into_content(self) -> String {
        self.content
    }

    /// Whether this is an error result.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The execution facts when a command ran.
    pub fn exec_report(&self) -> Option<&ExecReport> {
        self.exec.as_deref().map(|(report, _)| report)
    }

    /// The facts and captured text of a command that ran, by value; any other output back as it was.
    #[cfg(feature = "nats")]
    pub(crate) fn into_exec(self) -> Result<(ExecReport, String), ToolOutput> {
        match self.exec {
            Some(exec) => Ok(*exec),
            None => Err(self),
        }
    }

    /// The captured text of a command that ran (EXEC-13's `output`, EXEC-12-capped), for serving paths that send
    /// it apart from the facts (A2A-9).
    pub fn exec_output(&self) -> Option<&str> {
        self.exec.as_deref().map(|(_, output)| output.as_str())
    }
}
