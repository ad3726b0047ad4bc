//! The human-in-the-loop tools (SPEC section 11, HITL-1..13) through a mocked `Prompter`: names, descriptions,
//! schemas, every result shape for every answer, deny-by-default, malformed calls, sanitizing, the HITL-12 note,
//! and the terminal prompter with no terminal attached.

mod common;

use fisk_ai::async_trait;
use fisk_ai::operator::{Answer, HITL_MAX_OPTIONS, HITL_TEXT_LIMIT, Prompter, hitl_note, hitl_tools};
use fisk_ai::tool::{CallContext, CancellationToken, Tool, ToolInput, ToolKind, ToolOutput};
use mockall::mock;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The prompter's operations with `input`'s default owned. mockall 0.15 cannot mock `Option<&str>` through
/// `#[async_trait]` (its generated code fails to borrow-check), so the mock implements this twin and [`Mocked`]
/// forwards every [`Prompter`] call to it unchanged.
#[async_trait]
trait Operator: Send + Sync {
    fn can_ask(&self) -> bool;
    async fn confirm(&self, question: &str) -> Answer<bool>;
    async fn select(&self, question: &str, options: &[String]) -> Answer<usize>;
    async fn input(&self, question: &str, default: Option<String>) -> Answer<String>;
}

mock! {
    pub Operator {}

    #[async_trait]
    impl Operator for Operator {
        fn can_ask(&self) -> bool;
        async fn confirm(&self, question: &str) -> Answer<bool>;
        async fn select(&self, question: &str, options: &[String]) -> Answer<usize>;
        async fn input(&self, question: &str, default: Option<String>) -> Answer<String>;
    }
}

/// A [`Prompter`] that is the mock.
struct Mocked(MockOperator);

#[async_trait]
impl Prompter for Mocked {
    fn can_ask(&self) -> bool {
        self.0.can_ask()
    }
    async fn confirm(&self, question: &str) -> Answer<bool> {
        self.0.confirm(question).await
    }
    async fn select(&self, question: &str, options: &[String]) -> Answer<usize> {
        self.0.select(question, options).await
    }
    async fn input(&self, question: &str, default: Option<&str>) -> Answer<String> {
        self.0.input(question, default.map(str::to_owned)).await
    }
}

const CONFIRM: usize = 0;
const SELECT: usize = 1;
const INPUT: usize = 2;

/// An operator that can be asked and expects nothing else yet.
fn reachable() -> MockOperator {
    let mut op = MockOperator::new();
    op.expect_can_ask().return_const(true);
    op
}

/// An operator that must never be asked anything.
fn never_asked(can_ask: bool) -> MockOperator {
    let mut op = MockOperator::new();
    op.expect_can_ask().return_const(can_ask);
    op.expect_confirm().times(0);
    op.expect_select().times(0);
    op.expect_input().times(0);
    op
}

fn tool(op: MockOperator, which: usize) -> Arc<dyn Tool> {
    hitl_tools(Arc::new(Mocked(op))).swap_remove(which)
}

async fn call_with(op: MockOperator, which: usize, input: Value, ctx: &CallContext) -> ToolOutput {
    tool(op, which).call(&ToolInput::from_value(&input), ctx).await
}

async fn call(op: MockOperator, which: usize, input: Value) -> ToolOutput {
    call_with(op, which, input, &CallContext::new()).await
}

/// A normal result's JSON.
fn result(out: &ToolOutput) -> Value {
    assert!(!out.is_error(), "expected a normal result, got an error: {}", out.content());
    serde_json::from_str(out.content()).unwrap()
}

/// Assert a negative outcome: exactly `{field: false|null, "reason": <non-empty>}`; returns the reason.
fn negative(out: &ToolOutput, field: &str) -> String {
    let v = result(out);
    let obj = v.as_object().unwrap();
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut want = vec![field, "reason"];
    want.sort_unstable();
    assert_eq!(keys, want, "{v}");
    let nothing = if field == "confirmed" { json!(false) } else { Value::Null };
    assert_eq!(obj[field], nothing, "{v}");
    let reason = obj["reason"].as_str().unwrap().to_owned();
    assert!(!reason.is_empty());
    reason
}

