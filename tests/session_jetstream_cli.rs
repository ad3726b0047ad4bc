//! The example CLI with the jetstream session backend against a real nats-server (2.11+) and the fake Messages
//! API: `session ls/show/rm` (CLI-19..24), `--state-dir` refused (SESS-27), a server restart mid-run (SESS-33),
//! the crash suite (SESS-14, SESS-15, DESIGN §6.9) and byte-identical bodies across backends (SESS-32).
#![cfg(feature = "nats")]

mod common;
mod fake_anthropic;
mod stepper;

use common::nats::NatsServer;
use fisk_ai::session::{JournalRecord, SessionId};
use std::time::Duration;
use stepper::crash::crash_suite;
use stepper::{ANSWER, Stepper, finish};

fn turns(t: &[&[&str]]) -> Vec<Vec<String>> {
    t.iter().map(|x| x.iter().map(|s| s.to_string()).collect()).collect()
}

fn text(out: &std::process::Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server 2.11+"]
async fn cli_19_24_session_ls_show_and_rm_read_the_jetstream_backend_a_configuration_names() {
    let nats = NatsServer::start_fencing();
    let s = Stepper::start_jetstream(turns(&[&["a1", "a2"]]), &nats.url(), "RUNS").await;
    let f = finish(s.run(&["--checkpoint", "--name", "first", "go"]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    assert_eq!(f.stdout.trim(), ANSWER);
    assert!(!s.state.exists(), "nothing is written to a state directory");

    let (ls, err) = text(&s.session(&["ls"]));
    let lines: Vec<&str> = ls.lines().collect();
    assert_eq!(lines.len(), 2, "{ls}{err}");
    assert!(lines[1].starts_with("first") && lines[1].contains("test-model") && lines[1].contains("completed"), "{ls}");
    let (show, err) = text(&s.session(&["show", "first", "--transcript"]));
    for expect in
        ["Session:        first", "Status:         completed", "LLM calls:      2", "Tool calls:     2", "> go"]
    {
        assert!(show.contains(expect), "{expect:?}:\n{show}{err}");
    }
    let (rm, err) = text(&s.session(&["rm", "first"]));
    assert!(rm.contains("Removed session first"), "{rm}{err}");
    let (rm, _) = text(&s.session(&["rm", "first"]));
    assert!(rm.contains("Removed session first"), "CLI-24: removing again is not an error: {rm}");
    let (ls, _) = text(&s.session(&["ls"]));
    assert!(ls.contains("No sessions in the jetstream backend (stream RUNS)"), "{ls}");

    // SESS-27: --state-dir with a non-file backend is an error naming the backend, for session and run alike.
    let dir = s.dir.path().join("elsewhere");
    let out = s.session(&["ls", "--state-dir", dir.to_str().unwrap()]);
    let (_, err) = text(&out);
    assert!(!out.status.success() && err.contains("--state-dir") && err.contains("\"jetstream\""), "{err}");
    let f = finish(s.run(&["--state-dir", dir.to_str().unwrap(), "--checkpoint", "go"]).spawn().unwrap()).await;
    assert_ne!(f.code, Some(0));
    assert!(f.stderr.contains("--state-dir") && f.stderr.contains("\"jetstream\""), "{}", f.stderr);
    assert!(!dir.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server 2.11+"]
async fn sess_33_a_nats_restart_mid_run_ends_it_with_error_and_resume_after_the_restart_completes_it() {
    let mut nats = NatsServer::start_fencing();
    let s = Stepper::start_jetstream(turns(&[&["slow-1"], &["fast-2"]]), &nats.url(), "RUNS").await;
    let id = SessionId::new("restarted").unwrap();
    let child = s.run(&["--checkpoint", "--name", "restarted", "go"]).spawn().unwrap();
    s.wait_for("the slow step to start", Duration::from_secs(20), |s| s.starts().contains(&"slow-1".into())).await;
    let before = s.sessions().read(&id).await.unwrap();
    assert_eq!(before.len(), 2, "meta and the first assistant turn are recorded");
    nats.kill();
    let f = finish(child).await;
    assert_ne!(f.code, Some(0), "{}", f.stderr);
    assert!(f.stderr.contains("Run error") || f.stderr.contains("error"), "{}", f.stderr);
    assert!(
        f.stderr.contains("restarted") && f.stderr.contains("RUNS"),
        "the failure names session and stream: {}",
        f.stderr
    );
    assert_eq!(s.ends(), ["slow-1"], "the step itself completed");

    nats.restart();
    // Nothing recorded was lost: the journal still holds exactly what it held, and no terminal record.
    let after = wait_readable(&s, &id).await;
    assert_eq!(bodies(&after), bodies(&before));
    let j = fisk_ai::session::Journal::fold(after).unwrap();
    assert!(j.terminal.is_none() && j.pending.is_some(), "resumable at its last coherent boundary");

    let f = finish(s.run(&["--resume", "restarted"]).spawn().unwrap()).await;
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    assert_eq!(f.stdout.trim(), ANSWER);
    // The one call whose result was not recorded runs again; no recorded model turn is requested again.
    assert_eq!(s.starts(), ["slow-1", "slow-1", "fast-2"]);
    assert_eq!(s.request_turns(), [0, 1, 2]);
    assert_eq!(s.journal(&id).await.unwrap().status(), "completed");
}

/// The journal once the restarted server answers again.
async fn wait_readable(s: &Stepper, id: &SessionId) -> Vec<JournalRecord> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match s.sessions().read(id).await {
            Ok(records) => return records,
            Err(e) if tokio::time::Instant::now() > deadline => panic!("the journal did not come back: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

fn bodies(records: &[JournalRecord]) -> Vec<Vec<u8>> {
    records.iter().map(JournalRecord::to_json).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server 2.11+"]
async fn invariant_9_sess_14_15_jetstream_crash_suite_20_kill_points() {
    let nats = NatsServer::start_fencing();
    let url = nats.url();
    crash_suite(20, |n, turns| {
        let url = url.clone();
        async move { Stepper::start_jetstream(turns, &url, &format!("CRASH{n}")).await }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server 2.11+"]
async fn sess_32_jetstream_record_bodies_are_byte_identical_to_file_journal_lines() {
    let nats = NatsServer::start_fencing();
    let conversation = turns(&[&["a1", "a2"], &["b1"]]);
    let file = Stepper::start(conversation.clone()).await;
    let js = Stepper::start_jetstream(conversation, &nats.url(), "RUNS").await;
    for s in [&file, &js] {
        let f = finish(s.run(&["--checkpoint", "--name", "same", "go"]).spawn().unwrap()).await;
        assert_eq!(f.code, Some(0), "{}", f.stderr);
    }
    let lines: Vec<Vec<u8>> = std::fs::read(file.store().journal_path(&SessionId::new("same").unwrap()))
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    // The raw payloads, in seq order, exactly as the stream holds them.
    let raw = &js.jetstream.as_ref().unwrap().raw;
    let mut payloads = Vec::new();
    for seq in 1..=lines.len() {
        let subject = if seq == 1 { "runs.same._meta".to_owned() } else { format!("runs.same.{seq}") };
        payloads.push(raw.get_last_raw_message_by_subject(&subject).await.unwrap().payload.to_vec());
    }
    assert_eq!(lines.len(), 8, "meta, 2 turns of results, the answer, terminal");
    // Only the creation time differs between two runs; mask it, and nothing else.
    let mask = |b: &[u8]| {
        let t = String::from_utf8(b.to_vec()).unwrap();
        match t.find("\"created\":\"") {
            Some(i) => {
                let end = i + 11 + t[i + 11..].find('"').unwrap();
                format!("{}\"created\":\"*{}", &t[..i], &t[end..])
            }
            None => t,
        }
    };
    for (seq, (line, payload)) in lines.iter().zip(&payloads).enumerate() {
        assert_eq!(mask(line), mask(payload), "record {}", seq + 1);
        // Each body is exactly the record's to_json, no newline.
        assert_eq!(JournalRecord::from_json(payload).unwrap().to_json(), *payload, "record {}", seq + 1);
    }
}
