//! The `ask_human_*` tools with the terminal prompter on a real terminal (HITL-6, 7, 9, 10):
//! `examples/hitl_prompt` runs inside a private tmux server, keys go in with `send-keys`, and the screen comes back
//! with `capture-pane`. The example's stdout (the tool result) is redirected to a file, so the screen shows only
//! what went to stderr.
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

/// The example binary, rebuilt once per run with this test's own features so it is never stale and reuses the
/// library this test was built against.
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
            .args(["build", "--example", "hitl_prompt", "--no-default-features", "--features", &features.join(",")])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "building examples/hitl_prompt failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(Path::parent).unwrap();
        profile_dir.join("examples").join("hitl_prompt")
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
    eprintln!("SKIPPED: {test}: tmux is not installed; the real-terminal HITL tests did not run");
    false
}

/// One example run in its own tmux server (its own socket), killed on drop whatever happens.
struct Pane {
    socket: String,
    dir: tempfile::TempDir,
}

impl Pane {
    /// Run `hitl_prompt TOOL INPUT`; `input` is a sh word (already quoted).
    fn start(test: &str, tool: &str, input: &str) -> Pane {
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!("fisk-hitl-{}-{}-{test}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("stdout");
        let status = dir.path().join("status");
        // The pane stays after the example exits (sleep) so its last screen can be read; its exit code goes to a
        // file so the test knows when it is done.
        let script = format!(
            "{bin} {tool} {input} >{out}\necho $? >{status}.tmp && mv {status}.tmp {status}\nexec sleep 600\n",
            bin = quote(example().to_str().unwrap()),
            out = quote(out.to_str().unwrap()),
            status = quote(status.to_str().unwrap()),
        );
        let path = dir.path().join("run.sh");
        std::fs::write(&path, script).unwrap();
        let pane = Pane { socket, dir };
        let mut started = pane.tmux(&["new-session", "-d", "-s", "hitl", "-x", "120", "-y", "40"]);
        started.arg(format!("sh {}", quote(path.to_str().unwrap())));
        let o = run(&mut started);
        assert!(o.status.success(), "tmux new-session: {}", String::from_utf8_lossy(&o.stderr));
        pane
    }

    fn tmux(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        // A private server with no user config, its socket inside the temp dir; never the developer's own tmux.
        c.args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", self.dir.path());
        c
    }

    /// The screen as text, trailing blank lines dropped.
    fn screen(&self) -> String {
        let o = run(&mut self.tmux(&["capture-pane", "-p", "-t", "hitl"]));
        String::from_utf8_lossy(&o.stdout).trim_end().to_owned()
    }

    /// Poll the screen until `done` holds.
    fn wait_screen(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}; screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "hitl"];
        args.extend_from_slice(keys);
        let o = run(&mut self.tmux(&args));
        assert!(o.status.success(), "send-keys: {}", String::from_utf8_lossy(&o.stderr));
    }

    /// The exit code once the example has exited.
    fn status(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join("status")).ok().map(|s| s.trim().to_owned())
    }

    /// Wait for the example to exit normally (not killed by a signal) and return its stdout, the tool result.
    fn result(&self) -> String {
        let start = Instant::now();
        loop {
            if let Some(code) = self.status() {
                let out = std::fs::read_to_string(self.dir.path().join("stdout")).unwrap();
                assert_eq!(code, "0", "the example must exit normally; stdout {out:?}; screen:\n{}", self.screen());
                return out.trim_end().to_owned();
            }
            assert!(start.elapsed() < PATIENCE, "the example did not exit; screen:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(20));
        }
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

#[test]
fn hitl_7_10_confirm_enter_alone_answers_no_and_the_prompt_follows_a_blank_line_on_stderr() {
    let test = "hitl_7_10_confirm_enter_alone_answers_no_and_the_prompt_follows_a_blank_line_on_stderr";
    if !tmux_available(test) {
        return;
    }
    let pane =
        Pane::start("confirm-enter", "ask_human_confirm", &quote(r#"{"question": "Delete the ORDERS stream?"}"#));
    let screen = pane.wait_screen("the confirm prompt", |s| s.contains("[y/N]"));
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["working...", "", "Delete the ORDERS stream? [y/N]"], "blank line, then the prompt, default no");
    pane.keys(&["Enter"]);
    assert_eq!(pane.result(), r#"{"confirmed":false}"#, "a plain no carries no reason");
    assert!(pane.screen().contains("Delete the ORDERS stream? no"), "{}", pane.screen());
}

#[test]
fn hitl_6_9_confirm_y_is_the_explicit_yes_and_model_escapes_never_reach_the_terminal() {
    let test = "hitl_6_9_confirm_y_is_the_explicit_yes_and_model_escapes_never_reach_the_terminal";
    if !tmux_available(test) {
        return;
    }
    // A title-setting OSC, a colour and a screen clear inside the model's question.
    let input = quote(r#"{"question": "\u001b]0;pwned\u0007Drop \u001b[31mORDERS\u001b[0m?\u001b[2J"}"#);
    let pane = Pane::start("confirm-yes", "ask_human_confirm", &input);
    let screen = pane.wait_screen("the confirm prompt", |s| s.contains("[y/N]"));
    assert!(screen.lines().any(|l| l.trim_end() == "Drop ORDERS? [y/N]"), "{screen}");
    assert!(screen.contains("working..."), "nothing cleared the screen: {screen}");
    let title = run(&mut pane.tmux(&["display-message", "-p", "-t", "hitl", "#{pane_title}"]));
    assert_ne!(String::from_utf8_lossy(&title.stdout).trim(), "pwned", "the OSC reached the terminal");
    pane.keys(&["y"]);
    assert_eq!(pane.result(), r#"{"confirmed":true}"#);
}

#[test]
fn hitl_7_select_has_no_default_choice_and_returns_the_option_chosen() {
    let test = "hitl_7_select_has_no_default_choice_and_returns_the_option_chosen";
    if !tmux_available(test) {
        return;
    }
    let input = quote(r#"{"question": "Which stream?", "options": ["ORDERS", "EVENTS", "AUDIT"]}"#);
    let pane = Pane::start("select", "ask_human_select", &input);
    let screen = pane.wait_screen("the select prompt", |s| s.contains("AUDIT"));
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["working...", "", "Which stream?:", "  ORDERS", "  EVENTS", "  AUDIT"], "nothing preselected");
    // A reflexive Enter picks nothing; the prompt keeps waiting.
    pane.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(pane.status(), None, "Enter alone must not answer; screen:\n{}", pane.screen());
    // The first Down highlights the first option, the second moves to the second.
    pane.keys(&["Down"]);
    pane.wait_screen("the first option highlighted", |s| s.contains("> ORDERS"));
    pane.keys(&["Down", "Enter"]);
    assert_eq!(pane.result(), r#"{"selected":"EVENTS"}"#);
    assert!(pane.screen().contains("Which stream?: EVENTS"), "{}", pane.screen());
}

#[test]
fn hitl_6_input_takes_typed_text_or_the_default_on_enter() {
    let test = "hitl_6_input_takes_typed_text_or_the_default_on_enter";
    if !tmux_available(test) {
        return;
    }
    let input = quote(r#"{"question": "Stream name?", "default": "ORDERS"}"#);
    let pane = Pane::start("input-typed", "ask_human_input", &input);
    pane.wait_screen("the input prompt", |s| s.contains("Stream name? [ORDERS]:"));
    pane.keys(&["-l", "EVENTS two"]);
    pane.wait_screen("the typed text", |s| s.contains("EVENTS two"));
    pane.keys(&["Enter"]);
    assert_eq!(pane.result(), r#"{"value":"EVENTS two"}"#);

    let pane = Pane::start("input-default", "ask_human_input", &input);
    pane.wait_screen("the input prompt", |s| s.contains("Stream name? [ORDERS]:"));
    pane.keys(&["Enter"]);
    assert_eq!(pane.result(), r#"{"value":"ORDERS"}"#);
}

#[test]
fn hitl_7_ctrl_c_at_a_prompt_is_a_negative_outcome_without_killing_the_process() {
    let test = "hitl_7_ctrl_c_at_a_prompt_is_a_negative_outcome_without_killing_the_process";
    if !tmux_available(test) {
        return;
    }
    let cases = [
        ("ask_human_confirm", r#"{"question": "Proceed?"}"#, "Proceed?", "confirmed", "false"),
        ("ask_human_select", r#"{"question": "Which?", "options": ["a", "b"]}"#, "Which?:", "selected", "null"),
        ("ask_human_input", r#"{"question": "Name?"}"#, "Name?:", "value", "null"),
    ];
    for (tool, input, prompt, field, nothing) in cases {
        let pane = Pane::start("ctrlc", tool, &quote(input));
        pane.wait_screen("the prompt", |s| s.contains(prompt));
        pane.keys(&["C-c"]);
        // Exit code 0 and a printed result: the SIGINT console raises never reached the process.
        let out = pane.result();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v[field].to_string(), nothing, "{tool}: {out}");
        assert!(v["reason"].as_str().unwrap().contains("interrupt"), "{tool}: {out}");
    }
}
