//! Loading fisk applications over a real `--fisk-introspect` exec (TOOL-1..17, TAG-6/7, GLOBAL-1..8).

mod common;

use common::*;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::{Tool, ToolKind};
use fisk_ai::{ErrorKind, Warning};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn names(tools: &[Arc<dyn Tool>]) -> Vec<&str> {
    tools.iter().map(|t| t.spec().name()).collect()
}

fn find<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools.iter().find(|t| t.spec().name() == name).unwrap_or_else(|| panic!("no tool {name}"))
}

async fn load(behaviour: &str, globals: &[&str]) -> fisk_ai::source::Loaded {
    let dir = tempfile::tempdir().unwrap();
    let app = FiskApp::new(fake_app(dir.path(), behaviour)).with_global_flags(globals.iter().copied());
    app.load().await.unwrap()
}

#[tokio::test]
async fn tool_1_8_9_cowsay_loads_runnable_leaves_in_walk_order_skipping_hidden_and_groups() {
    let loaded = load("cowsay", &[]).await;
    // moo-debug is hidden; cow is a group; think is still a leaf here (ai:deny is stripped by selection).
    assert_eq!(names(&loaded.tools), ["say", "think", "cow_say", "cow_think", "feed", "list"]);
    let t = find(&loaded.tools, "cow_say");
    assert_eq!(t.spec().kind(), ToolKind::Command);
    assert_eq!(t.spec().command_path(), ["cow", "say"]);
    assert_eq!(t.spec().display_path(), "cow say");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[tokio::test]
async fn tool_12_13_14_descriptions_and_tags_line() {
    let loaded = load("cowsay", &[]).await;
    let say = find(&loaded.tools, "cow_say").spec();
    assert_eq!(say.plain_description(), "A named cow says something");
    assert_eq!(say.description(), "A named cow says something\n\nTags: ai:no_defer, impact:ro");
    assert_eq!(say.tags().as_slice(), ["ai:no_defer", "impact:ro"]);
    assert!(say.no_defer());

    let edge = load("edge-cases", &[]).await;
    // Only long help: both descriptions use it; no tags.
    let st = find(&edge.tools, "cluster_node_disk_status").spec();
    assert_eq!(st.plain_description(), st.description());
    assert!(st.description().starts_with("Reads the status of every node"));
    // Long help contains the short help: long alone, then the Tags line.
    let status = find(&edge.tools, "status").spec();
    assert_eq!(status.plain_description(), "Show node status");
    assert_eq!(
        status.description(),
        "Show node status. Reads the status of every node and prints a summary table; use --level to tune \
         detail.\n\nTags: impact:ro"
    );
    // No help, no tags: empty.
    assert_eq!(find(&edge.tools, "empty-help").spec().description(), "");
    // Go-escaped <, > and & arrive decoded.
    assert!(find(&edge.tools, "set-mode").spec().plain_description().contains("<, > or &"));
}

#[tokio::test]
async fn tool_16_schema_is_the_restricted_schema_verbatim() {
    let loaded = load("cowsay", &[]).await;
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(fixture("cowsay.json")).unwrap()).unwrap();
    assert_eq!(find(&loaded.tools, "say").spec().input_schema(), &doc["commands"][0]["restricted_schema"]);
    assert_eq!(
        find(&loaded.tools, "cow_think").spec().input_schema(),
        &doc["commands"][2]["commands"][1]["restricted_schema"]
    );
}

#[tokio::test]
async fn edge_cases_load_to_the_right_leaves_tags_and_schemas() {
    let loaded = load("edge-cases", &[]).await;
    assert_eq!(
        names(&loaded.tools),
        [
            "cluster_node_disk_scrub-now",
            "cluster_node_disk_status",
            "cluster_node_list",
            "archive_add",
            "archive_extract",
            "wait",
            "status",
            "grüße",
            "empty-help",
            "set-mode",
            "deny-group_peek",
            "deny-group_poke",
            "ping",
        ]
    );
    // A group's own ai:deny tag does not reach its leaves.
    assert!(!find(&loaded.tools, "deny-group_peek").spec().tags().contains("ai:deny"));
    assert!(find(&loaded.tools, "deny-group_poke").spec().tags().contains("ai:deny"));
    // GLOBAL-5: the required global `account` is always exposed, and required (GLOBAL-8).
    let scrub = find(&loaded.tools, "cluster_node_disk_scrub-now").spec().input_schema();
    assert_eq!(scrub["required"], json!(["node", "disk", "account"]));
    assert_eq!(scrub["properties"]["account"]["description"], "Global flag: Account every command acts on (required)");
    assert_eq!(scrub["properties"]["account"]["type"], "string");
}