/// Assert an error result naming `needle`.
fn error(out: &ToolOutput, tool: &str, needle: &str) {
    assert!(out.is_error(), "expected an error result, got {}", out.content());
    assert!(out.content().starts_with(&format!("{tool}: ")), "{}", out.content());
    assert!(out.content().contains(needle), "{:?} should name {needle:?}", out.content());
}

fn strings(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("option {i}")).collect()
}

// ---- HITL-1..5: the tools ----

#[test]
fn hitl_1_three_builtin_tools_in_order_never_deferred() {
    let tools = hitl_tools(Arc::new(Mocked(never_asked(true))));
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name()).collect();
    assert_eq!(names, ["ask_human_confirm", "ask_human_select", "ask_human_input"]);
    for t in &tools {
        assert_eq!(t.spec().kind(), ToolKind::Builtin, "{}", t.spec().name());
        assert!(t.spec().no_defer(), "{} must never be deferred", t.spec().name());
        assert!(!t.spec().confirm_opt_in(), "{} is not gated", t.spec().name());
    }
}

#[test]
fn hitl_2_descriptions_begin_with_the_exact_50_character_prefixes() {
    let prefixes = [
        "Ask the human operator a yes/no question at the te",
        "Ask the human operator to choose one option from a",
        "Ask the human operator to type a free-text value a",
    ];
    let results = ["\"confirmed\"", "\"selected\"", "\"value\""];
    let tools = hitl_tools(Arc::new(Mocked(never_asked(true))));
    for ((t, prefix), field) in tools.iter().zip(prefixes).zip(results) {
        assert_eq!(prefix.chars().count(), 50);
        let d = t.spec().description();
        assert_eq!(d.chars().take(50).collect::<String>(), prefix, "{}", t.spec().name());
        assert!(d.chars().count() > 50, "the description continues with guidance");
        assert!(d.contains("Use it") && d.contains("Do not use it"), "when to use and not use: {d}");
        assert!(d.contains("Returns {") && d.contains(field) && d.contains("\"reason\""), "result shape: {d}");
        if field != "\"confirmed\"" {
            assert!(d.contains("null"), "result shape: {d}");
        }
        assert_eq!(t.spec().plain_description(), d, "info shows the same text");
    }
}

#[test]
fn hitl_3_4_5_schemas() {
    let tools = hitl_tools(Arc::new(Mocked(never_asked(true))));
    let confirm = tools[CONFIRM].spec().input_schema();
    assert_eq!(confirm["type"], "object");
    assert_eq!(confirm["required"], json!(["question"]));
    assert_eq!(confirm["properties"]["question"]["type"], "string");
    assert_eq!(confirm["properties"].as_object().unwrap().len(), 1);

    let select = tools[SELECT].spec().input_schema();
    assert_eq!(select["type"], "object");
    assert_eq!(select["required"], json!(["question", "options"]));
    assert_eq!(select["properties"]["question"]["type"], "string");
    let options = &select["properties"]["options"];
    assert_eq!(options["type"], "array");
    assert_eq!(options["items"], json!({"type": "string"}));
    assert_eq!(options["minItems"], 1);
    assert_eq!(options["maxItems"], 25);
    assert_eq!(HITL_MAX_OPTIONS, 25);

    let input = tools[INPUT].spec().input_schema();
    assert_eq!(input["type"], "object");
    assert_eq!(input["required"], json!(["question"]));
    assert_eq!(input["properties"]["question"]["type"], "string");
    assert_eq!(input["properties"]["default"]["type"], "string");
}

// ---- HITL-6/7: ask_human_confirm ----

