//! The deny-then-select pipeline (SEL-1..14), gating decisions (GATE-1..4) and invariant 1.

mod common;

use common::*;
use fisk_ai::async_trait;
use fisk_ai::select::{Rule, Selection, Toolset};
use fisk_ai::source::fisk::FiskApp;
use fisk_ai::tool::{CallContext, Origin, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use fisk_ai::{Config, ErrorKind, Warning};
use serde_json::json;
use std::sync::Arc;

struct Plain(ToolSpec);

#[async_trait]
impl Tool for Plain {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(&self, _: &ToolInput, _: &CallContext) -> ToolOutput {
        ToolOutput::success("ok")
    }
}

fn plain(name: &str, kind: ToolKind) -> Arc<dyn Tool> {
    let mut spec = ToolSpec::new(name, kind, json!({"type": "object"}));
    if kind == ToolKind::Imported {
        spec = spec.with_origin(Origin::remote("hub"));
    }
    Arc::new(Plain(spec))
}

fn commands(fixture_name: &str) -> Vec<Arc<dyn Tool>> {
    FiskApp::new("/unused").tools_from_model(model(fixture_name)).unwrap().tools
}

fn no_tags() -> [&'static str; 0] {
    []
}

fn names(set: &Toolset) -> Vec<&str> {
    set.iter().map(|t| t.spec().name()).collect()
}

#[test]
fn invariant_1_ai_deny_is_stripped_before_any_rule_and_nothing_selects_it_back() {
    let sel = Selection::new().with_include(Rule::new(["^think$", ".*"], ["ai:deny", ""]).unwrap());
    let set = sel.apply(commands("cowsay.json")).unwrap();
    assert!(set.get("think").is_none());
    assert_eq!(names(&set), ["say", "cow_say", "cow_think", "feed", "list"]);
    // A leaf's own ai:deny counts; a group's does not reach its leaves.
    let set = Selection::new().apply(commands("edge-cases.json")).unwrap();
    assert!(set.get("deny-group_poke").is_none());
    assert!(set.get("deny-group_peek").is_some());
}

#[test]
fn sel_2_deny_is_stripped_even_with_no_rules() {
    let set = Selection::new().apply(commands("cowsay.json")).unwrap();
    assert_eq!(names(&set), ["say", "cow_say", "cow_think", "feed", "list"]);
}

#[test]
fn sel_3_4_include_then_exclude() {
    let sel = Selection::new()
        .with_include(Rule::new(["^cow"], no_tags()).unwrap())
        .with_exclude(Rule::new(["^cow_think"], no_tags()).unwrap());
    assert_eq!(names(&sel.apply(commands("cowsay.json")).unwrap()), ["cow_say"]);
    // Empty rules are ignored.
    let sel = Selection::new().with_include(Rule::default()).with_exclude(Rule::default());
    assert_eq!(sel.apply(commands("cowsay.json")).unwrap().len(), 5);
}

#[test]
fn sel_6_patterns_search_unanchored_in_the_underscore_form() {
    let sel = Selection::new().with_include(Rule::new(["say"], no_tags()).unwrap());
    assert_eq!(names(&sel.apply(commands("cowsay.json")).unwrap()), ["say", "cow_say"]);
    let sel = Selection::new().with_include(Rule::new(["cow say"], no_tags()).unwrap());
    assert!(sel.apply(commands("cowsay.json")).unwrap().is_empty());
    let sel = Selection::new().with_include(Rule::new(["^stream_", "_info$"], no_tags()).unwrap());
    let set = sel.apply(commands("natscli.json")).unwrap();
    assert!(set.iter().all(|t| t.spec().name().starts_with("stream_") || t.spec().name().ends_with("_info")));
    assert!(set.get("stream_add").is_some() && set.get("account_info").is_some());
}

#[test]
fn sel_6_an_invalid_pattern_fails_naming_it() {
    let err = Rule::new(["(unclosed"], no_tags()).unwrap_err();
    assert!(err.to_string().contains("\"(unclosed\""));
    // Built in code, so parse-time validation never saw it.
    let mut config = Config::default();
    config.include = Some(fisk_ai::config::Filter::new(["ok", "[z-a]"], no_tags()));
    let err = Selection::from_config(&config).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("[z-a]"), "{err}");
}

#[test]
fn sel_7_tags_match_exactly_and_empty_matches_untagged() {
    let sel = Selection::new().with_include(Rule::new(no_tags(), ["impact:ro"]).unwrap());
    assert_eq!(names(&sel.apply(commands("cowsay.json")).unwrap()), ["say", "cow_say", "list"]);
    let sel = Selection::new().with_include(Rule::new(no_tags(), ["impact"]).unwrap());
    assert!(sel.apply(commands("cowsay.json")).unwrap().is_empty());
    let sel = Selection::new().with_include(Rule::new(no_tags(), [""]).unwrap());
    assert_eq!(names(&sel.apply(commands("edge-cases.json")).unwrap()), ["cluster_node_disk_status", "empty-help"]);
    let sel = Selection::new().with_exclude(Rule::new(no_tags(), ["scope:system"]).unwrap());
    let set = sel.apply(commands("edge-cases.json")).unwrap();
    assert!(set.iter().all(|t| !t.spec().tags().contains("scope:system")));
}

