//! The clap mapping (CLAP-1..3): `fisk_ai::clap::introspection` over a tree that uses every clap feature the mapping
//! covers, compared with its golden document (tests/fixtures/clap/kitchen_sink.json; `FISK_AI_BLESS=1` rewrites
//! it), the golden loaded through the crate's own fisk parser, and the tag table's checks.
//!
//! - CLAP-1: the document is a fisk introspection document: the fisk parser loads it into tools.
//! - CLAP-2: nested subcommands, hidden commands and args, positionals (order, required, multiple, defaults), flags
//!   and options (long names, shorts, value names, defaults, possible values as enums, `Append` as arrays, boolean
//!   actions), the root's globals, help and long help as descriptions, typed value parsers as JSON types (sized
//!   integers bounded and positional counts as `minItems`/`maxItems` in the full schema only); an option taking
//!   two or more values at once left out; clap's
//!   generated `help` subcommand, `--help` and `--version` are neither tools nor properties.
//! - CLAP-3: tags come from a side table; a path the tree does not have is an error naming the path.
#![cfg(feature = "clap")]

#[path = "../examples/clap_app.rs"]
#[allow(dead_code)]
mod clap_app;
mod common;

use clap::{Arg, ArgAction, Command, value_parser};
use fisk_ai::FiskApp;
use fisk_ai::clap::{Tags, introspection, introspection_with_tags};
use fisk_ai::source::fisk::AppModel;
use serde_json::{Value, json};
use std::path::PathBuf;

/// A tree using every clap feature the mapping covers, and a few it must leave out.
fn kitchen_sink() -> Command {
    Command::new("sink")
        .about("Every clap feature the mapping covers")
        .version("1.2.3")
        .propagate_version(true)
        .arg(Arg::new("context").long("context").global(true).value_parser(["dev", "prod"]).help("Context to use"))
        .arg(Arg::new("trace").long("trace").short('t').global(true).action(ArgAction::SetTrue).help("Trace requests"))
        .arg(Arg::new("secret").long("secret").global(true).hide(true).help("A hidden global"))
        .arg(
            Arg::new("root-only")
                .long("root-only")
                .help("Not global: it cannot follow a subcommand, so it is left out"),
        )
        .subcommand(
            Command::new("stream")
                .about("Manage streams")
                .visible_alias("str")
                .arg(Arg::new("server").long("server").global(true).help("A group's global: its commands' own flag"))
                .subcommand(stream_add())
                .subcommand(
                    Command::new("rm")
                        .about("Remove a stream")
                        .arg(Arg::new("name").required(true).help("Stream name"))
                        .arg(
                            Arg::new("force").long("force").short('f').action(ArgAction::SetTrue).help("No questions"),
                        ),
                )
                .subcommand(
                    Command::new("copy")
                        .about("Copy a stream")
                        .arg(Arg::new("name").required(true).help("Source stream"))
                        .arg(Arg::new("dest").default_value("backup").help("Destination stream"))
                        .arg(Arg::new("extra").hide(true).help("A hidden positional")),
                )
                .subcommand(Command::new("backup").hide(true).about("A hidden command"))
                .subcommand(
                    Command::new("tag")
                        .about("Tag messages")
                        .arg(Arg::new("keys").required(true).num_args(2..=3).help("Two or three keys"))
                        .arg(Arg::new("pair").long("pair").num_args(2).help("Two values at once: argv cannot say it")),
                )
                .subcommand(
                    Command::new("cluster").about("Cluster operations").subcommand(
                        Command::new("peer").about("Peers").subcommand(
                            Command::new("remove")
                                .about("Remove a peer")
                                .arg(Arg::new("peer").required(true).help("Peer name")),
                        ),
                    ),
                ),
        )
        .subcommand(Command::new("debug").hide(true).subcommand(Command::new("dump").about("Dump state")))
        .subcommand(Command::new("ping").about("Check the server").long_about("Check the server answers"))
}

