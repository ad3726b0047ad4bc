//! The terminal gate on a real terminal (GATE-6..12): `examples/gate_prompt` runs inside a private tmux server,
//! keys go in with `send-keys`, and the screen comes back with `capture-pane`. The example's stdout is redirected
//! to a file, so the screen shows only what went to stderr.
//!
//! Without tmux these tests print `SKIPPED:` and pass, except when `CI` is set, where they fail.
#![cfg(feature = "terminal")]
#![cfg(feature = "terminal")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long to wait for the screen or the process before giving up; generous for a loaded 2-core CI box.
const PATIENCE: Duration = Duration::from_secs(60);

/// The command line used by most tests and how the prompt shows it.
const LINE: &str = "nats stream rm ORDERS --force";

/// The example binary, rebuilt once per run with this test's own features so it is never stale (a run of just this
/// test would otherwise reuse an old binary) and reuses the library this test was built against.
fn example() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let features: Vec<&str> = [
            (cfg!(feature = "anthropic"), "anthropic"),
            (cfg!(feature = "mcp"), "mcp"),
            (cfg!(feature = "nats"), "nats"),
            (cfg!(feature = "terminal"), "terminal"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        let out = Command::new(env!("CARGO"))
            .args(["build", "--example", "gate_prompt", "--no-default-features", "--features", &features.join(",")])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "building examples/gate_prompt failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap();
        profile_dir.join("examples").join("gate_prompt")
    })
}

/// Single-quote for sh.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Whether tmux can run here; without it: fail under CI, else say so loudly and skip.
fn tmux_available(test: &str) -> bool {
    if Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "{test}: tmux is required under CI (apt-get install -y tmux)");
    eprintln!("SKIPPED: {test}: tmux is not installed; the real-terminal gate tests did not run");
    false
}

/// One example run in its own tmux server (its own socket), killed on drop whatever happens.
struct Pane {
    socket: String,
    dir: tempfile::TempDir,
}

