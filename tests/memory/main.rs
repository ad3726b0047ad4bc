//! Memory (SPEC §13): key, description, size and entry rules; the record format; the four tools' results; the
//! file backend on disk; the system-prompt note and index; and the read-before-update guard (MEM-25) on a store
//! that reports revisions.

#[path = "../common/mod.rs"]
mod common;

use fisk_ai::async_trait;
use fisk_ai::config::MemoryOptions;
use fisk_ai::memory::{
    CreateOutcome, Entry, FileMemoryStore, InMemoryStore, MAX_CONTENT_BYTES, MAX_ENTRIES, MemoryError, MemoryRecord,
    MemorySession, MemoryStore, OverwriteOutcome, Stored, decode, encode, memory_index, memory_note, memory_tools,
    normalize_description, validate_key,
};
use fisk_ai::tool::{CallContext, Tool, ToolInput, ToolKind, ToolOutput};
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

// ---- helpers ----

struct Tools(Vec<Arc<dyn Tool>>);

impl Tools {
    fn new(store: Arc<dyn MemoryStore>) -> Self {
        Tools(memory_tools(store))
    }

    async fn call(&self, index: usize, args: Value) -> ToolOutput {
        self.0[index].call(&ToolInput::from_value(&args), &CallContext::new()).await
    }

    async fn list(&self) -> Value {
        ok(self.call(0, json!({})).await)
    }

    async fn read(&self, key: &str) -> ToolOutput {
        self.call(1, json!({"key": key})).await
    }

    async fn write(&self, key: &str, description: &str, content: &str, overwrite: bool) -> ToolOutput {
        self.call(2, json!({"key": key, "description": description, "content": content, "overwrite": overwrite})).await
    }

    async fn create(&self, key: &str, description: &str, content: &str) -> ToolOutput {
        self.call(2, json!({"key": key, "description": description, "content": content})).await
    }

    async fn delete(&self, key: &str) -> ToolOutput {
        self.call(3, json!({"key": key})).await
    }

    async fn keys(&self) -> Vec<String> {
        self.list().await["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["key"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// The JSON of a normal (non-error) result.
fn ok(out: ToolOutput) -> Value {
    assert!(!out.is_error(), "unexpected error result: {}", out.content());
    serde_json::from_str(out.content()).unwrap()
}

/// The text of an error result.
fn err(out: ToolOutput) -> String {
    assert!(out.is_error(), "expected an error result, got: {}", out.content());
    out.into_content()
}

fn written() -> Value {
    json!({"written": true})
}

fn file_store(dir: &Path) -> Arc<dyn MemoryStore> {
    Arc::new(FileMemoryStore::new(dir))
}

fn guarded() -> Arc<InMemoryStore> {
    Arc::new(InMemoryStore::new().with_read_before_update(true))
}

fn record(description: &str, content: &str) -> MemoryRecord {
    MemoryRecord::new(description, content).unwrap()
}

mod format;
mod rules;
mod stores;
mod tools;