fn stream_add() -> Command {
    Command::new("add")
        .about("Add a stream")
        .long_about("Add a stream, with its limits and subjects")
        .arg(Arg::new("name").required(true).help("Stream name").long_help("The stream's name, unique per account"))
        .arg(Arg::new("subjects").num_args(1..).help("Subjects to bind"))
        .arg(Arg::new("replicas").long("replicas").short('r').value_parser(value_parser!(u8)).default_value("1"))
        .arg(Arg::new("max-age").long("max-age").value_name("DURATION").help("Oldest message kept"))
        .arg(Arg::new("ratio").long("ratio").value_parser(value_parser!(f64)).help("Compression ratio"))
        .arg(Arg::new("offset").long("offset").value_parser(value_parser!(i64)).help("Start offset"))
        .arg(Arg::new("storage").long("storage").value_parser(["file", "memory"]).default_value("file"))
        .arg(Arg::new("allow-rollup").long("allow-rollup").value_parser(value_parser!(bool)).help("Allow roll-ups"))
        .arg(Arg::new("label").long("label").action(ArgAction::Append).value_name("KEY=VALUE").help("Labels"))
        .arg(Arg::new("discard").long("discard").action(ArgAction::Append).value_parser(["old", "new"]))
        .arg(Arg::new("ports").long("port").action(ArgAction::Append).value_parser(value_parser!(u16)))
        .arg(Arg::new("ack").long("no-ack").action(ArgAction::SetFalse).help("Do not acknowledge"))
        .arg(Arg::new("verbose").long("verbose").short('v').action(ArgAction::Count).help("More output"))
        .arg(Arg::new("mode").long("mode").required(true).value_parser(["limits", "interest"]).help("Retention"))
        .arg(Arg::new("path").long("path").value_parser(value_parser!(PathBuf)).help("Where to keep it"))
        .arg(Arg::new("debug-dump").long("debug-dump").hide(true).help("A hidden flag"))
        .arg(Arg::new("x").short('x').help("Short only: argv cannot name it, so it is left out"))
}

fn sink_tags() -> Tags {
    Tags::new().tag("stream rm", ["ai:confirm"]).tag("stream", ["scope:stream"]).tag("debug dump", ["ai:deny"])
}

fn golden(name: &str) -> PathBuf {
    common::root().join("tests/fixtures/clap").join(name)
}

/// Compare `doc` with the golden `name` as JSON values (key order aside); `FISK_AI_BLESS=1` rewrites the golden.
fn assert_golden(name: &str, doc: &str) {
    let got: Value = serde_json::from_str(doc).unwrap();
    let path = golden(name);
    if std::env::var_os("FISK_AI_BLESS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(got, want, "{} differs; FISK_AI_BLESS=1 rewrites it", path.display());
}

fn walk<'a>(commands: &'a Value, out: &mut Vec<&'a Value>) {
    for c in commands.as_array().into_iter().flatten() {
        out.push(c);
        walk(&c["commands"], out);
    }
}

fn command<'a>(doc: &'a Value, path: &[&str]) -> &'a Value {
    let mut node = doc;
    for name in path {
        node = node["commands"].as_array().unwrap().iter().find(|c| c["name"] == *name).unwrap();
    }
    node
}

#[test]
fn clap_1_clap_2_the_kitchen_sink_matches_its_golden_document() {
    assert_golden("kitchen_sink.json", &introspection_with_tags(&kitchen_sink(), &sink_tags()).unwrap());
}

#[test]
fn clap_1_the_example_cli_matches_its_golden_document() {
    assert_golden("clap_app.json", &introspection_with_tags(&clap_app::command(), &clap_app::tags()).unwrap());
}

