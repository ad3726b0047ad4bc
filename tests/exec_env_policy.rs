//! The environment policy (ENV-1..4, `harness.env`): which variables reach a child under `inherit: all|core|none`,
//! `include` and `set`, with the credential scrub always on top. Alone in its own test binary because it sets
//! variables in this process's environment before any other thread exists.

// Setting this process's environment (before any other thread exists) is unsafe in edition 2024.
#![allow(unsafe_code)]

mod common;

use common::*;
use fisk_ai::exec::{CALL_MARKER, ChildEnv, EnvPolicy, Inherit};
use fisk_ai::source::fisk::FiskApp;
use fisk_ai::tool::CallContext;
use std::collections::BTreeSet;

const VARIABLES: [(&str, &str); 5] = [
    ("AWS_REGION", "eu-west-1"),
    ("AWS_SECRET_ACCESS_KEY", "not-for-children"),
    ("GITHUB_TOKEN", "not-for-children"),
    ("ANTHROPIC_API_KEY", "scrubbed-always"),
    ("LANG", "C.UTF-8"),
];

/// The variable names the sandbox_app's `env` command saw, with its marker, under `env`.
async fn seen(env: ChildEnv) -> BTreeSet<String> {
    let loaded = FiskApp::new(example("sandbox_app")).with_env(env).load().await.unwrap();
    let tool = loaded.tools.iter().find(|t| t.spec().name() == "env").unwrap();
    let out = tool.call(&raw(r#"{"target":"-"}"#), &CallContext::new()).await;
    let text = out.exec_output().unwrap_or_else(|| panic!("did not run: {}", out.content()));
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, _)| k.to_owned()).filter(|k| k != CALL_MARKER).collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn env_1_to_4_only_the_policys_variables_reach_a_child_and_credentials_never_do() {
    // Built first: cargo runs with this process's environment as it was.
    example("sandbox_app");
    for (k, v) in VARIABLES {
        // SAFETY: no other thread exists yet; the runtime is built below.
        unsafe { std::env::set_var(k, v) };
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // none: the included names (a credential among them, still scrubbed) and the fixed ones, plus LLMFORMAT.
        let policy = EnvPolicy::new(Inherit::None).include("AWS_REG*").include("ANTHROPIC_API_KEY").set("FIXED", "1");
        let env = ChildEnv::new().with_env_policy(&policy).unwrap();
        let expected = names(&["AWS_REGION", "FIXED", "LLMFORMAT"]);
        assert_eq!(seen(env.clone()).await, expected);
        assert_eq!(env.variable_names().into_iter().collect::<BTreeSet<_>>(), expected, "info lists what runs");

        // core: PATH, LANG and the like, not the rest; a host-named credential is scrubbed even when included.
        let policy = EnvPolicy::new(Inherit::Core).include("GITHUB_TOKEN");
        let env = ChildEnv::new().with_scrubbed("GITHUB_TOKEN").with_env_policy(&policy).unwrap();
        let got = seen(env).await;
        for present in ["PATH", "LANG", "LLMFORMAT"] {
            assert!(got.contains(present), "{present} missing under core: {got:?}");
        }
        for absent in ["AWS_REGION", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "ANTHROPIC_API_KEY"] {
            assert!(!got.contains(absent), "{absent} reached a child under core: {got:?}");
        }

        // all (the default): everything but the scrubbed names; `set` adds to it.
        let env = ChildEnv::new().with_env_policy(&EnvPolicy::new(Inherit::All).set("FIXED", "1")).unwrap();
        let got = seen(env).await;
        assert!(got.contains("AWS_SECRET_ACCESS_KEY") && got.contains("FIXED") && !got.contains("ANTHROPIC_API_KEY"));

        // Through the configuration: the harness builds the same policy, and refuses a meaningless one by key.
        let yaml = format!(
            "identity: envp\napplication_path: {}\nharness:\n  env:\n    inherit: none\n    include: [AWS_REGION]\n    set:\n      FIXED: \"1\"\n",
            example("sandbox_app").display()
        );
        let harness =
            fisk_ai::Harness::builder().config(fisk_ai::Config::from_yaml_str(&yaml).unwrap()).build().await.unwrap();
        assert_eq!(harness.child_env().variable_names(), ["AWS_REGION", "FIXED", "LLMFORMAT"]);
        let bad = yaml.replace("inherit: none", "inherit: all");
        let err = fisk_ai::Harness::builder().config(fisk_ai::Config::from_yaml_str(&bad).unwrap()).build().await;
        let Err(err) = err else { panic!("include under inherit: all must be refused") };
        assert_eq!(err.key(), Some("harness.env.include"));
        assert!(err.location().is_some(), "{err}");
    });
}
