//! Invariants 2 and 3: no shell anywhere, and model input reaches argv only through the schema-bound mapper.
//! Over 200 hostile strings go through flags, positionals and globals into a real process that echoes its argv;
//! every byte must arrive exactly, and nothing may be interpreted.

mod common;

use common::*;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::{CallContext, Tool};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

const DOC: &str = r#"{"name":"t","commands":[{"name":"say","help":"Say",
 "flags":[{"name":"text"},{"name":"many","cumulative":true}],
 "args":[{"name":"msg"},{"name":"rest","cumulative":true}],
 "restricted_schema":{"type":"object","additionalProperties":false,"properties":{
   "text":{"type":"string"},"many":{"type":"array","items":{"type":"string"}},
   "msg":{"type":"string"},"rest":{"type":"array","items":{"type":"string"}}}}}],
 "flags":[{"name":"context"}]}"#;

fn hostile(marker: &Path) -> Vec<String> {
    let m = marker.display();
    let base: Vec<String> = vec![
        format!("; touch {m}"),
        format!("&& touch {m}"),
        format!("| touch {m}"),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("${{IFS}}touch${{IFS}}{m}"),
        format!("'; touch {m}; '"),
        format!("\"; touch {m}; \""),
        format!("\n touch {m}\n"),
        format!("\r\ntouch {m}"),
        format!("> {m}"),
        format!(">> {m}"),
        format!("< /etc/passwd > {m}"),
        format!("$(printf x > {m})"),
        format!("{m}"),
        "*".into(),
        "/*".into(),
        "?".into(),
        "[a-z]*".into(),
        "{a,b}".into(),
        "~".into(),
        "~root".into(),
        "$HOME".into(),
        "${HOME}".into(),
        "$PATH".into(),
        "$0".into(),
        "$$".into(),
        "$?".into(),
        "$@".into(),
        "!!".into(),
        "#comment".into(),
        "\\".into(),
        "\\n".into(),
        "'".into(),
        "\"".into(),
        "''".into(),
        "\"\"".into(),
        "-".into(),
        "--".into(),
        "-rf".into(),
        "--help".into(),
        "--fisk-introspect".into(),
        "-x=1".into(),
        "--text=evil".into(),
        "--no-text".into(),
        " leading space".into(),
        "trailing space ".into(),
        "   ".into(),
        "".into(),
        "\t\ttabs".into(),
        "\u{1b}[31mred\u{1b}[0m".into(),
        "\u{1b}]0;title\u{7}".into(),
        "\u{7f}del".into(),
        "\u{1}\u{2}\u{3}".into(),
        "grüße 挨拶 ελληνικά".into(),
        "emoji 🐄💥".into(),
        "\u{202e}rtl override".into(),
        "\u{feff}bom".into(),
        "zero\u{200b}width".into(),
        "%s%s%s%n".into(),
        "%x%x".into(),
        "a=b".into(),
        "key=value=more".into(),
        "=".into(),
        "{\"json\": true}".into(),
        "[1,2]".into(),
        "null".into(),
        "true".into(),
        "0".into(),
        "-1".into(),
        "1e999".into(),
        "../../etc/passwd".into(),
        "/dev/null".into(),
        "C:\\Windows".into(),
        "line1\nline2\nline3".into(),
        "x".repeat(20_000),
    ];
    let mut all = Vec::new();
    for b in &base {
        all.push(b.clone());
        all.push(format!("-{b}"));
        all.push(format!("prefix {b} suffix"));
    }
    all
}

fn tool(dir: &Path) -> Arc<dyn Tool> {
    let app = FiskApp::new(fake_app(dir, "echo-args")).with_global_flags(["context"]);
    app.tools_from_model(AppModel::from_slice(DOC.as_bytes()).unwrap()).unwrap().tools.remove(0)
}

#[tokio::test]
async fn invariant_2_3_hostile_strings_reach_argv_byte_exact_through_flags_positionals_and_globals() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pwned");
    let strings = hostile(&marker);
    assert!(strings.len() >= 200, "{} strings", strings.len());
    let t = tool(dir.path());
    for s in &strings {
        let short = s.len() < 10_000;
        let input = if short {
            json!({"context": s, "text": s, "many": [s, s], "msg": s, "rest": [s]})
        } else {
            json!({"msg": s})
        };
        let out = t.call(&raw(&input.to_string()), &CallContext::new()).await;
        assert!(!out.is_error(), "{s:?}: {}", out.content());
        let (output, code, truncated) = exec_output(out.content());
        assert_eq!((code, truncated), (0, false));
        let want: Vec<String> = if short {
            vec![
                "say".into(),
                format!("--context={s}"),
                format!("--text={s}"),
                format!("--many={s}"),
                format!("--many={s}"),
                "--".into(),
                s.clone(),
                s.clone(),
            ]
        } else {
            vec!["say".into(), "--".into(), s.clone()]
        };
        assert_eq!(split_args(&output), want, "{s:?}");
    }
    assert!(!marker.exists(), "a hostile string was interpreted by a shell");
}

#[tokio::test]
async fn invariant_2_nul_in_an_argument_is_an_error_result_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let out = tool(dir.path()).call(&raw(r#"{"msg": "a\u0000b"}"#), &CallContext::new()).await;
    assert!(out.is_error());
    assert!(out.content().to_lowercase().contains("nul"), "{}", out.content());
}

#[tokio::test]
async fn invariant_3_unknown_keys_and_wrong_types_never_reach_argv() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    for input in [
        r#"{"--text": "x"}"#,
        r#"{"text; rm": "x"}"#,
        r#"{"text": ["x"]}"#,
        r#"{"text": {"a": "b"}}"#,
        r#"{"msg": 1}"#,
        r#"{"many": [["nested"]]}"#,
        r#"{"password": "x"}"#,
        r#"{"text": "safe", "text": "--evil"}"#,
        r#"{"msg": "a", "msg": "b"}"#,
    ] {
        let out = t.call(&raw(input), &CallContext::new()).await;
        assert!(out.is_error(), "{input} was accepted: {}", out.content());
        assert!(out.exec_report().is_none());
    }
}
