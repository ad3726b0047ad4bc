//! `fisk knowledge` (aliases `rag`, `k`): build, watch, search and look after the local document index that
//! `knowledge_search` reads (KNOW-13).

use clap::{Args, Subcommand};
use comfy_table::{ContentArrangement, Table};
use fisk_ai::Config;
use fisk_ai::config::GoDuration;
use fisk_ai::knowledge::{IndexOptions, IndexProgress, IndexReport, KnowledgeBase};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Args)]
pub(crate) struct KnowledgeArgs {
    /// The agent configuration (its `harness.knowledge` block).
    #[arg(long, global = true, default_value = "agent.yaml")]
    config: PathBuf,
    #[command(subcommand)]
    command: KnowledgeCommand,
}

#[derive(Subcommand)]
enum KnowledgeCommand {
    /// Index the configured paths: changed files are re-read, deleted ones removed.
    Index {
        /// Say what would change; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Rebuild from nothing (after a model, prefix or chunker change).
        #[arg(long)]
        reindex: bool,
    },
    /// Index, then keep the index current as files change, until interrupted.
    Watch {
        /// Wait this long after the last change before indexing (a Go duration).
        #[arg(long, default_value = "2s")]
        debounce: String,
        /// Do not index once before watching.
        #[arg(long)]
        no_initial: bool,
    },
    /// Search the index as the agent would, and print the passages.
    Search {
        /// What to look for.
        query: String,
        /// How many passages (default: harness.knowledge.top_k).
        #[arg(long)]
        top_k: Option<usize>,
    },
    /// Print the passage a citation (`<path>#<n>`) names.
    Show {
        /// The citation.
        citation: String,
    },
    /// List the indexed files.
    Sources,
    /// Check the index and the embeddings endpoint (one real request).
    Doctor,
    /// Show the index's size and what it is pinned to.
    Stats,
    /// Remove a file, or every file under a directory, from the index.
    Rm {
        /// As cited (`docs/runbook.md`), or its absolute path.
        path: String,
    },
    /// Delete the index.
    Reset {
        /// Required: the index is gone afterwards.
        #[arg(long)]
        force: bool,
    },
}

pub(crate) async fn run(args: KnowledgeArgs) -> Result<bool> {
    let config = Config::load(&args.config)?;
    let kb = KnowledgeBase::from_config(&config, None)?;
    let needs_paths = matches!(args.command, KnowledgeCommand::Index { .. } | KnowledgeCommand::Watch { .. });
    if needs_paths && config.harness.knowledge.paths.is_empty() {
        return Err(format!("{}: harness.knowledge.paths lists nothing to index", args.config.display()).into());
    }
    match args.command {
        KnowledgeCommand::Index { dry_run, reindex } => {
            let report = index(&kb, IndexOptions::new().dry_run(dry_run).reindex(reindex)).await?;
            print_report(&report);
            Ok(true)
        }
        KnowledgeCommand::Watch { debounce, no_initial } => {
            let debounce = GoDuration::parse(&debounce)
                .ok()
                .and_then(GoDuration::to_std)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| format!("--debounce {debounce:?}: expected a positive Go duration such as 2s"))?;
            crate::knowledge_watch::watch(&kb, debounce, !no_initial).await.map(|()| true)
        }
        KnowledgeCommand::Search { query, top_k } => search(&kb, &query, top_k).await,
        KnowledgeCommand::Show { citation } => match kb.show(&citation)? {
            Some(hit) => {
                // The path and the headings come from the documents: shown sanitized, like the text.
                let (cite, title) = (clean(&hit.citation), clean(&hit.title));
                println!("{cite} {title} (lines {}-{})", hit.line_start, hit.line_end);
                // Line by line: the sanitizer folds line breaks, and a passage is read as lines.
                for line in hit.text.lines() {
                    println!("{}", fisk_ai::gate::sanitize(line, usize::MAX));
                }
                Ok(true)
            }
            None => {
                eprintln!("{}: no such passage in the index {}", clean(&citation), kb.directory().display());
                Ok(false)
            }
        },
        KnowledgeCommand::Sources => sources(&kb),
        KnowledgeCommand::Doctor => Ok(doctor(&kb).await),
        KnowledgeCommand::Stats => stats(&kb),
        KnowledgeCommand::Rm { path } => {
            let n = kb.remove(&path).await?;
            println!("removed {n} file(s) from the index");
            Ok(n > 0)
        }
        KnowledgeCommand::Reset { force } => {
            if !force {
                return Err(format!("reset deletes the index in {}; pass --force", kb.directory().display()).into());
            }
            kb.reset()?;
            println!("deleted the index in {}", kb.directory().display());
            Ok(true)
        }
    }
}

/// The progress bar: on stderr, drawn only on a terminal (indicatif hides it elsewhere).
struct Bar(ProgressBar);

impl IndexProgress for Bar {
    fn start(&self, files: usize) {
        self.0.set_length(files as u64);
    }
    fn file(&self, path: &str) {
        self.0.set_message(fisk_ai::gate::sanitize(path, 60));
        self.0.inc(1);
    }
}

