//! PROV-3, PROV-4: providers are resolved by name from a registry a host can extend, and capabilities are owned
//! values a provider configured at run time fills in.

mod common;

use common::*;
use fisk_ai::Config;
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::llm::{
    Block, Caps, ModelProvider, ProviderFactory, ProviderRegistry, ProviderSettings, Response, ScriptedProvider,
    StopReason, Usage,
};
use std::sync::Arc;

fn config(provider: &str) -> Config {
    let app = root().join("examples/cowsay/cowsay");
    Config::from_yaml_str(&format!(
        "identity: cowsay\napplication_path: {}\nsystem_prompt: s\nllm:\n  provider: {provider}\n  model: m\n",
        app.display()
    ))
    .unwrap()
}

/// A host's provider: answers with the base URL it was given, so the test sees the settings reach it.
struct DryRun;

impl ProviderFactory for DryRun {
    fn name(&self) -> &str {
        "dry-run"
    }

    fn credentials(&self) -> Vec<String> {
        vec!["DRY_RUN_TOKEN".to_owned()]
    }

    fn build(&self, settings: &ProviderSettings<'_>) -> fisk_ai::Result<Arc<dyn ModelProvider>> {
        let said = format!("via {}", settings.base_url.as_deref().unwrap_or("nowhere"));
        let reply = Response::new(vec![Block::text(said)], StopReason::EndTurn, Usage::default());
        // The id is decided at run time, which owned capabilities allow.
        let caps = Caps::new(format!("dry-run-{}", settings.config.llm.model.as_deref().unwrap_or("?")));
        Ok(Arc::new(ScriptedProvider::new([reply]).with_caps(caps)))
    }
}

#[tokio::test]
async fn prov_3_an_unknown_provider_fails_at_build_listing_the_available_ones() {
    let err = Agent::builder().config(config("nope")).provider_factory(DryRun).build().await.unwrap_err();
    let text = err.to_string();
    assert!(err.is_config(), "{text}");
    assert!(text.contains("llm.provider") && text.contains("\"nope\""), "{text}");
    assert!(text.contains("dry-run"), "lists the host's provider: {text}");
    #[cfg(feature = "anthropic")]
    assert!(text.contains("anthropic"), "lists the built-in provider: {text}");
}

#[tokio::test]
async fn prov_3_a_host_factory_is_resolved_by_llm_provider_and_gets_the_settings() {
    let config = config("dry-run");
    let mut providers = ProviderRegistry::empty();
    providers.register(Arc::new(DryRun));
    let provider = providers.build(&ProviderSettings::new(&config).with_base_url("http://127.0.0.1:1")).unwrap();
    assert_eq!(provider.capabilities().provider, "dry-run-m");
    let agent = Agent::builder().config(config).provider_arc(provider).build().await.unwrap();
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.reason, TerminalReason::Completed);
    assert_eq!(outcome.answer.as_deref(), Some("via http://127.0.0.1:1"));

    // Without an explicit provider the agent resolves it itself.
    let agent = Agent::builder().config(self::config("dry-run")).providers(providers).build().await.unwrap();
    let outcome = agent.run("x", RunOptions::default()).await;
    assert_eq!(outcome.answer.as_deref(), Some("via nowhere"));
}

#[test]
fn prov_16_the_registry_declares_every_providers_credentials_once() {
    let mut providers = ProviderRegistry::with_defaults();
    providers.register(Arc::new(DryRun));
    providers.register(Arc::new(DryRun));
    let names = providers.credentials();
    assert_eq!(names.iter().filter(|n| *n == "DRY_RUN_TOKEN").count(), 1);
    #[cfg(feature = "anthropic")]
    for spec in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_IDENTITY_TOKEN",
        "ANTHROPIC_WEBHOOK_SIGNING_KEY",
        "ANTHROPIC_CUSTOM_HEADERS",
    ] {
        assert!(names.iter().any(|n| n == spec), "{spec}");
    }
    assert_eq!(ProviderRegistry::empty().names().count(), 0);
}

#[cfg(feature = "anthropic")]
#[test]
fn prov_7_the_anthropic_factory_checks_the_base_url_before_the_key() {
    let config = config("anthropic");
    let err = ProviderRegistry::with_defaults()
        .build(&ProviderSettings::new(&config).with_base_url("http://10.0.0.1").with_api_key("k"))
        .err()
        .expect("a plain-http remote base URL is refused");
    assert!(err.to_string().contains("--base-url"), "{err}");
    let ok = ProviderRegistry::with_defaults()
        .build(&ProviderSettings::new(&config).with_base_url("http://127.0.0.1:9").with_api_key("k"))
        .unwrap();
    assert_eq!(ok.capabilities().provider, "anthropic");
    assert!(ok.capabilities().tool_search);
}
