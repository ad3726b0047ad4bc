//! The example CLI's sessions (SESS-2..4, SESS-24, SESS-27, CLI-3, CLI-12, CLI-14, CLI-19..25): suspend on SIGINT
//! and SIGTERM with exactly-once semantics, a second SIGINT aborting, flag combinations, resume refusals and the
//! `session ls/show/rm` commands, all against real processes and the fake Messages API.

mod common;
mod fake_anthropic;
mod stepper;

use fisk_ai::session::SessionId;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::time::Duration;
use stepper::{ANSWER, Stepper, finish};

fn turns(t: &[&[&str]]) -> Vec<Vec<String>> {
    t.iter().map(|x| x.iter().map(|s| s.to_string()).collect()).collect()
}

fn signal(child: &tokio::process::Child, sig: Signal) {
    kill(Pid::from_raw(child.id().unwrap() as i32), sig).unwrap();
}

/// Suspend on `sig` while the slow step runs; the step completes, the run exits 0 printing how to resume, and the
/// resume finishes without repeating the step or any recorded model turn.
async fn suspends_on(sig: Signal, name: &str) {
    let s = Stepper::start(turns(&[&["slow-1", "fast-1"], &["fast-2"]])).await;
    let child = s.run(&["--checkpoint", "--name", name, "go"]).spawn().unwrap();
    s.wait_for("the slow step to start", Duration::from_secs(20), |s| s.starts().contains(&"slow-1".into())).await;
    signal(&child, sig);
    let f = finish(child).await;
    assert_eq!(f.code, Some(0), "CLI-16: a suspended run exits 0\n{}", f.stderr);
    assert!(f.stdout.is_empty(), "no answer yet: {}", f.stdout);
    assert!(f.stderr.contains(&format!("notice: checkpointing to session {name}")), "CLI-12: {}", f.stderr);
    assert!(f.stderr.contains(&format!("suspended; resume with: cli run --resume {name}")), "CLI-14: {}", f.stderr);
    assert!(
        f.stderr.contains(&format!("Run suspended: session={name} model=test-model llm_calls=1 tool_calls=2")),
        "{}",
        f.stderr
    );
    // Work in progress completed: the slow step and the rest of its turn, and nothing after the boundary.
    assert_eq!(s.starts(), ["slow-1", "fast-1"]);
    assert_eq!(s.ends(), ["slow-1", "fast-1"]);
    assert_eq!(s.request_turns(), [0]);
    let id = SessionId::new(name).unwrap();
    let j = s.journal(&id).await.unwrap();
    assert_eq!(j.status(), "suspended");
    assert!(j.pending.is_none());

    let f = finish(s.run(&["--resume", name]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    assert_eq!(f.stdout.trim(), ANSWER);
    assert!(f.stderr.contains("--- conversation so far ---") && f.stderr.contains("> go"), "SESS-22: {}", f.stderr);
    assert!(f.stderr.contains("-> step -- slow-1"), "the replay shows the recorded calls: {}", f.stderr);
    assert_eq!(s.starts(), ["slow-1", "fast-1", "fast-2"], "SESS-14: exactly once");
    assert_eq!(s.request_turns(), [0, 1, 2], "no recorded turn is requested again");
    assert!(
        f.stderr.contains(&format!("Run summary: session={name} model=test-model llm_calls=3 tool_calls=3")),
        "LOOP-14: {}",
        f.stderr
    );
    assert_eq!(s.journal(&id).await.unwrap().status(), "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sess_24_cli_14_the_first_sigint_suspends_a_checkpointed_run_after_the_current_step() {
    suspends_on(Signal::SIGINT, "on-int").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sess_24_sigterm_suspends_a_checkpointed_run_after_the_current_step() {
    suspends_on(Signal::SIGTERM, "on-term").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sess_24_a_second_sigint_aborts_at_once_and_the_session_stays_resumable() {
    let s = Stepper::start(turns(&[&["slow-1"]])).await;
    let child = s.run(&["--checkpoint", "--name", "twice"]).spawn().unwrap();
    s.wait_for("the slow step to start", Duration::from_secs(20), |s| s.starts().contains(&"slow-1".into())).await;
    signal(&child, Signal::SIGINT);
    tokio::time::sleep(Duration::from_millis(100)).await;
    signal(&child, Signal::SIGINT);
    let f = finish(child).await;
    assert_eq!(f.code, Some(1), "{}", f.stderr);
    assert!(f.stderr.contains("cancelled"), "{}", f.stderr);
    // The step's process group was killed before it could finish.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(s.ends().is_empty(), "the aborted step never finished: {:?}", s.ends());
    let id = SessionId::new("twice").unwrap();
    let j = s.journal(&id).await.unwrap();
    assert_eq!(j.status(), "error");
    assert_eq!(j.pending.as_ref().unwrap().unanswered().count(), 1, "the killed call has no recorded result");

    let f = finish(s.run(&["--resume", "twice"]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    assert_eq!(f.stdout.trim(), ANSWER);
    assert_eq!(s.starts(), ["slow-1", "slow-1"], "the one unrecorded call runs again, once");
    assert_eq!(s.request_turns(), [0, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sess_24_without_checkpoint_sigint_cancels_the_run() {
    let s = Stepper::start(turns(&[&["slow-1"]])).await;
    let child = s.run(&["go"]).spawn().unwrap();
    s.wait_for("the slow step to start", Duration::from_secs(20), |s| s.starts().contains(&"slow-1".into())).await;
    signal(&child, Signal::SIGINT);
    let f = finish(child).await;
    assert_eq!(f.code, Some(1), "{}", f.stderr);
    assert!(f.stderr.contains("the run was cancelled"), "{}", f.stderr);
    assert!(!f.stderr.contains("session="), "{}", f.stderr);
    assert!(!s.state.exists(), "nothing is journaled without --checkpoint");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_3_sess_2_4_flag_combinations_and_ids_are_refused_before_anything_runs() {
    let s = Stepper::start(turns(&[])).await;
    let cases: &[(&[&str], &str)] = &[
        (&["--name", "x"], "--name needs --checkpoint"),
        (&["--force"], "--force needs --resume"),
        (&["--resume", "x", "--checkpoint"], "cannot be combined with --checkpoint"),
        (&["--resume", "x", "a", "prompt"], "give no prompt with it"),
        (&["--checkpoint", "--name", "../etc"], "invalid session id"),
        (&["--resume", "no/such"], "invalid session id"),
    ];
    for (args, expect) in cases {
        let f = finish(s.run(args).spawn().unwrap()).await;
        assert_eq!(f.code, Some(1), "{args:?}");
        assert!(f.stderr.contains(expect), "{args:?}: {}", f.stderr);
    }
    assert_eq!(s.server.request_count(), 0);
    assert!(!s.state.exists(), "SESS-3: no storage access");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sess_27_state_dir_with_a_non_file_backend_names_the_backend() {
    let s = Stepper::start(turns(&[])).await;
    let text = std::fs::read_to_string(&s.config).unwrap();
    std::fs::write(
        &s.config,
        text + "harness:\n  sessions:\n    backend: jetstream\n    options:\n      stream: RUNS\n",
    )
    .unwrap();
    let f = finish(s.run(&["--checkpoint", "go"]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(1));
    assert!(f.stderr.contains("--state-dir") && f.stderr.contains("\"jetstream\""), "{}", f.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sess_17_19_resume_refusals_reach_the_operator_and_force_overrides_drift() {
    let s = Stepper::start(turns(&[&["slow-1"], &["fast-2"]])).await;
    let child = s.run(&["--checkpoint", "--name", "drift", "go"]).spawn().unwrap();
    s.wait_for("the slow step to start", Duration::from_secs(20), |s| s.starts().contains(&"slow-1".into())).await;
    signal(&child, Signal::SIGTERM);
    assert_eq!(finish(child).await.code, Some(0));

    let text = std::fs::read_to_string(&s.config).unwrap();
    std::fs::write(
        &s.config,
        text.replace("model: test-model", "model: other-model").replace("max_iterations: 20", "max_iterations: 30"),
    )
    .unwrap();
    let f = finish(s.run(&["--resume", "drift"]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(1));
    assert!(f.stderr.contains("model: test-model -> other-model"), "{}", f.stderr);
    assert!(f.stderr.contains("max_iterations: 20 -> 30"), "{}", f.stderr);
    assert!(f.stderr.contains("--force"), "{}", f.stderr);
    assert_eq!(s.request_turns(), [0]);

    let f = finish(s.run(&["--resume", "drift", "--force"]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    assert_eq!(f.stdout.trim(), ANSWER);
    assert_eq!(s.starts(), ["slow-1", "fast-2"]);

    let f = finish(s.run(&["--resume", "drift", "--force"]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(1));
    assert!(f.stderr.contains("session drift has already completed"), "{}", f.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_20_21_22_23_24_session_ls_show_and_rm() {
    let s = Stepper::start(turns(&[&["slow-1", "fast-1"], &["fast-2"]])).await;
    let empty = s.session(&["ls"]);
    assert!(String::from_utf8_lossy(&empty.stdout).contains("No sessions in"), "CLI-20");
    assert!(String::from_utf8_lossy(&empty.stdout).contains("--config"));

    let long_prompt = "please take every step that the stepper offers, carefully and in order, then report back";
    let child = s.run(&["--checkpoint", "--name", "first", long_prompt]).spawn().unwrap();
    s.wait_for("the slow step to start", Duration::from_secs(20), |s| s.starts().contains(&"slow-1".into())).await;
    signal(&child, Signal::SIGINT);
    assert_eq!(finish(child).await.code, Some(0));
    let f = finish(s.run(&["--checkpoint", "--name", "second", "short"]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(0), "{}", f.stderr);

    let ls = String::from_utf8(s.session(&["ls"]).stdout).unwrap();
    let lines: Vec<&str> = ls.lines().collect();
    assert!(lines[0].starts_with("ID") && lines[0].contains("MODEL") && lines[0].contains("STATUS"), "{ls}");
    assert!(lines[0].contains("UPDATED") && lines[0].ends_with("PROMPT"), "{ls}");
    assert_eq!(lines.len(), 3, "{ls}");
    let first = lines.iter().find(|l| l.starts_with("first")).unwrap();
    assert!(first.contains("test-model") && first.contains("suspended"), "{first}");
    assert!(first.contains(&format!("{}...", &long_prompt[..50])), "CLI-20: 50 characters then ...: {first}");
    // Newest update first.
    assert!(lines[1].starts_with("second") && lines[1].contains("completed"), "{ls}");

    let show = String::from_utf8(s.session(&["show", "first"]).stdout).unwrap();
    for expect in [
        "Session:        first",
        "Status:         suspended",
        "Model:          test-model",
        "Next iteration: 2",
        "LLM calls:      1",
        "Tool calls:     2 (0 remote)",
        "Held answers:   none",
    ] {
        assert!(show.contains(expect), "CLI-21 {expect:?}:\n{show}");
    }
    let transcript = String::from_utf8(s.session(&["view", "first", "--transcript"]).stdout).unwrap();
    assert!(
        transcript.contains("> please take") && transcript.contains("-> step {\"token\":\"slow-1\"}"),
        "{transcript}"
    );
    assert!(transcript.contains("<- stepped slow-1"), "CLI-22: tool output: {transcript}");
    let quiet = String::from_utf8(s.session(&["show", "first", "--transcript", "--no-tool-output"]).stdout).unwrap();
    assert!(!quiet.contains("<- stepped"), "--no-tool-output leaves tool output out: {quiet}");
    let tui = String::from_utf8(s.session(&["show", "first", "--transcript", "--no-tui"]).stdout).unwrap();
    assert_eq!(tui, transcript.replace("view", "show"), "--no-tui changes nothing here either (CLI-4)");

    // CLI-23: held answers, from a journal with recorded confirmations.
    let held = r#"{"seq":1,"protocol":"io.choria.fisk-ai.v1.session.meta","meta":{"version":4,"run_id":"held","created":"2026-11-30T00:00:00Z","fingerprint":{"provider":"anthropic","model":"m","system_hash":"","tools_hash":"","thinking_mode":"off","max_tokens":1,"max_iterations":1},"prompt":"p"}}
{"seq":2,"protocol":"io.choria.fisk-ai.v1.session.confirm","confirm":{"choice":"always","tool_use_id":"c1","tool":"feed","command":"feed","tag":"impact:rw"}}
{"seq":3,"protocol":"io.choria.fisk-ai.v1.session.confirm","confirm":{"choice":"decline","tool_use_id":"c2","tool":"drop","command":"drop","tag":"ai:confirm"}}
{"seq":4,"protocol":"io.choria.fisk-ai.v1.session.confirm","confirm":{"choice":"decline","tool_use_id":"c3","tool":"drop","command":"drop","tag":"ai:confirm"}}
"#;
    std::fs::write(s.state.join("held.json"), held).unwrap();
    let show = String::from_utf8(s.session(&["show", "held"]).stdout).unwrap();
    assert!(show.contains("allowed for the conversation: feed"), "{show}");
    assert!(show.contains("recorded per-call answers: always=1 decline=2"), "{show}");

    let rm = s.session(&["rm", "first"]);
    assert_eq!(String::from_utf8_lossy(&rm.stdout).trim(), "Removed session first");
    let again = s.session(&["delete", "first"]);
    assert!(again.status.success(), "CLI-24: removing a missing session is not an error");
    let show = s.session(&["show", "first"]);
    assert!(!show.status.success());
    assert!(String::from_utf8_lossy(&show.stderr).contains("no session first"));
}
