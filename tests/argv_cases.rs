//! Every case of fixtures/fisk/argv-cases.json (EXEC-1..5, GLOBAL-9): the mapper alone, and then end to end
//! through a real process that echoes its argv byte for byte.

mod common;

use common::*;
use fisk_ai::source::fisk::{AppModel, CmdModel, CommandShape, FiskApp, FlagModel};
use fisk_ai::tool::CallContext;
use serde_json::Value;

fn cases() -> Value {
    serde_json::from_slice(&std::fs::read(fixture("argv-cases.json")).unwrap()).unwrap()
}

fn command<'a>(app: &'a AppModel, path: &[String]) -> &'a CmdModel {
    let mut cmds = &app.commands;
    let mut found = None;
    for p in path {
        let c = cmds.iter().find(|c| &c.name == p).unwrap_or_else(|| panic!("no command {p}"));
        cmds = &c.commands;
        found = Some(c);
    }
    found.unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect()
}

#[test]
fn exec_1_to_5_every_argv_case_maps_exactly_like_fisk() {
    let cases = cases();
    let mut checked = 0;
    for case in cases["cases"].as_array().unwrap() {
        let app = model(case["fixture"].as_str().unwrap());
        let path = strings(&case["path"]);
        let cmd = command(&app, &path);
        let shape = CommandShape { path: &path, globals: &[], flags: &cmd.flags, args: &cmd.args };
        let input = case["input"].as_str().unwrap();
        match (shape.argv(input), case.get("argv"), case.get("error_contains")) {
            (Ok(argv), Some(want), _) => assert_eq!(argv, strings(want), "case {input}"),
            (Err(e), _, Some(want)) => {
                assert!(e.to_string().contains(want.as_str().unwrap()), "case {input}: {e} lacks {want}")
            }
            (got, _, _) => panic!("case {path:?} {input}: unexpected {got:?}"),
        }
        checked += 1;
    }
    assert_eq!(checked, cases["cases"].as_array().unwrap().len());
    assert!(checked >= 25);
}

#[test]
fn global_9_globals_render_after_the_path_and_before_own_flags() {
    for case in cases()["with_globals"].as_array().unwrap() {
        let app = model(case["fixture"].as_str().unwrap());
        let path = strings(&case["path"]);
        let cmd = command(&app, &path);
        let exposed = strings(&case["exposed_globals"]);
        let globals: Vec<FlagModel> = app.flags.iter().filter(|f| exposed.contains(&f.name)).cloned().collect();
        let shape = CommandShape { path: &path, globals: &globals, flags: &cmd.flags, args: &cmd.args };
        assert_eq!(shape.argv(case["input"].as_str().unwrap()).unwrap(), strings(&case["argv"]));
    }
}

/// The successful cases whose input also satisfies the tool's schema, run for real against an echo app.
#[tokio::test]
async fn exec_7_argv_cases_arrive_byte_exact_in_a_real_process() {
    let dir = tempfile::tempdir().unwrap();
    let echo = fake_app(dir.path(), "echo-args");
    let cases = cases();
    let mut ran = 0;
    let all = cases["cases"].as_array().unwrap().iter().chain(cases["with_globals"].as_array().unwrap());
    for case in all {
        let Some(want) = case.get("argv") else { continue };
        let exposed = case.get("exposed_globals").map(strings).unwrap_or_default();
        let app = FiskApp::new(&echo).with_global_flags(exposed);
        let loaded = app.tools_from_model(model(case["fixture"].as_str().unwrap())).unwrap();
        let name = strings(&case["path"]).join("_");
        let tool = loaded.tools.iter().find(|t| t.spec().name() == name).unwrap();
        let input = case["input"].as_str().unwrap();
        let parsed: Value =
            if input.is_empty() { Value::Object(Default::default()) } else { serde_json::from_str(input).unwrap() };
        if tool.spec().validate_input(&parsed).is_err() {
            // A label object where the restricted schema asks for KEY=VALUE items, or the edge app's required
            // global `account` left out: validation rejects those before any process starts.
            continue;
        }
        let raw = raw(if input.is_empty() { "{}" } else { input });
        let out = tool.call(&raw, &CallContext::new()).await;
        assert!(!out.is_error(), "{name} {input}: {}", out.content());
        let (output, code, _) = exec_output(out.content());
        assert_eq!(code, 0);
        assert_eq!(split_args(&output), strings(want), "{name} {input}");
        assert_eq!(out.exec_report().unwrap().command, strings(want).join(" "));
        ran += 1;
    }
    assert!(ran >= 11, "only {ran} cases ran end to end");
}
