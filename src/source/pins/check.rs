//! The pin check the harness runs on each pinned source's tools (PIN-2..4), and what `pins accept` and
//! `pins forget` do (PIN-7).

use super::{Fingerprint, Pin, PinMode, PinState, PinStore, Pins, compare};
use crate::error::{Error, Result};
use crate::tool::Tool;
use crate::warning::Warning;
use std::sync::Arc;

/// How one imported tool stood against its server's pins when the harness loaded it: what `info` shows and what
/// [`accept`] pins.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PinReport {
    /// The server key (`mcp_servers.github`).
    pub server: String,
    /// The tool's name as its server lists it.
    pub tool: String,
    /// Its state.
    pub state: PinState,
    /// Whether it was offered (under the server's mode).
    pub offered: bool,
    /// Its fingerprint as listed now; `None` for a [`PinState::Gone`] tool.
    pub current: Option<Fingerprint>,
}

/// The fingerprint of each tool, by its name as the source lists it.
fn listed(tools: &[Arc<dyn Tool>]) -> Vec<(String, Fingerprint)> {
    (tools.iter())
        .map(|t| (t.spec().name().to_owned(), Fingerprint::of(t.spec().description(), t.spec().input_schema())))
        .collect()
}

/// Check `tools` from the source pinned under `server` against `store` (pinning them when the server is new):
/// the tools offered under `mode`, with a warning for each changed or new tool and a report for every tool,
/// including pinned ones the server no longer lists.
///
/// # Errors
///
/// The store's error, which refuses the source's tools (the caller decides what a `warn` source does with it).
pub(crate) async fn apply(
    store: &dyn PinStore,
    server: &str,
    mode: PinMode,
    tools: Vec<Arc<dyn Tool>>,
) -> Result<(Vec<Arc<dyn Tool>>, Vec<Warning>, Vec<PinReport>)> {
    // A name no model can call is never pinned (a hostile name could make the record unreadable) nor offered:
    // selection would drop it anyway, with the same warning.
    let mut warnings = Vec::new();
    let (tools, unnamed): (Vec<_>, Vec<_>) =
        tools.into_iter().partition(|t| crate::select::is_valid_tool_name(t.spec().name()));
    for t in unnamed {
        let spec = t.spec();
        let (name, display) =
            (crate::gate::sanitize(spec.name(), 200), crate::gate::sanitize(&spec.display_path(), 200));
        warnings.push(Warning::InvalidToolName { name, display });
    }
    let listed = listed(&tools);
    let pinned = match store.load(server).await? {
        Some(pins) => Some(pins),
        // A server that lists nothing pins nothing: its first real listing is its first sight.
        None if listed.is_empty() => None,
        None => {
            let (_, first) = compare(None, &listed);
            if store.create(server, &first.unwrap_or_default()).await? {
                // Said once, so a record that vanished (deleted from a shared bucket) is never silent re-trust.
                warnings.push(Warning::PinFirstUse { server: server.to_owned(), tools: listed.len() });
                None
            } else {
                // Another run pinned it first: hold this listing to those pins.
                let again = store.load(server).await?;
                Some(again.ok_or_else(|| {
                    Error::source_failed(format!("the pins of {server} in {} vanished while read", store.describe()))
                })?)
            }
        }
    };
    let reports = judge(server, mode, pinned.as_ref(), listed);
    let mut offered = Vec::with_capacity(tools.len());
    for (tool, report) in tools.into_iter().zip(&reports) {
        if let Some(warning) = warning(report) {
            warnings.push(warning);
        }
        if report.offered {
            offered.push(tool);
        }
    }
    Ok((offered, warnings, reports))
}

/// How `tools` from `server` stand against `store` now, without pinning anything (a server never pinned reports
/// every tool [`FirstSeen`](PinState::FirstSeen): the next load pins them): for a read-only look such as `info`.
///
/// # Errors
///
/// The store's error.
pub async fn review(
    store: &dyn PinStore,
    server: &str,
    mode: PinMode,
    tools: &[Arc<dyn Tool>],
) -> Result<Vec<PinReport>> {
    let pinned = store.load(server).await?;
    Ok(judge(server, mode, pinned.as_ref(), listed(tools)))
}