#[tokio::test]
async fn global_6_7_allowlisted_globals_merge_into_every_leaf_unless_the_command_owns_the_name() {
    let loaded = load("edge-cases", &["--region", " format ", "trace", "region"]).await;
    let wait = find(&loaded.tools, "wait").spec().input_schema();
    assert_eq!(
        wait["properties"]["region"],
        json!({"type": "string", "enum": ["eu-west", "us-east", "ap-south"], "description": "Global flag: Default region for all commands"})
    );
    assert_eq!(
        wait["properties"]["trace"],
        json!({"type": "boolean", "description": "Global flag: Trace every request"})
    );
    assert_eq!(wait["properties"]["format"]["enum"], json!(["text", "json", "yaml"]));
    // format has a default and is not required; neither is region.
    assert_eq!(wait["required"], json!(["for", "account"]));
    // set-mode owns a `format` flag and a `region` argument: the local ones win.
    let set = find(&loaded.tools, "set-mode").spec().input_schema();
    assert_eq!(set["properties"]["format"]["enum"], json!(["short", "long"]));
    assert_eq!(
        set["properties"]["region"]["description"],
        "Region of the node (shares its name with the global --region)"
    );
    assert!(set["properties"]["trace"].is_object());
}

#[tokio::test]
async fn global_1_no_global_is_exposed_by_default_on_cowsay() {
    let loaded = load("cowsay", &[]).await;
    for t in &loaded.tools {
        let props = t.spec().input_schema()["properties"].as_object().unwrap();
        for g in ["context", "password", "width", "color", "wire-trace"] {
            assert!(!props.contains_key(g), "{} exposes {g}", t.spec().name());
        }
    }
}

#[tokio::test]
async fn global_3_4_allowlist_errors_name_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    for (entry, want) in [
        ("nosuch", "matches no global flag"),
        ("wire-trace", "hidden or framework"),
        ("help", "matches no global flag"),
    ] {
        let app = FiskApp::new(fake_app(dir.path(), "cowsay")).with_global_flags([entry]);
        let err = app.load().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        let msg = err.to_string();
        assert!(msg.contains(&format!("\"{entry}\"")) && msg.contains(want), "{msg}");
        if want.starts_with("matches no") {
            assert!(msg.contains("it has: context, password, width, color"), "{msg}");
        }
    }
}

#[tokio::test]
async fn global_flag_listing_marks_exposed_and_required() {
    let dir = tempfile::tempdir().unwrap();
    let app = FiskApp::new(fake_app(dir.path(), "edge-cases")).with_global_flags(["region"]);
    let model = app.introspect().await.unwrap();
    let flags = app.describe_globals(&model).unwrap();
    let view: Vec<(&str, bool, bool)> = flags.iter().map(|f| (f.name.as_str(), f.exposed, f.required)).collect();
    // secret-token is hidden and left out.
    assert_eq!(
        view,
        [
            ("account", true, true),
            ("region", true, false),
            ("format", false, false),
            ("trace", false, false),
            ("timeout", false, false)
        ]
    );
}

#[tokio::test]
async fn natscli_loads_221_leaves_with_real_tags_and_globals() {
    let loaded = load("natscli", &["context"]).await;
    assert_eq!(loaded.tools.len(), 221);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let names = names(&loaded.tools);
    for n in ["account_info", "stream_add", "stream_subjects", "kv_put", "publish", "subscribe", "top"] {
        assert!(names.contains(&n), "missing {n}");
    }
    assert_eq!(names.first(), Some(&"account_info"));
    assert_eq!(names.last(), Some(&"trace"));
    let info = find(&loaded.tools, "account_info").spec();
    assert_eq!(info.tags().as_slice(), ["scope:user", "impact:ro"]);
    assert!(info.description().ends_with("\n\nTags: scope:user, impact:ro"));
    for t in &loaded.tools {
        let s = t.spec().input_schema();
        assert_eq!(s["type"], "object", "{}", t.spec().name());
        assert_eq!(
            s["properties"]["context"]["description"].as_str().map(|d| d.starts_with("Global flag")),
            Some(true)
        );
    }
}

