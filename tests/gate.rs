//! The confirmation gate's types (SPEC §10): decisions, `DenyAll`, conversation-wide approvals, the GATE-10
//! decline result, GATE-8 sanitizing, and the terminal gate with no terminal attached. How the agent loop applies
//! the gate (GATE-6 order, allowance scope, declines) is tested through `Agent::run` in `gate_agent.rs`.

use fisk_ai::gate::{
    Approvals, ConfirmGate, ConfirmRequest, Decision, DeclineReason, DenyAll, PROMPT_LIMIT, declined, sanitize,
};
#[cfg(feature = "terminal")]
use std::sync::Arc;

fn req(command: &str, line: &str) -> ConfirmRequest {
    ConfirmRequest::new(command.replace(' ', "_"), command, line, "ai:confirm")
}

// ---- decisions ----

#[test]
fn gate_9_12_only_once_and_for_conversation_allow_the_call() {
    assert!(!Decision::Decline.allows());
    assert!(Decision::Once.allows());
    assert!(Decision::ForConversation.allows());
    assert!(!Decision::Abort.allows(), "an interrupt never runs the command");
}

#[tokio::test]
async fn gate_6_deny_all_cannot_ask_and_declines() {
    let r = req("stream rm", "nats stream rm ORDERS");
    assert!(!DenyAll.can_ask());
    assert_eq!(DenyAll.confirm(&r).await, Decision::Decline, "declines even when asked directly");
}

// ---- approvals ----

#[test]
fn gate_11_allowance_is_keyed_by_tool_name_only() {
    let mut a = Approvals::new();
    assert!(!a.is_allowed("stream_rm"));
    a.allow("stream_rm");
    assert!(a.is_allowed("stream_rm"));
    assert!(!a.is_allowed("stream_purge"), "other tools, even with the same tag, stay gated");
    assert!(!a.is_allowed("stream_rm ORDERS"), "the key is the name, arguments play no part");
    a.allow("stream_rm".to_string());
    a.allow("kv_del");
    assert_eq!(a.iter().collect::<Vec<_>>(), ["kv_del", "stream_rm"], "sorted, no duplicates");
    assert_eq!(a, a.clone());
}

#[test]
fn gate_15_clear_drops_every_allowance() {
    let mut a = Approvals::new();
    a.allow("stream_rm");
    a.allow("kv_del");
    a.clear();
    assert!(!a.is_allowed("stream_rm") && !a.is_allowed("kv_del"));
    assert_eq!(a.iter().count(), 0);
    assert_eq!(a, Approvals::default());
}

// ---- GATE-10 decline result ----

fn decline_json(reason: DeclineReason) -> serde_json::Value {
    let out = declined(reason);
    assert!(!out.is_error(), "a decline is a normal result the model reads, not an error");
    serde_json::from_str(out.content()).unwrap()
}

#[test]
fn gate_10_every_decline_has_the_allowed_false_shape() {
    for r in [DeclineReason::Operator, DeclineReason::NoOperator, DeclineReason::Cancelled] {
        let v = decline_json(r);
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 2, "{v}");
        assert_eq!(v["allowed"], false);
        assert!(!v["reason"].as_str().unwrap().is_empty());
    }
}

