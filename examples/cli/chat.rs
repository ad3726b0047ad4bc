//! `fisk chat` (CONV-7..9): a conversation with the agent. On a terminal a line editor reads each prompt (history,
//! multi-line input with Alt-Enter or a trailing `\`), the answer streams to stdout as it arrives, `/clear` resets
//! the conversation and `/exit` or Ctrl-D ends it; Ctrl-C cancels the turn in progress and keeps the chat, and a
//! second Ctrl-C at the prompt ends it. With piped stdin each line is a prompt, with the same commands, and gated
//! commands are declined as in `run`. Built on the library's conversation API (`RunOptions::with_continuation`).

use crate::run::{AgentArgs, Prepared, Stderr, events, finish, prepare};
use clap::Args;
use fisk_ai::agent::{Continuation, NextStep, RunEvent, RunOptions, TerminalReason, TurnEnd};
use fisk_ai::async_trait;
use fisk_ai::gate::{PROMPT_LIMIT, sanitize};
use fisk_ai::llm::Delta;
use fisk_ai::session::SessionId;
use fisk_ai::tool::CancellationToken;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

#[derive(Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Journal the conversation to a session that `chat --resume` can continue.
    #[arg(long)]
    checkpoint: bool,
    /// The session id for --checkpoint (default: a new KSUID).
    #[arg(long, value_name = "ID")]
    name: Option<String>,
    /// Continue the chat session ID.
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// With --resume: continue even though the configuration changed (recorded answers are dropped).
    #[arg(long)]
    force: bool,
}

pub(crate) async fn run(args: ChatArgs) -> Result<TerminalReason, Box<dyn std::error::Error>> {
    if args.name.is_some() && !args.checkpoint {
        return Err("--name needs --checkpoint".into());
    }
    if args.resume.is_some() && args.checkpoint {
        return Err("--resume continues a checkpointed chat; it cannot be combined with --checkpoint".into());
    }
    if args.force && args.resume.is_none() {
        return Err("--force needs --resume".into());
    }
    let resume = args.resume.as_deref().map(SessionId::new).transpose()?;
    let checkpoint = match (&args.name, args.checkpoint) {
        (Some(name), _) => Some(SessionId::new(name.as_str())?),
        (None, true) => Some(SessionId::generate()),
        (None, false) => None,
    };
    // No spinner: the answer streams to the same terminal.
    let common = args.agent.common(false);
    let Prepared { agent, err, trace, stop_prompts: _ } = prepare(common, &mut None).await?;
    let terminal = std::io::stdin().is_terminal();
    let cancel = CancellationToken::new();
    let chat = Arc::new(Chat::new(crate::chat_input::Lines::start(terminal), err.clone(), cancel.clone()));
    watch_signals(chat.clone(), cancel.clone())?;
    let shown = events(err.clone(), agent.clone(), args.agent.verbose, args.agent.tool_output);
    let stream = Streamed::default();
    let sink = move |e: &RunEvent<'_>| stream.event(e, &shown);
    let options = RunOptions::new().with_cancel(cancel).with_events(sink).with_continuation(Shared(chat.clone()));
    if terminal {
        err.line(
            "chat: /clear resets the conversation, /exit or Ctrl-D ends it; Alt-Enter or a trailing \\ adds a line",
        );
    }
    let outcome = match resume {
        Some(id) => agent.resume(&id, options.with_force(args.force)).await?,
        None => {
            // The first prompt comes before anything runs; ending the chat here runs nothing.
            let Some(first) = chat.first_prompt().await else { return Ok(TerminalReason::Completed) };
            match checkpoint {
                Some(id) => agent.run(&first, options.with_checkpoint(id)).await,
                None => agent.run(&first, options).await,
            }
        }
    };
    finish(&err, &outcome, args.agent.verbose, trace.as_deref(), "chat");
    Ok(outcome.reason)
}

/// The chat's side of the conversation: reads the next prompt, and owns the current turn's cancellation.
struct Chat {
    lines: crate::chat_input::Lines,
    err: Arc<Stderr>,
    turn: Mutex<Option<CancellationToken>>,
    /// The whole chat's: SIGTERM ends it, even while the prompt waits for a line.
    cancel: CancellationToken,
}

impl Chat {
    fn new(lines: crate::chat_input::Lines, err: Arc<Stderr>, cancel: CancellationToken) -> Self {
        Chat { lines, err, turn: Mutex::new(None), cancel }
    }

    /// The first prompt: `None` when the operator ends the chat before giving one.
    async fn first_prompt(&self) -> Option<String> {
        loop {
            match self.step().await {
                NextStep::FollowUp(prompt) => return Some(prompt),
                NextStep::End => return None,
                _ => {}
            }
        }
    }

