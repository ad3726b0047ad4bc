use super::*;

// ---- Thinking and the output cap (PROV-10, PROV-11) ----

#[tokio::test]
async fn prov_10_thinking_shape_follows_the_model_family() {
    let server = FakeAnthropic::start().await;
    server.set_fallback(Reply::fixture("01_end_turn_text.json"));
    let p = provider(&server);
    let plan = fixture_plan();
    let messages = [Message::user("hi")];
    let adaptive = json!({"type": "adaptive", "display": "summarized"});
    let models = [
        ("claude-opus-4-8", None),
        ("claude-opus-4-7", None),
        ("claude-opus-4-6", None),
        ("claude-sonnet-4-6", None),
        ("claude-sonnet-5", None),
        ("claude-fable-5", None),
        ("claude-mythos-preview", None),
        ("some-future-model", None),
        ("claude-sonnet-4-5", Some(12288)),
        ("claude-sonnet-4-5-20250929", Some(12288)),
        ("claude-haiku-4-5", Some(12288)),
        ("claude-opus-4-5-20251101", Some(12288)),
        ("claude-opus-4-1", Some(12288)),
        ("claude-sonnet-4-20250514", Some(12288)),
        ("claude-3-7-sonnet-latest", Some(12288)),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", Some(12288)),
    ];
    for (i, (model, budget)) in models.iter().enumerate() {
        p.call(&Request::new(model, &[], &messages, &plan).with_thinking(true)).await.unwrap();
        let body = server.requests()[i].body_json().clone();
        assert_eq!(body["max_tokens"], 16384, "{model}");
        match budget {
            None => assert_eq!(body["thinking"], adaptive, "{model}"),
            Some(n) => {
                assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": n, "display": "summarized"}));
                assert!(*n >= 1024 && *n < 16384);
            }
        }
    }
    // An explicit cap: the budget stays at least 1024 and below it.
    for (cap, want) in [(4000u32, 3000u32), (1100, 1024), (100_000, 75_000)] {
        let req = Request::new("claude-haiku-4-5", &[], &messages, &plan).with_thinking(true);
        let body: Value = serde_json::from_slice(&p.request_body(&req.with_max_output_tokens(Some(cap)))).unwrap();
        assert_eq!((body["max_tokens"].clone(), body["thinking"]["budget_tokens"].clone()), (json!(cap), json!(want)));
    }
    // Off: no thinking field at all.
    let body: Value =
        serde_json::from_slice(&p.request_body(&Request::new("claude-haiku-4-5", &[], &messages, &plan))).unwrap();
    assert!(body.get("thinking").is_none());
    // A cap too small for any budget is refused before a call is spent.
    let before = server.request_count();
    let req = Request::new("claude-haiku-4-5", &[], &messages, &plan).with_thinking(true);
    let err = p.call(&req.with_max_output_tokens(Some(1024))).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Config);
    assert!(err.to_string().contains("llm.thinking.enabled"), "{err}");
    assert_eq!(server.request_count(), before);
}

#[tokio::test]
async fn prov_11_max_tokens_is_the_configured_cap_else_8192_or_16384_with_thinking() {
    let p = AnthropicProvider::new(KEY);
    let plan = fixture_plan();
    let messages = [Message::user("hi")];
    let cap = |req: Request<'_>| serde_json::from_slice::<Value>(&p.request_body(&req)).unwrap()["max_tokens"].clone();
    let base = Request::new("claude-sonnet-4-6", &[], &messages, &plan);
    assert_eq!(cap(base), 8192);
    assert_eq!(cap(base.with_thinking(true)), 16384);
    assert_eq!(cap(base.with_max_output_tokens(Some(64))), 64);
    assert_eq!(cap(base.with_thinking(true).with_max_output_tokens(Some(30000))), 30000);
    assert_eq!(cap(base.with_max_output_tokens(Some(0))), 8192, "0 is not positive");
}

#[tokio::test]
async fn prov_10_a_400_on_a_thinking_request_hints_that_thinking_can_be_turned_off() {
    let server = FakeAnthropic::with_replies([
        Reply::error(400, "invalid_request_error", "thinking.type: adaptive is not supported on this model"),
        Reply::error(400, "invalid_request_error", "something else"),
    ])
    .await;
    let p = provider(&server);
    let messages = [Message::user("hi")];
    let plan = fixture_plan();
    let err = p.call(&Request::new("claude-opus-4-8", &[], &messages, &plan).with_thinking(true)).await.unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.http_status(), Some(400));
    assert!(msg.contains("may not support thinking") && msg.contains("llm.thinking.enabled"), "{msg}");
    assert!(msg.contains("invalid_request_error") && msg.contains("req_fake_400"), "{msg}");
    let err = p.call(&Request::new("claude-opus-4-8", &[], &messages, &plan)).await.unwrap_err();
    assert!(!err.to_string().contains("thinking"), "{err}");
}

