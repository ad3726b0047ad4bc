use super::*;

// ---- WORK-1: expose.agent.worker -------------------------------------------------------------------------------------

#[test]
fn work_1_the_worker_block_parses_with_defaults_and_accessors() {
    let cfg = parse(
        "expose:\n  agent:\n    worker:\n      stream: WORK\n      consumer: workers\n      results_prefix: fleet.results\n",
    );
    let w = cfg.expose.agent.worker.as_ref().expect("present");
    assert_eq!(w.stream.as_deref(), Some("WORK"));
    assert_eq!(w.max_concurrent_runs(), fisk_ai::config::DEFAULT_MAX_CONCURRENT_RUNS);
    assert_eq!(w.ack_wait(), Duration::from_secs(30));
    assert_eq!(w.max_deliver(), 5);
    let cfg = parse(
        "expose:\n  agent:\n    worker:\n      stream: W\n      consumer: c\n      results_prefix: r\n      max_concurrent_runs: 8\n      ack_wait: 1m\n      max_deliver: 3\n",
    );
    let w = cfg.expose.agent.worker.as_ref().unwrap();
    assert_eq!((w.max_concurrent_runs(), w.ack_wait(), w.max_deliver()), (8, Duration::from_secs(60), 3));
    assert!(parse("expose:\n  agent:\n    worker:\n").expose.agent.worker.is_none(), "worker: with no value is absent");
}

#[test]
fn work_1_missing_or_bad_names_are_refused_with_their_key_and_location() {
    let e = err("expose:\n  agent:\n    worker: {}\n");
    assert_eq!(e.key(), Some("expose.agent.worker.stream"));
    assert_contains(&e, &["expose.agent.worker.stream is required"]);
    assert_eq!(loc(&e).0, 3);
    let e = err("expose:\n  agent:\n    worker:\n      stream: W\n      consumer: c\n      results_prefix: 'r.*'\n");
    assert_eq!(e.key(), Some("expose.agent.worker.results_prefix"));
    assert_contains(&e, &["not a subject prefix"]);
    let e = err("expose:\n  agent:\n    worker:\n      stream: 'W.X'\n      consumer: c\n      results_prefix: r\n");
    assert_eq!(e.key(), Some("expose.agent.worker.stream"));
    let e = err(
        "expose:\n  agent:\n    worker:\n      stream: W\n      consumer: c\n      results_prefix: r\n      ack_wait: 0s\n",
    );
    assert_eq!(e.key(), Some("expose.agent.worker.ack_wait"));
    let e = err(
        "expose:\n  agent:\n    worker:\n      stream: W\n      consumer: c\n      results_prefix: r\n      ack_wait: 500ms\n",
    );
    assert_eq!(e.key(), Some("expose.agent.worker.ack_wait"));
    assert_contains(&e, &["at least 1s"]);
    let e = err(
        "expose:\n  agent:\n    worker:\n      stream: W\n      consumer: c\n      results_prefix: r\n      max_concurrent_runs: 5000\n",
    );
    assert_eq!(e.key(), Some("expose.agent.worker.max_concurrent_runs"));
    let e = err(
        "expose:\n  agent:\n    worker:\n      stream: W\n      consumer: c\n      results_prefix: r\n      queue: 3\n",
    );
    assert_contains(&e, &["queue"]);
}

// ---- APPR-1: harness.approvals backend ------------------------------------------------------------------------------

#[test]
fn appr_1_the_nats_backend_needs_a_bucket_and_a_context_and_the_terminal_takes_neither() {
    let cfg = parse(
        "nats_context: prod\nharness:\n  approvals:\n    backend: nats\n    bucket: APPROVALS\n    timeout: 5m\n",
    );
    let a = &cfg.harness.approvals;
    assert_eq!(a.backend, fisk_ai::config::ApprovalBackend::Nats);
    assert_eq!(a.timeout(), Duration::from_secs(300));
    assert_eq!(
        parse("harness:\n  approvals: {}\n").harness.approvals.backend,
        fisk_ai::config::ApprovalBackend::Terminal
    );
    let e = err("nats_context: prod\nharness:\n  approvals:\n    backend: nats\n");
    assert_eq!(e.key(), Some("harness.approvals.bucket"));
    let e = err("harness:\n  approvals:\n    backend: nats\n    bucket: B\n");
    assert_eq!(e.key(), Some("nats_context"));
    let e = err("harness:\n  approvals:\n    bucket: B\n");
    assert_eq!(e.key(), Some("harness.approvals.bucket"));
    assert_contains(&e, &["only used with backend: nats"]);
    let e = err("harness:\n  approvals:\n    backend: slack\n");
    assert_contains(&e, &["`terminal` or `nats`"]);
    assert_eq!(loc(&e).0, 3);
}