    /// Read until a line means something: a prompt, `/clear`, or the end.
    async fn step(&self) -> NextStep {
        let mut interrupted = false;
        loop {
            let read = tokio::select! {
                read = self.lines.read() => read,
                () = self.cancel.cancelled() => return NextStep::End,
            };
            match read {
                crate::chat_input::Read::Line(line) => {
                    let line = line.trim();
                    match line {
                        "" => {}
                        "/exit" => return NextStep::End,
                        "/clear" => return NextStep::Reset(None),
                        other if other.starts_with('/') && !other.contains(char::is_whitespace) => {
                            self.err.line(&format!("unknown command {}; /clear or /exit", sanitize(other, 80)));
                        }
                        prompt => return NextStep::FollowUp(prompt.to_owned()),
                    }
                    interrupted = false;
                }
                crate::chat_input::Read::Interrupted if interrupted => return NextStep::End,
                crate::chat_input::Read::Interrupted => {
                    interrupted = true;
                    self.err.line("(press Ctrl-C again, Ctrl-D or type /exit to leave)");
                }
                crate::chat_input::Read::TooLong => self.err.line(&format!(
                    "error: a prompt is at most {} MiB; that line was skipped",
                    crate::chat_input::MAX_LINE >> 20
                )),
                crate::chat_input::Read::End => return NextStep::End,
                crate::chat_input::Read::Failed(why) => {
                    self.err.line(&format!("error: cannot read the next prompt: {why}"));
                    return NextStep::End;
                }
            }
        }
    }

    /// SIGINT: cancel the turn in progress (the chat goes on); at the prompt the line editor reads Ctrl-C itself.
    fn interrupt(&self) {
        if let Some(turn) = self.turn.lock().unwrap_or_else(|e| e.into_inner()).as_ref().filter(|t| !t.is_cancelled()) {
            turn.cancel();
            self.err.line("notice: cancelling this turn; the chat goes on");
        }
    }
}

/// The [`Continuation`] over a shared [`Chat`].
struct Shared(Arc<Chat>);

#[async_trait]
impl Continuation for Shared {
    async fn next(&self, turn: &TurnEnd) -> NextStep {
        let chat = &self.0;
        if !turn.cleared {
            // CONV-1: each turn's counters and the conversation's so far.
            let (t, all) = (&turn.turn, &turn.total);
            // COST-5: the conversation's cost so far, when the model's price is known.
            let cost = all.cost.map(|c| format!(", {c}")).unwrap_or_default();
            chat.err.line(&format!(
                "[turn: {} model call(s), {} tool call(s), {} tokens, {:.1}s · chat: {} model call(s), {} tokens{cost}]",
                t.llm_calls,
                t.tool_calls,
                t.usage.total(),
                t.latency.as_secs_f64(),
                all.llm_calls,
                all.usage.total()
            ));
            if let Some(e) = &turn.error {
                chat.err.line(&format!("error: {}", sanitize(e, PROMPT_LIMIT)));
            }
        }
        *chat.turn.lock().unwrap_or_else(|e| e.into_inner()) = None;
        chat.step().await
    }

    fn turn_cancel(&self, run: &CancellationToken) -> CancellationToken {
        let turn = run.child_token();
        *self.0.turn.lock().unwrap_or_else(|e| e.into_inner()) = Some(turn.clone());
        turn
    }
}

/// SIGINT cancels the turn in progress; SIGTERM ends the chat (a checkpointed one stays resumable).
fn watch_signals(chat: Arc<Chat>, cancel: CancellationToken) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                Some(()) = int.recv() => chat.interrupt(),
                Some(()) = term.recv() => cancel.cancel(),
                else => return,
            }
        }
    });
    Ok(())
}

/// The answer as it streams: text to stdout, reasoning to stderr; every other event as `run` shows it.
#[derive(Default)]
struct Streamed {
    /// Whether stdout's last character was not a newline.
    open: Mutex<bool>,
}

impl Streamed {
    fn event(&self, e: &RunEvent<'_>, shown: &impl Fn(&RunEvent<'_>)) {
        match e {
            RunEvent::Delta { delta: Delta::Text(text), .. } => self.print(text),
            RunEvent::Delta { delta: Delta::Thinking(text), .. } => {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "{}", inert(text));
                let _ = err.flush();
            }
            RunEvent::Delta { delta: Delta::Restart, .. } => {
                self.end_line();
                eprintln!("(the reply broke off; retrying)");
            }
            // Streamed already: the whole text and reasoning would repeat it.
            RunEvent::Assistant { .. } | RunEvent::Thinking { .. } => self.end_line(),
            RunEvent::Reset => eprintln!("notice: the conversation was cleared"),
            RunEvent::SessionRotated { previous, next } => eprintln!(
                "notice: continuing in session {next}; session {previous} holds the conversation before /clear and \
                 stays resumable"
            ),
            _ => {
                self.end_line();
                shown(e);
            }
        }
    }

    fn print(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let text = inert(text);
        let _ = write!(out, "{text}");
        let _ = out.flush();
        if let Some(last) = text.chars().last() {
            *self.open.lock().unwrap_or_else(|e| e.into_inner()) = last != '\n';
        }
    }

    fn end_line(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if *open {
            println!();
            *open = false;
        }
    }
}

/// Streamed model text made inert for the terminal piece by piece: an escape sequence can be split across deltas,
/// so every control character but newline and tab is dropped, which leaves any sequence as plain text.
fn inert(text: &str) -> String {
    text.chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').collect()
}