impl Pane {
    /// Start `gate_prompt` with `args` (already sh words, so a test can use `$(printf ...)`) and `redirect`.
    fn start(test: &str, args: &str, redirect: &str) -> Pane {
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!("fisk-gate-{}-{}-{test}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("stdout");
        let status = dir.path().join("status");
        // The pane stays after the example exits (sleep) so its last screen can be read; its exit code goes to a
        // file so the test knows when it is done.
        let script = format!(
            "{bin} {args} >{out} {redirect}\necho $? >{status}.tmp && mv {status}.tmp {status}\nexec sleep 600\n",
            bin = quote(example().to_str().unwrap()),
            out = quote(out.to_str().unwrap()),
            status = quote(status.to_str().unwrap()),
        );
        let path = dir.path().join("run.sh");
        std::fs::write(&path, script).unwrap();
        let pane = Pane { socket, dir };
        let mut started = pane.tmux(&["new-session", "-d", "-s", "gate", "-x", "120", "-y", "40"]);
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
    fn screen(&self, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", "gate"];
        if escapes {
            args.push("-e");
        }
        let o = run(&mut self.tmux(&args));
        String::from_utf8_lossy(&o.stdout).trim_end().to_owned()
    }

    /// Poll the screen until `done` holds.
    fn wait_screen(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
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

    /// Wait until the select is on screen and reading keys.
    fn wait_prompt(&self) -> String {
        self.wait_screen("the prompt", |s| s.contains("> No, decline"))
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "gate"];
        args.extend_from_slice(keys);
        let o = run(&mut self.tmux(&args));
        assert!(o.status.success(), "send-keys: {}", String::from_utf8_lossy(&o.stderr));
    }

    /// Wait for the example to exit; returns (exit code, its stdout).
    fn finished(&self) -> (String, String) {
        let start = Instant::now();
        let status = self.dir.path().join("status");
        loop {
            if let Ok(code) = std::fs::read_to_string(&status) {
                let out = std::fs::read_to_string(self.dir.path().join("stdout")).unwrap();
                return (code.trim().to_owned(), out);
            }
            assert!(start.elapsed() < PATIENCE, "the example did not exit; screen:\n{}", self.screen(false));
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The pane's title, which an OSC 0/2 sequence would set.
    fn title(&self) -> String {
        let o = run(&mut self.tmux(&["display-message", "-p", "-t", "gate", "#{pane_title}"]));
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

/// Assert the example exited normally (not killed by a signal) and printed exactly `decision=<word>`.
fn assert_decision(pane: &Pane, word: &str) {
    let (code, out) = pane.finished();
    assert_eq!(code, "0", "the example must exit normally; screen:\n{}", pane.screen(false));
    assert_eq!(out, format!("decision={word}\n"), "stdout holds only the decision; screen:\n{}", pane.screen(false));
}

#[test]
fn gate_7_9_enter_alone_declines_and_the_prompt_is_on_stderr() {
    if !tmux_available("gate_7_9_enter_alone_declines_and_the_prompt_is_on_stderr") {
        return;
    }
    let pane = Pane::start("enter", &format!("'stream rm' {} ai:confirm", quote(LINE)), "");
    let screen = pane.wait_prompt();
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(
        lines,
        [
            "",
            r#"Approval needed for "stream rm" (tagged ai:confirm)"#,
            "  nats stream rm ORDERS --force",
            "Your choice:",
            "> No, decline",
            "  Yes, run this call once",
            r#"  Yes, and don't ask again for "stream rm" in this conversation (any arguments)"#,
        ],
        "blank line, header with command path and tag, command line, three options with decline preselected"
    );
    pane.keys(&["Enter"]);
    assert_decision(&pane, "decline");
    assert!(pane.screen(false).contains("Your choice: No, decline"));
}

#[test]
fn gate_9_down_enter_runs_once() {
    if !tmux_available("gate_9_down_enter_runs_once") {
        return;
    }
    let pane = Pane::start("once", "", "");
    pane.wait_prompt();
    pane.keys(&["Down", "Enter"]);
    assert_decision(&pane, "once");
    let screen = pane.screen(false);
    assert!(screen.contains("Your choice: Yes, run this call once"), "{screen}");
    assert!(!screen.contains("Won't ask again"), "{screen}");
}

#[test]
fn gate_11_down_down_enter_allows_for_the_conversation_and_says_so() {
    if !tmux_available("gate_11_down_down_enter_allows_for_the_conversation_and_says_so") {
        return;
    }
    let pane = Pane::start("always", "", "");
    pane.wait_prompt();
    pane.keys(&["Down", "Down", "Enter"]);
    assert_decision(&pane, "for_conversation");
    let screen = pane.screen(false);
    assert!(screen.contains(r#"Won't ask again for "stream rm" in this conversation."#), "{screen}");
}

#[test]
fn gate_9_moving_round_back_to_decline_still_declines() {
    if !tmux_available("gate_9_moving_round_back_to_decline_still_declines") {
        return;
    }
    let pane = Pane::start("wrap", "", "");
    pane.wait_prompt();
    // Moving around and coming back to the first option still declines.
    pane.keys(&["Down", "Down", "Down", "Enter"]);
    assert_decision(&pane, "decline");
}

#[test]
fn gate_12_ctrl_c_at_the_prompt_aborts_without_killing_the_process() {
    if !tmux_available("gate_12_ctrl_c_at_the_prompt_aborts_without_killing_the_process") {
        return;
    }
    let pane = Pane::start("ctrlc", "", "");
    pane.wait_prompt();
    pane.keys(&["C-c"]);
    // Exit code 0 and a printed decision: the SIGINT console raises never reached the process.
    assert_decision(&pane, "abort");
}

#[test]
fn gate_12_escape_at_the_prompt_aborts() {
    if !tmux_available("gate_12_escape_at_the_prompt_aborts") {
        return;
    }
    let pane = Pane::start("escape", "", "");
    pane.wait_prompt();
    pane.keys(&["Escape"]);
    assert_decision(&pane, "abort");
}

#[test]
fn invariant_6_gate_8_escape_sequences_from_the_model_are_shown_stripped() {
    if !tmux_available("gate_8_escape_sequences_from_the_model_are_shown_stripped") {
        return;
    }
    // A title-setting OSC, colours, a blink and a screen clear, in the command line, the path and the tag.
    let args = r#""$(printf 'stream \033[1mrm')" "$(printf '\033]0;pwned\007rm \033[31m-rf\033[0m\t/tmp\033[2J')" "$(printf 'ai:\033[5mconfirm')""#;
    let pane = Pane::start("escapes", args, "");
    let screen = pane.wait_prompt();
    assert!(screen.contains(r#"Approval needed for "stream rm" (tagged ai:confirm)"#), "{screen}");
    assert!(screen.lines().any(|l| l == "  rm -rf /tmp"), "{screen}");
    assert!(!screen.contains("pwned"), "OSC payload shown: {screen}");
    assert_ne!(pane.title(), "pwned", "the OSC reached the terminal and set the title");
    let raw = pane.screen(true);
    for sgr in ["\u{1b}[31m", "\u{1b}[5m", "\u{1b}[1m"] {
        assert!(!raw.contains(sgr), "{sgr:?} reached the terminal: {raw:?}");
    }
    pane.keys(&["Enter"]);
    assert_decision(&pane, "decline");
}

#[test]
fn gate_6_no_terminal_on_stdin_declines_without_prompting() {
    if !tmux_available("gate_6_no_terminal_on_stdin_declines_without_prompting") {
        return;
    }
    // stderr is the tmux terminal, stdin is not: nobody can answer, so nobody is asked.
    let pane = Pane::start("nostdin", "", "</dev/null");
    assert_decision(&pane, "decline");
    let screen = pane.screen(false);
    assert!(!screen.contains("Approval needed"), "{screen}");
}
