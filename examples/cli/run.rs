//! `fisk run` (SPEC CLI-1..16): the answer alone on stdout; everything else on stderr.

use clap::Args;
use fisk_ai::Config;
use fisk_ai::agent::{Agent, RunEvent, RunOptions, RunStats, TerminalReason};
use fisk_ai::config::Mode;
use fisk_ai::gate::{PROMPT_LIMIT, TerminalGate, escape_invisible, quote_arg, sanitize};
use fisk_ai::llm::{Block, Message, ProviderRegistry, ProviderSettings, Role};
use fisk_ai::operator::TerminalPrompter;
use fisk_ai::session::{FileSessionStore, SessionId};
use fisk_ai::tool::{CancellationToken, ToolKind};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The flags `run` and `chat` share: the configuration, how the provider is reached, what is shown and traced,
/// and where sessions live.
#[derive(Args)]
pub(crate) struct AgentArgs {
    /// The agent configuration.
    #[arg(long, default_value = "agent.yaml")]
    config: PathBuf,
    /// API key for the configured provider (llm.provider); default: the provider's own variable
    /// (ANTHROPIC_API_KEY, OPENAI_API_KEY).
    #[arg(long)]
    api_key: Option<String>,
    /// API base URL for the configured provider (https, or http on a loopback address); default: the provider's
    /// own variable (ANTHROPIC_BASE_URL, OPENAI_BASE_URL), then llm.base_url.
    #[arg(long)]
    base_url: Option<String>,
    /// Write every API request and response to http-debug.log (it holds the whole conversation).
    #[arg(long, env = "FISK_AI_HTTP_DEBUG", value_parser = clap::builder::FalseyValueParser::new())]
    http_debug: bool,
    /// Show each model request, the tool count and the confirmation triggers.
    #[arg(long, env = "FISK_AI_VERBOSE", value_parser = clap::builder::FalseyValueParser::new())]
    pub(crate) verbose: bool,
    /// Show each tool's output after its call.
    #[arg(long, env = "FISK_AI_TOOL_OUTPUT", value_parser = clap::builder::FalseyValueParser::new())]
    pub(crate) tool_output: bool,
    /// Write one JSON object per line for each model request, response, error and retry to FILE (must not exist).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// The session directory (file backend).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

impl AgentArgs {
    /// What [`prepare`] needs; `animate` lets the spinner run.
    pub(crate) fn common(&self, animate: bool) -> Common<'_> {
        Common {
            config: &self.config,
            api_key: self.api_key.clone(),
            base_url: self.base_url.clone(),
            http_debug: self.http_debug,
            trace: self.trace.as_deref(),
            state_dir: self.state_dir.as_deref(),
            animate,
        }
    }
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The prompt; words are joined by single spaces (default: "assist the user").
    prompt: Vec<String>,
    #[command(flatten)]
    agent: AgentArgs,
    /// Never render markdown or colour (also when NO_COLOR is set and non-empty).
    #[arg(long)]
    no_color: bool,
    /// Accepted for the reference CLI's `run --chat`; this CLI has `chat` for that, and says so.
    #[arg(long)]
    chat: bool,
    /// Journal every step to a session that a later `run --resume` can continue.
    #[arg(long)]
    checkpoint: bool,
    /// The session id for --checkpoint (default: a new KSUID).
    #[arg(long, value_name = "ID")]
    name: Option<String>,
    /// Continue the session ID (its prompt is restored; give no prompt).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// With --resume: continue even though the configuration changed (recorded answers are dropped).
    #[arg(long)]
    force: bool,
    /// Require the final answer to be JSON valid against the JSON Schema in FILE; stdout gets exactly that JSON.
    #[arg(long, value_name = "FILE")]
    output_schema: Option<PathBuf>,
}

/// CLI-3: flag combinations (SESS-2, SESS-4) and ids (SESS-3) are checked before the configuration is read.
fn session_flags(args: &RunArgs) -> Result<(Option<SessionId>, Option<SessionId>), Box<dyn std::error::Error>> {
    if args.name.is_some() && !args.checkpoint {
        return Err("--name needs --checkpoint".into());
    }
    if args.force && args.resume.is_none() {
        return Err("--force needs --resume".into());
    }
    if args.resume.is_some() && args.checkpoint {
        return Err("--resume continues a checkpointed session; it cannot be combined with --checkpoint".into());
    }
    if args.resume.is_some() && !args.prompt.is_empty() {
        return Err("--resume restores the session's prompt; give no prompt with it".into());
    }
    let resume = args.resume.as_deref().map(SessionId::new).transpose()?;
    let checkpoint = match (&args.name, args.checkpoint) {
        (Some(name), _) => Some(SessionId::new(name.as_str())?),
        (None, true) => Some(SessionId::generate()),
        (None, false) => None,
    };
    Ok((checkpoint, resume))
}

