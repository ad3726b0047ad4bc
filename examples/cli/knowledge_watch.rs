//! `fisk knowledge watch`: index once, then again after files under the configured paths change, debounced. Editors
//! that save by writing a new file and renaming it over the old one are seen as a change to the same path, because
//! the directories are watched, never the files' inodes.

use fisk_ai::knowledge::{IndexOptions, KnowledgeBase};
use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, new_debouncer};
use std::time::Duration;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

pub(crate) async fn watch(kb: &KnowledgeBase, debounce: Duration, initial: bool) -> Result<()> {
    if initial {
        let report = crate::knowledge::index(kb, IndexOptions::new()).await?;
        crate::knowledge::print_report(&report);
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<DebounceEventResult>();
    let mut debouncer = new_debouncer(debounce, None, move |events: DebounceEventResult| {
        let _ = tx.send(events);
    })?;
    for path in kb.paths() {
        // A file root is watched through its directory, so a rename over it is still seen.
        let (target, mode) = match path.is_dir() {
            true => (path.to_path_buf(), RecursiveMode::Recursive),
            false => (path.parent().unwrap_or(path).to_path_buf(), RecursiveMode::NonRecursive),
        };
        debouncer.watch(&target, mode).map_err(|e| format!("cannot watch {}: {e}", target.display()))?;
    }
    // notify reports canonical absolute paths: a relative index directory would never match, and the index's own
    // writes would trigger endless reindexing when it lies under a watched root. Resolved per batch, since the
    // directory may only appear with the first run.
    let index_dir = || {
        let dir = std::path::absolute(kb.directory()).unwrap_or_else(|_| kb.directory().to_path_buf());
        dir.canonicalize().unwrap_or(dir)
    };
    eprintln!("watching {} path(s); Ctrl-C stops", kb.paths().len());
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            got = rx.recv() => {
                let Some(events) = got else { return Ok(()) };
                match events {
                    // The index's own writes (when it lives under a watched path) are not a reason to index again.
                    Ok(events) if {
                        let index_dir = index_dir();
                        events.iter().all(|e| e.paths.iter().all(|p| p.starts_with(&index_dir)))
                    } => continue,
                    Ok(_) => {}
                    Err(errors) => {
                        for e in errors {
                            eprintln!("warning: watching: {}", fisk_ai::gate::sanitize(&e.to_string(), 300));
                        }
                    }
                }
                // Anything that arrived while indexing is covered by this run's fresh look at the disk.
                while rx.try_recv().is_ok() {}
                match crate::knowledge::index(kb, IndexOptions::new()).await {
                    Ok(report) => crate::knowledge::print_report(&report),
                    Err(e) => eprintln!("error: {}", fisk_ai::gate::sanitize(&e.to_string(), 2000)),
                }
            }
        }
    }
}
