//! Processes by PID, read from /proc, for the tests that check that no descendant outlives its call (EXEC-10,
//! EXEC-17). Polling for an outcome is bounded; no test asserts how long anything took.

use std::path::Path;
use std::time::Duration;

/// The `/proc/PID/stat` fields after the command name: state, parent, ... (`None`: no such process, so it was
/// reaped).
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is parenthesised and may itself contain spaces and parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Whether `pid` runs (exists and is not a zombie).
pub fn alive(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z"))
}

/// Whether `pid` is a zombie: exited, its status not yet collected by its parent.
pub fn zombie(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|s| s == "Z"))
}

/// The parent of `pid`, while it exists.
pub fn parent(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// Wait, bounded, until `pid` is gone entirely: killed and its status collected. A zombie left behind fails, as
/// does a survivor; `what` names it in the failure.
pub async fn wait_gone(pid: i32, what: &str) {
    for _ in 0..400 {
        if stat_fields(pid).is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let state = stat_fields(pid).and_then(|f| f.first().cloned()).unwrap_or_default();
    panic!("{what} (pid {pid}) outlived its call: state {state}, parent {:?}", parent(pid));
}

/// The process id written on the first line of `file`.
pub fn pid_in(file: &Path) -> i32 {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines().next().and_then(|l| l.trim().parse().ok()).unwrap_or_else(|| panic!("no pid in {text:?}"))
}