#[tokio::test]
async fn tool_10_old_fisk_without_schemas_loads_with_derived_schemas_and_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let app = FiskApp::new(fake_app(dir.path(), "old-fisk"));
    let loaded = app.load().await.unwrap();
    assert_eq!(names(&loaded.tools), ["say", "think", "cow_say", "cow_think", "feed", "list"]);
    let derived: Vec<_> = loaded.warnings.iter().filter(|w| matches!(w, Warning::DerivedSchemas { .. })).collect();
    assert_eq!(derived.len(), 1);
    assert!(derived[0].to_string().contains("old-fisk") && derived[0].to_string().contains("rebuild"));
    let say = find(&loaded.tools, "say").spec().input_schema();
    assert_eq!(
        say,
        &json!({
            "type": "object",
            "properties": {
                "eyes": {"type": "string", "enum": ["default", "borg", "dead", "greedy", "paranoid", "stoned", "tired", "wired", "young"], "description": "Eye style"},
                "tongue": {"type": "string", "description": "Tongue string to draw"},
                "wrap": {"type": "boolean", "description": "Wrap long lines"},
                "message": {"type": "string", "description": "What the cow says"}
            },
            "required": ["message"],
            "additionalProperties": false
        })
    );
    // feed's flags have defaults, so nothing is required.
    assert!(find(&loaded.tools, "feed").spec().input_schema().get("required").is_none());
}

#[tokio::test]
async fn tag_6_7_unknown_and_conflicting_ai_tags_warn_for_every_leaf_even_denied() {
    let dir = tempfile::tempdir().unwrap();
    let doc = json!({"name": "t", "commands": [
        {"name": "a", "tags": ["ai:deny", "ai:dney"], "restricted_schema": {"type": "object"}},
        {"name": "b", "tags": ["ai:read_only", "ai:destructive"], "restricted_schema": {"type": "object"}},
        {"name": "c", "tags": ["ai:destructive", "ai:additive", "ai:idempotent"], "restricted_schema": {"type": "object"}},
        {"name": "d", "hidden": true, "tags": ["ai:hidden-typo"]},
        {"name": "e", "tags": ["AI:deny"], "restricted_schema": {"type": "object"}}
    ]});
    let model = fisk_ai::source::fisk::AppModel::from_slice(doc.to_string().as_bytes()).unwrap();
    let loaded = FiskApp::new(dir.path().join("t")).tools_from_model(model).unwrap();
    assert_eq!(
        loaded.warnings,
        [
            Warning::UnknownAiTag { tag: "ai:dney".into(), command: "a".into() },
            Warning::ConflictingBehaviorTags {
                command: "b".into(),
                tags: vec!["ai:read_only".into(), "ai:destructive".into()]
            },
            Warning::ConflictingBehaviorTags {
                command: "c".into(),
                tags: vec!["ai:destructive".into(), "ai:additive".into()]
            },
            Warning::UnknownAiTag { tag: "AI:deny".into(), command: "e".into() },
        ]
    );
    assert!(loaded.warnings[0].to_string().contains("ai:dney"));
}

#[tokio::test]
async fn introspection_tolerates_a_line_printed_before_the_document() {
    let loaded = load("noisy", &[]).await;
    assert_eq!(loaded.tools.len(), 6);
}

async fn introspect_err(behaviour: &str, timeout: Option<Duration>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut app = FiskApp::new(fake_app(dir.path(), behaviour));
    if let Some(t) = timeout {
        app = app.with_introspect_timeout(t);
    }
    let err = app.load().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Introspection);
    let msg = err.to_string();
    assert!(msg.contains(&format!("/{behaviour}")), "error names the binary: {msg}");
    msg
}

#[tokio::test]
async fn tool_5_nonzero_exit_fails_naming_binary_and_status() {
    let msg = introspect_err("fail", None).await;
    assert!(msg.contains("status 3") && msg.contains("context \"prod\" not found"), "{msg}");
}

#[tokio::test]
async fn tool_5_garbage_document_fails_naming_binary() {
    let msg = introspect_err("garbage", None).await;
    assert!(msg.contains("not a fisk application model"), "{msg}");
}

