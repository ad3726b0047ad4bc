//! `run --output-schema FILE` (OUT-9): the schema file read and checked before anything else runs, and the
//! validated answer alone on stdout.

use fisk_ai::llm::OutputSchema;
use std::io::Write;
use std::path::Path;

/// The schema in `path`; every failure names the file, and a file that is not JSON says where.
pub(crate) fn load(path: &Path) -> Result<OutputSchema, Box<dyn std::error::Error>> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the output schema {shown}: {e}"))?;
    let schema: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("the output schema {shown} is not JSON: line {} column {}: {e}", e.line(), e.column()))?;
    Ok(OutputSchema::new(schema).map_err(|e| format!("{shown}: {e}"))?)
}

/// The validated JSON text as it is, and a newline: no markdown rendering and no escape stripping, since it is
/// data for a program.
pub(crate) fn print(answer: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{answer}");
    let _ = out.flush();
}