/// How the run's lines reach stderr: one writer, with a spinner that steps aside for every line.
pub(crate) struct Stderr {
    spinner: Mutex<Option<ProgressBar>>,
    animate: bool,
}

impl Stderr {
    pub(crate) fn line(&self, text: &str) {
        let spinner = self.spinner.lock().unwrap_or_else(|e| e.into_inner());
        let print = || {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{text}");
        };
        match spinner.as_ref() {
            Some(pb) => pb.suspend(print),
            None => print(),
        }
    }

    pub(crate) fn waiting(&self, on: bool) {
        if !self.animate {
            return;
        }
        let mut spinner = self.spinner.lock().unwrap_or_else(|e| e.into_inner());
        if on {
            let pb = ProgressBar::new_spinner();
            pb.set_style(
                ProgressStyle::with_template("{spinner} {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            pb.set_message("waiting for the model");
            pb.enable_steady_tick(Duration::from_millis(100));
            *spinner = Some(pb);
        } else if let Some(pb) = spinner.take() {
            pb.finish_and_clear();
        }
    }
}

/// CLI-9 size notation: B, KB or MB with one decimal.
fn size(bytes: usize) -> String {
    match bytes {
        b if b < 1024 => format!("{b}B"),
        b if b < 1024 * 1024 => format!("{:.1}KB", b as f64 / 1024.0),
        b => format!("{:.1}MB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// CLI-7: when the line is wider than the terminal, values longer than 19 characters keep their first 10 and last
/// 6 characters; the command path and flag names are never shortened. The line is read as shell words, the way the
/// display quotes them, so a quoted value holding spaces is one value and is shortened inside its quotes.
fn fit(display: &str, width: Option<usize>) -> String {
    if width.is_none_or(|w| display.chars().count() + 3 <= w) {
        return display.to_owned();
    }
    let shorten = |word: &str| {
        let chars: Vec<char> = unquote(word).chars().collect();
        if chars.len() > 19 {
            let short: String = chars[..10].iter().chain(['.'; 3].iter()).chain(&chars[chars.len() - 6..]).collect();
            quote_arg(&short).into_owned()
        } else {
            word.to_owned()
        }
    };
    let mut after_dashdash = false;
    words(display)
        .into_iter()
        .map(|tok| {
            if tok == "--" {
                after_dashdash = true;
                return tok.to_owned();
            }
            match tok.strip_prefix("--").and_then(|t| t.split_once('=')) {
                Some((name, value)) if !after_dashdash => format!("--{name}={}", shorten(value)),
                _ if after_dashdash => shorten(tok),
                _ => tok.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Split a display line at the spaces outside single quotes, each word keeping its quotes.
fn words(line: &str) -> Vec<&str> {
    let (mut out, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !quoted => escaped = true,
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                out.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&line[start..]);
    out
}

/// The text a shell word stands for (quotes removed, `'\''` back to `'`); an unclosed quote (a cut line) runs
/// to the end.
fn unquote(word: &str) -> String {
    let (mut out, mut quoted, mut chars) = (String::new(), false, word.chars());
    while let Some(c) = chars.next() {
        match c {
            '\'' => quoted = !quoted,
            '\\' if !quoted => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

fn is_hitl(kind: ToolKind, name: &str) -> bool {
    kind == ToolKind::Builtin && name.starts_with("ask_human_")
}

fn quiet_result(kind: ToolKind, name: &str, verbose: bool) -> bool {
    kind == ToolKind::Builtin
        && ((is_hitl(kind, name) && !verbose)
            || name.starts_with("memory_")
            || name == "read_file"
            || name == "base64_encode")
}

/// Multi-line text for stderr (narration, reasoning, tool output): terminal escapes removed and invisible format
/// characters shown (GATE-8), line breaks and indentation kept.
fn strip(text: &str) -> String {
    escape_invisible(&strip_ansi_escapes::strip_str(text)).into_owned()
}

/// Run, and on an error before or around the run print it and still close with the summary (CLI-13, CLI-15).
pub(crate) async fn run(args: RunArgs) -> Result<TerminalReason, Box<dyn std::error::Error>> {
    let started = std::time::Instant::now();
    let mut model = None;
    match run_agent(args, &mut model).await {
        Ok(reason) => Ok(reason),
        Err(e) => {
            eprintln!("error: {}", sanitize(&format!("{e:#}"), PROMPT_LIMIT));
            let mut stats = RunStats::new(model.as_deref().unwrap_or_default());
            stats.latency = started.elapsed();
            eprintln!();
            eprintln!("{}", stats.summary(false, None, false));
            Ok(TerminalReason::Error)
        }
    }
}

/// What `run` and `chat` share: how the agent is configured, reached and traced.
pub(crate) struct Common<'a> {
    pub(crate) config: &'a std::path::Path,
    pub(crate) api_key: Option<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) http_debug: bool,
    pub(crate) trace: Option<&'a std::path::Path>,
    pub(crate) state_dir: Option<&'a std::path::Path>,
    /// Whether the spinner may animate (not in a chat, whose answer streams to the same terminal).
    pub(crate) animate: bool,
}

/// The agent and what reports on it, built as `run` and `chat` both need them.
pub(crate) struct Prepared {
    pub(crate) agent: Agent,
    pub(crate) err: Arc<Stderr>,
    pub(crate) trace: Option<Arc<crate::trace::Trace>>,
    /// Ends an approval prompt on screen (GATE-12).
    pub(crate) stop_prompts: CancellationToken,
}

async fn run_agent(args: RunArgs, model: &mut Option<String>) -> Result<TerminalReason, Box<dyn std::error::Error>> {
    if args.chat {
        return Err(format!(
            "--chat opens the reference's full-screen chat, which this CLI does not have; use `{} chat` instead",
            crate::program()
        )
        .into());
    }
    let (checkpoint, resume) = session_flags(&args)?;
    // OUT-9: a bad schema file fails before the configuration is read or any request is made.
    let schema = args.output_schema.as_deref().map(crate::output::load).transpose()?;
    let no_color = args.no_color || std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let common = args.agent.common(std::io::stderr().is_terminal());
    let Prepared { agent, err, trace, stop_prompts } = prepare(common, model).await?;
    let cancel = CancellationToken::new();
    let suspend = CancellationToken::new();
    let checkpointed = checkpoint.is_some() || resume.is_some();
    let tokens = crate::run_signals::Tokens { cancel: cancel.clone(), suspend: suspend.clone(), prompts: stop_prompts };
    crate::run_signals::watch(checkpointed, tokens, err.clone())?;
    let sink = events(err.clone(), agent.clone(), args.agent.verbose, args.agent.tool_output);
    let prompt = args.prompt.join(" ");
    let mut options = RunOptions::new().with_cancel(cancel).with_suspend(suspend).with_events(sink);
    if let Some(schema) = schema.clone() {
        options = options.with_output_schema(schema);
    }
    let outcome = match (&resume, checkpoint) {
        (Some(id), _) => agent.resume(id, options.with_force(args.force)).await?,
        (None, Some(id)) => agent.run(&prompt, options.with_checkpoint(id)).await,
        (None, None) => agent.run(&prompt, options).await,
    };
    err.waiting(false);

    if schema.is_some() {
        // Only a validated answer reaches stdout; any other text stays off it.
        if let (Some(answer), Some(_)) = (outcome.answer.as_deref(), &outcome.output) {
            crate::output::print(answer);
        }
    } else if let Some(answer) = outcome.answer.as_deref().filter(|a| !a.is_empty()) {
        err.line("");
        // The answer is data for stdout: only terminal escapes are removed.
        let answer = strip_ansi_escapes::strip_str(answer);
        let mut out = std::io::stdout().lock();
        if std::io::stdout().is_terminal() && !no_color {
            let _ = write!(out, "{}", termimad::MadSkin::default().term_text(&answer));
        } else {
            let _ = writeln!(out, "{answer}");
        }
        let _ = out.flush();
    }
    finish(&err, &outcome, args.agent.verbose, trace.as_deref(), "run");
    Ok(outcome.reason)
}

/// The run's error, how to resume a suspended one, and the summary (CLI-13); the trace's footer.
pub(crate) fn finish(
    err: &Stderr,
    outcome: &fisk_ai::agent::RunOutcome,
    verbose: bool,
    trace: Option<&crate::trace::Trace>,
    command: &str,
) {
    if let Some(e) = &outcome.error {
        err.line(&format!("error: {}", sanitize(&e.to_string(), PROMPT_LIMIT)));
    }
    let suspended = outcome.reason == TerminalReason::Suspended;
    if let Some(id) = outcome.session_id.as_ref().filter(|_| suspended) {
        err.line(&format!("suspended; resume with: {} {command} --resume {id}", crate::program()));
    }
    // CLI-13: the summary closes every run, but not a crashed one.
    if !outcome.internal_error {
        err.line("");
        err.line(&outcome.stats.summary(suspended, outcome.session_id.as_ref().map(|s| s.as_str()), verbose));
    }
    if let Some(t) = trace {
        t.footer(outcome);
    }
}

/// Read and check the configuration, build the provider and the agent (CLI-3's order: the base URL, then the
/// configuration, then the key).
pub(crate) async fn prepare(
    args: Common<'_>,
    model: &mut Option<String>,
) -> Result<Prepared, Box<dyn std::error::Error>> {
    // CLI-3 / PROV-7: the base URL is checked before anything else happens (before the config is read and before
    // the debug file exists).
    let base_url = args.base_url.clone().filter(|u| !u.trim().is_empty());
    if let Some(url) = &base_url {
        fisk_ai::config::check_http_url(url.trim())
            .map_err(|e| format!("invalid base URL {url:?} (--base-url): {e}"))?;
    }
    let config = Config::load(args.config)?;
    model.clone_from(&config.llm.model);
    // SESS-27.
    if args.state_dir.is_some() && config.harness.sessions.backend != "file" {
        return Err(format!(
            "--state-dir is for the file session backend, but harness.sessions.backend is \"{}\"",
            config.harness.sessions.backend
        )
        .into());
    }
    // Configuration errors come before a missing API key, which building the provider (below) reports. The agent
    // validates again when it is built and reports the warnings then.
    config.validate(Mode::Agent)?;
    config.check_supported()?;
    config.check_application()?;
    let err = Arc::new(Stderr { spinner: Mutex::new(None), animate: args.animate });
    // PROV-3: the provider is resolved by name from the registry; it reads its own key and base URL variables.
    let mut settings = ProviderSettings::new(&config);
    if let Some(key) = args.api_key.clone() {
        settings = settings.with_api_key(key);
    }
    if let Some(url) = base_url {
        settings = settings.with_base_url(url);
    }
    // PROV-7: the provider's own base URL variable and llm.base_url too, before the trace or debug file exists.
    let providers = ProviderRegistry::with_defaults();
    providers.check(&settings)?;
    let debug_path = PathBuf::from("http-debug.log");
    if args.http_debug {
        settings = settings.with_http_debug(&debug_path);
    }
    let trace = match args.trace {
        Some(path) => {
            let t = crate::trace::Trace::create(path)?;
            settings = settings.with_observer(t.clone());
            Some((t, path.to_path_buf()))
        }
        None => None,
    };
    let provider = providers.build(&settings)?;
    if args.http_debug {
        err.line(&format!(
            "notice: writing every API request and response to {} (it holds the full conversation)",
            debug_path.display()
        ));
    }
    let trace = trace.map(|(t, path)| {
        err.line(&format!("notice: tracing model traffic to {}", path.display()));
        t
    });
    if config.application_path.is_none() {
        err.line("notice: no application is wrapped (application_path is unset); only built-in tools are available");
    }
    // GATE-12: a SIGTERM (or `kill -INT`) while an approval prompt shows ends it like Ctrl-C at the prompt.
    let stop_prompts = CancellationToken::new();
    // APPR-1: with `harness.approvals.backend: nats` the builder asks over NATS instead of this terminal.
    let terminal = config.harness.approvals.backend == fisk_ai::config::ApprovalBackend::Terminal;
    let mut builder = Agent::builder().config(config).provider_arc(provider).prompter(TerminalPrompter::stderr());
    if terminal {
        builder = builder.gate(TerminalGate::stderr().with_interrupt(stop_prompts.clone()));
    }
    if let Some(dir) = args.state_dir {
        builder = builder.session_store(FileSessionStore::new(dir));
    }
    let agent = builder.build().await?;
    if let Some(t) = &trace {
        t.header(agent.model(), agent.toolset().len());
    }
    Ok(Prepared { agent, err, trace, stop_prompts })
}

/// The run's events as line output on stderr (CLI-5..12).
pub(crate) fn events(
    err: Arc<Stderr>,
    agent: Agent,
    verbose: bool,
    tool_output: bool,
) -> impl Fn(&RunEvent<'_>) + Send + Sync {
    let width = if std::io::stderr().is_terminal() { terminal_width() } else { None };
    let replay_agent = agent;
    let sink_err = err;
    move |e: &RunEvent<'_>| {
        let err = &sink_err;
        match e {
            RunEvent::Warning(w) => err.line(&format!("warning: {}", sanitize(&w.to_string(), PROMPT_LIMIT))),
            RunEvent::Started { tools, gated, triggers, thinking, deferred, model, .. } if verbose => {
                err.line(&format!(
                    "starting: model={model} tools={tools}{} thinking={}",
                    if *deferred { " (deferred behind tool search)" } else { "" },
                    if *thinking { "on" } else { "off" }
                ));
                if *gated > 0 {
                    err.line(&format!("confirmation: {gated} tool(s) gated by {}", triggers.join(", ")));
                }
            }
            // COMP-5: always shown, it changes what the model sees.
            RunEvent::Compacted { tokens_before, tokens_after, replaced, .. } => err.line(&format!(
                "notice: compacted the conversation: {replaced} older messages summarised, ~{tokens_before} -> \
                 ~{tokens_after} tokens"
            )),
            RunEvent::LlmRequest { messages, size: bytes, preview, .. } => {
                if verbose {
                    err.line(&format!("~> llm: {preview} (msgs={messages}, {})", size(*bytes)));
                }
                err.waiting(true);
            }
            RunEvent::LlmResponse { .. } => err.waiting(false),
            // CLI-12: the id of a new checkpointed session.
            RunEvent::Session { id, resumed: false } => err.line(&format!("notice: checkpointing to session {id}")),
            RunEvent::Session { id, resumed: true } => err.line(&format!("notice: resuming session {id}")),
            RunEvent::Replay { messages } => replay(err, messages, &replay_agent),
            RunEvent::Thinking { text } => {
                for line in strip(text).lines().filter(|l| !l.trim().is_empty()) {
                    err.line(&format!("💭 {line}"));
                }
            }
            RunEvent::Assistant { text, terminal: false } => {
                err.line("");
                err.line(strip(text).trim_end());
            }
            // CLI-7: HITL calls render their own interaction and are traced only with --verbose.
            RunEvent::ToolCall { name, kind, origin, display, .. } if verbose || !is_hitl(*kind, name) => {
                // MCPI-9, IMPORT-10: an imported tool is traced by name and source, `-> <name> (mcp <server>)` or
                // `-> <name> (remote <host>)`.
                let line = match origin.imported_from() {
                    Some(from) => format!("{name} ({from})"),
                    None => (*display).to_owned(),
                };
                err.line(&format!("-> {}", fit(&sanitize(&line, PROMPT_LIMIT), width)));
            }
            // DEMO-4: a declined gated call is shown with why (the decline's own words); nothing ran.
            RunEvent::ToolDeclined { name, reason, .. } => {
                let why = serde_json::from_str::<serde_json::Value>(reason).ok();
                let why = why.as_ref().and_then(|v| v["reason"].as_str()).unwrap_or(reason);
                err.line(&fit(&sanitize(&format!("x {name} declined: {why}"), PROMPT_LIMIT), width));
            }
            // CLI-8: built-in results (memory, read_file, base64_encode) are not echoed; HITL only with --verbose.
            RunEvent::ToolResult { name, kind, output, .. } if tool_output && !quiet_result(*kind, name, verbose) => {
                let shown = match output.exec_report() {
                    Some(_) => serde_json::from_str::<serde_json::Value>(output.content())
                        .ok()
                        .and_then(|v| v["output"].as_str().map(str::to_owned))
                        .unwrap_or_else(|| output.content().to_owned()),
                    None => output.content().to_owned(),
                };
                err.line(&format!("<- {}", strip(shown.trim_end())));
            }
            _ => {}
        }
    }
}

/// SESS-22: the restored conversation, as line output: the prompt, reasoning, narration and tool calls.
fn replay(err: &Stderr, messages: &[Message], agent: &Agent) {
    err.line("--- conversation so far ---");
    for m in messages {
        for block in &m.content {
            match (m.role, block) {
                (Role::User, Block::Text { text }) => err.line(&format!("> {}", sanitize(text, PROMPT_LIMIT))),
                (Role::Assistant, Block::Text { text }) if !text.trim().is_empty() => {
                    err.line(strip(text).trim_end());
                }
                (Role::Assistant, Block::Thinking { text, .. }) => {
                    for line in strip(text).lines().filter(|l| !l.trim().is_empty()) {
                        err.line(&format!("💭 {line}"));
                    }
                }
                (Role::Assistant, Block::ToolUse { name, input, .. }) => {
                    let display = match agent.toolset().get(name) {
                        Some(t) => t.tool().display(input),
                        None => format!("{name} {}", input.as_str()),
                    };
                    err.line(&format!("-> {}", sanitize(&display, PROMPT_LIMIT)));
                }
                _ => {}
            }
        }
    }
    err.line("--- continuing ---");
}

fn terminal_width() -> Option<usize> {
    let (_, cols) = console::Term::stderr().size_checked()?;
    Some(cols as usize)
}
