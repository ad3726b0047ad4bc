//! The terminal gate on a real terminal (GATE-6..12): `examples/gate_prompt` runs inside a private tmux server,
//! keys go in with `send-keys`, and the screen comes back with `capture-pane`. The example's stdout is redirected
//! to a file, so the screen shows only what went to stderr.
//!
//! The last tests run the example CLI the same way, against the fake Messages API, for the approval line it shows
//! and for SIGTERM at its prompt.
//!
//! Without tmux these tests print `SKIPPED:` and pass, except when `CI` is set, where they fail.
#![cfg(feature = "terminal")]

mod common;
#[cfg(all(feature = "anthropic", feature = "mcp", feature = "terminal"))]
mod fake_anthropic;
mod tmux;

use tmux::{Pane, quote, require_tmux};

/// The command line used by most tests and how the prompt shows it.
const LINE: &str = "nats stream rm ORDERS --force";

/// Start `gate_prompt` with `args` and `redirect`.
fn start(test: &str, args: &str, redirect: &str) -> Pane {
    Pane::start("gate_prompt", test, args, redirect)
}

/// Wait until the select is on screen and reading keys.
fn wait_prompt(pane: &Pane) -> String {
    pane.wait_screen("the prompt", |s| s.contains("> No, decline"))
}

/// Assert the example exited normally (not killed by a signal) and printed exactly `decision=<word>`.
fn assert_decision(pane: &Pane, word: &str) {
    let (code, out) = pane.finished();
    assert_eq!(code, "0", "the example must exit normally; screen:\n{}", pane.screen(false));
    assert_eq!(out, format!("decision={word}\n"), "stdout holds only the decision; screen:\n{}", pane.screen(false));
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn gate_7_9_enter_alone_declines_and_the_prompt_is_on_stderr() {
    require_tmux("gate_7_9_enter_alone_declines_and_the_prompt_is_on_stderr");
    let pane = start("enter", &format!("'stream rm' {} ai:confirm", quote(LINE)), "");
    let screen = wait_prompt(&pane);
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
            r#"  Yes, and don't ask again for "stream rm" with exactly these arguments in this conversation"#,
        ],
        "blank line, header with command path and tag, command line, four options with decline preselected"
    );
    pane.keys(&["Enter"]);
    assert_decision(&pane, "decline");
    assert!(pane.screen(false).contains("Your choice: No, decline"));
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn gate_9_down_enter_runs_once() {
    require_tmux("gate_9_down_enter_runs_once");
    let pane = start("once", "", "");
    wait_prompt(&pane);
    pane.keys(&["Down", "Enter"]);
    assert_decision(&pane, "once");
    let screen = pane.screen(false);
    assert!(screen.contains("Your choice: Yes, run this call once"), "{screen}");
    assert!(!screen.contains("Won't ask again"), "{screen}");
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn gate_11_down_down_enter_allows_for_the_conversation_and_says_so() {
    require_tmux("gate_11_down_down_enter_allows_for_the_conversation_and_says_so");
    let pane = start("always", "", "");
    wait_prompt(&pane);
    pane.keys(&["Down", "Down", "Enter"]);
    assert_decision(&pane, "for_conversation");
    let screen = pane.screen(false);
    assert!(screen.contains(r#"Won't ask again for "stream rm" in this conversation."#), "{screen}");
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn exact_3_the_last_option_allows_these_exact_arguments_and_says_so() {
    require_tmux("exact_3_the_last_option_allows_these_exact_arguments_and_says_so");
    let pane = start("exact", "", "");
    wait_prompt(&pane);
    pane.keys(&["Down", "Down", "Down", "Enter"]);
    assert_decision(&pane, "for_conversation_exact");
    let screen = pane.screen(false);
    assert!(
        screen.contains(r#"Won't ask again for "stream rm" with these arguments in this conversation."#),
        "{screen}"
    );
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn exact_2_under_remember_exact_the_any_arguments_option_is_not_offered() {
    require_tmux("exact_2_under_remember_exact_the_any_arguments_option_is_not_offered");
    let pane = start("remember_exact", &format!("'stream rm' {} ai:confirm exact", quote(LINE)), "");
    let screen = wait_prompt(&pane);
    assert!(!screen.contains("(any arguments)"), "{screen}");
    assert!(screen.contains(r#"  Yes, and don't ask again for "stream rm" with exactly these arguments"#), "{screen}");
    pane.keys(&["Down", "Down", "Enter"]);
    assert_decision(&pane, "for_conversation_exact");
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn gate_9_moving_round_back_to_decline_still_declines() {
    require_tmux("gate_9_moving_round_back_to_decline_still_declines");
    let pane = start("wrap", "", "");
    wait_prompt(&pane);
    // Moving around and coming back to the first option still declines.
    pane.keys(&["Down", "Down", "Down", "Down", "Enter"]);
    assert_decision(&pane, "decline");
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn gate_12_ctrl_c_at_the_prompt_aborts_without_killing_the_process() {
    require_tmux("gate_12_ctrl_c_at_the_prompt_aborts_without_killing_the_process");
    let pane = start("ctrlc", "", "");
    wait_prompt(&pane);
    pane.keys(&["C-c"]);
    // Exit code 0 and a printed decision: the SIGINT console raises never reached the process.
    assert_decision(&pane, "abort");
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn gate_12_escape_at_the_prompt_aborts() {
    require_tmux("gate_12_escape_at_the_prompt_aborts");
    let pane = start("escape", "", "");
    wait_prompt(&pane);
    pane.keys(&["Escape"]);
    assert_decision(&pane, "abort");
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn invariant_6_gate_8_escape_sequences_from_the_model_are_shown_stripped() {
    require_tmux("gate_8_escape_sequences_from_the_model_are_shown_stripped");
    // A title-setting OSC, colours, a blink and a screen clear, in the command line, the path and the tag.
    let args = r#""$(printf 'stream \033[1mrm')" "$(printf '\033]0;pwned\007rm \033[31m-rf\033[0m\t/tmp\033[2J')" "$(printf 'ai:\033[5mconfirm')""#;
    let pane = start("escapes", args, "");
    let screen = wait_prompt(&pane);
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
#[ignore = "needs tmux; .ci/run provides it"]
fn gate_6_no_terminal_on_stdin_declines_without_prompting() {
    require_tmux("gate_6_no_terminal_on_stdin_declines_without_prompting");
    // stderr is the tmux terminal, stdin is not: nobody can answer, so nobody is asked.
    let pane = start("nostdin", "", "</dev/null");
    assert_decision(&pane, "decline");
    let screen = pane.screen(false);
    assert!(!screen.contains("Approval needed"), "{screen}");
}

/// The example CLI on a real terminal: `cli run` against the fake Messages API, wrapping the fake `mcp-app`, whose
/// gated `purge` leaves a line in a `ran` file when it runs.
#[cfg(all(feature = "anthropic", feature = "mcp", feature = "terminal"))]
mod cli {
    use super::*;
    use crate::fake_anthropic::{FakeAnthropic, Reply, streamed};
    use fisk_ai::session::{FileSessionStore, Journal, SessionId, SessionStore};
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use serde_json::{Value, json};
    use std::path::PathBuf;

    pub(super) struct Run {
        pub dir: tempfile::TempDir,
        pub server: FakeAnthropic,
        config: PathBuf,
    }

    impl Run {
        /// A conversation whose model first asks for `call` (one tool_use block), then answers `done`.
        pub async fn new(name: &str, input: Value) -> Run {
            let dir = tempfile::tempdir().unwrap();
            let app = crate::common::fake_app(dir.path(), "mcp-app");
            let config = dir.path().join("agent.yaml");
            std::fs::write(
                &config,
                format!(
                    "identity: tmuxcli\napplication_path: {}\nsystem_prompt: Do it.\nllm:\n  model: \
                     test-model\n",
                    app.display()
                ),
            )
            .unwrap();
            let call = json!({"type": "tool_use", "id": "call-1", "name": name, "input": input});
            let replies: [Reply; 2] =
                [streamed(&[call], "tool_use"), streamed(&[json!({"type": "text", "text": "done"})], "end_turn")];
            let server = FakeAnthropic::with_replies(replies).await;
            Run { dir, server, config }
        }

        /// `cli run` in a tmux pane with these extra words (sh words).
        pub fn start(&self, test: &str, extra: &str) -> Pane {
            let args = format!(
                "run --config {} --state-dir {} --base-url {} --api-key test-key --no-color {extra}",
                quote(self.config.to_str().unwrap()),
                quote(self.state().to_str().unwrap()),
                quote(&self.server.url()),
            );
            Pane::start("cli", test, &args, "")
        }

        pub fn state(&self) -> PathBuf {
            self.dir.path().join("state")
        }

        /// What the fake application ran, one line per run.
        pub fn ran(&self) -> String {
            std::fs::read_to_string(self.dir.path().join("ran")).unwrap_or_default()
        }

        pub async fn journal(&self, id: &str) -> Journal {
            let store = FileSessionStore::new(self.state());
            Journal::fold(store.read(&SessionId::new(id).unwrap()).await.unwrap()).unwrap()
        }
    }

    pub(super) fn terminate(pane: &Pane) {
        kill(Pid::from_raw(pane.example_pid("cli")), Signal::SIGTERM).unwrap();
    }
}

/// The approval prompt's command line for a value with a flag inside it, a right-to-left override, zero-width
/// characters, a newline, a colour escape and a single quote.
#[cfg(all(feature = "anthropic", feature = "mcp", feature = "terminal"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux; .ci/run provides it"]
async fn gate_7_8_the_cli_prompt_shows_one_quoted_value_with_every_hidden_character_visible() {
    let test = "gate_7_8_the_cli_prompt_shows_one_quoted_value_with_every_hidden_character_visible";
    require_tmux(test);
    let target = "ORDERS\u{202e} --dry-run\u{200b}\u{feff}\n\u{1b}[31mred's";
    let run = cli::Run::new("purge", serde_json::json!({"target": target})).await;
    let pane = run.start("hostile", "purge");
    let screen = wait_prompt(&pane);
    assert!(screen.contains(r#"Approval needed for "purge" (tagged ai:confirm)"#), "{screen}");
    let shown = r"  purge -- 'ORDERS\u{202e} --dry-run\u{200b}\u{feff} red'\''s'";
    assert!(screen.lines().any(|l| l == shown), "want {shown:?} in:\n{screen}");
    let raw = pane.screen(true);
    for hidden in ["\u{202e}", "\u{200b}", "\u{feff}", "\u{1b}[31m"] {
        assert!(!raw.contains(hidden), "{hidden:?} reached the terminal: {raw:?}");
    }
    pane.keys(&["Enter"]);
    let (code, out) = pane.finished();
    assert_eq!(code, "0", "{}", pane.screen(false));
    assert_eq!(out.trim(), "done");
    assert_eq!(run.ran(), "", "declined: nothing ran");
}

/// SIGTERM while the approval prompt waits: the prompt ends as Ctrl-C there would, nothing runs, the checkpointed
/// run ends suspended, and the resume asks the same call again.
#[cfg(all(feature = "anthropic", feature = "mcp", feature = "terminal"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux; .ci/run provides it"]
async fn gate_12_sigterm_at_the_prompt_aborts_nothing_runs_and_the_checkpointed_run_stays_resumable() {
    let test = "gate_12_sigterm_at_the_prompt_aborts_nothing_runs_and_the_checkpointed_run_stays_resumable";
    require_tmux(test);
    let run = cli::Run::new("purge", serde_json::json!({"target": "ORDERS"})).await;
    let pane = run.start("sigterm", "--checkpoint --name at-prompt purge");
    wait_prompt(&pane);
    cli::terminate(&pane);
    let (code, out) = pane.finished();
    let screen = pane.screen(false);
    assert_eq!(code, "0", "CLI-16: a suspended run exits 0 (not killed by the signal); screen:\n{screen}");
    assert_eq!(out, "", "no answer");
    assert!(screen.contains("suspended; resume with: cli run --resume at-prompt"), "{screen}");
    assert_eq!(run.ran(), "", "nothing ran");
    assert_eq!(run.server.requests().len(), 1, "the run stopped at the prompt");
    let j = run.journal("at-prompt").await;
    assert_eq!(j.status(), "suspended");
    assert_eq!(j.pending.as_ref().unwrap().unanswered().count(), 1, "the call waits, unanswered");

    // The resume asks again; this time the operator approves it once.
    let pane = run.start("resume", "--resume at-prompt");
    let screen = wait_prompt(&pane);
    assert!(screen.contains("  purge -- ORDERS"), "{screen}");
    pane.keys(&["Down", "Enter"]);
    let (code, out) = pane.finished();
    assert_eq!(code, "0", "{}", pane.screen(false));
    assert_eq!(out.trim(), "done");
    assert_eq!(run.ran(), "purge ORDERS\n", "it ran once, after the approval");
    assert_eq!(run.journal("at-prompt").await.status(), "completed");
}

/// Without a checkpoint, SIGTERM at the prompt still runs nothing and ends the run (GATE-12: reason `error`).
#[cfg(all(feature = "anthropic", feature = "mcp", feature = "terminal"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux; .ci/run provides it"]
async fn gate_12_sigterm_at_the_prompt_without_a_checkpoint_ends_the_run_and_runs_nothing() {
    let test = "gate_12_sigterm_at_the_prompt_without_a_checkpoint_ends_the_run_and_runs_nothing";
    require_tmux(test);
    let run = cli::Run::new("purge", serde_json::json!({"target": "ORDERS"})).await;
    let pane = run.start("sigterm-plain", "purge");
    wait_prompt(&pane);
    cli::terminate(&pane);
    let (code, out) = pane.finished();
    assert_eq!(code, "1", "the run ended in error, not killed by the signal; screen:\n{}", pane.screen(false));
    assert_eq!(out, "");
    assert_eq!(run.ran(), "", "nothing ran");
    assert!(!run.state().exists(), "nothing is journaled without --checkpoint");
}

/// CLI-7 on a terminal too narrow for the line: a quoted value is shortened as one value, inside its quotes.
#[cfg(all(feature = "anthropic", feature = "mcp", feature = "terminal"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux; .ci/run provides it"]
async fn cli_7_gate_8_a_long_quoted_value_is_shortened_whole_on_a_narrow_terminal() {
    let test = "cli_7_gate_8_a_long_quoted_value_is_shortened_whole_on_a_narrow_terminal";
    require_tmux(test);
    let long = format!("first part {} end-it", "z".repeat(110));
    let run = cli::Run::new("echo", serde_json::json!({"words": ["a b", long]})).await;
    let pane = run.start("narrow", "go");
    let (code, out) = pane.finished();
    let screen = pane.screen(false);
    assert_eq!(code, "0", "{screen}");
    assert_eq!(out.trim(), "done");
    assert!(screen.lines().any(|l| l == "-> echo -- 'a b' 'first part...end-it'"), "{screen}");
}
