//! The terminal gate on a real terminal (GATE-6..12): `examples/gate_prompt` runs inside a private tmux server,
//! keys go in with `send-keys`, and the screen comes back with `capture-pane`. The example's stdout is redirected
//! to a file, so the screen shows only what went to stderr.
//!
//! Without tmux these tests print `SKIPPED:` and pass, except when `CI` is set, where they fail.
#![cfg(feature = "terminal")]

mod common;
mod tmux;

use tmux::{Pane, quote, tmux_available};

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
fn gate_7_9_enter_alone_declines_and_the_prompt_is_on_stderr() {
    if !tmux_available("gate_7_9_enter_alone_declines_and_the_prompt_is_on_stderr") {
        return;
    }
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
    let pane = start("once", "", "");
    wait_prompt(&pane);
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
    let pane = start("always", "", "");
    wait_prompt(&pane);
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
    let pane = start("wrap", "", "");
    wait_prompt(&pane);
    // Moving around and coming back to the first option still declines.
    pane.keys(&["Down", "Down", "Down", "Enter"]);
    assert_decision(&pane, "decline");
}

#[test]
fn gate_12_ctrl_c_at_the_prompt_aborts_without_killing_the_process() {
    if !tmux_available("gate_12_ctrl_c_at_the_prompt_aborts_without_killing_the_process") {
        return;
    }
    let pane = start("ctrlc", "", "");
    wait_prompt(&pane);
    pane.keys(&["C-c"]);
    // Exit code 0 and a printed decision: the SIGINT console raises never reached the process.
    assert_decision(&pane, "abort");
}

#[test]
fn gate_12_escape_at_the_prompt_aborts() {
    if !tmux_available("gate_12_escape_at_the_prompt_aborts") {
        return;
    }
    let pane = start("escape", "", "");
    wait_prompt(&pane);
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
fn gate_6_no_terminal_on_stdin_declines_without_prompting() {
    if !tmux_available("gate_6_no_terminal_on_stdin_declines_without_prompting") {
        return;
    }
    // stderr is the tmux terminal, stdin is not: nobody can answer, so nobody is asked.
    let pane = start("nostdin", "", "</dev/null");
    assert_decision(&pane, "decline");
    let screen = pane.screen(false);
    assert!(!screen.contains("Approval needed"), "{screen}");
}