#[test]
fn clap_1_the_golden_documents_load_through_the_fisk_parser() {
    let bytes = std::fs::read(golden("kitchen_sink.json")).unwrap();
    let model = AppModel::from_slice(&bytes).unwrap();
    assert_eq!(model.flags.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["context", "trace", "secret"]);
    let loaded = FiskApp::new("/nonexistent/sink").with_global_flags(["context"]).tools_from_slice(&bytes).unwrap();
    let names: Vec<&str> = loaded.tools.iter().map(|t| t.spec().name()).collect();
    assert_eq!(names, ["stream_add", "stream_rm", "stream_copy", "stream_tag", "stream_cluster_peer_remove", "ping"]);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let add = &loaded.tools[0];
    let input = json!({"name": "ORDERS", "mode": "limits", "replicas": 3, "ratio": 0.5, "allow-rollup": true,
        "port": [4222], "discard": ["old"], "verbose": true, "context": "prod", "subjects": ["a", "b"]});
    add.spec().validate_input(&input).unwrap();
    for bad in [
        json!({"name": "x"}),
        json!({"name": "x", "mode": "m"}),
        json!({"name": "x", "mode": "limits", "replicas": "3"}),
    ] {
        assert!(add.spec().validate_input(&bad).is_err(), "{bad}");
    }
    assert_eq!(loaded.tools[1].spec().tags().iter().collect::<Vec<_>>(), ["ai:confirm"]);

    let notes = std::fs::read(golden("clap_app.json")).unwrap();
    let loaded = FiskApp::new("/nonexistent/notes").tools_from_slice(&notes).unwrap();
    assert_eq!(loaded.tools.len(), 4);
}

#[test]
fn clap_2_clap_generated_help_and_version_are_neither_tools_nor_properties() {
    let doc: Value = serde_json::from_str(&introspection(&kitchen_sink())).unwrap();
    let mut all = Vec::new();
    walk(&doc["commands"], &mut all);
    assert!(all.iter().all(|c| c["name"] != "help"), "a help subcommand was emitted");
    let flags =
        all.iter().flat_map(|c| c["flags"].as_array().into_iter().flatten()).chain(doc["flags"].as_array().unwrap());
    for f in flags {
        assert!(f["name"] != "help" && f["name"] != "version", "{f}");
    }
    for c in &all {
        let props = c["restricted_schema"]["properties"].as_object().unwrap();
        assert!(!props.contains_key("help") && !props.contains_key("version"), "{}", c["name"]);
    }
    // A help subcommand the author wrote is a command like any other.
    let own = Command::new("app").subcommand(Command::new("help").about("Our own help"));
    let doc: Value = serde_json::from_str(&introspection(&own)).unwrap();
    assert_eq!(doc["commands"][0]["help"], "Our own help");
}

