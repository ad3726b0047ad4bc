//! The `Remote tool hosts` section of `fisk info` (INFO-9, IMPORT-7's lenient side): each `remote_tools` host is
//! discovered like a run would, and an unreachable one (or no NATS connection at all) is reported, not fatal.

use fisk_ai::Config;
use fisk_ai::Warning;
use fisk_ai::tool::Tool;
use std::sync::Arc;
use std::time::Duration;

/// What `info` found out about one host.
pub(crate) struct HostReport {
    pub(crate) name: String,
    pub(crate) alias: String,
    pub(crate) context: String,
    pub(crate) reach: Reach,
    /// INFO-9: the host's skip and ignored-filter warnings, listed under its line.
    pub(crate) notes: Vec<String>,
}

/// INFO-9: reachable (the card's facts) or unavailable (how long it took to find out, and why).
pub(crate) enum Reach {
    #[cfg_attr(not(feature = "nats"), allow(dead_code, reason = "only a build with nats can reach a host"))]
    Reachable {
        version: String,
        round_trip: Duration,
        advertised: usize,
        imported: usize,
    },
    Unavailable {
        elapsed: Duration,
        error: String,
    },
}

/// Discover every host over one connection (CFG-15); their tools join `tools`, their warnings `warnings`.
#[cfg(feature = "nats")]
pub(crate) async fn hosts(
    config: &Config,
    identity: &str,
    tools: &mut Vec<Arc<dyn Tool>>,
    warnings: &mut Vec<Warning>,
) -> Vec<HostReport> {
    use fisk_ai::nats::{NatsConnection, NatsContext};
    use fisk_ai::source::remote::{RemoteAgent, configured_timeout};
    use fisk_ai::source::{LoadContext, SourcePolicy};
    use std::time::Instant;
    if config.remote_tools.is_empty() {
        return Vec::new();
    }
    let started = Instant::now();
    let context_name = config.nats_context.clone().unwrap_or_else(|| "(default)".to_owned());
    let connected = match NatsContext::load(config.nats_context.as_deref()) {
        Ok(context) => NatsConnection::connect(&context, identity).await,
        Err(e) => Err(e),
    };
    let nats = match connected {
        Ok(nats) => nats,
        Err(e) => {
            // INFO-9: a connection failure is a warning; the local tools are still shown.
            eprintln!("warning: {}", fisk_ai::gate::sanitize(&e.to_string(), 400));
            let (elapsed, error) = (started.elapsed(), e.to_string());
            return (config.remote_tools.iter())
                .map(|h| {
                    let reach = Reach::Unavailable { elapsed, error: error.clone() };
                    report(h.name.clone(), h.alias().to_owned(), context_name.clone(), reach)
                })
                .collect();
        }
    };
    let mut reports = Vec::new();
    // IMPORT-12: every host's tool specs count against one bound, as in a run.
    let budget = fisk_ai::source::remote::ListingBudget::new();
    for (i, host) in config.remote_tools.iter().enumerate() {
        let (started, before) = (Instant::now(), warnings.len());
        // The same source and policy (the host's include/exclude) a run's pipeline builds for each host.
        let made = RemoteAgent::from_host(i, host, nats.clone(), identity, configured_timeout(config)).and_then(|a| {
            let key = format!("remote_tools[{i}]");
            Ok((a, SourcePolicy::from_filters(&key, host.include.as_ref(), host.exclude.as_ref())?))
        });
        let reach = match made {
            Err(e) => Reach::Unavailable { elapsed: started.elapsed(), error: e.to_string() },
            Ok((agent, policy)) => {
                match agent.with_budget(&budget).discover(&LoadContext::default().with_policy(policy)).await {
                    Ok(found) => {
                        let imported = found.loaded.tools.len();
                        tools.extend(found.loaded.tools);
                        warnings.extend(found.loaded.warnings);
                        let (version, round_trip, advertised) = (found.version, found.round_trip, found.advertised);
                        Reach::Reachable { version, round_trip, advertised, imported }
                    }
                    Err(e) => Reach::Unavailable { elapsed: started.elapsed(), error: e.to_string() },
                }
            }
        };
        let mut line = report(host.name.clone(), host.alias().to_owned(), nats.context().to_owned(), reach);
        line.notes = notes(&warnings[..before], &warnings[before..], &host.name);
        reports.push(line);
    }
    reports
}

/// The warnings about `host`: validation's ignored `include.tags` (IMPORT-3), then its discovery's skips.
#[cfg(feature = "nats")]
fn notes(earlier: &[Warning], found: &[Warning], host: &str) -> Vec<String> {
    let ignored = earlier.iter().filter(
        |w| matches!(w, Warning::ImportIncludeTagsIgnored { section: "remote_tools", name, .. } if name == host),
    );
    ignored.chain(found).map(|w| fisk_ai::gate::sanitize(&w.to_string(), 400)).collect()
}

/// Without the `nats` feature nothing is contacted; each host says so.
#[cfg(not(feature = "nats"))]
pub(crate) async fn hosts(
    config: &Config,
    _identity: &str,
    _tools: &mut Vec<Arc<dyn Tool>>,
    _warnings: &mut Vec<Warning>,
) -> Vec<HostReport> {
    let context = config.nats_context.clone().unwrap_or_else(|| "(default)".to_owned());
    let error = "this build has no `nats` feature, which imports tools from remote agents".to_owned();
    (config.remote_tools.iter())
        .map(|h| {
            let reach = Reach::Unavailable { elapsed: Duration::ZERO, error: error.clone() };
            report(h.name.clone(), h.alias().to_owned(), context.clone(), reach)
        })
        .collect()
}

fn report(name: String, alias: String, context: String, reach: Reach) -> HostReport {
    HostReport { name, alias, context, reach, notes: Vec::new() }
}

/// Milliseconds with one decimal: round trips on a LAN are short.
fn ms(d: Duration) -> String {
    format!("{:.1}ms", d.as_secs_f64() * 1000.0)
}

impl HostReport {
    /// One INFO-9 line, then the host's warnings indented under it. The error and version are a peer's or the
    /// network's text, so sanitized (GATE-8).
    pub(crate) fn line(&self) -> String {
        let mut line = self.status();
        for note in &self.notes {
            line.push_str(&format!("\n    warning: {note}"));
        }
        line
    }

    fn status(&self) -> String {
        let Self { name, alias, context, reach, .. } = self;
        match reach {
            Reach::Reachable { version, round_trip, advertised, imported } => format!(
                "  {name} (alias {alias}): reachable, version {}, {} round trip, {advertised} tool(s) advertised, \
                 {imported} imported",
                fisk_ai::gate::sanitize(version, 80),
                ms(*round_trip)
            ),
            Reach::Unavailable { elapsed, error } => format!(
                "  {name} (alias {alias}): unavailable (context {context}, after {}): {}",
                ms(*elapsed),
                fisk_ai::gate::sanitize(error, 400)
            ),
        }
    }

    /// The `info --json` form.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let Self { name, alias, context, reach, .. } = self;
        match reach {
            Reach::Reachable { version, round_trip, advertised, imported } => serde_json::json!({
                "name": name, "alias": alias, "context": context, "reachable": true, "version": version,
                "round_trip_ms": round_trip.as_secs_f64() * 1000.0, "advertised": advertised, "imported": imported,
            }),
            Reach::Unavailable { elapsed, error } => serde_json::json!({
                "name": name, "alias": alias, "context": context, "reachable": false,
                "elapsed_ms": elapsed.as_secs_f64() * 1000.0, "error": error,
            }),
        }
    }
}