pub(crate) async fn index(kb: &KnowledgeBase, options: IndexOptions) -> Result<IndexReport> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let report = kb.index(options, &Bar(bar.clone())).await;
    bar.finish_and_clear();
    Ok(report?)
}

pub(crate) fn print_report(report: &IndexReport) {
    for s in &report.skipped {
        eprintln!("skipped {}: {}", clean(&s.path.display().to_string()), clean(&s.reason));
    }
    if report.skipped_unlisted > 0 {
        eprintln!("skipped {} more file(s), not listed", report.skipped_unlisted);
    }
    println!("{report}");
}

/// Text from a document, a path or a service, made safe for a terminal (escapes stripped, controls folded).
fn clean(text: &str) -> String {
    fisk_ai::gate::sanitize(text, 300)
}

async fn search(kb: &KnowledgeBase, query: &str, top_k: Option<usize>) -> Result<bool> {
    let Some(found) = kb.search(query, top_k).await? else {
        eprintln!("the index in {} is not built; run `{} knowledge index`", kb.directory().display(), crate::program());
        return Ok(false);
    };
    for w in &found.warnings {
        eprintln!("warning: {}", clean(w));
    }
    for (i, hit) in found.hits.iter().enumerate() {
        println!(
            "{}. {} {} (lines {}-{}, score {:.4})",
            i + 1,
            clean(&hit.citation),
            clean(&hit.title),
            hit.line_start,
            hit.line_end,
            hit.score
        );
        let first: String = hit
            .text
            .lines()
            .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .unwrap_or("")
            .chars()
            .take(120)
            .collect();
        println!("   {}", fisk_ai::gate::sanitize(&first, 200));
    }
    if found.hits.is_empty() {
        eprintln!("no passage matches");
    }
    Ok(true)
}

fn table(header: Vec<&str>) -> Table {
    let mut t = Table::new();
    t.load_style(crate::info::ROUNDED).set_content_arrangement(ContentArrangement::Disabled).set_header(header);
    t
}

fn sources(kb: &KnowledgeBase) -> Result<bool> {
    let Some(files) = kb.sources()? else {
        eprintln!("the index in {} is not built", kb.directory().display());
        return Ok(false);
    };
    let mut t = table(vec!["PATH", "CHUNKS", "BYTES", "INDEXED"]);
    for f in &files {
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_millis(f.indexed_at_ms.max(0) as u64);
        t.add_row(vec![
            fisk_ai::gate::sanitize(&f.path, 200),
            f.chunks.to_string(),
            f.size.to_string(),
            fisk_ai::session::rfc3339(when),
        ]);
    }
    println!("{t}");
    println!("{} file(s)", files.len());
    Ok(true)
}

fn stats(kb: &KnowledgeBase) -> Result<bool> {
    let Some(s) = kb.stats()? else {
        eprintln!("the index in {} is not built", kb.directory().display());
        return Ok(false);
    };
    let mut t = table(vec!["", ""]);
    let dim = s.pins.dimension.map_or_else(|| "-".to_owned(), |d| d.to_string());
    for (k, v) in [
        ("directory", kb.directory().display().to_string()),
        ("files", s.files.to_string()),
        ("chunks", s.chunks.to_string()),
        ("vectors", s.vectors.to_string()),
        ("source bytes", s.source_bytes.to_string()),
        ("disk bytes", s.disk_bytes.to_string()),
        ("chunker", format!("{} ({})", s.pins.chunker, s.pins.tokenizer)),
        ("embedding model", s.pins.model.clone().unwrap_or_else(|| "none (lexical only)".into())),
        ("dimension", dim),
    ] {
        t.add_row(vec![k.to_owned(), v]);
    }
    println!("{t}");
    if let Some(why) = &s.mismatch {
        eprintln!(
            "this configuration cannot use the index: {why}; run `{} knowledge index --reindex`",
            crate::program()
        );
        return Ok(false);
    }
    Ok(true)
}

async fn doctor(kb: &KnowledgeBase) -> bool {
    let report = kb.doctor().await;
    let mut ok = true;
    println!("index: {}", kb.directory().display());
    match &report.index {
        Ok(Some(s)) => {
            println!("  ok: {} files, {} chunks, {} vectors", s.files, s.chunks, s.vectors);
            if let Some(why) = &s.mismatch {
                println!("  problem: {why}; run `{} knowledge index --reindex`", crate::program());
                ok = false;
            }
        }
        Ok(None) => {
            println!("  problem: not built; run `{} knowledge index`", crate::program());
            ok = false;
        }
        Err(e) => {
            println!("  problem: {e}");
            ok = false;
        }
    }
    match &report.embedder {
        None => println!("embeddings: not configured (lexical search only)"),
        Some(Ok((dim, took))) => println!("embeddings: ok: {dim} dimensions in {} ms", took.as_millis()),
        Some(Err(e)) => {
            println!("embeddings: problem: {}", fisk_ai::gate::sanitize(e, 500));
            ok = false;
        }
    }
    ok
}
