//! The stdio server child (MCPI-3): no shell, its own process group, the scrubbed environment without
//! `LLMFORMAT`, the process working directory; stderr drained into a bounded tail; stdout read in bounded memory
//! ([`BoundedLines`]). No descendant outlives the server or the connection (EXEC-17); closing the connection
//! closes the server as the transport specification asks ([`closing`](super::closing), MCPI-17).

use super::closing::Ending;
use super::connection::source_error;
use super::lines::BoundedLines;
use crate::error::Result;
use crate::exec::{ChildEnv, ChildKind, Descendants, Marker};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};

/// How much of the server's stderr is kept for error messages.
const STDERR_TAIL: usize = 4096;

/// What the child left behind: its exit status and the end of its stderr.
#[derive(Default)]
struct Leftovers {
    exit: Option<String>,
    stderr: Vec<u8>,
}

/// A running stdio server. Dropping it closes the server (MCPI-17): given time to exit once its stdin is closed,
/// then `SIGTERM`, then its whole process group and every other descendant are killed.
pub(crate) struct StdioChild {
    /// `None` once handed to the closing.
    ending: Option<Ending>,
    leftovers: Arc<Mutex<Leftovers>>,
}

/// Marks the server's stdin closed, for the closing's clock (MCPI-17); the transport holds it.
pub(crate) struct StdinClosed(tokio::sync::watch::Sender<bool>);

impl StdinClosed {
    pub(crate) fn mark(&self) {
        self.0.send_replace(true);
    }
}

/// Start `command` for `server`: the child, the protocol's read and write halves, and the mark the transport
/// sets when it closes the write half.
pub(crate) fn spawn(
    server: &str,
    command: &[String],
    env: &ChildEnv,
) -> Result<(StdioChild, BoundedLines<ChildStdout>, ChildStdin, StdinClosed)> {
    let (program, args) = command.split_first().ok_or_else(|| source_error(server, "no command".into()))?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // MCPI-3: the scrubbed environment, in the process working directory (not the tools' one), no LLMFORMAT.
    let mut group = env
        .apply(cmd.as_std_mut(), Path::new(program), ChildKind::Server)
        .map_err(|e| source_error(server, format!("cannot confine {program}: {e}")).with_source(e))?;
    cmd.env_remove("LLMFORMAT");
    let marker = Marker::prepare(cmd.as_std_mut());
    // Until it is registered below: `kill_servers_now` waits for it rather than missing it.
    let spawning = super::closing::spawning();
    let mut child =
        cmd.spawn().map_err(|e| source_error(server, format!("cannot start {program}: {e}")).with_source(e))?;
    drop(cmd);
    if let (Some(group), Some(pid)) = (group.as_mut(), child.id()) {
        // Its wait below reaps it.
        group.spare(pid);
    }
    let guard = Descendants::new(child.id(), marker);
    #[cfg(test)]
    tests::before_registration();
    let (registered, reaped) = super::closing::Registered::new(guard.sweep());
    drop(spawning);
    let sweep = guard.sweep();
    let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(i), Some(o), Some(e)) => (i, o, e),
        _ => return Err(source_error(server, "the child's pipes are missing".into())),
    };
    let leftovers = Arc::new(Mutex::new(Leftovers::default()));
    tokio::spawn(drain(server.to_owned(), stderr, Arc::clone(&leftovers)));
    let exit = Arc::clone(&leftovers);
    let (exited, on_exit) = tokio::sync::watch::channel(false);
    let (terminate, mut on_terminate) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let mut asked = false;
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                sent = &mut on_terminate, if !asked => {
                    asked = true;
                    // Only this task reaps the child, so while it is here the child's pid (its group's id) is
                    // still the child's: `id` is `None` once it was reaped.
                    if sent.is_ok() && let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
                        // ESRCH: the group is gone already.
                        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
                    }
                }
            }
        };
        // Before anything else: its pid may be anyone's from here on.
        reaped.mark();
        let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        if let Ok(mut l) = exit.lock() {
            l.exit = Some(status);
        }
        exited.send_replace(true);
        // The server is gone (exited, or killed with the connection): whatever it left running goes too, now
        // rather than when its tools are dropped. It reads /proc, so off the async threads.
        let _ = tokio::task::spawn_blocking(move || sweep.run()).await;
    });
    let (closed, stdin_closed) = tokio::sync::watch::channel(false);
    let terminate = Some(terminate);
    let ending = Ending { guard, group, terminate, exited: on_exit, stdin_closed, registered };
    let child = StdioChild { ending: Some(ending), leftovers };
    Ok((child, BoundedLines::new(stdout), stdin, StdinClosed(closed)))
}

