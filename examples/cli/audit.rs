//! `fisk audit verify PATH` or `fisk audit verify --stream NAME --config FILE` (AUD-7): check the trail's hash chain
//! and name the first broken record.

use clap::{Args, Subcommand};
use fisk_ai::Config;
use fisk_ai::audit::{Broken, Verified};
use std::path::PathBuf;

#[derive(Args)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check a trail's hash chain: exit 0 when it holds, 1 naming the first broken record otherwise.
    Verify(VerifyArgs),
}

#[derive(Args)]
struct VerifyArgs {
    /// The trail file (its rotated files beside it are read first); without it, `--stream`, else the configured
    /// `harness.audit.file`.
    path: Option<PathBuf>,
    /// A JetStream stream holding the trail, reached through the configuration's NATS context.
    #[arg(long, conflicts_with = "path")]
    stream: Option<String>,
    /// The agent configuration (its NATS context, or its `harness.audit.file`).
    #[arg(long, default_value = "agent.yaml")]
    config: PathBuf,
}

pub(crate) async fn run(args: AuditArgs) -> Result<bool, Box<dyn std::error::Error>> {
    let AuditCommand::Verify(args) = args.command;
    let (what, result) = match (&args.path, &args.stream) {
        (Some(path), _) => (path.display().to_string(), fisk_ai::audit::verify_file(path)),
        (None, Some(stream)) => (format!("stream {stream}"), verify_stream(&args.config, stream).await?),
        (None, None) => {
            let config = Config::load(&args.config)?;
            let Some(file) = config.harness.audit.file.clone() else {
                return Err(format!(
                    "{}: harness.audit.file is not set; name a trail file or --stream",
                    args.config.display()
                )
                .into());
            };
            let path = match (file.is_relative(), args.config.parent()) {
                (true, Some(dir)) => dir.join(file),
                _ => file,
            };
            (path.display().to_string(), fisk_ai::audit::verify_file(&path))
        }
    };
    Ok(report(&what, result))
}

fn report(what: &str, result: Result<Verified, Broken>) -> bool {
    match result {
        Ok(v) => {
            println!(
                "{what}: the chain holds: {} record(s) in {} file(s); head {}",
                v.records,
                v.files.len().max(1),
                v.head
            );
            true
        }
        Err(broken) => {
            // The location quotes a path an operator chose; the reason may quote the record (GATE-8).
            eprintln!("{what}: the chain is broken at {}", fisk_ai::gate::sanitize(&broken.to_string(), 2000));
            false
        }
    }
}

async fn verify_stream(
    config: &std::path::Path,
    stream: &str,
) -> Result<Result<Verified, Broken>, Box<dyn std::error::Error>> {
    use fisk_ai::nats::{NatsConnection, NatsContext};
    let config = Config::load(config)?;
    let context = NatsContext::load(config.nats_context.as_deref())?;
    let nats = NatsConnection::connect(&context, &config.identity()?).await?;
    Ok(fisk_ai::audit::verify_stream(&nats, stream).await?)
}
