//! Policy hooks (POL-1..8) through the agent loop: the external hook command `harness.policy.command` (a real
//! process, tests/fixtures/bin/policy-hook) decides by a marker in the call, in-process tools record what really
//! ran, the model is scripted and the gate a recording double. The MCP surface is in tests/policy_mcp.rs.

mod common;

use common::gate::RecordingGate;
use common::turns::{call_with, done, result_of, turn};
use fisk_ai::agent::{Agent, RunOptions, TerminalReason};
use fisk_ai::async_trait;
use fisk_ai::gate::Decision;
use fisk_ai::llm::ScriptedProvider;
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Echoes its `message`, recording each run.
struct Echo {
    spec: ToolSpec,
    ran: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: &ToolInput, _: &CallContext) -> ToolOutput {
        let v: serde_json::Value = input.parse().unwrap_or_default();
        let message = v["message"].as_str().unwrap_or_default().to_owned();
        self.ran.lock().unwrap().push(format!("{} {message}", self.spec.name()));
        ToolOutput::success(format!("said: {message}"))
    }
}

struct Setup {
    dir: tempfile::TempDir,
    ran: Arc<Mutex<Vec<String>>>,
}

impl Setup {
    fn new() -> Self {
        Setup { dir: tempfile::tempdir().unwrap(), ran: Arc::default() }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("policy.log")
    }

