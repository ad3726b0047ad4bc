//! `fisk approvals list|approve|deny ID --config FILE` (APPR-3): the pending approvals of a fleet in the NATS KV
//! bucket `harness.approvals.bucket` names, and a decision on one, written with compare-and-swap.

use clap::{Args, Subcommand};
use fisk_ai::Config;
use fisk_ai::config::ApprovalBackend;
use fisk_ai::gate::sanitize;
use fisk_ai::nats::approvals::{ApprovalBook, ApprovalRecord};
use fisk_ai::nats::{NatsConnection, NatsContext};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Args)]
pub(crate) struct ApprovalsArgs {
    /// The agent configuration: its harness.approvals (backend: nats) and nats_context.
    #[arg(long, global = true, default_value = "agent.yaml")]
    config: PathBuf,
    #[command(subcommand)]
    command: ApprovalsCommand,
}

#[derive(Subcommand)]
enum ApprovalsCommand {
    /// List the pending approvals (with --all, the decided and expired ones too).
    #[command(alias = "ls")]
    List {
        /// Show decided and expired approvals too.
        #[arg(long)]
        all: bool,
    },
    /// Approve a pending call: it runs once.
    Approve(Decide),
    /// Deny a pending call: it does not run, and the model is told so.
    Deny(Decide),
}

#[derive(Args)]
struct Decide {
    /// The approval id, as `approvals list` shows it.
    id: String,
    /// Who decides, recorded with the decision (default: $USER).
    #[arg(long)]
    by: Option<String>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn seconds(ms: i128) -> String {
    let s = ms / 1000;
    if s.abs() >= 120 { format!("{}m", s / 60) } else { format!("{s}s") }
}

/// One line per approval. Every field can carry model or peer text: sanitized (GATE-8).
fn line(r: &ApprovalRecord, now: u64) -> String {
    let age = seconds(i128::from(now) - i128::from(r.created_ms));
    let left = i128::from(r.expires_ms) - i128::from(now);
    let expires = if left > 0 { format!("in {}", seconds(left)) } else { "expired".to_owned() };
    let by = r.decided_by.as_deref().map(|b| format!(" by {}", sanitize(b, 60))).unwrap_or_default();
    format!(
        "{}  {}{by}  {}  session {}  asked {age} ago, {expires}  [{}]\n    {}",
        r.id,
        r.state,
        sanitize(&r.tool, 80),
        r.session.as_deref().map_or_else(|| "-".to_owned(), |s| sanitize(s, 80)),
        sanitize(&r.trigger, 80),
        sanitize(&r.command_line, 500)
    )
}

pub(crate) async fn run(args: ApprovalsArgs) -> Result<bool, Box<dyn std::error::Error>> {
    let config = Config::load(&args.config)?;
    let approvals = &config.harness.approvals;
    if approvals.backend != ApprovalBackend::Nats {
        return Err(format!(
            "{}: harness.approvals.backend is not nats: approvals are asked at the terminal",
            args.config.display()
        )
        .into());
    }
    let bucket = approvals.bucket.clone().unwrap_or_default();
    let context = NatsContext::load(config.nats_context.as_deref())?;
    let nats = NatsConnection::connect(&context, &config.identity()?).await?;
    let book = ApprovalBook::bind(&nats, &bucket).await.map_err(|e| config.locate(e))?;
    match args.command {
        ApprovalsCommand::List { all } => {
            let now = now_ms();
            let shown: Vec<ApprovalRecord> = book
                .list()
                .await?
                .into_iter()
                .filter(|r| all || (r.state == "pending" && r.expires_ms > now))
                .collect();
            if shown.is_empty() {
                println!("No {}approvals in bucket {bucket}", if all { "" } else { "pending " });
            }
            for r in &shown {
                println!("{}", line(r, now));
            }
            Ok(true)
        }
        ApprovalsCommand::Approve(d) | ApprovalsCommand::Deny(d) if d.id.is_empty() => {
            Err("an approval id is required".into())
        }
        command => {
            let (d, approve) = match command {
                ApprovalsCommand::Approve(d) => (d, true),
                ApprovalsCommand::Deny(d) => (d, false),
                ApprovalsCommand::List { .. } => unreachable!("handled above"),
            };
            let by = d.by.or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "operator".to_owned());
            let record = book.decide(&d.id, approve, &by).await?;
            println!("{}", line(&record, now_ms()));
            Ok(true)
        }
    }
}
