//! A real terminal for tests: an example binary runs inside a private tmux server, keys go in with `send-keys`, the
//! screen comes back with `capture-pane`. The example's stdout goes to a file, so the screen shows only stderr. The
//! example is built by `common::example`, so test binaries using this module also declare `mod common;`.
#![allow(dead_code)]

use crate::common::example;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long to wait for the screen or the process before giving up; generous for a loaded 2-core CI box.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Single-quote for sh.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Fails the test unless tmux runs here. Only tests `#[ignore = "needs tmux; .ci/run provides it"]` call it, so it runs only when asked for (`--ignored`),
/// and then a missing tmux is a failure, never a silent pass.
pub fn require_tmux(test: &str) {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    assert!(ok, "{test}: needs tmux (apt-get install -y tmux); .ci/run installs it");
}

/// One example run in its own tmux server (its own socket), killed on drop whatever happens.
pub struct Pane {
    socket: String,
    dir: tempfile::TempDir,
}

impl Pane {
    /// Start example `name` with `args` (already sh words, so a test can use `$(printf ...)`) and `redirect`.
    pub fn start(name: &str, test: &str, args: &str, redirect: &str) -> Pane {
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!("fisk-{name}-{}-{}-{test}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("stdout");
        let status = dir.path().join("status");
        // The pane stays after the example exits (sleep) so its last screen can be read; its exit code goes to a
        // file so the test knows when it is done.
        let script = format!(
            "{bin} {args} >{out} {redirect}\necho $? >{status}.tmp && mv {status}.tmp {status}\nexec sleep 600\n",
            bin = quote(example(name).to_str().unwrap()),
            out = quote(out.to_str().unwrap()),
            status = quote(status.to_str().unwrap()),
        );
        let path = dir.path().join("run.sh");
        std::fs::write(&path, script).unwrap();
        let pane = Pane { socket, dir };
        let mut started = pane.tmux(&["new-session", "-d", "-s", "t", "-x", "120", "-y", "40"]);
        started.arg(format!("sh {}", quote(path.to_str().unwrap())));
        let o = run(&mut started);
        assert!(o.status.success(), "tmux new-session: {}", String::from_utf8_lossy(&o.stderr));
        pane
    }

    fn tmux(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        // A private server with no user config, its socket inside the temp dir so nothing is left behind; never the
        // developer's own tmux.
        c.args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", self.dir.path());
        c
    }

    /// The screen as text, trailing blank lines dropped; `escapes` keeps colour and attribute sequences.
    pub fn screen(&self, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", "t"];
        if escapes {
            args.push("-e");
        }
        let o = run(&mut self.tmux(&args));
        String::from_utf8_lossy(&o.stdout).trim_end().to_owned()
    }

    /// Poll the screen until `done` holds.
    pub fn wait_screen(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen(false);
            if done(&screen) {
                return screen;
            }
            assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}; screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Type keys (tmux key names).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        let o = run(&mut self.tmux(&args));
        assert!(o.status.success(), "send-keys: {}", String::from_utf8_lossy(&o.stderr));
    }

    /// The exit code once the example has exited.
    pub fn status(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join("status")).ok().map(|s| s.trim().to_owned())
    }

    /// Wait for the example to exit; returns (exit code, its stdout).
    pub fn finished(&self) -> (String, String) {
        let start = Instant::now();
        loop {
            if let Some(code) = self.status() {
                let out = std::fs::read_to_string(self.dir.path().join("stdout")).unwrap();
                return (code, out);
            }
            assert!(start.elapsed() < PATIENCE, "the example did not exit; screen:\n{}", self.screen(false));
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the example has written to stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stdout")).unwrap_or_default()
    }

    /// Poll stdout until `done` holds.
    pub fn wait_stdout(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let out = self.stdout();
            if done(&out) {
                return out;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {what}; stdout:\n{out}\nscreen:\n{}",
                self.screen(false)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pid of the running example `name` (a descendant of the pane's shell), once it has started.
    pub fn example_pid(&self, name: &str) -> i32 {
        let o = run(&mut self.tmux(&["display-message", "-p", "-t", "t", "#{pane_pid}"]));
        let root = String::from_utf8_lossy(&o.stdout).trim().to_owned();
        let start = Instant::now();
        loop {
            let mut todo = vec![root.clone()];
            while let Some(pid) = todo.pop() {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                if comm.trim_end() == name {
                    return pid.parse().unwrap();
                }
                let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
                todo.extend(children.split_whitespace().map(str::to_owned));
            }
            assert!(start.elapsed() < PATIENCE, "{name} never started; screen:\n{}", self.screen(false));
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pane's title, which an OSC 0/2 sequence would set.
    pub fn title(&self) -> String {
        let o = run(&mut self.tmux(&["display-message", "-p", "-t", "t", "#{pane_title}"]));
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]).output();
    }
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}