// ---- Configuration (PROV-4, PROV-6, PROV-7, PROV-16) ----

#[test]
fn prov_4_16_capabilities_declare_tool_search_and_the_credential_variables() {
    let provider = AnthropicProvider::new(KEY);
    let caps = provider.capabilities();
    assert_eq!(caps.provider, "anthropic");
    assert!(caps.tool_search);
    // Written out from SPEC PROV-16 (tests/common): comparing with the library's own constant could not notice a
    // dropped name.
    let spec = common::SPEC_PROV_16;
    assert_eq!(caps.credentials, spec);
    // The union over every provider compiled in: the openai provider adds its key (tests/openai_provider.rs).
    let mut union = spec.to_vec();
    if cfg!(feature = "openai") {
        union.push("OPENAI_API_KEY");
    }
    assert_eq!(PROVIDER_CREDENTIALS, union, "the union scrubbed for every child (EXEC-8)");
}

// The PROV-7 base URL table is in prov_7_base_url.rs, shared with the configuration check.

#[test]
fn prov_6_from_env_requires_the_api_key_and_checks_the_base_url() {
    // Environment changes are process-wide: run the checks in a child process of this test binary.
    if let Ok(case) = std::env::var("FISK_AI_TEST_FROM_ENV") {
        let r = AnthropicProvider::from_env();
        match case.as_str() {
            "no-key" => {
                let err = r.unwrap_err();
                assert!(err.is_config() && err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
            }
            "bad-url" => assert!(r.unwrap_err().to_string().contains("ANTHROPIC_BASE_URL")),
            "ok" => assert_eq!(r.unwrap().endpoint(), "http://127.0.0.1:9/v1/messages"),
            _ => unreachable!(),
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let name = "settings::prov_6_from_env_requires_the_api_key_and_checks_the_base_url";
    for (case, key, url) in [
        ("no-key", None, None),
        ("bad-url", Some("k"), Some("http://example.com")),
        ("ok", Some("k"), Some("http://127.0.0.1:9")),
    ] {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--exact", name, "--test-threads=1"]).env("FISK_AI_TEST_FROM_ENV", case);
        cmd.env_remove("ANTHROPIC_API_KEY").env_remove("ANTHROPIC_BASE_URL");
        if let Some(k) = key {
            cmd.env("ANTHROPIC_API_KEY", k);
        }
        if let Some(u) = url {
            cmd.env("ANTHROPIC_BASE_URL", u);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{case}: {}", String::from_utf8_lossy(&out.stdout));
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"), "{case}: the child ran the check");
    }
}

#[tokio::test]
async fn prov_17_http_debug_file_is_private_replaced_never_through_a_symlink_and_never_holds_the_key() {
    use std::os::unix::fs::{MetadataExt, symlink};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("http-debug.log");
    std::fs::write(&path, "stale content from an earlier run").unwrap();
    let server = FakeAnthropic::with_replies([
        Reply::fixture("02_tool_use_custom.json"),
        Reply::error(500, "api_error", "Internal server error"),
        Reply::fixture("01_end_turn_text.json"),
    ])
    .await;
    let p = provider(&server).with_http_debug(&path).unwrap();
    let mut convo = Convo::new("Which features does the core crate enable?", fixture_plan());
    convo.turn(&p).await;
    convo.answer_tools(|_| ("error: permission denied".into(), true));
    convo.turn(&p).await;

    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.mode() & 0o777, 0o600);
    let log = std::fs::read_to_string(&path).unwrap();
    assert!(!log.contains("stale content"), "the old file was replaced");
    assert!(!log.contains(KEY) && !log.contains("x-api-key"), "no key, no headers");
    assert!(log.contains(&format!("==> POST {}/v1/messages", server.url())));
    assert!(log.contains("\n  \"model\": \"claude-sonnet-4-6\",\n"), "pretty JSON body");
    assert!(log.contains("<== HTTP 200") && log.contains("<== HTTP 500") && log.contains("request-id"));
    assert!(log.contains("\"stop_reason\": \"tool_use\""));
    assert_eq!(log.matches("==> POST").count(), 3, "every attempt, the retried one too");

    // A symlink at the path is removed, never followed.
    let target = dir.path().join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    std::fs::remove_file(&path).unwrap();
    symlink(&target, &path).unwrap();
    let server = FakeAnthropic::with_replies([Reply::fixture("01_end_turn_text.json")]).await;
    let p = provider(&server).with_http_debug(&path).unwrap();
    Convo::new("hi", fixture_plan()).turn(&p).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_file() && !meta.file_type().is_symlink());
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&path).unwrap().contains("<== HTTP 200"));
}
