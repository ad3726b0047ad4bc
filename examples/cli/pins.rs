//! `fisk pins list|accept|forget [SERVER [TOOL]]` (PIN-7), and the pin states `fisk info` shows (PIN-8).

use clap::{Args, Subcommand};
use fisk_ai::config::PinMode;
use fisk_ai::source::pins::{self, Fingerprint, PinReport, PinState, PinStore};
use fisk_ai::tool::{Origin, Tool};
use fisk_ai::{Config, Harness};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct PinsArgs {
    /// The agent configuration: its imports and where its pins are kept.
    #[arg(long, global = true, default_value = "agent.yaml")]
    config: PathBuf,
    #[command(subcommand)]
    command: PinsCommand,
}

#[derive(Subcommand)]
enum PinsCommand {
    /// List the pinned tools: server, tool, when pinned, and their fingerprints.
    #[command(alias = "ls")]
    List(Target),
    /// Pin what the servers list now, so a changed or new tool is offered from the next run on.
    Accept(Target),
    /// Remove pins: a forgotten server is pinned afresh on its next load, a forgotten tool is new (quarantined).
    #[command(alias = "rm")]
    Forget(Target),
}

#[derive(Args)]
struct Target {
    /// An `mcp_servers` entry or `remote_tools` host name (or its pin key, such as `mcp_servers.NAME`); every import
    /// when omitted.
    server: Option<String>,
    /// One tool of that server, by the name the server gives it.
    tool: Option<String>,
}

pub(crate) async fn run(args: PinsArgs) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::load(&args.config)?;
    let store = Harness::builder().config(config.clone()).open_pin_store().await?;
    match args.command {
        PinsCommand::List(target) => list(&config, store.as_ref(), &target).await,
        PinsCommand::Accept(target) => accept(config, &target).await,
        PinsCommand::Forget(target) => forget(&config, store.as_ref(), &target).await,
    }
}

/// Every configured import's pin key and mode, in configuration order.
fn imports(config: &Config) -> Vec<(String, PinMode)> {
    let mcp = config.mcp_servers.iter().map(|e| (format!("mcp_servers.{}", e.name), e.pins));
    mcp.chain(config.remote_tools.iter().map(|h| (format!("remote_tools.{}", h.name), h.pins))).collect()
}

/// The pin keys SERVER names: a key as given, else the imports of that name; with no SERVER, `all`.
fn keys(config: &Config, server: Option<&str>, all: Vec<String>) -> Result<Vec<String>, String> {
    let Some(server) = server else { return Ok(all) };
    if server.contains('.') {
        return Ok(vec![server.to_owned()]);
    }
    let named: Vec<String> = imports(config)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| k.split_once('.').is_some_and(|(_, n)| n == server))
        .collect();
    let known: Vec<String> = all.into_iter().filter(|k| k.split_once('.').is_some_and(|(_, n)| n == server)).collect();
    let mut found = named;
    for key in known {
        if !found.contains(&key) {
            found.push(key);
        }
    }
    if found.is_empty() {
        let names: Vec<String> = imports(config).into_iter().map(|(k, _)| k).collect();
        return Err(format!(
            "no import is named {:?} (configured: {})",
            fisk_ai::gate::sanitize(server, 200),
            if names.is_empty() { "none".to_owned() } else { names.join(", ") }
        ));
    }
    Ok(found)
}

async fn list(config: &Config, store: &dyn PinStore, target: &Target) -> Result<(), Box<dyn std::error::Error>> {
    // Every configured import, then pins of imports no longer configured.
    let mut all: Vec<String> = imports(config).into_iter().map(|(k, _)| k).collect();
    for key in store.servers().await? {
        if !all.contains(&key) {
            all.push(key);
        }
    }
    let keys = keys(config, target.server.as_deref(), all)?;
    let mut shown = 0;
    for key in keys {
        let Some(pinned) = store.load(&key).await? else {
            println!("{key}: not pinned yet (its next load pins it)");
            continue;
        };
        for (tool, pin) in pinned.iter().filter(|(t, _)| target.tool.as_deref().is_none_or(|want| want == t.as_str())) {
            let tool = fisk_ai::gate::sanitize(tool, 200);
            let (at, fp) = (fisk_ai::gate::sanitize(&pin.pinned_at, 40), prefixes(&pin.fingerprint));
            println!("{key}  {tool}  pinned {at}  {fp}");
            shown += 1;
        }
    }
    if shown == 0 {
        eprintln!("no pins shown ({})", store.describe());
    }
    Ok(())
}

/// Accepting needs what the servers list now: a harness loads every import as a run would, then the listing of
/// each server asked for is pinned.
async fn accept(config: Config, target: &Target) -> Result<(), Box<dyn std::error::Error>> {
    let harness = Harness::builder().config(config.clone()).build().await?;
    let store = harness.pin_store().ok_or("no import is pinned, so there is nothing to accept")?;
    let reported: Vec<String> = imports(&config).into_iter().map(|(k, _)| k).collect();
    for key in keys(&config, target.server.as_deref(), reported)? {
        let accepted = pins::accept(store.as_ref(), &key, harness.pin_reports(), target.tool.as_deref()).await?;
        if accepted.is_empty() {
            println!("{key}: nothing to accept; its pins match what it lists");
        }
        for tool in accepted {
            // What was accepted, as `info` showed it: the state it was in and the fingerprint now pinned.
            let report = harness.pin_reports().iter().find(|r| r.server == key && r.tool == tool);
            let was = report.map(|r| r.state.label()).unwrap_or_default();
            let now = report.and_then(|r| r.current.as_ref()).map(prefixes).unwrap_or_default();
            println!("{key}  {}  accepted (was {was}; now {now})", fisk_ai::gate::sanitize(&tool, 200));
        }
    }
    Ok(())
}

