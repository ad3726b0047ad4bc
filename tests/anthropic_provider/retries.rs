use super::*;

// ---- Retries (wire doc §9) and the call timeout (PROV-5, BUDGET-4) ----

#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
}

impl WireObserver for Recorder {
    fn on_request(&self, r: &WireRequest<'_>) {
        self.events.lock().unwrap().push(format!("request {}", r.attempt));
    }
    fn on_response(&self, r: &WireResponse<'_>) {
        self.events.lock().unwrap().push(format!("response {} {}", r.attempt, r.status));
    }
    fn on_error(&self, e: &WireError<'_>) {
        self.events.lock().unwrap().push(format!("error {} retry={}", e.attempt, e.will_retry));
    }
    fn on_retry(&self, r: &WireRetry<'_>) {
        self.events.lock().unwrap().push(format!("retry {}", r.attempt));
    }
}

async fn call_once(p: &AnthropicProvider) -> Result<Response, fisk_ai::llm::ProviderError> {
    let plan = plan_of(Vec::new(), true);
    let messages = [Message::user("hi")];
    p.call(&Request::new("claude-sonnet-4-6", &[], &messages, &plan)).await
}

#[tokio::test]
async fn retry_429_waits_as_told_by_retry_after_ms_or_retry_after_then_succeeds() {
    for (name, value) in [("retry-after-ms", "50"), ("retry-after", "1")] {
        let limited =
            Reply::fixture("error_429_rate_limit.json").without_header("retry-after").with_header(name, value);
        let server = FakeAnthropic::with_replies([limited, Reply::fixture("01_end_turn_text.json")]).await;
        let recorder = Arc::new(Recorder::default());
        // A backoff this long would be noticed: the server's wait must be the one used.
        let p = provider(&server)
            .with_backoff(Duration::from_secs(30), Duration::from_secs(30))
            .with_observer(recorder.clone());
        let reply = call_once(&p).await.unwrap();
        assert_eq!(reply.stop_reason, StopReason::EndTurn);
        assert_eq!(server.request_count(), 2, "{name}");
        assert_eq!(server.requests()[0].body, server.requests()[1].body, "the same bytes again");
        assert_eq!(
            *recorder.events.lock().unwrap(),
            ["request 0", "response 0 429", "error 0 retry=true", "retry 1", "request 1", "response 1 200"]
        );
    }
}

