//! `fisk mcp install|uninstall|list CLIENT` (REG-1..8): register this executable's stdio server with Claude
//! Desktop, Claude Code, VS Code or Cursor, through the library's `ClientEntry` and `ClientFile`.

use clap::{Args, Subcommand};
use fisk_ai::Config;
use fisk_ai::serve::mcp::{ClientEntry, ClientFile, ClientScope, McpClient};
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum McpAction {
    /// Add this server to a client's configuration (or update the entry it added before).
    Install(Target),
    /// Remove the entry from a client's configuration.
    Uninstall(Target),
    /// List the servers in a client's configuration (--name: only that one; --config is not read).
    List(Target),
}

#[derive(Args)]
pub(crate) struct Target {
    /// The client: claude-desktop, claude-code, vscode or cursor.
    client: McpClient,
    /// user: the client's own file, for every project; project: the file in the current directory, shared with
    /// the project (claude-code .mcp.json, vscode .vscode/mcp.json, cursor .cursor/mcp.json).
    #[arg(long, default_value = "user")]
    scope: ClientScope,
    /// The entry's name [default: the configuration's identity].
    #[arg(long)]
    name: Option<String>,
    /// The agent configuration the server runs with; it needs an expose.agent.mcp block.
    #[arg(long, default_value = "agent.yaml")]
    config: PathBuf,
}

pub(crate) fn run(action: McpAction) -> Result<(), Box<dyn std::error::Error>> {
    match action {
        McpAction::Install(t) => install(t),
        McpAction::Uninstall(t) => uninstall(t),
        McpAction::List(t) => list(t),
    }
}

fn install(t: Target) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::load(&t.config)?;
    config.check_application()?;
    if config.expose.agent.mcp.is_none() {
        return Err(format!(
            "{}: expose.agent.mcp: MCP serving is not enabled; add an expose.agent.mcp block (an empty {{}} suffices)",
            t.config.display()
        )
        .into());
    }
    let name = match t.name {
        Some(name) => name,
        None => config.identity()?,
    };
    let exe = std::env::current_exe()?;
    let mut entry = ClientEntry::for_config(name, exe, &t.config)?;
    for var in config.bearer_token_envs() {
        entry = entry.env_ref(var);
    }
    let file = ClientFile::locate(t.client, t.scope)?;
    let done = file.install(&entry)?;
    let verb = if done.replaced { "updated" } else { "added" };
    println!("{verb} {:?} in {}", entry.name(), done.path.display());
    if let Some(backup) = &done.backup {
        println!("the previous file is kept as {}", backup.display());
    }
    println!("it runs: {} {}", entry.command().display(), entry.args().join(" "));
    for var in entry.unreferenced(t.client, t.scope) {
        println!(
            "the server needs {var}: add it to the entry's \"env\" block in {} yourself ({} passes a server few of \
             its own variables, and install never writes a value)",
            done.path.display(),
            t.client
        );
    }
    for warning in relative_paths(&config, t.client) {
        eprintln!("warning: {warning}");
    }
    let here = std::env::current_dir()?;
    if file.local_to(&here)?.iter().any(|s| s.name == entry.name()) {
        eprintln!(
            "warning: {} also holds a local-scope entry {:?} for {} (what `claude mcp add` writes by default), which \
             Claude Code prefers there; remove it with `claude mcp remove {} -s local` to use this one",
            done.path.display(),
            entry.name(),
            here.display(),
            entry.name()
        );
    }
    if t.scope == ClientScope::Project {
        eprintln!(
            "note: {} now holds this machine's absolute paths (the executable and the config); whoever checks the \
             project out needs their own entry",
            done.path.display()
        );
    }
    println!("restart {} (or reload its MCP servers) to use it", t.client);
    Ok(())
}

/// The config's paths that the client, which starts the server in a working directory of its own choosing (Claude
/// Desktop: `/`), resolves differently from this shell: each with its file, line and column.
fn relative_paths(config: &Config, client: McpClient) -> Vec<String> {
    let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| "here".to_owned());
    let mut out = Vec::new();
    for (key, path) in [("application_path", &config.application_path), ("root_directory", &config.root_directory)] {
        let Some(path) = path.as_deref().filter(|p| p.is_relative()) else { continue };
        // A bare program name is looked up on PATH, which the client may set differently too.
        let why = if path.components().count() == 1 && key == "application_path" {
            format!("is looked up on {client}'s PATH, which may not be your shell's")
        } else {
            format!("is relative: {client} resolves it against the directory it starts the server in, not {cwd}")
        };
        let problem = format!("{key}: {} {why}; make it absolute so the server starts from anywhere", path.display());
        out.push(config.locate(fisk_ai::Error::config_key(key, problem)).to_string());
    }
    out
}

fn uninstall(t: Target) -> Result<(), Box<dyn std::error::Error>> {
    let name = entry_name(&t)?;
    // The entry `install` would write: only an entry that is this one (same configuration, or this executable)
    // is removed.
    let entry = ClientEntry::for_config(name.clone(), std::env::current_exe()?, &t.config)?;
    let file = ClientFile::locate(t.client, t.scope)?;
    match file.uninstall(&entry)? {
        Some(done) => {
            println!("removed {name:?} from {}", done.path.display());
            if let Some(backup) = &done.backup {
                println!("the previous file is kept as {}", backup.display());
            }
        }
        None => println!("no entry named {name:?} in {}; nothing changed", file.path().display()),
    }
    Ok(())
}

fn list(t: Target) -> Result<(), Box<dyn std::error::Error>> {
    let file = ClientFile::locate(t.client, t.scope)?;
    let servers = file.list()?;
    // Claude Code's local scope for this directory, kept in the same file, wins over the user scope here.
    let here = std::env::current_dir()?;
    let local = file.local_to(&here)?;
    if servers.is_empty() && local.is_empty() {
        eprintln!("no servers in {}", file.path().display());
    }
    let scoped = servers.into_iter().map(|s| (s, String::new()));
    let scoped = scoped
        .chain(local.into_iter().map(|s| (s, format!("\t(local scope for {}, preferred there)", here.display()))));
    // `--name` shows that one entry; `--config` is not read (the Names give every action the same flags).
    for (s, note) in scoped.filter(|(s, _)| t.name.as_ref().is_none_or(|n| *n == s.name)) {
        let what = match (s.command, s.url) {
            (Some(command), _) => std::iter::once(command).chain(s.args).collect::<Vec<_>>().join(" "),
            (None, Some(url)) => url,
            (None, None) => "(no command or url)".to_owned(),
        };
        println!("{}\t{what}{note}", s.name);
    }
    Ok(())
}

/// `--name`, else the configuration's identity (the configuration only needs to parse for that).
fn entry_name(t: &Target) -> Result<String, Box<dyn std::error::Error>> {
    match &t.name {
        Some(name) => Ok(name.clone()),
        None => {
            let config = Config::load(&t.config)
                .map_err(|e| format!("{e} (the entry is named after its identity; or pass --name NAME)"))?;
            Ok(config.identity()?)
        }
    }
}