#[test]
fn sel_8_9_builtins_match_by_name_and_tag_only_includes_drop_them() {
    let mut all = commands("cowsay.json");
    all.push(plain("memory_write", ToolKind::Builtin));
    all.push(plain("read_file", ToolKind::Builtin));
    let sel = Selection::new().with_include(Rule::new(no_tags(), ["impact:ro"]).unwrap());
    assert!(sel.apply(all.clone()).unwrap().get("memory_write").is_none());
    let sel = Selection::new().with_include(Rule::new(["^memory_"], ["impact:ro"]).unwrap());
    assert_eq!(names(&sel.apply(all.clone()).unwrap()), ["say", "cow_say", "list", "memory_write"]);
    let sel = Selection::new().with_include(Rule::new(no_tags(), [""]).unwrap());
    assert_eq!(names(&sel.apply(all.clone()).unwrap()), ["memory_write", "read_file"]);
    let sel = Selection::new().with_exclude(Rule::new(["^read_file$"], no_tags()).unwrap());
    assert!(sel.apply(all).unwrap().get("read_file").is_none());
}

#[test]
fn sel_12_order_is_commands_imports_custom_by_name_then_builtins() {
    let mut all = vec![
        plain("ask_human_confirm", ToolKind::Builtin),
        plain("zeta", ToolKind::Custom),
        plain("remote_one", ToolKind::Imported),
        plain("alpha", ToolKind::Custom),
        plain("read_file", ToolKind::Builtin),
    ];
    all.extend(commands("cowsay.json"));
    let set = Selection::new().apply(all).unwrap();
    assert_eq!(
        names(&set),
        [
            "say",
            "cow_say",
            "cow_think",
            "feed",
            "list",
            "remote_one",
            "alpha",
            "zeta",
            "ask_human_confirm",
            "read_file"
        ]
    );
    assert_eq!(set.get("remote_one").unwrap().spec().origin().to_string(), "hub");
    assert_eq!(set.get("say").unwrap().spec().origin().to_string(), "local");
}

#[test]
fn sel_13_an_empty_set_fails_a_run_with_the_right_advice() {
    let empty = Selection::new()
        .with_include(Rule::new(["nothing"], no_tags()).unwrap())
        .apply(commands("cowsay.json"))
        .unwrap();
    let err = empty.ensure_not_empty(true).unwrap_err();
    assert!(err.to_string().contains("include and exclude"));
    let err = Selection::new().apply(Vec::new()).unwrap().ensure_not_empty(false).unwrap_err();
    assert!(err.to_string().contains("no application is wrapped"));
    assert!(Selection::new().apply(commands("cowsay.json")).unwrap().ensure_not_empty(true).is_ok());
}

#[test]
fn sel_14_builtin_or_custom_taking_a_command_name_aborts_before_filters() {
    for kind in [ToolKind::Builtin, ToolKind::Custom] {
        let mut all = commands("cowsay.json");
        all.push(plain("feed", kind));
        // Excluding feed cannot resolve it: the check runs before filters.
        let sel = Selection::new().with_exclude(Rule::new(["^feed$"], no_tags()).unwrap());
        let err = sel.apply(all).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Selection);
        let msg = err.to_string();
        assert!(msg.contains("\"feed\"") && msg.contains("ai:deny") && msg.contains("rename"), "{msg}");
    }
    // A denied command frees its name.
    let mut all = commands("cowsay.json");
    all.push(plain("think", ToolKind::Builtin));
    assert!(Selection::new().apply(all).is_ok());
    // Custom tools collide with anything (OVR-8).
    let err = Selection::new().apply(vec![plain("x", ToolKind::Custom), plain("x", ToolKind::Builtin)]).unwrap_err();
    assert!(err.to_string().contains("\"x\""));
    // The message says which kinds collided, so the operator knows what to rename.
    assert!(err.to_string().contains("a custom tool and a built-in tool"), "{err}");
    let err = Selection::new().apply(vec![plain("x", ToolKind::Custom), plain("x", ToolKind::Custom)]).unwrap_err();
    assert!(err.to_string().contains("two custom tools are both named \"x\""), "{err}");
    // Two imported tools of one name are prefixed with their alias (IMPORT-5); under one alias they still collide.
    let err = Selection::new().apply(vec![plain("x", ToolKind::Imported), plain("x", ToolKind::Imported)]).unwrap_err();
    assert!(err.to_string().contains("\"hub_x\" (source hub, source hub)"), "{err}");
    assert!(err.to_string().contains("distinct aliases"), "{err}");
}