async fn forget(config: &Config, store: &dyn PinStore, target: &Target) -> Result<(), Box<dyn std::error::Error>> {
    let keys = keys(config, target.server.as_deref(), store.servers().await?)?;
    for key in keys {
        let what = target.tool.as_deref().map(|t| format!("{key} {}", fisk_ai::gate::sanitize(t, 200)));
        let what = what.unwrap_or_else(|| key.clone());
        if pins::forget(store, &key, target.tool.as_deref()).await? {
            println!("{what}: forgotten");
        } else {
            println!("{what}: was not pinned");
        }
    }
    Ok(())
}

/// What `info` shows of the pins (PIN-8): each imported tool's state, read without pinning anything.
pub(crate) struct PinSection {
    reports: Vec<(PinMode, PinReport)>,
    /// Servers whose pins could not be read, with why.
    errors: Vec<(String, PinMode, String)>,
}

/// Look at `tools` the way a run's pin check would, without storing anything, and drop the ones a run would not
/// offer (a `refuse` server's tools when its pins cannot be read, too), so the table shows what a run would expose.
pub(crate) async fn review(config: &Config, tools: &mut Vec<Arc<dyn Tool>>) -> PinSection {
    let mut section = PinSection { reports: Vec::new(), errors: Vec::new() };
    let imports = imports(config);
    if imports.is_empty() {
        return section;
    }
    let store = Harness::builder().config(config.clone()).open_pin_store().await;
    for (key, mode) in imports {
        let from_it: Vec<Arc<dyn Tool>> =
            tools.iter().filter(|t| key_of(t.spec().origin()).as_deref() == Some(&key)).cloned().collect();
        let reviewed = match &store {
            Ok(store) => pins::review(store.as_ref(), &key, mode, &from_it).await,
            Err(e) => Err(fisk_ai::Error::source_failed(e.to_string())),
        };
        match reviewed {
            Ok(reports) => section.reports.extend(reports.into_iter().map(|r| (mode, r))),
            Err(e) => section.errors.push((key, mode, fisk_ai::gate::sanitize(&e.to_string(), 400))),
        }
    }
    // By fingerprint too: of two tools a server lists under one name, a run offers the one that matches its pin.
    let refused = |t: &Arc<dyn Tool>| {
        let Some(key) = key_of(t.spec().origin()) else { return false };
        let unreadable = section.errors.iter().any(|(k, mode, _)| *k == key && *mode == PinMode::Refuse);
        let now = Fingerprint::of(t.spec().description(), t.spec().input_schema());
        unreadable
            || (section.reports.iter()).any(|(_, r)| {
                r.server == key && r.tool == t.spec().name() && r.current.as_ref() == Some(&now) && !r.offered
            })
    };
    tools.retain(|t| !refused(t));
    section
}

/// A fingerprint as `pins list`, `pins accept` and `info` show it: the first 12 hex digits of each digest.
fn prefixes(fp: &Fingerprint) -> String {
    let short = |d: &str| d.get(..12).unwrap_or_default().to_owned();
    format!("description {} schema {}", short(&fp.description), short(&fp.schema))
}

fn key_of(origin: &Origin) -> Option<String> {
    match origin {
        Origin::Mcp { server, .. } => Some(format!("mcp_servers.{server}")),
        Origin::Remote { host, .. } => Some(format!("remote_tools.{host}")),
        _ => None,
    }
}

impl PinSection {
    /// `Pins:` lines: one per server with its counts, then one per tool that is not simply pinned.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        let mut servers: Vec<(&str, PinMode)> = Vec::new();
        for (mode, r) in &self.reports {
            if !servers.iter().any(|(s, _)| *s == r.server) {
                servers.push((&r.server, *mode));
            }
        }
        for (server, mode) in servers {
            let of = || self.reports.iter().map(|(_, r)| r).filter(move |r| r.server == server);
            let count = |state: &PinState| of().filter(|r| &r.state == state).count();
            let first = count(&PinState::FirstSeen);
            let head = if first > 0 {
                format!("{first} to pin on first use")
            } else {
                format!("{} pinned", count(&PinState::Pinned))
            };
            out.push_str(&format!("  {server} (pins: {}): {head}\n", mode.as_str()));
            for r in of().filter(|r| !matches!(r.state, PinState::Pinned | PinState::FirstSeen)) {
                let offered = if r.offered { "offered" } else { "not offered" };
                let tool = fisk_ai::gate::sanitize(&r.tool, 200);
                let now = r.current.as_ref().map(|fp| format!(" [{}]", prefixes(fp))).unwrap_or_default();
                out.push_str(&format!("    {tool}: {} ({offered}){now}\n", r.state.label()));
            }
        }
        for (server, mode, e) in &self.errors {
            let offered = if *mode == PinMode::Refuse { "its tools are not offered" } else { "offered unchecked" };
            out.push_str(&format!("  {server} (pins: {}): pins cannot be read ({offered}): {e}\n", mode.as_str()));
        }
        out
    }

    pub(crate) fn json(&self) -> Value {
        let tools: Vec<Value> = (self.reports.iter())
            .map(|(mode, r)| json!({"server": r.server, "mode": mode.as_str(), "tool": r.tool, "state": r.state.label(), "offered": r.offered}))
            .collect();
        let errors: Vec<Value> = (self.errors.iter())
            .map(|(server, mode, e)| json!({"server": server, "mode": mode.as_str(), "error": e}))
            .collect();
        json!({"tools": tools, "errors": errors})
    }
}