#[test]
fn clap_2_each_clap_feature_maps_as_documented() {
    let doc: Value = serde_json::from_str(&introspection(&kitchen_sink())).unwrap();
    assert_eq!((doc["name"].as_str(), doc["version"].as_str()), (Some("sink"), Some("1.2.3")));
    let globals: Vec<&str> = doc["flags"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(globals, ["context", "trace", "secret"], "root globals only; root-only is not global");
    assert_eq!(doc["flags"][0]["completions"], json!(["dev", "prod"]));
    assert_eq!((doc["flags"][1]["boolean"].as_bool(), doc["flags"][1]["short"].as_u64()), (Some(true), Some(116)));
    assert_eq!(doc["flags"][2]["hidden"], true);

    let stream = command(&doc, &["stream"]);
    assert_eq!(stream["aliases"], json!(["str"]));
    let add = command(&doc, &["stream", "add"]);
    assert_eq!(add["help_long"], "Add a stream, with its limits and subjects");
    let flag = |name: &str| add["flags"].as_array().unwrap().iter().find(|f| f["name"] == name).cloned();
    assert!(flag("context").is_none() && flag("trace").is_none(), "root globals are not the command's own");
    assert!(flag("server").is_some(), "a group's global is its commands' own flag");
    assert!(flag("x").is_none(), "a short-only option is left out");
    assert_eq!(flag("max-age").unwrap()["place_holder"], "DURATION");
    assert_eq!(flag("replicas").unwrap()["default"], json!(["1"]));
    assert_eq!(flag("label").unwrap()["cumulative"], true);
    assert_eq!(flag("no-ack").unwrap()["boolean"], true);
    assert_eq!(flag("no-ack").unwrap().get("default"), None, "a SetFalse flag's implied true is not a default");
    assert_eq!(flag("debug-dump").unwrap()["hidden"], true);

    let props = &add["restricted_schema"]["properties"];
    let ty = |name: &str| props[name]["type"].as_str().unwrap().to_owned();
    assert_eq!(ty("replicas"), "integer");
    assert_eq!(ty("offset"), "integer");
    assert_eq!(ty("ratio"), "number");
    assert_eq!(ty("allow-rollup"), "boolean");
    assert_eq!(ty("path"), "string");
    assert_eq!(ty("verbose"), "boolean");
    assert_eq!(props["storage"]["enum"], json!(["file", "memory"]));
    assert_eq!(props["discard"]["items"], json!({"type": "string", "enum": ["old", "new"]}));
    assert_eq!(props["discard"]["type"], "array");
    assert_eq!(props["port"]["items"]["type"], "integer");
    assert_eq!(props["subjects"]["type"], "array");
    assert_eq!(props["name"]["description"], "Stream name\n\nThe stream's name, unique per account");
    // Sized integers are bounded in the full schema only (fisk's §4.2): the strict subset has no numeric bounds.
    let full = &add["schema"]["properties"];
    assert_eq!((&full["replicas"]["minimum"], &full["replicas"]["maximum"]), (&json!(0), &json!(255)));
    assert_eq!(full["port"]["items"]["maximum"], 65535);
    assert_eq!(full["offset"].get("minimum"), None, "an i64 states no bounds");
    assert_eq!(props["replicas"].get("maximum"), None);
    assert!(props.get("debug-dump").is_none(), "hidden flags are not properties");
    assert_eq!(add["restricted_schema"]["required"], json!(["mode", "name"]));

    let copy = command(&doc, &["stream", "copy"]);
    let args: Vec<&str> = copy["args"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(args, ["name", "dest", "extra"], "positionals in index order");
    assert_eq!(copy["args"][1]["default"], json!(["backup"]));
    assert_eq!(copy["args"][2]["hidden"], true);
    assert!(copy["restricted_schema"]["properties"].get("extra").is_none());

    let tag = command(&doc, &["stream", "tag"]);
    let (full, props) = (&tag["schema"]["properties"], &tag["restricted_schema"]["properties"]);
    assert_eq!((&full["keys"]["minItems"], &full["keys"]["maxItems"]), (&json!(2), &json!(3)));
    assert_eq!(
        props["keys"],
        json!({"type": "array", "items": {"type": "string"}, "description": "Two or three keys"})
    );
    assert!(full.get("pair").is_none() && props.get("pair").is_none(), "an option taking two values at once");
    assert!(tag["flags"].as_array().unwrap().iter().all(|f| f["name"] != "pair"));

    assert_eq!(command(&doc, &["stream", "backup"])["hidden"], true);
    assert_eq!(command(&doc, &["stream", "cluster", "peer", "remove"])["help"], "Remove a peer");
    assert_eq!(command(&doc, &["ping"])["help_long"], "Check the server answers");
}

#[test]
fn clap_3_tags_come_from_the_side_table_and_an_unknown_path_is_an_error_naming_it() {
    let doc: Value = serde_json::from_str(&introspection_with_tags(&kitchen_sink(), &sink_tags()).unwrap()).unwrap();
    assert_eq!(command(&doc, &["stream", "rm"])["tags"], json!(["ai:confirm"]));
    assert_eq!(command(&doc, &["stream"])["tags"], json!(["scope:stream"]), "a group may be tagged");
    assert_eq!(command(&doc, &["debug", "dump"])["tags"], json!(["ai:deny"]), "a hidden command may be tagged");
    assert!(command(&doc, &["ping"]).get("tags").is_none());

    for path in ["stream remove", "rm", "sink stream rm", "help"] {
        let err = introspection_with_tags(&kitchen_sink(), &Tags::new().tag(path, ["ai:deny"])).unwrap_err();
        assert!(err.to_string().contains(&format!("\"{path}\"")), "{path}: {err}");
        assert!(err.is_config(), "{err}");
    }
}

#[test]
fn clap_2_a_root_without_subcommands_gives_no_tools_and_its_globals_only() {
    // As a fisk application without commands: nothing to call, and nothing that panics.
    let flat = Command::new("flat")
        .arg(Arg::new("file").required(true))
        .arg(Arg::new("level").long("level").global(true).value_parser(value_parser!(u8)));
    let doc = introspection(&flat);
    let value: Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(value.get("commands"), None);
    assert_eq!(value["flags"][0]["name"], "level");
    let loaded = FiskApp::new("/nonexistent/flat").tools_from_slice(doc.as_bytes()).unwrap();
    assert!(loaded.tools.is_empty());
}