#[test]
fn unaddressable_command_names_are_skipped_with_a_warning() {
    let set = Selection::new().apply(commands("edge-cases.json")).unwrap();
    assert!(set.get("grüße").is_none());
    assert!(set.warnings().contains(&Warning::InvalidToolName { name: "grüße".into(), display: "grüße".into() }));
}

#[test]
fn gate_1_2_ai_confirm_always_gates_and_confirm_tags_extend_it() {
    let set = Selection::new().apply(commands("cowsay.json")).unwrap();
    assert_eq!(set.get("cow_think").unwrap().gate_trigger(), Some("ai:confirm"));
    assert_eq!(set.gated_count(), 1);

    let sel = Selection::new().with_confirm_tags([" impact:rw ", "", "impact:rw", "ai:no_defer"]);
    let set = sel.apply(commands("cowsay.json")).unwrap();
    assert_eq!(set.get("feed").unwrap().gate_trigger(), Some("impact:rw"));
    // GATE-2: the first of the command's own tags found in confirm_tags.
    assert_eq!(set.get("cow_say").unwrap().gate_trigger(), Some("ai:no_defer"));
    assert!(!set.get("say").unwrap().is_gated());

    // ai:confirm wins over a configured tag that comes first on the command.
    let set = Selection::new().with_confirm_tags(["impact:rw"]).apply(commands("edge-cases.json")).unwrap();
    assert_eq!(set.get("cluster_node_disk_scrub-now").unwrap().gate_trigger(), Some("ai:confirm"));
    assert_eq!(set.get("archive_add").unwrap().gate_trigger(), Some("impact:rw"));
}

#[test]
fn gate_3_builtins_that_opt_in_are_gated_with_ai_confirm() {
    let spec = ToolSpec::new("read_file", ToolKind::Builtin, json!({"type": "object"})).with_confirm(true);
    let set = Selection::new()
        .apply(vec![Arc::new(Plain(spec)) as Arc<dyn Tool>, plain("base64_encode", ToolKind::Builtin)])
        .unwrap();
    assert_eq!(set.get("read_file").unwrap().gate_trigger(), Some("ai:confirm"));
    assert!(!set.get("base64_encode").unwrap().is_gated());
}

#[test]
fn gate_4_confirm_tags_matching_no_command_warn_once_each() {
    let config = Config::from_yaml_str("harness:\n  confirm_tags: [impact:rw, ' impact:wr', impact:rw, '']\n").unwrap();
    let set = Selection::from_config(&config).unwrap().apply(commands("cowsay.json")).unwrap();
    assert_eq!(set.warnings(), [Warning::UnmatchedConfirmTag { tag: "impact:wr".into() }]);
    assert!(set.warnings()[0].to_string().contains("impact:wr"));
    // The builder normalizes on its own too (trimmed, empties dropped, duplicates removed), not only the config.
    let sel = Selection::new().with_confirm_tags(["impact:rw", " impact:wr", "impact:wr ", "", " "]);
    let set = sel.apply(commands("cowsay.json")).unwrap();
    assert_eq!(set.warnings(), [Warning::UnmatchedConfirmTag { tag: "impact:wr".into() }]);
}

#[test]
fn sel_11_narrowing_for_serving_only_removes() {
    let set = Selection::new().apply(commands("cowsay.json")).unwrap();
    let narrowed = set.narrow(
        Some(&Rule::new(["^cow_", "^think$"], no_tags()).unwrap()),
        Some(&Rule::new(["think"], no_tags()).unwrap()),
    );
    assert_eq!(names(&narrowed), ["cow_say"]);
    assert_eq!(set.len(), 5);
}

#[test]
fn sel_3_4_the_name_only_and_tag_only_rule_constructors_select_what_they_say() {
    let by_name = Selection::new().with_include(Rule::tools(["^cow_"]).unwrap()).apply(commands("cowsay.json"));
    assert_eq!(names(&by_name.unwrap()), ["cow_say", "cow_think"]);
    let by_tag = Selection::new().with_exclude(Rule::tags(["impact:ro"])).apply(commands("cowsay.json"));
    assert_eq!(names(&by_tag.unwrap()), ["cow_think", "feed"]);
}

#[test]
fn gate_5_the_toolset_counts_its_gated_tools_and_iterates_them_all() {
    let set = Selection::new().with_confirm_tags(["impact:rw"]).apply(commands("cowsay.json")).unwrap();
    // cow_think is tagged ai:confirm; feed is tagged impact:rw.
    assert_eq!(set.gated_count(), 2);
    assert_eq!(Selection::new().apply(commands("cowsay.json")).unwrap().gated_count(), 1);
    let by_ref: Vec<&str> = (&set).into_iter().map(|t| t.spec().name()).collect();
    assert_eq!(by_ref, names(&set));
}