/// A report per listed tool, in order, then one per pinned tool no longer listed.
fn judge(server: &str, mode: PinMode, pinned: Option<&Pins>, listed: Vec<(String, Fingerprint)>) -> Vec<PinReport> {
    let (states, _) = compare(pinned, &listed);
    let mut reports: Vec<PinReport> = (listed.into_iter().zip(states))
        .map(|((tool, fingerprint), state)| {
            let offered = state.offered(mode);
            PinReport { server: server.to_owned(), tool, state, offered, current: Some(fingerprint) }
        })
        .collect();
    let listed: std::collections::HashSet<String> = reports.iter().map(|r| r.tool.clone()).collect();
    for name in pinned.iter().flat_map(|p| p.keys()).filter(|name| !listed.contains(*name)) {
        let state = PinState::Gone;
        reports.push(PinReport { server: server.to_owned(), tool: name.clone(), state, offered: false, current: None });
    }
    reports
}

fn warning(report: &PinReport) -> Option<Warning> {
    let (server, tool, offered) = (report.server.clone(), crate::gate::sanitize(&report.tool, 200), report.offered);
    match &report.state {
        PinState::Changed(changed) => Some(Warning::PinChanged { server, tool, changed: changed.clone(), offered }),
        PinState::New => Some(Warning::PinNew { server, tool, offered }),
        _ => None,
    }
}

/// Pin what `reports` (a harness's [`pin_reports`](crate::harness::Harness::pin_reports)) list for `server` as
/// it is now: every tool when `tool` is `None` (the server's pins become exactly its current listing), else that
/// one tool. The names of the tools whose pin changed, in listing order.
///
/// # Errors
///
/// The store's error; a source error when `tool` is given but the server did not list it.
pub async fn accept(
    store: &dyn PinStore,
    server: &str,
    reports: &[PinReport],
    tool: Option<&str>,
) -> Result<Vec<String>> {
    let current = reports.iter().filter(|r| r.server == server && tool.is_none_or(|t| r.tool == t));
    let current: Vec<(&PinReport, &Fingerprint)> = current.filter_map(|r| r.current.as_ref().map(|c| (r, c))).collect();
    // Accepting an empty listing would wipe the server's pins: refused, as is a tool it does not list.
    if current.is_empty() {
        return Err(Error::source_failed(match tool {
            Some(tool) => format!(
                "{server} does not list a tool {:?}, so there is nothing to accept",
                crate::gate::sanitize(tool, 200)
            ),
            None => format!("{server} lists no tool this harness loaded, so there is nothing to accept"),
        }));
    }
    let old = store.load(server).await?.unwrap_or_default();
    let mut pins: Pins = if tool.is_some() { old.clone() } else { Pins::new() };
    let mut accepted = Vec::new();
    for (report, fingerprint) in current {
        match old.get(&report.tool).filter(|p| p.fingerprint == *fingerprint) {
            Some(kept) => {
                pins.insert(report.tool.clone(), kept.clone());
            }
            None => {
                pins.insert(report.tool.clone(), Pin::now(fingerprint.clone()));
                accepted.push(report.tool.clone());
            }
        }
    }
    store.save(server, &pins).await?;
    Ok(accepted)
}

/// Remove the pin of `tool` on `server`, or every pin of `server` when `tool` is `None` (its next load is then a
/// first sight). Whether anything was removed.
///
/// A forgotten tool of a server that keeps other pins is new on the next load, so under `refuse` it stays
/// quarantined until accepted.
///
/// # Errors
///
/// The store's error.
pub async fn forget(store: &dyn PinStore, server: &str, tool: Option<&str>) -> Result<bool> {
    let Some(tool) = tool else { return store.forget(server).await };
    let Some(mut pins) = store.load(server).await? else { return Ok(false) };
    if pins.remove(tool).is_none() {
        return Ok(false);
    }
    store.save(server, &pins).await?;
    Ok(true)
}