impl StdioChild {
    /// `what`, with the exit status and the (sanitized) end of stderr when the child left them.
    pub(crate) fn explain(&self, what: &str) -> String {
        let Ok(l) = self.leftovers.lock() else { return what.to_owned() };
        let mut out = what.to_owned();
        if let Some(exit) = &l.exit {
            out.push_str(&format!(" (the server exited: {exit})"));
        }
        let tail = String::from_utf8_lossy(&l.stderr);
        let tail = tail.trim();
        if !tail.is_empty() {
            out.push_str("; its stderr ended with: ");
            out.push_str(&crate::gate::sanitize(tail, 600));
        }
        out
    }
}

impl Drop for StdioChild {
    fn drop(&mut self) {
        if let Some(ending) = self.ending.take() {
            ending.start();
        }
    }
}

/// Keep the last [`STDERR_TAIL`] bytes of the child's stderr and log each line (bounded) at debug level, so a
/// flooding server neither blocks on a full pipe nor grows memory.
async fn drain(server: String, mut stderr: tokio::process::ChildStderr, leftovers: Arc<Mutex<Leftovers>>) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let data = &buf[..n];
        for line in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let shown = String::from_utf8_lossy(&line[..line.len().min(512)]);
            tracing::debug!(target: "fisk_ai::source::mcp", server = %server, stderr = %crate::gate::sanitize(&shown, 512));
        }
        if let Ok(mut l) = leftovers.lock() {
            l.stderr.extend_from_slice(&data[data.len().saturating_sub(STDERR_TAIL)..]);
            let excess = l.stderr.len().saturating_sub(STDERR_TAIL);
            l.stderr.drain(..excess);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::spawn;
    use crate::exec::ChildEnv;
    use std::sync::Mutex;
    use std::sync::mpsc::{Sender, channel};
    use std::time::Duration;

    /// When set, the next spawn reports here once its server runs, and waits before registering it.
    static PAUSE: Mutex<Option<Sender<()>>> = Mutex::new(None);

    pub(super) fn before_registration() {
        let paused = PAUSE.lock().unwrap().take();
        if let Some(tx) = paused {
            let _ = tx.send(());
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// MCPI-17: `kill_servers_now` while a server is between its spawn and its registration waits for it and
    /// kills it, rather than missing it and leaving it running.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mcpi_17_kill_servers_now_kills_a_server_still_being_started() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("echo $$ > {}; exec sleep 30", pid_file.display());
        let (tx, rx) = channel();
        *PAUSE.lock().unwrap() = Some(tx);
        let started = tokio::task::spawn_blocking(move || {
            let command = ["/bin/sh".to_owned(), "-c".to_owned(), script];
            spawn("paused", &command, &ChildEnv::new())
        });
        tokio::task::spawn_blocking(move || rx.recv().unwrap()).await.unwrap();
        // Spawned and not registered yet: the kill waits for the registration, then kills it (the server writes its
        // pid, then becomes `sleep`, which would outlive the test).
        tokio::task::spawn_blocking(super::super::closing::kill_servers_now).await.unwrap();
        let held = started.await.unwrap().unwrap();
        let pid: i32 = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|p| p.trim().parse().ok()) {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let gone = |pid: i32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
                .unwrap_or(true)
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !gone(pid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone(pid), "the server started during kill_servers_now still runs");
        drop(held);
    }

    /// MCPI-17: a server's entry in the registry goes once it has ended, whether it exited on the end of its
    /// input or had exited before, so a host that starts and ends servers keeps no entry per server.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mcpi_17_an_ended_server_leaves_no_entry_in_the_registry() {
        use super::super::closing::{is_live, wait_servers_closed};
        for script in ["exec cat", "exit 3"] {
            let command = ["/bin/sh".to_owned(), "-c".to_owned(), script.to_owned()];
            let (child, output, input, closed) = spawn("registry", &command, &ChildEnv::new()).unwrap();
            let id = child.ending.as_ref().unwrap().registered.id();
            assert!(is_live(id), "{script}: not registered");
            drop((child, output, input, closed));
            // Other tests of this binary may be closing servers too; whether all ended in time is theirs.
            let _ = wait_servers_closed(Duration::from_secs(10)).await;
            assert!(!is_live(id), "{script}: still registered after it ended");
        }
    }
}
