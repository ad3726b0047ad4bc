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

/// The longest prompt read from piped input; a longer line is refused, read past in bounded memory.
pub(crate) const MAX_LINE: usize = 1 << 20;

/// What one read gave.
pub(crate) enum Read {
    Line(String),
    /// A piped line longer than [`MAX_LINE`], skipped.
    TooLong,
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
            Source::Piped(stdin) => piped_line(stdin),
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

/// One line of piped input, holding at most [`MAX_LINE`] bytes of it: the rest of a longer line is read and dropped
/// piece by piece, so no input can make the chat hold more.
fn piped_line(stdin: &mut impl BufRead) -> Read {
    let mut line = Vec::new();
    match std::io::Read::take(&mut *stdin, MAX_LINE as u64 + 1).read_until(b'\n', &mut line) {
        Ok(0) => return Read::End,
        Ok(_) => {}
        Err(e) => return Read::Failed(e.to_string()),
    }
    if line.len() <= MAX_LINE || line.ends_with(b"\n") {
        return Read::Line(String::from_utf8_lossy(&line).into_owned());
    }
    drop(line);
    loop {
        let (used, done) = match stdin.fill_buf() {
            Ok([]) => return Read::TooLong,
            Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                Some(at) => (at + 1, true),
                None => (buf.len(), false),
            },
            Err(e) => return Read::Failed(e.to_string()),
        };
        stdin.consume(used);
        if done {
            return Read::TooLong;
        }
    }
}
