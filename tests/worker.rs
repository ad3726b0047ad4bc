//! `fisk worker` fleets against a real nats-server (2.11+, for session fencing) and the fake Messages API
//! (WORK-1..10): exactly-once results by id, SIGKILL takeover without a repeated model turn, graceful handover,
//! malformed and exhausted requests, budget narrowing, answers from the journal, and misconfiguration refused
//! with its fix.
#![cfg(feature = "nats")]

mod common;
mod fake_anthropic;
mod fleet;
mod stepper;

use fleet::{Fleet, Queue};
use serde_json::json;
use std::collections::HashSet;
use std::time::Duration;

const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;

fn job(id: &str) -> serde_json::Value {
    json!({"id": id, "prompt": format!("job {id}")})
}

/// Model turns requested more than once, by (request, turn).
fn repeated_turns(fleet: &Fleet) -> Vec<(String, usize)> {
    let mut seen = HashSet::new();
    fleet.model_turns().into_iter().filter(|t| !seen.insert(t.clone())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn work_3_7_8_three_workers_thirty_requests_and_a_sigkill_lose_nothing_and_repeat_no_model_turn() {
    let fleet = Fleet::start(Queue::default()).await;
    let workers = [fleet.worker(), fleet.worker(), fleet.worker()];
    for w in &workers {
        w.ready().await;
    }
    // Every third request has 1s steps, so the kill lands in the middle of one.
    let ids: Vec<String> =
        (0..30).map(|i| if i % 3 == 0 { format!("slow{i:02}") } else { format!("r{i:02}") }).collect();
    for id in &ids {
        fleet.submit(&job(id)).await;
    }
    // SIGKILL the first worker seen running a slow step: that step's result is never recorded.
    let pids: Vec<u32> = workers.iter().map(|w| w.child.id().unwrap()).collect();
    let victim = loop {
        if let Some(i) = fleet.running_slow_step().and_then(|pid| pids.iter().position(|p| *p == pid)) {
            break i;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    workers[victim].signal(SIGKILL);
    let all: Vec<&fleet::WorkerProcess> = workers.iter().collect();
    let results = fleet.wait_results(30, Duration::from_secs(120), &all).await;

    for id in &ids {
        let (result, copies) = &results[id];
        assert_eq!(*copies, 1, "WORK-3: the result of {id} is stored exactly once");
        assert_eq!(result["outcome"], "completed", "{result}");
        assert_eq!(result["answer"], format!("done {id}"), "{result}");
        assert_eq!(result["stats"]["llm_calls"], 3, "a resumed run counts its earlier calls too: {result}");
    }
    assert_eq!(results.len(), 30, "no result for anything else");
    assert_eq!(repeated_turns(&fleet), Vec::<(String, usize)>::new(), "no recorded model turn is requested again");
    assert!(fleet.repeated_steps() <= 1, "at most one repeated tool call for one kill: {:?}", fleet.stepper.starts());
    assert_eq!(fleet.queued().await, 0, "every request was acknowledged and left the work queue");
    let resumed = workers.iter().any(|w| w.said().contains("resuming its session"));
    assert!(resumed, "the killed worker's run was taken over by resuming its journal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn work_10_sigterm_suspends_the_run_in_flight_and_another_worker_finishes_it() {
    let fleet = Fleet::start(Queue { ack_wait: Duration::from_secs(30), ..Queue::default() }).await;
    let first = fleet.worker();
    first.ready().await;
    fleet.submit(&job("slow-handover")).await;
    fleet.wait_slow_step(&first, Duration::from_secs(30)).await;
    let second = fleet.worker();
    second.ready().await;
    first.signal(SIGTERM);
    let (code, said) = first.exit().await;
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("released request slow-handover") && said.contains("suspended"), "{said}");
    // With a 30s ack wait, only the release (a nak) can hand the request over this soon.
    let results = fleet.wait_results(1, Duration::from_secs(20), &[&second]).await;
    let (result, _) = &results["slow-handover"];
    assert_eq!(result["outcome"], "completed", "{result}");
    assert!(second.said().contains("resuming its session"), "{}", second.said());
    assert_eq!(fleet.repeated_steps(), 0, "the step in progress finished before the suspension: nothing ran twice");
    assert_eq!(repeated_turns(&fleet), Vec::<(String, usize)>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn work_3_5_malformed_requests_get_final_error_results_and_the_queue_moves_on() {
    let fleet = Fleet::start(Queue::default()).await;
    let worker = fleet.worker();
    worker.ready().await;
    fleet.submit_raw(b"not json at all".to_vec()).await;
    fleet.submit_raw(br#"{"id": "no.dots", "prompt": "x"}"#.to_vec()).await;
    fleet.submit(&json!({"id": "bad-body", "prompt": 5})).await;
    fleet.submit(&json!({"id": "unknown-key", "prompt": "x", "priority": 1})).await;
    fleet.submit(&json!({"id": "wider", "prompt": "job wider", "budget": {"max_tokens": 1_000_000_000u64}})).await;
    fleet.submit(&json!({"id": "narrower", "prompt": "job narrower", "budget": {"max_iterations": 1}})).await;
    fleet.submit(&job("after")).await;
    let results = fleet.wait_results(5, Duration::from_secs(60), &[&worker]).await;
    let error = |id: &str| results[id].0["error"].as_str().unwrap_or_default().to_owned();
    assert_eq!(results["bad-body"].0["outcome"], "error");
    assert!(error("bad-body").contains("prompt must be a string"), "{}", error("bad-body"));
    assert!(error("unknown-key").contains("priority"), "{}", error("unknown-key"));
    // WORK-6: a budget may narrow, never widen.
    assert!(
        error("wider").contains("budget.max_tokens") && error("wider").contains("only narrow"),
        "{}",
        error("wider")
    );
    assert_eq!(results["wider"].0["stats"], json!(null), "a refused request never ran");
    assert_eq!(results["narrower"].0["outcome"], "max_iterations", "{}", results["narrower"].0);
    assert_eq!(results["narrower"].0["stats"]["llm_calls"], 1);
    assert_eq!(results["after"].0["outcome"], "completed");
    assert_eq!(results.len(), 5, "the two requests with no usable id have no result");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fleet.queued().await, 0, "terminated and answered requests all left the queue");
    let said = worker.said();
    assert_eq!(said.matches("terminated request at stream sequence").count(), 2, "{said}");
    worker.signal(SIGTERM);
    let (_, said) = worker.exit().await;
    assert!(said.contains("stopped (2 request(s) without a usable id terminated)"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn work_5_a_request_past_max_deliver_gets_a_final_error_result_and_is_removed() {
    let queue = Queue { ack_wait: Duration::from_secs(1), max_deliver: 2, steps: 4, ..Queue::default() };
    let fleet = Fleet::start(queue).await;
    let first = fleet.worker();
    first.ready().await;
    fleet.submit(&job("slow-doomed")).await;
    fleet.wait_slow_step(&first, Duration::from_secs(30)).await;
    let second = fleet.worker();
    second.ready().await;
    first.signal(SIGKILL);
    // Delivery 2 resumes on the second worker; it dies too, mid-step.
    fleet.wait_slow_step(&second, Duration::from_secs(30)).await;
    let third = fleet.worker();
    third.ready().await;
    second.signal(SIGKILL);
    let results = fleet.wait_results(1, Duration::from_secs(30), &[&third]).await;
    let (result, copies) = &results["slow-doomed"];
    assert_eq!(*copies, 1);
    assert_eq!(result["outcome"], "error");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("delivered 2 times") && error.contains("max_deliver"), "{error}");
    third.wait_line("the exhausted event", Duration::from_secs(10), |l| l.contains("reached max_deliver")).await;
    assert_eq!(fleet.queued().await, 0, "the exhausted request was removed from the queue");
    // The consumer moves on.
    fleet.submit(&job("next")).await;
    let results = fleet.wait_results(2, Duration::from_secs(30), &[&third]).await;
    assert_eq!(results["next"].0["outcome"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn work_9_a_request_whose_session_completed_is_answered_from_the_journal() {
    let fleet = Fleet::start(Queue::default()).await;
    let worker = fleet.worker();
    worker.ready().await;
    fleet.submit(&job("once")).await;
    fleet.wait_results(1, Duration::from_secs(30), &[&worker]).await;
    let calls = fleet.model_turns().len();
    fleet.submit(&job("once")).await;
    worker.wait_line("the journal answer", Duration::from_secs(30), |l| l.contains("not run again")).await;
    assert_eq!(fleet.model_turns().len(), calls, "no model call for a session that completed");
    assert_eq!(fleet.repeated_steps(), 0);
    let results = fleet.results().await;
    assert_eq!(results["once"].1, 1, "the duplicate result collapsed on its Nats-Msg-Id");
    assert_eq!(results["once"].0["answer"], "done once");
    assert_eq!(fleet.queued().await, 0);

    // The id again with another prompt: refused, and the session is neither read nor resumed.
    fleet.submit(&json!({"id": "other", "prompt": "job other"})).await;
    fleet.submit(&json!({"id": "other-2", "prompt": "job other-2", "session": "once"})).await;
    let results = fleet.wait_results(3, Duration::from_secs(30), &[&worker]).await;
    let error = results["other-2"].0["error"].as_str().unwrap_or_default().to_owned();
    assert!(error.contains("session once was started by another request"), "{error}");
    assert_eq!(results["other-2"].0["answer"], json!(null), "another run's answer is never handed out");
    // A bad body naming an existing session is terminated with no result: the session's own result stands.
    fleet.submit(&json!({"id": "once", "prompt": 5})).await;
    worker
        .wait_line("the rejection", Duration::from_secs(30), |l| l.contains("names session once, which exists"))
        .await;
    let results = fleet.results().await;
    assert_eq!((results["once"].0["outcome"].as_str(), results["once"].1), (Some("completed"), 1));
}

/// WORK-11: a second delivery of a session already running on this worker is released with a pause (never run
/// beside the first), and once the first has ended the journal answers it: no step or model turn runs twice, and
/// the id has one result.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn work_11_a_second_delivery_of_a_running_session_waits_and_its_journal_answers_it() {
    let fleet = Fleet::start(Queue { max_concurrent_runs: 2, ..Queue::default() }).await;
    let worker = fleet.worker();
    worker.ready().await;
    fleet.submit(&job("slow-twice")).await;
    fleet.wait_slow_step(&worker, Duration::from_secs(30)).await;
    // The same request again while its run is in a step: a worker with a free slot takes it at once.
    fleet.submit(&job("slow-twice")).await;
    let running = |l: &str| l.contains("released request slow-twice") && l.contains("already running on this worker");
    worker.wait_line("the release of the second delivery", Duration::from_secs(30), running).await;
    worker.wait_line("the journal's answer", Duration::from_secs(60), |l| l.contains("not run again")).await;
    assert_eq!(fleet.repeated_steps(), 0, "a step ran twice:\n{}", worker.said());
    assert_eq!(repeated_turns(&fleet), Vec::<(String, usize)>::new());
    let results = fleet.results().await;
    assert_eq!(results["slow-twice"].0["outcome"], "completed", "{}", results["slow-twice"].0);
    assert_eq!(results["slow-twice"].1, 1, "one result for the id");
    assert_eq!(fleet.queued().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn work_2_a_misconfigured_stream_consumer_or_results_stream_is_refused_with_its_fix() {
    let fleet = Fleet::start(Queue::default()).await;
    let check = |want: &'static [&'static str]| {
        let worker = fleet.worker();
        async move {
            let (code, said) = worker.exit().await;
            assert_eq!(code, Some(1), "{said}");
            for w in want {
                assert!(said.contains(w), "{w:?} in:\n{said}");
            }
        }
    };
    // The consumer's ack wait differs from the configuration's.
    fleet.write_config(&Queue { ack_wait: Duration::from_secs(9), ..Queue::default() }, "");
    check(&["ack wait", "nats consumer edit WORK workers --wait 9s"]).await;
    fleet.write_config(&Queue { max_deliver: 3, ..Queue::default() }, "");
    check(&["max deliver 5", "--max-deliver 3"]).await;
    // A duplicate window shorter than ack_wait x max_deliver (2s x 5) could keep a result twice.
    fleet.write_config(&Queue::default(), "");
    let mut results = fleet.js.get_stream("RESULTS").await.unwrap();
    let mut config = results.info().await.unwrap().config.clone();
    config.duplicate_window = Duration::from_secs(5);
    fleet.js.update_stream(config).await.unwrap();
    check(&["duplicate window of 5s", "nats stream edit RESULTS --dupe-window 1m"]).await;
    // No stream stores the results.
    fleet.js.delete_stream("RESULTS").await.unwrap();
    check(&["results subject results.>", "nats stream add RESULTS --subjects 'results.>'"]).await;
    // A stream with limits retention is not a work queue.
    fleet.js.delete_stream("WORK").await.unwrap();
    fleet.make_queue(&Queue::default(), async_nats::jetstream::stream::RetentionPolicy::Limits).await;
    check(&["stream WORK has Limits retention", "--retention work"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn work_3_a_flood_of_large_hostile_requests_keeps_the_worker_bounded_and_answers_each() {
    let fleet = Fleet::start(Queue { max_concurrent_runs: 4, ..Queue::default() }).await;
    let worker = fleet.worker();
    worker.ready().await;
    let pid = worker.child.id().unwrap();
    let idle = common::memory::peak_of(pid);
    // 80 requests of ~900 KiB each (under the server's 1 MiB payload limit): half with an escape-laden unknown key
    // as long as the body allows, half with no usable id at all.
    let big = "\u{1b}[2J".repeat(90_000);
    let long_id = "x".repeat(900_000);
    for i in 0..40 {
        fleet.submit(&json!({"id": format!("h{i:02}"), "prompt": "x", big.clone(): 1})).await;
        fleet.submit_raw(format!("{{\"id\": \"{long_id}\"}}").into_bytes()).await;
    }
    let results = fleet.wait_results(40, Duration::from_secs(60), &[&worker]).await;
    for (id, (result, copies)) in &results {
        assert_eq!(*copies, 1, "{id}");
        let error = result["error"].as_str().unwrap();
        assert!(error.len() < 10_000 && !error.contains('\u{1b}'), "{id}: a bounded, sanitized refusal");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while worker.said().matches("terminated request at stream sequence").count() < 40 {
        assert!(tokio::time::Instant::now() < deadline, "40 rejections:\n{}", worker.said());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let peak = common::memory::peak_of(pid);
    eprintln!("worker peak resident set: {} MiB idle, {} MiB after the flood", idle >> 20, peak >> 20);
    // About 65 MiB passed through; at most four requests are held at once.
    assert!(peak < idle + 48 * 1024 * 1024, "the worker's peak grew from {idle} to {peak} bytes");
    assert_eq!(fleet.queued().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs nats-server 2.11+"]
async fn appr_1_a_fleet_s_gated_calls_are_decided_over_nats_with_cli_approvals() {
    let queue = Queue { steps: 1, ..Queue::default() };
    let fleet = Fleet::start(queue).await;
    common::kv::create_bucket(&fleet.client, "APPROVALS").await;
    let path = &fleet.stepper.config;
    let text = std::fs::read_to_string(path).unwrap().replacen(
        "harness:\n",
        "harness:\n  confirm_tags: [impact:rw]\n  approvals:\n    backend: nats\n    bucket: APPROVALS\n    timeout: 1m\n",
        1,
    );
    std::fs::write(path, text).unwrap();
    let worker = fleet.worker();
    worker.ready().await;
    let js = fleet.stepper.jetstream.as_ref().unwrap();
    let approvals = |args: &[&str]| {
        let out = std::process::Command::new(common::example("cli"))
            .arg("approvals")
            .args(args)
            .arg("--config")
            .arg(path)
            .env("XDG_CONFIG_HOME", js.xdg.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The id of the pending approval whose command line holds `token`.
    let pending_for = |token: &'static str| {
        let approvals = &approvals;
        async move {
            for _ in 0..500 {
                let listed = approvals(&["list"]);
                if let Some(head) =
                    listed.lines().position(|l| l.contains(token)).and_then(|i| listed.lines().nth(i - 1))
                {
                    return head.split_whitespace().next().unwrap().to_owned();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("no pending approval for {token}");
        }
    };
    fleet.submit(&job("yes")).await;
    let id = pending_for("yes-0").await;
    assert!(fleet.stepper.starts().is_empty(), "nothing runs before the decision");
    approvals(&["approve", &id, "--by", "alice"]);
    let results = fleet.wait_results(1, Duration::from_secs(30), &[&worker]).await;
    assert_eq!(results["yes"].0["outcome"], "completed");
    assert_eq!(fleet.stepper.starts(), ["yes-0"], "the approved call ran once");

    fleet.submit(&job("no")).await;
    let id = pending_for("no-0").await;
    approvals(&["deny", &id]);
    let results = fleet.wait_results(2, Duration::from_secs(30), &[&worker]).await;
    assert_eq!(results["no"].0["outcome"], "completed", "the model is told and answers");
    assert_eq!(fleet.stepper.starts(), ["yes-0"], "the denied call never ran");
    // The decisions are journaled with the runs (SESS-9).
    for (session, answer) in [("yes", "once"), ("no", "decline")] {
        let records = fleet.stepper.sessions().read(&fisk_ai::session::SessionId::new(session).unwrap()).await.unwrap();
        let text: Vec<String> = records.iter().map(|r| String::from_utf8_lossy(&r.to_json()).into_owned()).collect();
        assert!(text.iter().any(|t| t.contains("confirm") && t.contains(answer)), "{session}: {text:#?}");
    }
}
