//! `fisk session ls|show|rm` (SPEC CLI-19..25): line output on stdout.

use clap::{Args, Subcommand};
use fisk_ai::llm::{Block, Role};
use fisk_ai::session::{ConfirmChoice, FileSessionStore, Journal, SessionId, SessionStore, rfc3339};
use fisk_ai::{Config, Harness};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct SessionArgs {
    /// Read this configuration's harness.sessions backend (default: the file backend's default directory).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// The session directory (file backend).
    #[arg(long, global = true, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: SessionCommand,
}

#[derive(Subcommand)]
enum SessionCommand {
    /// List sessions, newest first.
    #[command(alias = "list")]
    Ls,
    /// Show one session: status, counters, prompt and the confirmation answers it holds.
    #[command(alias = "view")]
    Show {
        /// The session id.
        id: String,
        /// Also print the whole exchange.
        #[arg(long)]
        transcript: bool,
        /// With --transcript: leave each tool's output out. (The reference CLI spelled this `--no-tui`; here
        /// `--no-tui` means one thing everywhere: no full-screen UI, which this CLI never has.)
        #[arg(long)]
        no_tool_output: bool,
    },
    /// Remove a session's journal and lock (a missing session is not an error).
    #[command(alias = "delete")]
    Rm {
        /// The session id.
        id: String,
    },
}

/// The store sessions are read from, and where it is (for messages).
struct Opened {
    store: Arc<dyn SessionStore>,
    place: String,
}

/// CLI-19: the store `--state-dir` or `--config` names (any registered backend, SESS-25), else the file backend's
/// default directory.
async fn store(args: &SessionArgs) -> Result<Opened, Box<dyn std::error::Error>> {
    let file = |store: FileSessionStore| {
        let place = store.dir().display().to_string();
        Opened { store: Arc::new(store), place }
    };
    let Some(path) = &args.config else {
        return Ok(match &args.state_dir {
            Some(dir) => file(FileSessionStore::new(dir)),
            None => file(FileSessionStore::new(FileSessionStore::default_dir()?)),
        });
    };
    let config = Config::load(path)?;
    let backend = config.harness.sessions.backend.clone();
    let mut harness = Harness::builder();
    let place = match (&args.state_dir, backend.as_str()) {
        // --state-dir overrides the file backend's directory: the store is handed to the harness (OVR-7).
        (Some(dir), "file") => {
            harness = harness.session_store(Arc::new(FileSessionStore::new(dir)));
            dir.display().to_string()
        }
        // SESS-27.
        (Some(_), _) => {
            return Err(format!(
                "--state-dir is for the file session backend, but {} names the \"{backend}\" session backend",
                path.display()
            )
            .into());
        }
        (None, "file") => {
            FileSessionStore::from_config(&config.harness.sessions.options, None)?.dir().display().to_string()
        }
        (None, _) => match config.harness.sessions.options.stream.as_deref() {
            Some(stream) => format!("the {backend} backend (stream {stream})"),
            None => format!("the {backend} backend"),
        },
    };
    // The same backends, options and NATS connection a run resolves (harness issue: stores only through it).
    let store = harness.config(config).open_stores().await?.into_sessions()?;
    Ok(Opened { store, place })
}

fn truncate(text: &str, limit: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let clean = strip_ansi_escapes::strip_str(&flat);
    if clean.chars().count() > limit { format!("{}...", clean.chars().take(limit).collect::<String>()) } else { clean }
}

pub(crate) async fn run(args: SessionArgs) -> Result<(), Box<dyn std::error::Error>> {
    let Opened { store, place } = store(&args).await?;
    let mut out = std::io::stdout().lock();
    match &args.command {
        SessionCommand::Ls => {
            let mut entries = store.list().await?;
            if entries.is_empty() {
                let hint = if args.config.is_none() { " (use --config to read a configuration's backend)" } else { "" };
                writeln!(out, "No sessions in {place}{hint}")?;
                return Ok(());
            }
            entries.sort_by(|a, b| b.updated.cmp(&a.updated).then_with(|| b.id.cmp(&a.id)));
            let mut rows = vec![["ID".to_owned(), "MODEL".into(), "STATUS".into(), "UPDATED".into(), "PROMPT".into()]];
            for entry in entries {
                let updated = entry.updated.map(|t| rfc3339(t)[..19].replace('T', " ")).unwrap_or_default();
                let row = match store.read(&entry.id).await.and_then(Journal::fold) {
                    Ok(j) => [
                        entry.id.to_string(),
                        j.meta.fingerprint.model.clone(),
                        j.status().to_owned(),
                        updated,
                        truncate(&j.meta.prompt, 50),
                    ],
                    Err(_) => [entry.id.to_string(), "-".into(), "unreadable".into(), updated, String::new()],
                };
                rows.push(row);
            }
            let widths: Vec<usize> =
                (0..5).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
            for row in rows {
                let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
                writeln!(out, "{}", line.join("  ").trim_end())?;
            }
        }
        SessionCommand::Show { id, transcript, no_tool_output } => {
            show(&mut out, store.as_ref(), id, *transcript, *no_tool_output).await?;
        }
        SessionCommand::Rm { id } => {
            let id = SessionId::new(id.as_str())?;
            store.remove(&id).await?;
            writeln!(out, "Removed session {id}")?;
        }
    }
    Ok(())
}

