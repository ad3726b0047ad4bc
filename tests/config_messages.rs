//! The configuration's error messages (issue 16, CFG-1..4, BUILTIN-1): every key error carries the file, line and
//! column of the key it is about, and reads as operator text (no Rust type names, the valid choices listed).

use fisk_ai::builtin::{BuiltinEnv, BuiltinRegistry};
use fisk_ai::llm::{ProviderError, ProviderErrorKind};
use fisk_ai::operator::NoOperator;
use fisk_ai::{Config, Error};
use std::error::Error as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One row of the table: a configuration, where its error must point, and what its message must (not) say.
struct Case {
    name: &'static str,
    yaml: &'static str,
    at: (usize, usize),
    says: &'static [&'static str],
    never: &'static [&'static str],
}

const TABLE: &[Case] = &[
    Case {
        name: "unknown key",
        yaml: "llm:\n  modle: m\n",
        at: (2, 3),
        says: &["llm: unknown field `modle`", "expected one of `model`"],
        never: &[],
    },
    Case {
        name: "duplicate top-level key: at the second occurrence",
        yaml: "identity: a\nllm:\n  model: m\nidentity: b\n",
        at: (4, 1),
        says: &["duplicate field `identity`"],
        never: &[],
    },
    Case {
        name: "duplicate nested key: at the second occurrence",
        yaml: "llm:\n  model: a\n  budget: {}\n  model: b\n",
        at: (4, 3),
        says: &["llm", "duplicate field `model`"],
        never: &[],
    },
    Case {
        name: "a scalar where a block belongs",
        yaml: "llm: 5\n",
        at: (1, 6),
        says: &["llm", "expected a mapping of keys"],
        never: &["struct", "Llm"],
    },
    Case {
        name: "a list where a block belongs",
        yaml: "harness:\n  memory: [1]\n",
        at: (2, 11),
        says: &["harness.memory", "expected a mapping of keys"],
        never: &["struct", "Memory"],
    },
    Case {
        name: "a duration with an unknown unit lists the valid ones",
        yaml: "llm:\n  budget:\n    call_timeout: 5x\n",
        at: (3, 19),
        says: &["llm.budget.call_timeout", "\"5x\"", "valid units are ns, us (or µs), ms, s, m and h"],
        never: &[],
    },
    Case {
        name: "a bare number as a duration lists the valid units",
        yaml: "expose:\n  agent:\n    mcp:\n      tool_timeout: 30\n",
        at: (4, 21),
        says: &["tool_timeout", "bare number is not accepted", "valid units are"],
        never: &[],
    },
    Case {
        name: "a duration without a unit",
        yaml: "llm:\n  budget:\n    call_timeout: \"12\"\n",
        at: (3, 19),
        says: &["missing unit", "valid units are"],
        never: &[],
    },
    Case {
        name: "a YAML syntax error keeps the parser's context but not a second copy of its position",
        yaml: "llm:\n  model: \"m\n",
        at: (3, 1),
        says: &["found unexpected end of stream, while scanning a quoted scalar at line 2 column 10"],
        never: &["at line 3 column 1"],
    },
];

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn assert_at(e: &Error, file: Option<&Path>, at: (usize, usize), what: &str) {
    let loc = e.location().unwrap_or_else(|| panic!("{what}: no location: {e}"));
    assert_eq!((loc.line, loc.column), at, "{what}: {e}");
    assert_eq!(loc.file.as_deref(), file, "{what}: {e}");
    if let Some(file) = file {
        assert!(e.to_string().starts_with(&format!("{}:{}:{}: ", file.display(), at.0, at.1)), "{what}: {e}");
    }
}

#[test]
fn cfg_1_4_every_message_in_the_table_has_its_file_line_column_and_text() {
    let dir = tempfile::tempdir().unwrap();
    for case in TABLE {
        let path = write(dir.path(), "agent.yaml", case.yaml);
        let e = Config::load(&path).unwrap_err();
        assert!(e.is_config(), "{}: {e}", case.name);
        assert_at(&e, Some(&path), case.at, case.name);
        let text = e.to_string();
        for s in case.says {
            assert!(text.contains(s), "{}: {s:?} missing from: {text}", case.name);
        }
        for s in case.never {
            assert!(!text.contains(s), "{}: {s:?} must not appear in: {text}", case.name);
        }
    }
}

