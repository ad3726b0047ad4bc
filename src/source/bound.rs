//! How much one import's listing may hold in memory, whatever its peer sends: an MCP server's `tools/list` pages or
//! a remote agent's tool cards. A time bound alone is not enough: a peer answering fast with large pages and a
//! fresh cursor each time could grow memory by gigabytes before any timeout ends the listing.
//!
//! Both imports count what they hold with [`held_bytes`] against the same [`LISTING_BYTES`]: per MCP server
//! (MCPI-13), and for every `remote_tools` host together (IMPORT-12).

use serde_json::Value;

/// The most bytes ([`held_bytes`] of every schema, plus names and descriptions) one import's listing may hold in
/// total. Far above any real server's listing (hundreds of tools take a few hundred KiB), far below what a hostile
/// peer could otherwise make it hold. Past it the load fails, naming the peer, the pages read and this bound.
pub(crate) const LISTING_BYTES: usize = 32 << 20;

/// An estimate of the heap memory `value` holds: every node, every string's and key's bytes, and the per-entry
/// overhead of arrays and maps. Counted as stored, not as JSON text, so a schema of many tiny nodes (which takes
/// far more memory than its text) counts for what it costs. Walked with an explicit stack, so no nesting can
/// overflow the call stack.
pub(crate) fn held_bytes(value: &Value) -> usize {
    /// A map entry: the key's `String` header and the tree's bookkeeping, on top of its value's node.
    const ENTRY: usize = std::mem::size_of::<String>() + 16;
    const NODE: usize = std::mem::size_of::<Value>();
    let mut total = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(NODE);
        match v {
            Value::String(s) => total = total.saturating_add(s.capacity()),
            Value::Array(items) => {
                total = total.saturating_add(items.capacity().saturating_sub(items.len()) * NODE);
                stack.extend(items.iter());
            }
            Value::Object(map) => {
                for (key, item) in map {
                    total = total.saturating_add(ENTRY + key.capacity());
                    stack.push(item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mcpi_13_import_12_held_bytes_counts_strings_keys_and_nodes() {
        let small = held_bytes(&json!({"a": 1}));
        let long = held_bytes(&json!({"a": "x".repeat(10_000)}));
        assert!(long >= small + 10_000, "{small} {long}");
        // Many tiny nodes cost more than their text: 1000 one-letter members take far more than 6 KB.
        let wide: serde_json::Map<String, Value> = (0..1000).map(|i| (format!("k{i}"), json!(0))).collect();
        let text = Value::Object(wide.clone()).to_string().len();
        assert!(held_bytes(&Value::Object(wide)) > 3 * text);
        let zeros = Value::Array(vec![json!(0); 1000]);
        let text = zeros.to_string().len();
        assert!(held_bytes(&zeros) > 10 * text, "1000 zeros take far more than their 2 KB of text");
    }

    #[test]
    fn held_bytes_walks_any_depth_without_recursion() {
        let mut deep = Value::Null;
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        assert!(held_bytes(&deep) >= 100_000 * std::mem::size_of::<Value>());
        // Dropping a Value this deep recurses; take it apart by hand.
        while let Value::Array(mut items) = deep {
            deep = items.pop().unwrap_or(Value::Null);
        }
    }
}