#[tokio::test]
async fn tool_3_more_than_16_mib_fails_naming_the_limit() {
    let msg = introspect_err("huge", None).await;
    assert!(msg.contains("16 MiB") && msg.contains("16777216"), "{msg}");
}

/// Whether `pid` is gone or only a zombie waiting for its parent (which cannot run anything any more).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may itself contain spaces.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

#[tokio::test]
async fn tool_3_a_document_of_exactly_16_mib_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let bin = fake_app(dir.path(), "exact16");
    let out = std::process::Command::new(&bin).arg("--fisk-introspect").output().unwrap();
    assert_eq!(out.stdout.len(), 16 * 1024 * 1024, "the fixture is exactly at the cap");
    let loaded = FiskApp::new(bin).load().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(!loaded.tools.is_empty());
}

#[tokio::test]
async fn tool_4_exec_10_a_hung_introspection_is_killed_with_every_descendant_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let app = FiskApp::new(fake_app(dir.path(), "hang-tree")).with_introspect_timeout(Duration::from_secs(2));
    let msg = app.load().await.unwrap_err().to_string();
    assert!(msg.contains("did not finish within 2s") && msg.contains("killed"), "{msg}");
    // The script wrote its own pid and its backgrounded sleeper's before hanging.
    let pids: Vec<i32> =
        std::fs::read_to_string(dir.path().join("pids")).unwrap().lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    // SIGKILL is immediate, but an orphan is reaped by init in its own time: wait for that, bounded.
    for _ in 0..200 {
        if pids.iter().all(|&p| dead(p)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in pids {
        assert!(dead(pid), "process {pid} outlived the deadline (the group kill missed it)");
    }
}

/// EXEC-17: a descendant of the introspection run that left its process group and session (setsid) does not
/// outlive the run, which ended normally.
#[tokio::test]
async fn exec_17_a_setsid_grandchild_does_not_outlive_introspection() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = FiskApp::new(fake_app(dir.path(), "setsid-grandchild")).load().await.unwrap();
    assert!(!loaded.tools.is_empty());
    let pid = procs::pid_in(&dir.path().join("pids"));
    procs::wait_gone(pid, "the introspection's setsid grandchild").await;
}

/// EXEC-17: the same when introspection is cut off at its 16 MiB cap (TOOL-3).
#[tokio::test]
async fn exec_17_a_setsid_grandchild_does_not_outlive_introspection_over_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let err = FiskApp::new(fake_app(dir.path(), "setsid-huge")).load().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Introspection, "{err}");
    let pid = procs::pid_in(&dir.path().join("pids"));
    procs::wait_gone(pid, "the introspection's setsid grandchild").await;
}

#[tokio::test]
async fn tool_5_missing_binary_fails_naming_it() {
    let err = FiskApp::new("/nonexistent/fisk-app").load().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Introspection);
    assert!(err.to_string().contains("/nonexistent/fisk-app"));
}

#[tokio::test]
async fn tool_7_no_application_path_means_no_source() {
    let config = fisk_ai::Config::from_yaml_str("identity: x\n").unwrap();
    assert!(FiskApp::from_config(&config).is_none());
    let config = fisk_ai::Config::from_yaml_str("application_path: /bin/x\nglobal_flags: [--context]\n").unwrap();
    let app = FiskApp::from_config(&config).unwrap();
    assert_eq!(app.binary(), std::path::Path::new("/bin/x"));
}

/// Everything a tool shows, for comparing the two load paths.
fn described(loaded: &fisk_ai::source::Loaded) -> Vec<String> {
    let tools = loaded.tools.iter().map(|t| {
        let s = t.spec();
        let input = fisk_ai::ToolInput::from_json("{}").unwrap();
        format!(
            "{} | {:?} | {} | {} | {} | {:?} | {}",
            s.name(),
            s.command_path(),
            s.description(),
            s.plain_description(),
            s.tags(),
            s.input_schema(),
            t.display(&input)
        )
    });
    tools.chain(loaded.warnings.iter().map(|w| format!("warning: {w}"))).collect()
}

