//! `fisk a2a` (SPEC CLI-18, A2A-1..13): serve the command tools to other agents over NATS until SIGINT or
//! SIGTERM. Everything it says goes to stderr.

use clap::Args;
use fisk_ai::Config;
use fisk_ai::serve::a2a::{A2aEvent, A2aServer};
use fisk_ai::serve::shutdown_signal;
use std::path::PathBuf;

#[derive(Args)]
pub(crate) struct A2aArgs {
    /// The agent configuration; it needs expose.agent.agent_to_agent: true, application_path and nats_context.
    #[arg(long, default_value = "agent.yaml")]
    config: PathBuf,
}

fn log(event: &A2aEvent<'_>) {
    match event {
        A2aEvent::ToolCall { display, caller, .. } => eprintln!("-> {display} (for {caller})"),
        A2aEvent::Rejected { endpoint, code, description } => {
            eprintln!("rejected a {endpoint} request ({code}): {description}")
        }
        // A server error can quote a subject a peer chose (GATE-8).
        A2aEvent::Connection(change) => eprintln!("NATS: {}", fisk_ai::gate::sanitize(&change.to_string(), 500)),
        other => eprintln!("{other:?}"),
    }
}

pub(crate) async fn run(args: A2aArgs) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::load(&args.config)?;
    config.check_application()?;
    let server = A2aServer::builder().config(config).version(env!("CARGO_PKG_VERSION")).events(log).build().await?;
    for w in server.warnings() {
        eprintln!("warning: {w}");
    }
    // Installed before the startup lines, so a signal right after them is not lost.
    let stop = shutdown_signal();
    let names: Vec<String> = server.tools().iter().map(|t| t.spec().name().to_owned()).collect();
    // A2A-12, printed once both endpoints are subscribed: a caller that reads them can call at once.
    let lines = [
        format!(
            "serving {} tool(s) as agent {} version {} (NATS context {})",
            names.len(),
            server.identity(),
            server.version(),
            server.context()
        ),
        format!("discovery: {}", server.discovery_subject()),
        format!("tools: {}", server.tool_subject()),
        format!("exposed tools: {}", names.join(", ")),
        format!(
            "at most {} call(s) run at once, each for at most {}; stop with Ctrl-C",
            server.max_concurrent_tools(),
            fisk_ai::config::format_duration(server.tool_timeout())
        ),
    ];
    let running = server.start().await?;
    for line in lines {
        eprintln!("{line}");
    }
    stop.await;
    running.shutdown().await;
    eprintln!("stopped");
    Ok(())
}
