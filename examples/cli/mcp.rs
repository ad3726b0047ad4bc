//! `fisk mcp` (SPEC CLI-17, MCP-1..23, STDIO-1..6): serve the tool set over MCP, on streamable HTTP until SIGINT
//! or SIGTERM, or with `--stdio` to the one client that started this process until its stdin closes. Everything it
//! says goes to stderr: over stdio, stdout carries only the protocol.

use clap::Args;
use fisk_ai::Config;
use fisk_ai::config::ConfirmOverMcp;
use fisk_ai::serve::mcp::{Caller, GatedBehavior, McpEvent, McpServer, shutdown_signal};
use std::path::PathBuf;

use crate::mcp_install::McpAction;

#[derive(Args)]
#[command(after_long_help = TRANSPORTS, args_conflicts_with_subcommands = true)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    action: Option<McpAction>,
    /// The agent configuration; it needs an expose.agent.mcp block (an empty {} suffices).
    #[arg(long, default_value = "agent.yaml")]
    config: PathBuf,
    /// Serve the one client that started this process over stdin and stdout (how Claude Desktop, Claude Code,
    /// VS Code and Cursor run local servers) instead of listening on HTTP.
    #[arg(long, conflicts_with_all = ["port", "address"])]
    stdio: bool,
    /// Listen port [else FISK_AI_MCP_PORT, else expose.agent.mcp.port, else 8080; 0 means unset].
    #[arg(long)]
    port: Option<u16>,
    /// Bind address [else FISK_AI_MCP_ADDRESS, else expose.agent.mcp.address, else 127.0.0.1 (loopback only)].
    #[arg(long)]
    address: Option<String>,
}

const TRANSPORTS: &str = "\
Transports:
  streamable HTTP (default)  Listens on 127.0.0.1:8080 (expose.agent.mcp.address/port, --address, --port) for any
                             number of clients. Only Host and Origin headers naming the bound address are accepted
                             (DNS-rebinding protection). A bind that is not loopback needs expose.agent.mcp.auth
                             (OAuth bearer tokens checked against the issuer's keys) or, behind a gateway that
                             authenticates, expose.agent.mcp.insecure_no_auth: true; put TLS in front of it.
  stdio (--stdio)            Serves the one client that started this process, over its stdin and stdout. No
                             listener, no port, no Host or Origin checks: there is no network peer, whoever holds
                             the pipes started the server. Stdout carries only the protocol; logs go to stderr.
                             The server ends, stopping every running call, when stdin closes or on SIGINT/SIGTERM.

Both serve the same tools with the same approval rules, max_concurrent_tools and tool_timeout.

Register the stdio server with an assistant (it runs this executable with mcp --stdio --config <absolute path>):
  cli mcp install claude-desktop|claude-code|vscode|cursor [--scope user|project] [--name NAME] --config FILE
  cli mcp uninstall CLIENT [--scope user|project] [--name NAME] --config FILE
  cli mcp list CLIENT [--scope user|project] [--name NAME]";

/// MCP-2: the flag, else the environment; 0 at any level means unset (the configuration and 8080 come after).
fn port(flag: Option<u16>) -> Result<u16, String> {
    if let Some(p) = flag.filter(|p| *p != 0) {
        return Ok(p);
    }
    match std::env::var("FISK_AI_MCP_PORT") {
        Ok(v) if !v.trim().is_empty() => {
            v.trim().parse::<u16>().map_err(|_| format!("FISK_AI_MCP_PORT: {v:?} is not a port (0..65535)"))
        }
        _ => Ok(0),
    }
}

/// MCP-3: the flag, else the environment; empty means unset.
fn address(flag: Option<String>) -> String {
    flag.filter(|a| !a.trim().is_empty())
        .or_else(|| std::env::var("FISK_AI_MCP_ADDRESS").ok().filter(|a| !a.trim().is_empty()))
        .unwrap_or_default()
}

/// ` (by alice)` for a call made with a bearer token (AUTH-8).
fn by(caller: Option<&Caller>) -> String {
    caller.map(|c| format!(" (by {c})")).unwrap_or_default()
}

fn log(event: &McpEvent<'_>) {
    match event {
        McpEvent::Warning(w) => eprintln!("warning: {w}"),
        McpEvent::ClientConnected { client, protocol, elicitation, gated, caller } => eprintln!(
            "client {}{} connected (protocol {protocol}, {}): {}",
            client.unwrap_or("(unnamed)"),
            by(*caller),
            if *elicitation { "can be asked" } else { "cannot be asked" },
            gated.describe()
        ),
        McpEvent::ToolCall { display, caller, .. } => eprintln!("-> {display}{}", by(*caller)),
        McpEvent::Denied { display, why, caller, .. } => {
            eprintln!("denied: {display} ({}){}", why.describe(), by(*caller))
        }
        McpEvent::Cancelled { display, caller, .. } => eprintln!("cancelled by the client: {display}{}", by(*caller)),
        McpEvent::TaskRefused { name, why, caller } => eprintln!("task refused: {name}{}: {why}", by(*caller)),
        other => eprintln!("{other:?}"),
    }
}

/// Names shown on the startup line before the rest are only counted: a 10,000-command tree would otherwise print
/// one enormous line that buries everything after it.
const LISTED_NAMES: usize = 20;

/// The first [`LISTED_NAMES`] names, then `… and N more`.
fn name_list(names: &[&str]) -> String {
    let shown = names[..names.len().min(LISTED_NAMES)].join(", ");
    match names.len().saturating_sub(LISTED_NAMES) {
        0 => shown,
        rest => format!("{shown} … and {rest} more"),
    }
}

pub(crate) async fn run(args: McpArgs) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(action) = args.action {
        return crate::mcp_install::run(action);
    }
    if args.stdio {
        return stdio(args).await;
    }
    let config = Config::load(&args.config)?;
    config.check_application()?;
    let no_application = config.application_path.is_none();
    let server = McpServer::builder()
        .config(config)
        .port(port(args.port)?)
        .address(address(args.address))
        .server_version(env!("CARGO_PKG_VERSION"))
        .events(log)
        .build()
        .await?;
    let listener = server.bind().await?;
    let local = listener.local_addr()?;
    // MCP-22: installed before the startup lines, so a signal right after them is not lost.
    let stop = shutdown_signal();
    describe(&server, no_application);
    let host = match local.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    let url = format!("http://{host}:{}/", local.port());
    eprintln!("listening on {url} (streamable HTTP); stop with Ctrl-C");
    if server.requires_auth() {
        eprintln!(
            "every request needs a bearer token (expose.agent.mcp.auth); metadata at {url}.well-known/oauth-protected-resource"
        );
    }
    eprintln!(
        "register it with an MCP client, for example: claude mcp add --transport http {} {url}",
        server.identity()
    );
    server.serve(listener, stop).await?;
    eprintln!("stopped");
    Ok(())
}