#[tokio::test]
async fn hitl_6_confirm_an_explicit_yes_is_the_only_true() {
    let mut op = reachable();
    op.expect_confirm().withf(|q| q == "Delete the ORDERS stream?").times(1).return_const(Answer::Given(true));
    let out = call(op, CONFIRM, json!({"question": "Delete the ORDERS stream?"})).await;
    assert!(!out.is_error());
    assert_eq!(out.content(), r#"{"confirmed":true}"#);
}

#[tokio::test]
async fn hitl_6_confirm_a_plain_no_is_false_without_a_reason() {
    let mut op = reachable();
    op.expect_confirm().times(1).return_const(Answer::Given(false));
    let out = call(op, CONFIRM, json!({"question": "Delete the ORDERS stream?"})).await;
    assert!(!out.is_error());
    assert_eq!(out.content(), r#"{"confirmed":false}"#);
}

#[tokio::test]
async fn hitl_7_confirm_without_an_answer_is_false_with_a_reason() {
    for (answer, says) in [
        (Answer::Unavailable, "no operator"),
        (Answer::Interrupted, "interrupt"),
        (Answer::Failed("boom\u{1b}[31m".into()), "boom"),
    ] {
        let mut op = reachable();
        op.expect_confirm().times(1).return_const(answer.clone());
        let reason = negative(&call(op, CONFIRM, json!({"question": "Proceed?"})).await, "confirmed");
        assert!(reason.contains(says), "{answer:?}: {reason}");
        assert!(!reason.contains('\u{1b}'), "{reason:?}");
    }
}

// ---- HITL-6/7: ask_human_select ----

#[tokio::test]
async fn hitl_6_select_returns_the_chosen_option() {
    let mut op = reachable();
    op.expect_select()
        .withf(|q, o| q == "Which stream?" && o == ["ORDERS", "EVENTS", "AUDIT"])
        .times(1)
        .return_const(Answer::Given(1));
    let out = call(op, SELECT, json!({"question": "Which stream?", "options": ["ORDERS", "EVENTS", "AUDIT"]})).await;
    assert!(!out.is_error());
    assert_eq!(out.content(), r#"{"selected":"EVENTS"}"#);
}

#[tokio::test]
async fn hitl_7_select_without_an_answer_is_null_with_a_reason() {
    for (answer, says) in [
        (Answer::Unavailable, "no operator"),
        (Answer::Interrupted, "interrupt"),
        (Answer::Failed("tty gone".into()), "tty gone"),
        // A prompter reporting a choice that does not exist: never guess one.
        (Answer::Given(3), "choice 3"),
        (Answer::Given(usize::MAX), "no option"),
    ] {
        let mut op = reachable();
        op.expect_select().times(1).return_const(answer.clone());
        let out = call(op, SELECT, json!({"question": "Which?", "options": ["a", "b", "c"]})).await;
        let reason = negative(&out, "selected");
        assert!(reason.contains(says), "{answer:?}: {reason}");
    }
}

// ---- HITL-6/7: ask_human_input ----

#[tokio::test]
async fn hitl_6_input_returns_the_typed_text_and_offers_the_default() {
    let mut op = reachable();
    op.expect_input()
        .withf(|q, d| q == "Stream name?" && d.as_deref() == Some("ORDERS"))
        .times(1)
        .return_const(Answer::Given("EVENTS \u{1b}[1m raw".to_owned()));
    let out = call(op, INPUT, json!({"question": "Stream name?", "default": "ORDERS"})).await;
    assert!(!out.is_error());
    // The operator's own text comes back as typed.
    assert_eq!(result(&out), json!({"value": "EVENTS \u{1b}[1m raw"}));
}

#[tokio::test]
async fn hitl_6_input_an_empty_string_is_a_valid_answer_and_no_default_is_offered_when_none_given() {
    let mut op = reachable();
    op.expect_input().withf(|q, d| q == "Comment?" && d.is_none()).times(1).return_const(Answer::Given(String::new()));
    let out = call(op, INPUT, json!({"question": "Comment?"})).await;
    assert!(!out.is_error());
    assert_eq!(out.content(), r#"{"value":""}"#);
}

#[tokio::test]
async fn hitl_7_input_without_an_answer_is_null_with_a_reason() {
    for (answer, says) in [
        (Answer::Unavailable, "no operator"),
        (Answer::Interrupted, "interrupt"),
        (Answer::Failed("eof".into()), "eof"),
    ] {
        let mut op = reachable();
        op.expect_input().times(1).return_const(answer.clone());
        let out = call(op, INPUT, json!({"question": "Name?", "default": "x"})).await;
        let reason = negative(&out, "value");
        assert!(reason.contains(says), "{answer:?}: {reason}");
    }
}

// ---- HITL-7: deny by default without asking ----

fn valid_input(which: usize) -> Value {
    match which {
        CONFIRM => json!({"question": "Proceed?"}),
        SELECT => json!({"question": "Which?", "options": ["a", "b"]}),
        _ => json!({"question": "Name?", "default": "x"}),
    }
}

const FIELDS: [&str; 3] = ["confirmed", "selected", "value"];

#[tokio::test]
async fn hitl_7_no_operator_declines_without_asking() {
    for which in [CONFIRM, SELECT, INPUT] {
        let out = call(never_asked(false), which, valid_input(which)).await;
        let reason = negative(&out, FIELDS[which]);
        assert!(reason.contains("no operator"), "{reason}");
    }
}

#[tokio::test]
async fn hitl_7_no_operator_prompter_declines() {
    for (which, t) in hitl_tools(Arc::new(fisk_ai::operator::NoOperator)).into_iter().enumerate() {
        let out = t.call(&ToolInput::from_value(&valid_input(which)), &CallContext::new()).await;
        negative(&out, FIELDS[which]);
    }
}

#[tokio::test]
async fn hitl_7_cancelled_run_declines_without_asking() {
    let token = CancellationToken::new();
    token.cancel();
    let ctx = CallContext::new().with_cancel(token);
    for which in [CONFIRM, SELECT, INPUT] {
        let out = call_with(never_asked(true), which, valid_input(which), &ctx).await;
        let reason = negative(&out, FIELDS[which]);
        assert!(reason.contains("cancelled"), "{reason}");
    }
}

/// A prompter whose operator never answers.
struct Silent;

#[async_trait]
impl Prompter for Silent {
    fn can_ask(&self) -> bool {
        true
    }
    async fn confirm(&self, _question: &str) -> Answer<bool> {
        futures::future::pending().await
    }
    async fn select(&self, _question: &str, _options: &[String]) -> Answer<usize> {
        futures::future::pending().await
    }
    async fn input(&self, _question: &str, _default: Option<&str>) -> Answer<String> {
        futures::future::pending().await
    }
}

#[tokio::test]
async fn hitl_7_cancelling_the_run_while_asking_ends_the_question_negatively() {
    for (which, t) in hitl_tools(Arc::new(Silent)).into_iter().enumerate() {
        let token = CancellationToken::new();
        let ctx = CallContext::new().with_cancel(token.clone());
        let input = ToolInput::from_value(&valid_input(which));
        let (out, ()) = tokio::join!(t.call(&input, &ctx), async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            token.cancel();
        });
        let reason = negative(&out, FIELDS[which]);
        assert!(reason.contains("cancelled"), "{reason}");
    }
}

#[tokio::test(start_paused = true)]
async fn hitl_7_a_call_deadline_ends_the_question_negatively() {
    for (which, t) in hitl_tools(Arc::new(Silent)).into_iter().enumerate() {
        let ctx = CallContext::new().with_timeout(Duration::from_secs(30));
        let out = t.call(&ToolInput::from_value(&valid_input(which)), &ctx).await;
        let reason = negative(&out, FIELDS[which]);
        assert!(reason.contains("did not answer within 30s"), "{reason}");
    }
}

// ---- HITL-8: malformed calls ----

#[tokio::test]
async fn hitl_8_malformed_input_is_an_error_naming_the_problem() {
    let names = ["ask_human_confirm", "ask_human_select", "ask_human_input"];
    let cases: [(usize, &str, &str); 12] = [
        (CONFIRM, r#""Proceed?""#, "object"),
        (CONFIRM, "[1, 2]", "object"),
        (CONFIRM, "{}", "question"),
        (CONFIRM, "null", "question"),
        (CONFIRM, r#"{"question": 42}"#, "question"),
        (CONFIRM, r#"{"question": "ok?", "urgent": true}"#, "urgent"),
        (SELECT, r#"{"question": "which?"}"#, "options"),
        (SELECT, r#"{"question": "which?", "options": "a, b"}"#, "options"),
        (SELECT, r#"{"question": "which?", "options": ["a", 2]}"#, "options"),
        (SELECT, r#"{"options": ["a"]}"#, "question"),
        (INPUT, r#"{"question": "name?", "default": 7}"#, "default"),
        (INPUT, r#"{"question": ["name?"]}"#, "question"),
    ];
    for (which, text, needle) in cases {
        // Rejected by the dispatch path before the operator is involved at all.
        let out = common::dispatch::dispatched(tool(never_asked(true), which), text).await;
        assert!(out.is_error(), "{text}: {}", out.content());
        assert!(out.content().contains(&format!("\"{}\"", names[which])), "{text}: {}", out.content());
        assert!(out.content().contains(needle), "{text}: {:?} should name {needle:?}", out.content());
    }
}

#[tokio::test]
async fn hitl_8_an_empty_question_after_sanitizing_is_an_error() {
    for question in ["", "   ", "\n\t\r", "\u{1b}[31m\u{1b}[0m", "\u{1b}]0;title\u{7}\u{7}\u{0}"] {
        for which in [CONFIRM, SELECT, INPUT] {
            let mut input = valid_input(which);
            input["question"] = json!(question);
            let out = call(never_asked(true), which, input).await;
            error(&out, ["ask_human_confirm", "ask_human_select", "ask_human_input"][which], "\"question\" is empty");
        }
    }
}

#[tokio::test]
async fn hitl_8_zero_options_is_an_error() {
    let out = call(never_asked(true), SELECT, json!({"question": "Which?", "options": []})).await;
    error(&out, "ask_human_select", "\"options\" is empty");
}

#[tokio::test]
async fn hitl_8_twenty_six_options_is_an_error() {
    let out = call(never_asked(true), SELECT, json!({"question": "Which?", "options": strings(26)})).await;
    error(&out, "ask_human_select", "\"options\" has 26 entries; give at most 25");
    assert!(!out.content().contains("option 26"), "the message does not echo the list: {}", out.content());
}

#[tokio::test]
async fn hitl_4_twenty_five_options_are_offered() {
    let mut op = reachable();
    op.expect_select().withf(|_, o| o == strings(25).as_slice()).times(1).return_const(Answer::Given(24));
    let out = call(op, SELECT, json!({"question": "Which?", "options": strings(25)})).await;
    assert_eq!(result(&out), json!({"selected": "option 25"}));
}

#[tokio::test]
async fn hitl_8_options_the_operator_cannot_tell_apart_are_an_error() {
    // Blank once sanitized.
    let out = call(never_asked(true), SELECT, json!({"question": "Which?", "options": ["a", "\u{1b}[1m \t"]})).await;
    error(&out, "ask_human_select", "option 2 is empty");
    // The same once sanitized: the operator could not know which one they pick.
    let out =
        call(never_asked(true), SELECT, json!({"question": "Which?", "options": ["x", "rm  -rf", "rm\t-rf\u{1b}[0m"]}))
            .await;
    error(&out, "ask_human_select", "options 2 and 3 look the same");
    let long = "y".repeat(600);
    let out =
        call(never_asked(true), SELECT, json!({"question": "Which?", "options": [long.clone(), long + "z"]})).await;
    error(&out, "ask_human_select", "options 1 and 2 look the same");
}

// ---- HITL-9: sanitizing ----

#[tokio::test]
async fn hitl_9_question_options_and_default_are_sanitized_as_gate_8() {
    let q = "Delete \u{1b}[31mORDERS\u{1b}[0m?\n\n\u{1b}]0;pwned\u{7}Really\u{7}";
    let mut op = reachable();
    op.expect_confirm().withf(|q| q == "Delete ORDERS? Really").times(1).return_const(Answer::Given(false));
    call(op, CONFIRM, json!({"question": q})).await;

    let mut op = reachable();
    op.expect_select()
        .withf(|q, o| q == "Delete ORDERS? Really" && o == ["keep it", "drop it"])
        .times(1)
        .return_const(Answer::Given(1));
    let out = call(op, SELECT, json!({"question": q, "options": ["keep\tit", "\u{1b}[5mdrop\u{1b}[0m  it\r\n"]})).await;
    // The model gets back the option exactly as it wrote it at that index, not the sanitized text.
    assert_eq!(result(&out), json!({"selected": "\u{1b}[5mdrop\u{1b}[0m  it\r\n"}));

    let mut op = reachable();
    op.expect_input()
        .withf(|q, d| q == "Delete ORDERS? Really" && d.as_deref() == Some("ORDERS EVENTS"))
        .times(1)
        .return_const(Answer::Given("ORDERS".into()));
    call(op, INPUT, json!({"question": q, "default": "\u{1b}[1mORDERS\u{0}EVENTS "})).await;

    // A default with nothing visible left (or an empty one) is not offered.
    for default in ["", " \u{1b}[0m\t"] {
        let mut op = reachable();
        op.expect_input().withf(|_, d| d.is_none()).times(1).return_const(Answer::Given(String::new()));
        let out = call(op, INPUT, json!({"question": "Name?", "default": default})).await;
        assert_eq!(result(&out), json!({"value": ""}));
    }
}

#[tokio::test]
async fn hitl_9_texts_are_capped_at_500_characters() {
    assert_eq!(HITL_TEXT_LIMIT, 500);
    let long: String = "é".repeat(499) + "\u{1b}[31m" + "xyz";
    let capped: String = "é".repeat(499) + "x…";
    assert_eq!(capped.chars().count(), 501);
    let exact = "q".repeat(500);

    let mut op = reachable();
    let want = capped.clone();
    op.expect_confirm().withf(move |q| q == want).times(1).return_const(Answer::Given(true));
    call(op, CONFIRM, json!({"question": long})).await;

    let mut op = reachable();
    let want = exact.clone();
    op.expect_confirm().withf(move |q| q == want).times(1).return_const(Answer::Given(true));
    call(op, CONFIRM, json!({"question": exact})).await;

    let mut op = reachable();
    let (want_q, want_o) = (capped.clone(), vec![capped.clone(), "short".to_owned()]);
    op.expect_select().withf(move |q, o| q == want_q && o == want_o).times(1).return_const(Answer::Given(0));
    let out = call(op, SELECT, json!({"question": long, "options": [long, "short"]})).await;
    assert_eq!(result(&out), json!({"selected": long}), "the original, uncut option comes back");

    let mut op = reachable();
    let want = capped.clone();
    op.expect_input()
        .withf(move |q, d| q == want && d.as_deref() == Some(want.as_str()))
        .times(1)
        .return_const(Answer::Given(capped.clone()));
    call(op, INPUT, json!({"question": long, "default": long})).await;
}

// ---- display (CLI-7, HITL-13) ----

#[test]
fn hitl_13_display_is_the_name_and_the_sanitized_question_on_one_line() {
    let tools = hitl_tools(Arc::new(Mocked(never_asked(true))));
    let input = ToolInput::from_value(&json!({"question": "Drop\n\u{1b}[31mORDERS\u{1b}[0m?", "options": ["a"]}));
    assert_eq!(tools[CONFIRM].display(&input), "ask_human_confirm Drop ORDERS?");
    assert_eq!(tools[SELECT].display(&input), "ask_human_select Drop ORDERS?");
    assert_eq!(tools[INPUT].display(&ToolInput::from_value(&json!({"question": "Name?"}))), "ask_human_input Name?");
    let long = ToolInput::from_value(&json!({"question": "w ".repeat(2000)}));
    let shown = tools[CONFIRM].display(&long);
    assert!(!shown.contains('\n') && shown.chars().count() <= "ask_human_confirm ".len() + 501, "{shown}");
    assert_eq!(tools[CONFIRM].display(&ToolInput::empty()), "ask_human_confirm");
    assert_eq!(tools[INPUT].display(&ToolInput::from_value(&json!({"question": 3}))), "ask_human_input");
}

#[tokio::test]
async fn hitl_9_gate_8_the_operator_sees_bidi_and_zero_width_characters_as_escapes() {
    let question = "Run \u{202e}txt.exe\u{200b}?\u{feff}";
    let shown = r"Run \u{202e}txt.exe\u{200b}?\u{feff}";
    let mut op = reachable();
    op.expect_confirm().withf(move |q| q == shown).times(1).return_const(Answer::Given(false));
    call(op, CONFIRM, json!({"question": question})).await;

    let mut op = reachable();
    let options = vec![r"a\u{200d}b".to_owned(), "ab".to_owned()];
    op.expect_select().withf(move |q, o| q == shown && o == options).times(1).return_const(Answer::Given(0));
    let out = call(op, SELECT, json!({"question": question, "options": ["a\u{200d}b", "ab"]})).await;
    assert_eq!(result(&out), json!({"selected": "a\u{200d}b"}), "the original option comes back");

    let tools = hitl_tools(Arc::new(Mocked(never_asked(true))));
    let display = tools[CONFIRM].display(&ToolInput::from_value(&json!({"question": question})));
    assert_eq!(display, format!("ask_human_confirm {shown}"), "CLI-7 trace");
}

// ---- HITL-12: the system segment ----

#[test]
fn hitl_12_note_says_non_interactive_plain_questions_end_the_run_and_names_the_tools() {
    let note = hitl_note();
    assert!(note.contains("non-interactively"), "{note}");
    assert!(note.contains("plain text") && note.contains("never reaches") && note.contains("ends the run"), "{note}");
    assert!(note.contains("only way"), "{note}");
    for name in ["ask_human_confirm", "ask_human_select", "ask_human_input"] {
        assert!(note.contains(name), "{name}: {note}");
    }
    assert_eq!(note, hitl_note(), "stable: it feeds the session fingerprint (LOOP-2)");
    assert!(!note.contains('\n'));
}

// ---- the terminal prompter without a terminal ----

#[cfg(feature = "terminal")]
mod terminal {
    use super::*;
    use fisk_ai::operator::TerminalPrompter;
    use std::process::{Command, Stdio};

    /// Set in the child process that runs the no-terminal check.
    const CHILD: &str = "FISK_AI_HITL_NO_TTY_CHILD";
    const TEST: &str = "terminal::hitl_7_terminal_prompter_without_a_terminal_cannot_ask_and_is_unavailable";

    /// `cargo test` run by hand may inherit the developer's terminal, so the check runs in a child copy of this test
    /// binary with stdin from /dev/null and stdout/stderr piped: no terminal anywhere, whoever runs the suite.
    #[test]
    fn hitl_7_terminal_prompter_without_a_terminal_cannot_ask_and_is_unavailable() {
        if std::env::var_os(CHILD).is_some() {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let p = TerminalPrompter::stderr();
            assert!(!p.can_ask());
            let answers = rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(30), async {
                    (
                        p.confirm("Proceed?").await,
                        p.select("Which?", &["a".to_owned()]).await,
                        p.input("Name?", Some("x")).await,
                    )
                })
                .await
            });
            assert_eq!(answers, Ok((Answer::Unavailable, Answer::Unavailable, Answer::Unavailable)));
            // Through the tools: the negative outcome, without drawing anything.
            for (which, t) in hitl_tools(Arc::new(p.clone())).into_iter().enumerate() {
                let out = rt.block_on(t.call(&ToolInput::from_value(&valid_input(which)), &CallContext::new()));
                negative(&out, FIELDS[which]);
            }
            println!("child-checked");
            return;
        }
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
        assert!(stdout.contains("child-checked"), "the check ran in the child:\n{stdout}");
        for shown in ["Proceed?", "Which?", "Name?"] {
            assert!(!stderr.contains(shown), "no prompt drawn: {stderr}");
        }
    }

    /// Compiles only if the prompter can be cloned and shared between threads; one `Arc` then backs all three
    /// tools and a clone on another thread reports the same reachability.
    #[test]
    fn terminal_prompter_is_a_cloneable_shareable_prompter() {
        fn shareable<T: Clone + Send + Sync + 'static>() {}
        shareable::<TerminalPrompter>();
        let p: Arc<dyn Prompter> = Arc::new(TerminalPrompter::stderr().clone());
        let other = p.clone();
        assert_eq!(std::thread::spawn(move || other.can_ask()).join().unwrap(), p.can_ask());
        let tools = hitl_tools(p.clone());
        assert_eq!(tools.len(), 3);
        assert_eq!(Arc::strong_count(&p), 1 + 3, "the three tools share the one prompter");
    }
}