#[test]
fn builtin_1_an_unknown_built_in_is_located_like_every_other_key_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "agent.yaml", "harness:\n  tools:\n    - name: read_file\n    - name: nope\n");
    let config = Config::load(&path).unwrap();
    let env = BuiltinEnv::new(&config, Arc::new(NoOperator)).unwrap();
    let e = BuiltinRegistry::with_defaults().build_enabled(&config, &env).unwrap_err();
    assert_eq!(e.key(), Some("harness.tools[1].name"));
    assert_at(&e, Some(&path), (4, 13), "unknown built-in");
    assert!(e.to_string().contains("unknown built-in tool \"nope\"; known: base64_encode, read_file"), "{e}");
}

#[test]
fn cfg_3_a_missing_or_unusable_application_names_application_path_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let not_exec = write(dir.path(), "plain", "#!/bin/sh\n");
    std::fs::set_permissions(&not_exec, std::fs::Permissions::from_mode(0o644)).unwrap();
    let missing = dir.path().join("nowhere/app");
    let cases = [
        (missing.display().to_string(), "does not exist"),
        (not_exec.display().to_string(), "is not executable"),
        (dir.path().display().to_string(), "is a directory"),
        ("no-such-app-on-path-xyz".to_owned(), "is not an executable file in any PATH directory"),
    ];
    for (app, why) in cases {
        let path = write(dir.path(), "agent.yaml", &format!("identity: x\napplication_path: {app}\n"));
        let config = Config::load(&path).unwrap();
        let e = config.check_application().unwrap_err();
        assert!(e.is_config(), "{e}");
        assert_eq!(e.key(), Some("application_path"));
        assert_at(&e, Some(&path), (2, 19), why);
        assert!(e.to_string().contains(&format!("application_path: {app} {why}")), "{e}");
    }
    let ok = write(dir.path(), "agent.yaml", "application_path: sh\n");
    Config::load(&ok).unwrap().check_application().unwrap();
}

#[test]
fn cfg_1_bytes_that_are_not_utf8_are_located_at_the_first_bad_byte() {
    let e = Config::from_yaml_bytes(b"identity: ok\nllm: \xff\n").unwrap_err();
    assert!(e.is_config());
    assert_eq!(e.location().map(|l| (l.line, l.column)), Some((2, 6)), "{e}");
    assert!(e.to_string().contains("not UTF-8"), "{e}");
}

#[test]
fn the_cause_of_an_error_appears_once_in_its_chain() {
    let e = Config::load("/nonexistent/agent.yaml").unwrap_err();
    let plain = e.to_string();
    let chained = format!("{e:#}");
    assert_eq!(plain, "cannot read configuration file /nonexistent/agent.yaml", "the cause is the source's job");
    assert!(e.source().is_some());
    assert_eq!(chained.matches("No such file or directory").count(), 1, "{chained}");
    // A reporter that walks the chain itself sees each part once.
    let mut parts = vec![e.to_string()];
    let mut next = e.source();
    while let Some(cause) = next {
        parts.push(cause.to_string());
        next = cause.source();
    }
    assert_eq!(parts.join(": ").matches("No such file or directory").count(), 1, "{parts:?}");
    // A YAML error is not kept as a cause: the message already is the whole story.
    assert!(Config::from_yaml_str("llm: 5\n").unwrap_err().source().is_none());
}

#[test]
fn a_provider_error_exposes_its_cause_as_source_without_repeating_it() {
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
    let e = ProviderError::new(ProviderErrorKind::Transport, "the connection dropped: reset by peer").with_source(io);
    assert_eq!(e.to_string(), "the connection dropped");
    assert_eq!(e.source().map(ToString::to_string).as_deref(), Some("reset by peer"));
    assert!(e.clone().source().is_some(), "clones keep the cause");
    assert!(ProviderError::new(ProviderErrorKind::Timeout, "slow").source().is_none());
}