/// `--stdio`: the same server for the client on the other end of stdin and stdout.
async fn stdio(args: McpArgs) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::load(&args.config)?;
    config.check_application()?;
    let no_application = config.application_path.is_none();
    let server =
        McpServer::builder().config(config).server_version(env!("CARGO_PKG_VERSION")).events(log).build().await?;
    describe(&server, no_application);
    eprintln!("serving over stdio; the server ends when stdin closes");
    server.serve_stdio().await?;
    Ok(())
}

/// The startup lines both transports print (MCP-19), on stderr.
fn describe(server: &McpServer, no_application: bool) {
    for w in server.warnings() {
        eprintln!("warning: {w}");
    }
    if no_application {
        eprintln!("note: no application_path is set: only the harness.tools built-ins are served");
    }
    let tools = server.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name()).collect();
    eprintln!("serving {} tool(s) over MCP as {}: {}", names.len(), server.identity(), name_list(&names));
    let gated: Vec<String> =
        tools.iter().filter_map(|t| t.gate_trigger().map(|tag| format!("{} ({tag})", t.spec().name()))).collect();
    if !gated.is_empty() {
        let how = match server.confirm_over_mcp() {
            ConfirmOverMcp::Always => {
                "each call asks the client's user to approve it; clients that cannot be asked \
                                       are refused (confirm_over_mcp: always)"
            }
            ConfirmOverMcp::Auto => {
                "each call asks the client's user to approve it; clients that cannot be asked run \
                                     them without approval (confirm_over_mcp: auto)"
            }
            _ => "they run without approval (confirm_over_mcp: never)",
        };
        eprintln!("{} gated tool(s): {}; {how}", gated.len(), gated.join(", "));
    } else {
        eprintln!("{}", GatedBehavior::NoneGated.describe());
    }
    eprintln!(
        "at most {} call(s) run at once, each for at most {}",
        server.max_concurrent_tools(),
        fisk_ai::config::format_duration(server.tool_timeout())
    );
}