#[test]
fn gate_10_operator_decline_says_declined_final_and_do_not_retry() {
    let reason = decline_json(DeclineReason::Operator)["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("operator declined"), "{reason}");
    assert!(reason.contains("final"), "{reason}");
    assert!(reason.contains("do not retry"), "{reason}");
}

#[test]
fn gate_10_automatic_declines_name_their_cause() {
    let none = decline_json(DeclineReason::NoOperator)["reason"].as_str().unwrap().to_owned();
    assert!(none.contains("no operator"), "{none}");
    assert!(none.contains("not run"), "{none}");
    let cancelled = decline_json(DeclineReason::Cancelled)["reason"].as_str().unwrap().to_owned();
    assert!(cancelled.contains("cancelled"), "{cancelled}");
    assert!(cancelled.contains("not run"), "{cancelled}");
}

// ---- GATE-8 sanitizing ----

fn s(text: &str) -> String {
    sanitize(text, PROMPT_LIMIT)
}

#[test]
fn gate_8_csi_sequences_are_removed() {
    assert_eq!(s("rm \u{1b}[31m-rf\u{1b}[0m /tmp"), "rm -rf /tmp");
    assert_eq!(s("a\u{1b}[2J\u{1b}[Hb"), "ab", "clear screen and cursor home");
    assert_eq!(s("a\u{1b}[1;31;4mb\u{1b}[?25lc"), "abc", "parameters and private modes");
}

#[test]
fn gate_8_osc_sequences_are_removed_with_either_terminator() {
    assert_eq!(s("\u{1b}]0;pwned\u{7}ls"), "ls", "BEL-terminated title, payload included");
    assert_eq!(s("\u{1b}]0;pwned\u{1b}\\ls"), "ls", "ST-terminated title");
    assert_eq!(s("x\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\y"), "xlinky", "hyperlink");
}

#[test]
fn gate_8_other_escape_sequences_are_removed() {
    assert_eq!(s("a\u{1b}cb"), "ab", "RIS (full reset)");
    assert_eq!(s("a\u{1b}7b\u{1b}8c"), "abc", "save and restore cursor");
    assert_eq!(s("a\u{1b}(0b\u{1b}(Bc"), "abc", "charset switch");
    assert_eq!(s("a\u{1b}P1$r\u{1b}\\b"), "ab", "DCS string");
    assert!(!s("\u{1b}").contains('\u{1b}'), "a lone ESC");
}

#[test]
fn gate_8_control_characters_become_spaces() {
    assert_eq!(s("a\u{0}b\u{7}c\u{8}d\u{7f}e"), "a b c d e", "C0 and DEL");
    assert_eq!(s("a\u{85}b\u{9b}c"), "a b c", "C1, including the 8-bit CSI");
    assert_eq!(s("a\rb\nc\td"), "a b c d");
    assert!(s(&(0u8..=0x1f).map(char::from).collect::<String>()).is_empty(), "nothing but controls");
}

#[test]
fn gate_8_controls_between_words_never_join_them() {
    // What the operator reads must not run two arguments together.
    assert_eq!(s("rm\t-rf\r/tmp"), "rm -rf /tmp");
    assert_eq!(s("rm\u{0}-rf\u{7}/tmp\u{85}x"), "rm -rf /tmp x");
    assert_eq!(s("a\u{1b}[31\u{18}b"), "a b", "CAN cancels a sequence and still separates");
    assert_eq!(s("a\u{1b}]0;pw\tned\u{7}b"), "a b", "a control inside an OSC payload leaks nothing");
}

#[test]
fn gate_8_whitespace_runs_collapse_to_one_space_and_ends_are_trimmed() {
    assert_eq!(s("  rm \t\n  -rf\u{a0}\u{a0}/tmp \n"), "rm -rf /tmp");
    assert_eq!(s(""), "");
    assert_eq!(s(" \t\n"), "");
}

#[test]
fn gate_8_long_text_is_cut_at_2000_characters_with_an_ellipsis() {
    assert_eq!(PROMPT_LIMIT, 2000);
    let exact = "a".repeat(2000);
    assert_eq!(s(&exact), exact, "at the limit nothing is cut");
    let cut = s(&"a".repeat(2001));
    assert_eq!(cut.chars().count(), 2001);
    assert!(cut.starts_with(&exact) && cut.ends_with('…'));
    // A space that would be the 2001st character is cut too, not kept as a trailing space.
    assert_eq!(s(&format!("{exact} b")), format!("{exact}…"));
}

#[test]
fn gate_8_escapes_are_removed_before_the_cut() {
    let noisy = format!("{}{}{}", "a".repeat(1990), "\u{1b}[31m".repeat(100), "b".repeat(10));
    assert_eq!(s(&noisy), format!("{}{}", "a".repeat(1990), "b".repeat(10)), "2000 visible characters: no cut");
    let title = format!("\u{1b}]0;{}\u{7}ls", "x".repeat(5000));
    assert_eq!(s(&title), "ls", "a huge OSC payload is dropped whole, never half shown");
}

#[test]
fn gate_8_multibyte_characters_are_never_split() {
    let cut = s(&"é".repeat(2500));
    assert_eq!(cut, format!("{}…", "é".repeat(2000)));
    assert_eq!(sanitize("🦀🦀🦀", 2), "🦀🦀…");
    assert_eq!(sanitize("日本語 テキスト", 4), "日本語 …");
}

#[test]
fn gate_8_confirm_request_new_sanitizes_what_it_shows() {
    let r = ConfirmRequest::new(
        "stream_rm",
        "stream\n\u{1b}[1mrm",
        &format!("\u{1b}]0;pwned\u{7}nats stream rm \u{1b}[31mORDERS\u{1b}[0m\t--force {}", "x".repeat(3000)),
        "ai:confirm",
    );
    assert_eq!(r.tool, "stream_rm");
    assert_eq!(r.command, "stream rm");
    assert_eq!(r.trigger, "ai:confirm");
    assert!(r.command_line.starts_with("nats stream rm ORDERS --force xxx"), "{}", r.command_line);
    assert_eq!(r.command_line.chars().count(), PROMPT_LIMIT + 1);
    assert!(r.command_line.ends_with('…'));
    assert_eq!(r.command_line, sanitize(&r.command_line, PROMPT_LIMIT), "sanitizing twice changes nothing");
}

// ---- the terminal gate without a terminal ----

#[cfg(feature = "terminal")]
mod terminal {
    use super::*;
    use fisk_ai::gate::TerminalGate;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    /// Set in the child process that runs the no-terminal check.
    const CHILD: &str = "FISK_AI_GATE_NO_TTY_CHILD";

    /// `cargo test` run by hand may inherit the developer's terminal, so the check runs in a child copy of this test
    /// binary with stdin from /dev/null and stdout/stderr piped: no terminal anywhere, whoever runs the suite.
    #[test]
    fn invariant_6_gate_6_16_terminal_gate_without_a_terminal_cannot_ask_and_declines_without_prompting() {
        if std::env::var_os(CHILD).is_some() {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let gate = TerminalGate::stderr();
            assert!(!gate.can_ask());
            let decision = rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(30), gate.confirm(&req("stream rm", "nats stream rm ORDERS")))
                    .await
            });
            assert_eq!(decision, Ok(Decision::Decline), "declined without waiting for anyone");
            // Clones shared across tasks behave as one gate: each reports nobody to ask and declines.
            let shared: Arc<dyn ConfirmGate> = Arc::new(gate.clone());
            let tasks: Vec<_> = (0..2)
                .map(|_| {
                    let g = shared.clone();
                    rt.spawn(async move { (g.can_ask(), g.confirm(&req("stream rm", "x")).await) })
                })
                .collect();
            for t in tasks {
                assert_eq!(rt.block_on(t).unwrap(), (false, Decision::Decline));
            }
            println!("child-checked");
            return;
        }
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "terminal::invariant_6_gate_6_16_terminal_gate_without_a_terminal_cannot_ask_and_declines_without_prompting",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
        assert!(stdout.contains("child-checked"), "the check ran in the child:\n{stdout}");
        assert!(!stdout.contains("Approval needed") && !stderr.contains("Approval needed"), "no prompt drawn");
    }

    /// Compiles only if the gate can be cloned and moved to and shared between threads, as hosts do with an
    /// `Arc<dyn ConfirmGate>`; the behaviour of shared clones is checked in the no-terminal child above.
    #[test]
    fn terminal_gate_is_a_cloneable_shareable_gate() {
        fn shareable<T: Clone + Send + Sync + 'static>() {}
        shareable::<TerminalGate>();
        let gate: Arc<dyn ConfirmGate> = Arc::new(TerminalGate::stderr().clone());
        let other = gate.clone();
        let seen = std::thread::spawn(move || other.can_ask()).join().unwrap();
        assert_eq!(seen, gate.can_ask(), "a clone on another thread sees the same terminal");
    }
}
