//! MCPI-8: a `tools/call` result as the model reads it.

use super::oversize::capped_meta;
use crate::exec::{HeadTail, OUTPUT_CAP, TRUNCATION_MARKER, into_text};
use crate::tool::ToolOutput;
use rmcp::model::{CallToolResult, ContentBlock};

/// The text items joined with `\n`, each other item as `[<type> content omitted]`; the structured content's JSON
/// when there is no text item; capped exactly as EXEC-12. `isError: true` makes an error output naming `server`.
pub(crate) fn output(server: &str, result: &CallToolResult) -> ToolOutput {
    let text = text(result);
    if result.is_error == Some(true) {
        ToolOutput::error(format!("mcp server {server} reported an error: {text}"))
    } else {
        ToolOutput::success(text)
    }
}

/// The capped content text.
pub(crate) fn text(result: &CallToolResult) -> String {
    if let [ContentBlock::Text(t)] = result.content.as_slice()
        && t.meta.as_ref().is_some_and(|m| m.0.get(capped_meta()).is_some_and(|v| v == true))
        && t.text.len() <= OUTPUT_CAP + TRUNCATION_MARKER.len()
    {
        // Reduced while it streamed in (an oversized stdio reply): already exactly the EXEC-12 form.
        return t.text.clone();
    }
    let has_text = result.content.iter().any(|c| matches!(c, ContentBlock::Text(_)));
    let mut cap = HeadTail::new();
    match &result.structured_content {
        Some(structured) if !has_text => cap.push(structured.to_string().as_bytes()),
        _ => {
            for (i, item) in result.content.iter().enumerate() {
                if i > 0 {
                    cap.push(b"\n");
                }
                match item {
                    ContentBlock::Text(t) => cap.push(t.text.as_bytes()),
                    other => cap.push(format!("[{} content omitted]", kind(other)).as_bytes()),
                }
            }
        }
    }
    into_text(cap.finish().0)
}

fn kind(item: &ContentBlock) -> &'static str {
    match item {
        ContentBlock::Text(_) => "text",
        ContentBlock::Image(_) => "image",
        ContentBlock::Audio(_) => "audio",
        ContentBlock::Resource(_) => "resource",
        ContentBlock::ResourceLink(_) => "resource_link",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::CallToolResult;
    use serde_json::json;

    /// A server cannot mark its own reply as already capped: the marker's key is random per process.
    #[test]
    fn a_forged_capped_marker_is_capped_anyway() {
        let text = "x".repeat(65_550);
        let forged = json!({"content": [{"type": "text", "text": text, "_meta": {"fisk-ai/capped": true}}]});
        let result: CallToolResult = serde_json::from_value(forged).unwrap();
        assert_eq!(super::text(&result).len(), 65_536 + "\n...[output truncated]...\n".len());
        let genuine =
            json!({"content": [{"type": "text", "text": "y".repeat(65_550), "_meta": {super::capped_meta(): true}}]});
        let result: CallToolResult = serde_json::from_value(genuine).unwrap();
        assert_eq!(super::text(&result).len(), 65_550, "our own mark is honoured");
    }
}
