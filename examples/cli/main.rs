//! The example command-line program, built only on fisk-ai's public API. It calls itself by the name it was
//! started as (`cli` under `cargo run --example cli`, `fisk` once installed under that name): usage, `--version`
//! and every hint it prints use that one name.
//!
//! ```text
//! cargo run --example cli -- info --config examples/cowsay/agent.yaml
//! ```

mod a2a;
mod approvals;
mod audit;
mod chat;
mod chat_input;
mod info;
mod info_children;
mod knowledge;
mod knowledge_watch;
mod mcp;
mod mcp_install;
mod output;
mod pins;
mod remote;
mod run;
mod run_signals;
mod session;
mod stores;
mod trace;
mod worker;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::Path;
use std::process::ExitCode;
use std::sync::OnceLock;

/// Turn a fisk-built command-line application into a safe set of LLM tools.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Accepted everywhere for compatibility with the reference CLI; this CLI only has line output, so it changes
    /// nothing (CLI-4).
    #[arg(long, global = true, env = "FISK_AI_NO_TUI", value_parser = clap::builder::FalseyValueParser::new())]
    no_tui: bool,
}

/// The name this program was started as: the base name of argv[0], `fisk` when there is none. Usage, `--version`
/// and every hint that tells the operator what to type next use it, so they work however the binary is named.
pub(crate) fn program() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        std::env::args_os()
            .next()
            .as_deref()
            .map(Path::new)
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "fisk".to_owned())
    })
}

#[derive(Subcommand)]
enum Command {
    /// Show the resolved configuration and the tools a run would expose, without contacting a model.
    Info(info::InfoArgs),
    /// Run the agent on a prompt: the answer goes to stdout, everything else to stderr.
    Run(run::RunArgs),
    /// Chat with the agent: follow-ups, /clear and /exit; the answer streams to stdout.
    Chat(chat::ChatArgs),
    /// List, show and remove checkpointed sessions.
    Session(session::SessionArgs),
    /// Serve the tool set over MCP (streamable HTTP, or stdio with --stdio), or register it with an assistant.
    Mcp(mcp::McpArgs),
    /// Serve the command tools to other agents over NATS until SIGINT or SIGTERM.
    A2a(a2a::A2aArgs),
    /// List, accept and forget the pins of imported tools (trust on first use).
    Pins(pins::PinsArgs),
    /// Check an audit trail's hash chain.
    Audit(audit::AuditArgs),
    /// Take agent runs from a JetStream work queue until SIGINT or SIGTERM.
    Worker(worker::WorkerArgs),
    /// List, approve and deny a fleet's pending approvals (harness.approvals.backend: nats).
    Approvals(approvals::ApprovalsArgs),
    /// Build, watch and search the local document index `knowledge_search` reads.
    #[command(visible_aliases = ["rag", "k"])]
    Knowledge(knowledge::KnowledgeArgs),
}

/// The OTLP export when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-only variable) is set; none otherwise, so a
/// CLI built with `otel` sends nothing to a collector nobody named.
#[cfg(feature = "otel")]
fn otel_export() -> fisk_ai::Result<Option<fisk_ai::telemetry::otel::OtlpExport>> {
    use fisk_ai::telemetry::otel;
    otel::configured().then(otel::install).transpose()
}

#[tokio::main]
async fn main() -> ExitCode {
    let matches = Cli::command().name(program()).bin_name(program()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let _ = cli.no_tui; // CLI-4: accepted, no effect on line output.
    // OTEL-8: spans go to the collector the standard variables name; dropped at the end of main, which flushes them.
    #[cfg(feature = "otel")]
    let _export = match otel_export() {
        Ok(export) => export,
        Err(e) => {
            eprintln!("error: {}", fisk_ai::gate::sanitize(&format!("{e:#}"), usize::MAX));
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Info(args) => info::run(args).await.map(|()| true),
        Command::Run(args) => run::run(args).await.map(|reason| reason.is_success()),
        Command::Chat(args) => chat::run(args).await.map(|reason| reason.is_success()),
        Command::Session(args) => session::run(args).await.map(|()| true),
        Command::Mcp(args) => mcp::run(args).await.map(|()| true),
        Command::A2a(args) => a2a::run(args).await.map(|()| true),
        Command::Pins(args) => pins::run(args).await.map(|()| true),
        Command::Audit(args) => audit::run(args).await,
        Command::Worker(args) => worker::run(args).await.map(|()| true),
        Command::Approvals(args) => approvals::run(args).await,
        Command::Knowledge(args) => knowledge::run(args).await,
    };
    let code = match result {
        // CLI-16: 0 for completed and suspended runs, 1 for everything else.
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            // `{:#}`: the message and its causes, each once (fisk-ai errors keep the cause out of `{}`).
            // An error can quote what an MCP server or a config file sent (GATE-8).
            eprintln!("error: {}", fisk_ai::gate::sanitize(&format!("{e:#}"), usize::MAX));
            ExitCode::FAILURE
        }
    };
    close_servers().await;
    code
}

/// MCPI-17: the stdio MCP servers this run imported were closed when its harness was dropped; each gets its grace
/// (up to 2 s for the session to close its stdin, 2 s to exit, `SIGTERM` and 2 s more), at most 7 s in all, and what
/// is left then is killed. A SIGINT or SIGTERM meanwhile (the
/// client that started `mcp --stdio` closing it, a user's Ctrl-C) kills them at once.
async fn close_servers() {
    let wait = fisk_ai::source::mcp::wait_servers_closed(std::time::Duration::from_secs(7));
    tokio::select! {
        _ = wait => {}
        () = fisk_ai::serve::shutdown_signal() => fisk_ai::source::mcp::kill_servers_now(),
    }
}
