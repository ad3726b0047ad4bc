//! `fisk worker` (WORK-1..12): take agent runs from a JetStream work queue until SIGINT or SIGTERM, then suspend the
//! runs in flight for another worker. Everything it says goes to stderr, one line per event.

use clap::Args;
use fisk_ai::Config;
use fisk_ai::agent::RunEvent;
use fisk_ai::gate::sanitize;
use fisk_ai::harness::Harness;
use fisk_ai::serve::shutdown_signal;
use fisk_ai::serve::worker::{Worker, WorkerEvent};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// The agent configuration; it needs expose.agent.worker, nats_context and harness.sessions.backend: jetstream.
    #[arg(long, default_value = "agent.yaml")]
    config: PathBuf,
}

/// Peer text (a request's parse error, a server's message) is sanitized before it reaches the terminal (GATE-8).
fn log(event: &WorkerEvent<'_>) {
    match event {
        WorkerEvent::Started { id, delivery, resumed, .. } => {
            let how = if *resumed { ", resuming its session" } else { "" };
            eprintln!("-> request {id} (delivery {delivery}{how})");
        }
        // The command line is the model's choice, which a request can steer.
        WorkerEvent::Run { id, event: RunEvent::ToolCall { display, .. }, .. } => {
            eprintln!("   [{id}] -> {}", sanitize(display, 300))
        }
        WorkerEvent::Run { .. } => {}
        WorkerEvent::Finished { result, from_journal } => {
            let whence = if *from_journal { " (from its journal, not run again)" } else { "" };
            let error = result.error.as_deref().map(|e| format!(": {}", sanitize(e, 300))).unwrap_or_default();
            eprintln!("<- request {}: {}{whence}{error}", result.id, result.outcome);
        }
        WorkerEvent::Rejected { stream_seq, why } => {
            eprintln!("terminated request at stream sequence {stream_seq}, with no result: {}", sanitize(why, 300));
        }
        WorkerEvent::Released { id, why } => eprintln!("released request {id}: {}", sanitize(why, 300)),
        WorkerEvent::Exhausted { id, stream_seq } => {
            let who = id.map_or_else(|| format!("at stream sequence {stream_seq}"), |id| id.to_owned());
            eprintln!("request {who} reached max_deliver: final error result stored, removed from the queue");
        }
        WorkerEvent::Trouble { what } => eprintln!("warning: {}", sanitize(what, 500)),
        other => eprintln!("{other:?}"),
    }
}

pub(crate) async fn run(args: WorkerArgs) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::load(&args.config)?;
    let harness = Arc::new(Harness::builder().config(config).build().await?);
    for w in harness.warnings() {
        eprintln!("warning: {w}");
    }
    let worker = Worker::builder().harness(harness).events(log).build().await?;
    // Installed before the startup lines, so a signal right after them is not lost.
    let stop = shutdown_signal();
    let line = format!(
        "worker ready: stream {} consumer {}, results to {}.<id>, at most {} run(s) at once, ack wait {}; stop with \
         Ctrl-C",
        worker.stream(),
        worker.consumer(),
        worker.results_prefix(),
        worker.max_concurrent_runs(),
        fisk_ai::config::format_duration(worker.ack_wait()),
    );
    let running = worker.start().await?;
    eprintln!("{line}");
    stop.await;
    eprintln!("stopping: no more requests are taken; runs in flight are suspended for another worker");
    let rejected = running.shutdown().await;
    eprintln!("stopped ({rejected} request(s) without a usable id terminated)");
    Ok(())
}
