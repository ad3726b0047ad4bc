//! The `ask_human_*` tools with the terminal prompter on a real terminal (HITL-6, 7, 9, 10):
//! `examples/hitl_prompt` runs inside a private tmux server, keys go in with `send-keys`, and the screen comes back
//! with `capture-pane`. The example's stdout (the tool result) is redirected to a file, so the screen shows only
//! what went to stderr.
//!
//! Without tmux these tests print `SKIPPED:` and pass, except when `CI` is set, where they fail.
#![cfg(feature = "terminal")]

mod common;
mod tmux;

use std::time::{Duration, Instant};
use tmux::{PATIENCE, Pane, quote, require_tmux};

/// Run `hitl_prompt TOOL INPUT`; `input` is a sh word (already quoted).
fn start(test: &str, tool: &str, input: &str) -> Pane {
    Pane::start("hitl_prompt", test, &format!("{tool} {input}"), "")
}

/// Wait for the example to exit normally (not killed by a signal) and return its stdout, the tool result.
fn result(pane: &Pane) -> String {
    let start = Instant::now();
    loop {
        if let Some(code) = pane.status() {
            let (_, out) = pane.finished();
            assert_eq!(code, "0", "the example must exit normally; stdout {out:?}; screen:\n{}", pane.screen(false));
            return out.trim_end().to_owned();
        }
        assert!(start.elapsed() < PATIENCE, "the example did not exit; screen:\n{}", pane.screen(false));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn hitl_7_10_confirm_enter_alone_answers_no_and_the_prompt_follows_a_blank_line_on_stderr() {
    let test = "hitl_7_10_confirm_enter_alone_answers_no_and_the_prompt_follows_a_blank_line_on_stderr";
    require_tmux(test);
    let pane = start("confirm-enter", "ask_human_confirm", &quote(r#"{"question": "Delete the ORDERS stream?"}"#));
    let screen = pane.wait_screen("the confirm prompt", |s| s.contains("[y/N]"));
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["working...", "", "Delete the ORDERS stream? [y/N]"], "blank line, then the prompt, default no");
    pane.keys(&["Enter"]);
    assert_eq!(result(&pane), r#"{"confirmed":false}"#, "a plain no carries no reason");
    assert!(pane.screen(false).contains("Delete the ORDERS stream? no"), "{}", pane.screen(false));
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn hitl_6_9_confirm_y_is_the_explicit_yes_and_model_escapes_never_reach_the_terminal() {
    let test = "hitl_6_9_confirm_y_is_the_explicit_yes_and_model_escapes_never_reach_the_terminal";
    require_tmux(test);
    // A title-setting OSC, a colour and a screen clear inside the model's question.
    let input = quote(r#"{"question": "\u001b]0;pwned\u0007Drop \u001b[31mORDERS\u001b[0m?\u001b[2J"}"#);
    let pane = start("confirm-yes", "ask_human_confirm", &input);
    let screen = pane.wait_screen("the confirm prompt", |s| s.contains("[y/N]"));
    assert!(screen.lines().any(|l| l.trim_end() == "Drop ORDERS? [y/N]"), "{screen}");
    assert!(screen.contains("working..."), "nothing cleared the screen: {screen}");
    assert_ne!(pane.title(), "pwned", "the OSC reached the terminal");
    pane.keys(&["y"]);
    assert_eq!(result(&pane), r#"{"confirmed":true}"#);
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn hitl_7_select_has_no_default_choice_and_returns_the_option_chosen() {
    let test = "hitl_7_select_has_no_default_choice_and_returns_the_option_chosen";
    require_tmux(test);
    let input = quote(r#"{"question": "Which stream?", "options": ["ORDERS", "EVENTS", "AUDIT"]}"#);
    let pane = start("select", "ask_human_select", &input);
    let screen = pane.wait_screen("the select prompt", |s| s.contains("AUDIT"));
    let lines: Vec<&str> = screen.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["working...", "", "Which stream?:", "  ORDERS", "  EVENTS", "  AUDIT"], "nothing preselected");
    // A reflexive Enter picks nothing; the prompt keeps waiting.
    pane.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(pane.status(), None, "Enter alone must not answer; screen:\n{}", pane.screen(false));
    // The first Down highlights the first option, the second moves to the second.
    pane.keys(&["Down"]);
    pane.wait_screen("the first option highlighted", |s| s.contains("> ORDERS"));
    pane.keys(&["Down", "Enter"]);
    assert_eq!(result(&pane), r#"{"selected":"EVENTS"}"#);
    assert!(pane.screen(false).contains("Which stream?: EVENTS"), "{}", pane.screen(false));
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn hitl_6_input_takes_typed_text_or_the_default_on_enter() {
    let test = "hitl_6_input_takes_typed_text_or_the_default_on_enter";
    require_tmux(test);
    let input = quote(r#"{"question": "Stream name?", "default": "ORDERS"}"#);
    let pane = start("input-typed", "ask_human_input", &input);
    pane.wait_screen("the input prompt", |s| s.contains("Stream name? [ORDERS]:"));
    pane.keys(&["-l", "EVENTS two"]);
    pane.wait_screen("the typed text", |s| s.contains("EVENTS two"));
    pane.keys(&["Enter"]);
    assert_eq!(result(&pane), r#"{"value":"EVENTS two"}"#);

    let pane = start("input-default", "ask_human_input", &input);
    pane.wait_screen("the input prompt", |s| s.contains("Stream name? [ORDERS]:"));
    pane.keys(&["Enter"]);
    assert_eq!(result(&pane), r#"{"value":"ORDERS"}"#);
}

#[test]
#[ignore = "needs tmux; .ci/run provides it"]
fn hitl_7_ctrl_c_at_a_prompt_is_a_negative_outcome_without_killing_the_process() {
    let test = "hitl_7_ctrl_c_at_a_prompt_is_a_negative_outcome_without_killing_the_process";
    require_tmux(test);
    let cases = [
        ("ask_human_confirm", r#"{"question": "Proceed?"}"#, "Proceed?", "confirmed", "false"),
        ("ask_human_select", r#"{"question": "Which?", "options": ["a", "b"]}"#, "Which?:", "selected", "null"),
        ("ask_human_input", r#"{"question": "Name?"}"#, "Name?:", "value", "null"),
    ];
    for (tool, input, prompt, field, nothing) in cases {
        let pane = start("ctrlc", tool, &quote(input));
        pane.wait_screen("the prompt", |s| s.contains(prompt));
        pane.keys(&["C-c"]);
        // Exit code 0 and a printed result: the SIGINT console raises never reached the process.
        let out = result(&pane);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v[field].to_string(), nothing, "{tool}: {out}");
        assert!(v["reason"].as_str().unwrap().contains("interrupt"), "{tool}: {out}");
    }
}