    fn echo(&self, name: &str, gated: bool) -> Echo {
        let schema = json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"],
            "additionalProperties": false});
        let spec =
            ToolSpec::new(name, ToolKind::Custom, schema).with_description(format!("{name} it")).with_confirm(gated);
        Echo { spec, ran: self.ran.clone() }
    }

    async fn agent(&self, provider: &Arc<ScriptedProvider>, gate: RecordingGate, timeout: &str) -> Agent {
        let hook = common::root().join("tests/fixtures/bin/policy-hook");
        let yaml = format!(
            "identity: pol\nsystem_prompt: s\nllm:\n  model: m\nharness:\n  policy:\n    command: [{:?}, {:?}]\n    \
             timeout: {timeout}\n",
            hook.display().to_string(),
            self.log().display().to_string()
        );
        let config = fisk_ai::Config::from_yaml_str(&yaml).unwrap();
        (Agent::builder().config(config).provider_arc(provider.clone()).gate(gate))
            .tool(self.echo("say", false))
            .tool(self.echo("think", true))
            .build()
            .await
            .unwrap()
    }

    fn ran(&self) -> Vec<String> {
        self.ran.lock().unwrap().clone()
    }

    fn logged(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

/// Run one scripted turn of `calls` then an answer; the results by call id.
async fn run(
    s: &Setup,
    calls: &[(&str, &str, &str)],
    answers: &[Decision],
    timeout: &str,
) -> (Vec<(String, bool)>, RecordingLog) {
    let blocks = calls.iter().map(|(id, tool, input)| call_with(id, tool, input)).collect();
    let provider = Arc::new(ScriptedProvider::new([turn(blocks), done()]));
    let (gate, log) = RecordingGate::new(answers);
    let out = s.agent(&provider, gate, timeout).await.run("go", RunOptions::new()).await;
    assert_eq!(out.reason, TerminalReason::Completed, "{:?}", out.error);
    let messages = provider.requests().last().unwrap().messages.clone();
    (calls.iter().map(|(id, _, _)| result_of(&messages, id)).collect(), log)
}

type RecordingLog = Arc<common::gate::GateLog>;

#[tokio::test]
async fn pol_2_allow_runs_as_without_a_hook_and_the_hook_sees_the_call_and_its_result() {
    let s = Setup::new();
    let (results, gate) = run(&s, &[("c1", "say", r#"{"message":"hello"}"#)], &[], "5s").await;
    assert_eq!(results[0], ("said: hello".to_owned(), false));
    assert_eq!(s.ran(), ["say hello"]);
    assert!(gate.asked().is_empty());
    let logged = s.logged();
    assert_eq!(logged.len(), 2, "before and after: {logged:?}");
    assert_eq!(
        logged[0],
        json!({"phase": "before", "tool": "say", "input": {"message": "hello"},
        "caller": fisk_ai::audit::local_user(), "surface": "agent", "gated_by": null})
    );
    assert_eq!((logged[1]["phase"].as_str(), logged[1]["output"].as_str()), (Some("after"), Some("said: hello")));
}

#[tokio::test]
async fn pol_2_deny_runs_nothing_and_the_model_reads_the_reason() {
    let s = Setup::new();
    let (results, gate) = run(&s, &[("c1", "think", r#"{"message":"deny me"}"#)], &[], "5s").await;
    let v: serde_json::Value = serde_json::from_str(&results[0].0).unwrap();
    assert_eq!(v["allowed"], false);
    assert!(v["reason"].as_str().unwrap().contains("no moo on Fridays"), "{v}");
    assert!(s.ran().is_empty() && gate.asked().is_empty(), "denied before the gate: nobody asked, nothing ran");
}

#[tokio::test]
async fn pol_3_ask_routes_an_ungated_call_to_the_gate_and_allow_never_skips_the_gate() {
    let s = Setup::new();
    let calls = [("c1", "say", r#"{"message":"ask me"}"#), ("c2", "think", r#"{"message":"plain"}"#)];
    let (results, gate) = run(&s, &calls, &[Decision::Decline, Decision::Once], "5s").await;
    let requests = gate.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!((requests[0].tool.as_str(), requests[0].trigger.as_str()), ("say", "policy"));
    assert!(results[0].0.contains(r#""allowed":false"#), "declined at the gate: {results:?}");
    assert_eq!(requests[1].tool, "think", "a hook's allow does not overturn the gate");
    assert_eq!(s.ran(), ["think plain"]);
}

/// A tool-wide allowance never covers a call a policy asked about: each such call is asked again.
#[tokio::test]
async fn pol_3_a_policy_ask_is_not_covered_by_a_tool_wide_allowance() {
    let s = Setup::new();
    let calls = [("c1", "say", r#"{"message":"ask me"}"#), ("c2", "say", r#"{"message":"ask me again"}"#)];
    let (results, gate) = run(&s, &calls, &[Decision::ForConversation, Decision::Decline], "5s").await;
    assert_eq!(gate.asked(), ["say", "say"]);
    assert!(!results[0].0.contains("allowed") && results[1].0.contains(r#""allowed":false"#), "{results:?}");
    assert_eq!(s.ran(), ["say ask me"]);
}

#[tokio::test]
async fn pol_4_a_rewrite_is_validated_again_shown_to_the_operator_and_run() {
    let s = Setup::new();
    let calls = [
        ("c1", "say", r#"{"message":"rewrite me"}"#),
        ("c2", "think", r#"{"message":"rewrite me"}"#),
        ("c3", "say", r#"{"message":"rewrite badly"}"#),
    ];
    let (results, gate) = run(&s, &calls, &[Decision::Once], "5s").await;
    assert_eq!(results[0].0, "said: rewritten");
    let line = &gate.requests()[0].command_line;
    assert!(line.contains("rewritten") && line.contains("(input rewritten by a policy)"), "{line}");
    assert!(results[2].1 && results[2].0.contains("\"message\""), "the rewrite failed the schema: {results:?}");
    assert_eq!(s.ran(), ["say rewritten", "think rewritten"]);
}

#[tokio::test]
async fn pol_5_after_the_call_the_hook_redacts_the_result() {
    let s = Setup::new();
    let (results, _) = run(&s, &[("c1", "say", r#"{"message":"the SECRET is 42"}"#)], &[], "5s").await;
    assert_eq!(results[0], ("[redacted]".to_owned(), false));
    assert_eq!(s.ran(), ["say the SECRET is 42"], "it ran; only its result was replaced");
}

#[tokio::test]
async fn pol_7_a_hook_that_hangs_prints_garbage_floods_or_fails_denies() {
    let s = Setup::new();
    let calls = [
        ("c1", "say", r#"{"message":"hang"}"#),
        ("c2", "say", r#"{"message":"garbage"}"#),
        ("c3", "say", r#"{"message":"fail"}"#),
        ("c4", "say", r#"{"message":"flood"}"#),
    ];
    let (results, _) = run(&s, &calls, &[], "1s").await;
    let reasons: Vec<String> = results.iter().map(|(r, _)| r.clone()).collect();
    assert!(reasons[0].contains("no answer within 1s"), "{reasons:?}");
    assert!(reasons[1].contains("not a decision"), "{reasons:?}");
    assert!(reasons[2].contains("exited with"), "{reasons:?}");
    assert!(reasons[3].contains("over 1 MiB"), "read in bounded memory: {reasons:?}");
    assert!(reasons.iter().all(|r| r.contains(r#""allowed":false"#) && r.contains("policy-hook")), "{reasons:?}");
    assert!(s.ran().is_empty());
}

/// POL-7 after the call: a hook that hangs, prints garbage or gives a before-call answer when shown the result
/// withholds the result (it ran) rather than passing it on unchecked.
#[tokio::test]
async fn pol_7_a_hook_that_fails_after_the_call_withholds_the_result() {
    let s = Setup::new();
    let calls = [
        ("c1", "say", r#"{"message":"late-stall"}"#),
        ("c2", "say", r#"{"message":"late-junk"}"#),
        ("c3", "say", r#"{"message":"late-allow"}"#),
    ];
    let (results, _) = run(&s, &calls, &[], "1s").await;
    let mut ran = s.ran();
    ran.sort();
    assert_eq!(ran, ["say late-allow", "say late-junk", "say late-stall"], "allowed before, so they ran");
    for (text, is_error) in &results {
        assert!(*is_error && text.contains("the result was withheld: the policy hook"), "{results:?}");
        assert!(!text.contains("said: late"), "the result itself is not passed on: {text}");
    }
    assert!(results[0].0.contains("no answer within 1s"), "{results:?}");
    assert!(results[1].0.contains("not a decision"), "{results:?}");
    assert!(results[2].0.contains("not keep or redact"), "{results:?}");
}

#[test]
fn pol_6_the_policy_keys_are_checked_where_they_are_written() {
    let ok = fisk_ai::Config::from_yaml_str("harness:\n  policy: {command: [/bin/true], timeout: 2s}\n").unwrap();
    assert_eq!(ok.harness.policy.timeout(), std::time::Duration::from_secs(2));
    let err = fisk_ai::Config::from_yaml_str("harness:\n  policy:\n    command: [/bin/true]\n    timeout: -1s\n")
        .unwrap_err();
    assert!(err.location().is_some_and(|l| l.line == 4), "{err}");
    let err = fisk_ai::Config::from_yaml_str("harness:\n  policy:\n    url: http://x\n").unwrap_err();
    assert!(err.to_string().contains("url"), "{err}");
}

/// The shipped example (`examples/cowsay/audited.yaml` and its sample hook, `examples/cowsay/policy-hook`): the
/// configuration's keys and values are accepted, and the hook answers the protocol as its comments say.
#[test]
fn pol_6_the_shipped_example_configuration_and_sample_hook_work() {
    let config = fisk_ai::Config::load(common::root().join("examples/cowsay/audited.yaml")).unwrap();
    assert_eq!(config.harness.policy.command.as_deref(), Some(&["examples/cowsay/policy-hook".to_owned()][..]));
    assert!(config.harness.audit.is_enabled());
    let ask = |request: serde_json::Value| -> serde_json::Value {
        use std::io::Write;
        let mut hook = std::process::Command::new(common::root().join("examples/cowsay/policy-hook"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        hook.stdin.take().unwrap().write_all(request.to_string().as_bytes()).unwrap();
        let out = hook.wait_with_output().unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let before = |tool: &str, input: serde_json::Value| json!({"phase": "before", "tool": tool, "input": input, "caller": "me", "surface": "agent", "gated_by": null});
    let corn = ask(before("feed", json!({"cow": "bessie", "food": "corn"})));
    assert_eq!(corn["decision"], "deny", "{corn}");
    assert!(corn["reason"].as_str().unwrap().contains("no corn"), "{corn}");
    assert_eq!(ask(before("feed", json!({"food": "hay"})))["decision"], "allow");
    assert_eq!(ask(before("say", json!({"message": "corn"})))["decision"], "allow");
    let mut after = before("feed", json!({"food": "corn"}));
    after["phase"] = json!("after");
    after["output"] = json!("fed");
    assert_eq!(ask(after)["decision"], "keep");
}
