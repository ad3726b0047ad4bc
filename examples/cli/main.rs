//! `fisk`: the example command-line program, built only on fisk-ai's public API.
//!
//! ```text
//! cargo run --example cli -- info --config examples/cowsay/agent.yaml
//! ```

mod info;
mod mcp;
mod run;
mod session;
mod trace;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Turn a fisk-built command-line application into a safe set of LLM tools.
#[derive(Parser)]
#[command(name = "fisk", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the resolved configuration and the tools a run would expose, without contacting a model.
    Info(info::InfoArgs),
    /// Run the agent on a prompt: the answer goes to stdout, everything else to stderr.
    Run(run::RunArgs),
    /// List, show and remove checkpointed sessions.
    Session(session::SessionArgs),
    /// Serve the tool set over MCP (streamable HTTP) until SIGINT or SIGTERM.
    Mcp(mcp::McpArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(args) => info::run(args).await.map(|()| true),
        Command::Run(args) => run::run(args).await.map(|reason| reason.is_success()),
        Command::Session(args) => session::run(args).await.map(|()| true),
        Command::Mcp(args) => mcp::run(args).await.map(|()| true),
    };
    match result {
        // CLI-16: 0 for completed and suspended runs, 1 for everything else.
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
