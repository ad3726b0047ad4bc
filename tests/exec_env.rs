//! Invariant 4 (EXEC-8): the child environment never carries a credential variable. Alone in its own test binary
//! because it sets variables in this process's environment before any other thread exists.
// Setting this process's environment (before any other thread exists) is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;

use common::*;
use fisk_ai::source::fisk::{AppModel, ChildEnv, FiskApp, PROVIDER_CREDENTIALS};
use fisk_ai::tool::CallContext;

#[test]
fn invariant_4_credential_variables_are_absent_in_the_child() {
    // SAFETY: this test binary holds one test, and no other thread runs yet.
    unsafe {
        for name in PROVIDER_CREDENTIALS {
            std::env::set_var(name, "secret-value");
        }
        std::env::set_var("MY_SERVICE_TOKEN", "secret-value");
        std::env::set_var("ANTHROPIC_BASE_URL", "http://127.0.0.1:9");
        std::env::set_var("LLMFORMAT", "0");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let doc = r#"{"name":"t","commands":[{"name":"env","restricted_schema":{"type":"object"}}]}"#;
        let app = FiskApp::new(fake_app(dir.path(), "env")).with_env(ChildEnv::new().with_scrubbed("MY_SERVICE_TOKEN"));
        let tool = app.tools_from_model(AppModel::from_slice(doc.as_bytes()).unwrap()).unwrap().tools.remove(0);
        let out = tool.call(&raw("{}"), &CallContext::new()).await;
        let (output, _, _) = exec_output(out.content());
        assert!(!output.contains("secret-value"), "{output}");
        for name in PROVIDER_CREDENTIALS.iter().chain(&["MY_SERVICE_TOKEN"]) {
            assert!(!output.lines().any(|l| l.starts_with(&format!("{name}="))), "{name} leaked");
        }
        // Non-credential variables pass through; LLMFORMAT is forced to 1.
        assert!(output.lines().any(|l| l == "ANTHROPIC_BASE_URL=http://127.0.0.1:9"));
        assert!(output.lines().any(|l| l == "LLMFORMAT=1"));
        assert!(output.lines().any(|l| l.starts_with("PATH=")));

        // Introspection gets the same scrubbed environment (TOOL-2): `envcheck` exits non-zero if it sees a
        // credential or misses LLMFORMAT=1.
        let app =
            FiskApp::new(fake_app(dir.path(), "envcheck")).with_env(ChildEnv::new().with_scrubbed("MY_SERVICE_TOKEN"));
        if let Err(e) = app.introspect().await {
            panic!("{e}");
        }
    });
}