#[tokio::test]
async fn retry_529_overloaded_then_200_succeeds() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("error_529_overloaded.json"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let reply = call_once(&provider(&server)).await.unwrap();
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn retry_500_gives_up_after_max_retries_plus_one_attempts_naming_status_type_and_request_id() {
    for retries in [0u32, 2, 3] {
        let server = FakeAnthropic::start().await;
        server.set_fallback(Reply::fixture("error_500_api.json"));
        let err = call_once(&provider(&server).with_max_retries(retries)).await.unwrap_err();
        assert_eq!(server.request_count() as u32, retries + 1);
        assert_eq!((err.kind(), err.http_status()), (ProviderErrorKind::Status, Some(500)));
        assert!(err.is_retryable());
        let msg = err.to_string();
        assert!(msg.contains("500") && msg.contains("api_error") && msg.contains("Internal server error"), "{msg}");
        assert!(msg.contains("req_011uORAPhlkA7OqmqX2tBYwB4"), "{msg}");
        if retries > 0 {
            assert!(msg.contains(&format!("after {} attempts", retries + 1)), "{msg}");
        }
    }
}

#[tokio::test]
async fn retry_never_on_400_401_403_404_413() {
    let cases = [
        Reply::fixture("error_400_all_tools_deferred.json"),
        Reply::fixture("error_401_authentication.json"),
        Reply::error(403, "permission_error", "no access"),
        Reply::error(404, "not_found_error", "model: claude-nope"),
        // A CDN page, not the documented JSON: still reported, never retried.
        Reply::bytes(413, "text/html", "<html><body>413 Request Entity Too Large</body></html>"),
    ];
    for reply in cases {
        let status = reply.status;
        let server = FakeAnthropic::with_replies([reply, Reply::fixture("01_end_turn_text.json")]).await;
        let err = call_once(&provider(&server)).await.unwrap_err();
        assert_eq!(server.request_count(), 1, "{status} must not be retried");
        assert_eq!(err.http_status(), Some(status));
        assert!(!err.is_retryable());
        let msg = err.to_string();
        match status {
            401 => assert!(msg.contains("authentication_error") && msg.contains("invalid x-api-key"), "{msg}"),
            413 => assert!(msg.contains("413 Request Entity Too Large"), "{msg}"),
            _ => assert!(msg.contains(&format!("HTTP {status}")), "{msg}"),
        }
    }
}

#[tokio::test]
async fn retry_x_should_retry_header_overrides_the_status_rule() {
    let server = FakeAnthropic::with_replies([
        Reply::fixture("error_500_api.json").with_header("x-should-retry", "false"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    call_once(&provider(&server)).await.unwrap_err();
    assert_eq!(server.request_count(), 1);

    let server = FakeAnthropic::with_replies([
        Reply::error(409, "invalid_request_error", "lock").with_header("x-should-retry", "true"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    call_once(&provider(&server)).await.unwrap();
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn prov_5_call_timeout_bounds_each_attempt_is_retryable_and_then_gives_up() {
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::fixture("01_end_turn_text.json").with_delay(Duration::from_secs(5)));
    let p = provider(&server).with_call_timeout(Duration::from_millis(200)).with_max_retries(1);
    let err = call_once(&p).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Timeout);
    assert!(err.is_retryable());
    assert!(err.to_string().contains("call timeout") && err.to_string().contains("200ms"), "{err}");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_refused_connection_is_a_retryable_transport_error() {
    let refused = crate::common::net::RefusedPort::new();
    let port = refused.port();
    let p = AnthropicProvider::new(KEY)
        .with_base_url(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .with_max_retries(1)
        .with_backoff(Duration::from_millis(1), Duration::from_millis(1));
    let err = call_once(&p).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Transport);
    assert!(err.is_retryable());
    assert!(!err.to_string().contains(KEY));
}

#[tokio::test]
async fn a_garbled_reply_is_a_decode_error_not_a_panic() {
    for body in ["", "{", "[]", r#"{"content":[{"text":"no type"}]}"#, r#"{"content":[{"type":"tool_use"}]}"#, "\u{0}"]
    {
        let server = FakeAnthropic::with_replies([Reply::bytes(200, "application/json", body.to_owned())]).await;
        let err = call_once(&provider(&server)).await.unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::Decode, "{body:?}: {err}");
        assert_eq!(server.request_count(), 1);
    }
}

// ---- Tracing (issue 16 part 3): retry and timeout events, the reply's model and id ----

#[tokio::test]
async fn a_retried_attempt_is_a_warn_event_naming_the_attempt_wait_and_status() {
    use fisk_ai::telemetry as t;
    let server = FakeAnthropic::with_replies([
        Reply::fixture("error_529_overloaded.json"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let (capture, guard) = common::trace::capture();
    let reply = call_once(&provider(&server)).await.unwrap();
    drop(guard);
    // What the `chat` span records as gen_ai.response.model and gen_ai.response.id.
    assert_eq!(reply.model.as_deref(), Some("claude-sonnet-4-6"));
    assert_eq!(reply.id.as_deref(), Some("msg_01MAv8QP9ec9djZVbc49eMkT"));
    let trace = capture.trace();
    let retries: Vec<_> = trace.events.iter().filter(|e| e.field(t::RETRY_ATTEMPT).is_some()).collect();
    assert_eq!(retries.len(), 1, "{:#?}", trace.events);
    let retry = retries[0];
    assert_eq!((retry.target.as_str(), retry.level), (t::TARGET, tracing::Level::WARN));
    assert_eq!(retry.field(t::RETRY_ATTEMPT), Some("1"));
    assert_eq!(retry.field(t::HTTP_STATUS_CODE), Some("529"));
    assert_eq!(retry.field(t::ERROR_TYPE), Some("status"));
    assert!(retry.field(t::RETRY_WAIT_MS).is_some_and(|ms| ms.parse::<u64>().unwrap() <= 5));
}

#[tokio::test]
async fn a_timed_out_attempt_is_a_warn_event_with_the_timeout() {
    use fisk_ai::telemetry as t;
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::fixture("01_end_turn_text.json").with_delay(Duration::from_secs(5)));
    let p = provider(&server).with_call_timeout(Duration::from_millis(100)).with_max_retries(0);
    let (capture, guard) = common::trace::capture();
    call_once(&p).await.unwrap_err();
    drop(guard);
    let timeouts: Vec<_> =
        capture.trace().events.into_iter().filter_map(|e| e.field(t::TIMEOUT_MS).map(str::to_owned)).collect();
    assert_eq!(timeouts, ["100"]);
}

#[tokio::test]
async fn a_streamed_reply_reports_its_model_and_id_too() {
    let server =
        FakeAnthropic::with_replies([fake_anthropic::streamed(&[json!({"type": "text", "text": "hi"})], "end_turn")])
            .await;
    let reply = call_once(&provider(&server).with_streaming(true)).await.unwrap();
    assert_eq!((reply.model.as_deref(), reply.id.as_deref()), (Some("fake"), Some("msg_fake")));
}
