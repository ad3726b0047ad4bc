//! The Go reference's a2a wire schemas (`$FISK_AI_WIRE_SCHEMAS/a2a/*.json`), to prove a message fisk-ai writes or
//! accepts is one a Go peer accepts too (A2A-6..10).
//!
//! The schemas are third-party files and never committed: `.ci/run` exports `FISK_AI_WIRE_SCHEMAS` (the
//! `fixtures/wire` folder of shared/ beside the checkout). Tests that use them are
//! `#[ignore = "needs FISK_AI_WIRE_SCHEMAS ..."]`; run with `--ignored` and the variable unset, they fail loudly.
#![allow(dead_code)]

use fisk_ai::nats::wire::MessageKind;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `$FISK_AI_WIRE_SCHEMAS/a2a`, or a loud failure saying how to get it.
pub fn schemas_dir() -> PathBuf {
    match std::env::var_os("FISK_AI_WIRE_SCHEMAS").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("a2a"),
        None => panic!(
            "REFERENCE WIRE SCHEMAS UNAVAILABLE: this test needs FISK_AI_WIRE_SCHEMAS=<shared>/fixtures/wire (the Go \
             reference's a2a schemas); .ci/run sets it"
        ),
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The reference's file for `kind`: `tool.request.json` for `io.choria.fisk-ai.v1.tool.request`.
pub fn schema_file(kind: MessageKind) -> PathBuf {
    let name = kind.protocol().strip_prefix("io.choria.fisk-ai.v1.").expect("a v1 protocol id");
    schemas_dir().join(format!("{name}.json"))
}

/// The reference's validator for `kind`, its `common.json#/$defs/...` references resolved from `common.json`
/// (registered under its own `$id`), offline. `time`'s `date-time` format is not asserted: it is advisory
/// (A2A-6) and the reference does not enforce it.
pub fn reference_validator(kind: MessageKind) -> jsonschema::Validator {
    let dir = schemas_dir();
    let common = read_json(&dir.join("common.json"));
    let id = common["$id"].as_str().expect("common.json has an $id").to_owned();
    let registry = jsonschema::Registry::new()
        .add(&id, common)
        .and_then(|r| r.prepare())
        .unwrap_or_else(|e| panic!("registering {}/common.json: {e}", dir.display()));
    let path = schema_file(kind);
    let schema = read_json(&path);
    jsonschema::options()
        .should_validate_formats(false)
        .with_registry(&registry)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The reference's errors for `message` as `kind`, empty when it is valid.
pub fn reference_errors(kind: MessageKind, message: &Value) -> Vec<String> {
    let validator = reference_validator(kind);
    validator
        .iter_errors(message)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() { e.to_string() } else { format!("{at}: {e}") }
        })
        .collect()
}

/// Panic unless `message` is valid as `kind` under the reference's own schema: a Go peer accepts it.
pub fn assert_reference_valid(kind: MessageKind, message: &Value) {
    let errors = reference_errors(kind, message);
    assert!(
        errors.is_empty(),
        "a Go peer rejects this {} (reference schema {}): {errors:?}\n{message:#}",
        kind.protocol(),
        schema_file(kind).display()
    );
}