/// `session show ID`: status, counters, prompt, kind and rotations, held answers, and the transcript if asked.
async fn show(
    out: &mut impl Write,
    store: &dyn SessionStore,
    id: &str,
    transcript: bool,
    no_tool_output: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let id = SessionId::new(id)?;
    let j = Journal::fold(store.read(&id).await?)?;
    writeln!(out, "Session:        {id}")?;
    writeln!(out, "Status:         {}", j.status())?;
    if let Some(msg) = j.terminal.as_ref().and_then(|t| t.message.as_deref()) {
        writeln!(out, "Error:          {}", truncate(msg, 200))?;
    }
    writeln!(out, "Model:          {}", j.meta.fingerprint.model)?;
    writeln!(out, "Created:        {}", j.meta.created)?;
    writeln!(out, "Next iteration: {}", j.next_iteration)?;
    writeln!(out, "LLM calls:      {}", j.llm_calls)?;
    writeln!(out, "Tool calls:     {} ({} remote)", j.tool_calls, j.remote_tool_calls)?;
    writeln!(out, "Tokens:         {} in / {} out", j.usage.input_tokens, j.usage.output_tokens)?;
    if let Some(p) = &j.pending {
        let n = p.unanswered().count();
        writeln!(out, "Note:           {n} tool call(s) of the last turn will run first when it is resumed")?;
    }
    writeln!(out, "Prompt:         {}", truncate(&j.meta.prompt, 200))?;
    writeln!(out, "Kind:           {}", if j.is_interactive() { "chat" } else { "one-shot run" })?;
    // CONV-6: the sessions a chat's resets rotated through, linked by their `session.reset` records.
    if j.previous.is_some() || j.next.is_some() {
        writeln!(out, "Conversation:   {}", rotations(store, &id, &j).await.join(" -> "))?;
    }
    // CLI-23: what is held.
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for (name, choice) in [
        ("once", ConfirmChoice::Once),
        ("always", ConfirmChoice::Always),
        ("always_exact", ConfirmChoice::AlwaysExact),
        ("decline", ConfirmChoice::Decline),
    ] {
        let n = j.answers.values().filter(|a| a.choice == choice).count();
        if n > 0 {
            counts.push((name, n));
        }
    }
    if j.allowed.is_empty() && j.allowed_exact.is_empty() && counts.is_empty() {
        writeln!(out, "Held answers:   none")?;
    } else {
        writeln!(out, "Held answers:")?;
        if !j.allowed.is_empty() {
            writeln!(out, "  allowed for the conversation: {}", j.allowed.join(", "))?;
        }
        if !j.allowed_exact.is_empty() {
            // The tool and the first 12 digits of its call's key: these exact arguments only.
            let exact: Vec<String> =
                j.allowed_exact.iter().map(|(t, d)| format!("{t} ({})", d.get(..12).unwrap_or_default())).collect();
            writeln!(out, "  allowed with exact arguments: {}", exact.join(", "))?;
        }
        if !counts.is_empty() {
            let list: Vec<String> = counts.iter().map(|(c, n)| format!("{c}={n}")).collect();
            writeln!(out, "  recorded per-call answers: {}", list.join(" "))?;
        }
    }
    if transcript {
        writeln!(out, "{}", "-".repeat(40))?;
        print_transcript(out, &j, !no_tool_output)?;
    }
    Ok(())
}

/// CLI-22: the prompt, reasoning, assistant text, each tool call and (unless `--no-tool-output`) each tool's output.
fn print_transcript(out: &mut impl Write, j: &Journal, outputs: bool) -> std::io::Result<()> {
    let clean = |t: &str| strip_ansi_escapes::strip_str(t);
    let pending = j.pending.iter().flat_map(|p| p.calls.iter().filter_map(|c| p.results.get(&c.id)));
    let blocks = j.messages.iter().flat_map(|m| m.content.iter().map(move |b| (m.role, b)));
    for (role, block) in blocks.chain(pending.map(|b| (Role::User, b))) {
        match (role, block) {
            (Role::User, Block::Text { text }) => writeln!(out, "> {}", clean(text))?,
            (Role::Assistant, Block::Text { text }) => writeln!(out, "{}", clean(text).trim_end())?,
            (Role::Assistant, Block::Thinking { text, .. }) => {
                for line in clean(text).lines().filter(|l| !l.trim().is_empty()) {
                    writeln!(out, "💭 {line}")?;
                }
            }
            (Role::Assistant, Block::ToolUse { name, input, .. }) => {
                writeln!(out, "-> {name} {}", clean(input.as_str()))?;
            }
            (_, Block::ToolResult { content, is_error, .. }) if outputs => {
                let shown = serde_json::from_str::<serde_json::Value>(content)
                    .ok()
                    .and_then(|v| v["output"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| content.clone());
                let mark = if *is_error { "<- (error) " } else { "<- " };
                writeln!(out, "{mark}{}", clean(shown.trim_end()))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The chain of sessions `j` (session `id`) belongs to, oldest first, `id` marked: followed through the stored
/// links both ways, at most 50 each way, stopping at a session that cannot be read or a link that loops.
async fn rotations(store: &dyn SessionStore, id: &SessionId, j: &Journal) -> Vec<String> {
    let mut seen = vec![id.to_string()];
    let mut before = Vec::new();
    let mut at = j.previous.clone();
    while let Some(prev) = at.take().filter(|p| !seen.contains(p) && before.len() < 50) {
        seen.push(prev.clone());
        at = linked(store, &prev).await.and_then(|j| j.previous);
        before.push(prev);
    }
    let mut chain: Vec<String> = before.into_iter().rev().collect();
    chain.push(format!("{id} (this)"));
    let mut at = j.next.clone();
    let mut after = 0;
    while let Some(next) = at.take().filter(|n| !seen.contains(n) && after < 50) {
        seen.push(next.clone());
        at = linked(store, &next).await.and_then(|j| j.next);
        chain.push(next);
        after += 1;
    }
    chain
}

async fn linked(store: &dyn SessionStore, id: &str) -> Option<Journal> {
    let id = SessionId::new(id).ok()?;
    store.read(&id).await.and_then(Journal::fold).ok()
}