#[test]
fn the_fast_load_path_gives_exactly_the_tools_of_the_classic_decode() {
    for fixture in ["argv-cases", "cowsay", "edge-cases", "mcp-app", "natscli", "old-fisk", "stepper"] {
        let bytes = std::fs::read(common::fixture(&format!("{fixture}.json"))).unwrap();
        for globals in [&[][..], &["context"][..]] {
            let app = FiskApp::new("app").with_global_flags(globals.iter().copied());
            let classic = app.tools_from_model(fisk_ai::source::fisk::AppModel::from_slice(&bytes).unwrap());
            let fast = app.tools_from_slice(&bytes);
            match (classic, fast) {
                (Ok(c), Ok(f)) => assert_eq!(described(&c), described(&f), "{fixture} {globals:?}"),
                (Err(c), Err(f)) => assert_eq!(c.to_string(), f.to_string(), "{fixture} {globals:?}"),
                (c, f) => panic!("{fixture} {globals:?}: classic {:?}, fast {:?}", c.err(), f.err()),
            }
        }
    }
}

#[test]
fn the_fast_load_path_rejects_what_the_classic_decode_rejects_with_the_same_error() {
    let bad = [
        r#"{"commands":[{"name":"a","flags":[{"help":"no name"}]}]}"#,
        r#"{"commands":[{"name":"a","flags":{"name":"x"}}]}"#,
        r#"{"commands":[{"name":"a","args":[{"name":"x","required":"yes"}]}]}"#,
        r#"{"commands":[{"name":"g","hidden":true,"commands":[{"name":"a","flags":[{"name":1}]}]}]}"#,
        r#"{"commands":[{"name":"a","flags":[{"name":"x","completions":[1]}]}]}"#,
        r#"{"name":null,"commands":[]}"#,
        "noise\n{\"commands\":[{\"name\":\"a\",\"tags\":[2]}]}",
    ];
    for doc in bad {
        let app = FiskApp::new("app");
        let classic = fisk_ai::source::fisk::AppModel::from_slice(doc.as_bytes()).unwrap_err();
        let fast = app.tools_from_slice(doc.as_bytes()).unwrap_err();
        // `{:#}`: the decode error is the cause, which plain `Display` leaves to `source()`.
        assert!(format!("{fast:#}").ends_with(&classic.to_string()), "{doc}: {fast:#} vs {classic}");
    }
    // Noise before the document and null lists load the same way on both paths.
    let doc = "Loading\n{\"commands\":[{\"name\":\"a\",\"flags\":null,\"args\":null,\"tags\":null}]}";
    let fast = FiskApp::new("app").tools_from_slice(doc.as_bytes()).unwrap();
    assert_eq!(names(&fast.tools), ["a"]);
}

/// A document over 256 KiB, whose flags and args the fast path checks on a second thread while it builds the
/// tools: `last_flags` are the flags of its last leaf.
fn large_doc(last_flags: &str) -> String {
    let help = "h".repeat(700);
    let mut leaves: Vec<String> =
        (0..400).map(|i| format!(r#"{{"name":"c{i}","help":"{help}","flags":[{{"name":"f","help":"x"}}]}}"#)).collect();
    leaves.push(format!(r#"{{"name":"last","flags":{last_flags}}}"#));
    let doc =
        format!(r#"{{"name":"big","flags":[{{"name":"context","help":"c"}}],"commands":[{}]}}"#, leaves.join(","));
    assert!(doc.len() > 256 * 1024);
    doc
}

#[test]
fn a_large_document_is_checked_as_a_small_one_and_rejected_with_the_classic_error() {
    let good = large_doc(r#"[{"name":"x"}]"#);
    let classic = FiskApp::new("app").tools_from_model(AppModel::from_slice(good.as_bytes()).unwrap()).unwrap();
    let fast = FiskApp::new("app").tools_from_vec(good.into_bytes()).unwrap();
    assert_eq!(described(&classic), described(&fast));
    assert_eq!(fast.tools.len(), 401);

    let bad = large_doc(r#"[{"name":"x","required":"yes"}]"#);
    let classic = AppModel::from_slice(bad.as_bytes()).unwrap_err();
    let fast = FiskApp::new("app").tools_from_vec(bad.clone().into_bytes()).unwrap_err();
    assert!(format!("{fast:#}").ends_with(&classic.to_string()), "{fast:#} vs {classic}");
    // A document that does not decode is reported before a `global_flags` entry it cannot satisfy.
    let fast = FiskApp::new("app").with_global_flags(["nope"]).tools_from_vec(bad.into_bytes()).unwrap_err();
    assert!(format!("{fast:#}").ends_with(&classic.to_string()), "{fast:#} vs {classic}");
}
