//! Where `chat` reads its prompts: a line editor on a terminal (rustyline: history, Alt-Enter or a trailing `\`
//! for another line), plain lines from piped stdin otherwise. Both block, so they run on a thread of their own that
//! reads one line whenever the chat asks for one.

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Editor, Helper, KeyCode, KeyEvent, Modifiers};
use std::io::BufRead;

/// What one read gave.
pub(crate) enum Read {
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the end of piped input.
    End,
    Failed(String),
}

/// The reader thread: ask with [`read`](Lines::read).
pub(crate) struct Lines {
    ask: std::sync::mpsc::Sender<()>,
    got: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Read>>,
}

impl Lines {
    /// Start reading from the terminal's line editor (`terminal`) or from stdin's lines.
    pub(crate) fn start(terminal: bool) -> Self {
        let (ask, asked) = std::sync::mpsc::channel::<()>();
        let (give, got) = tokio::sync::mpsc::channel(1);
        std::thread::spawn(move || {
            let mut source = if terminal { Source::editor() } else { Source::Piped(std::io::stdin().lock()) };
            while asked.recv().is_ok() {
                let read = source.read();
                let end = matches!(read, Read::End | Read::Failed(_));
                if give.blocking_send(read).is_err() || end {
                    return;
                }
            }
        });
        Lines { ask, got: tokio::sync::Mutex::new(got) }
    }

    /// The next line (or why there is none).
    pub(crate) async fn read(&self) -> Read {
        let mut got = self.got.lock().await;
        if self.ask.send(()).is_err() {
            return Read::End;
        }
        got.recv().await.unwrap_or(Read::End)
    }
}

enum Source {
    Editor(Box<Editor<Multiline, DefaultHistory>>),
    Piped(std::io::StdinLock<'static>),
    Broken(String),
}

impl Source {
    fn editor() -> Self {
        // The terminal itself, not stdio: the answer may go to a file (`chat > answers.md`) while the prompt stays
        // on the screen.
        let config = rustyline::Config::builder().behavior(rustyline::Behavior::PreferTerm).build();
        match Editor::with_config(config) {
            Ok(mut editor) => {
                editor.set_helper(Some(Multiline));
                editor.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);
                Source::Editor(Box::new(editor))
            }
            Err(e) => Source::Broken(e.to_string()),
        }
    }

    fn read(&mut self) -> Read {
        match self {
            Source::Editor(editor) => match editor.readline("> ") {
                Ok(line) => {
                    let line = line.replace("\\\n", "\n");
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                    }
                    Read::Line(line)
                }
                Err(rustyline::error::ReadlineError::Interrupted) => Read::Interrupted,
                Err(rustyline::error::ReadlineError::Eof) => Read::End,
                Err(e) => Read::Failed(e.to_string()),
            },
            Source::Piped(stdin) => {
                let mut line = String::new();
                match stdin.read_line(&mut line) {
                    Ok(0) => Read::End,
                    Ok(_) => Read::Line(line),
                    Err(e) => Read::Failed(e.to_string()),
                }
            }
            Source::Broken(why) => Read::Failed(why.clone()),
        }
    }
}

/// A trailing `\` asks for another line (Alt-Enter inserts one directly).
struct Multiline;

impl Completer for Multiline {
    type Candidate = String;
}

impl Hinter for Multiline {
    type Hint = String;
}

impl Highlighter for Multiline {}

impl Validator for Multiline {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') { ValidationResult::Incomplete } else { ValidationResult::Valid(None) })
    }
}

impl Helper for Multiline {}
