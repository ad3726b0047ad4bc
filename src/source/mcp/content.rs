//! MCPI-8: a `tools/call` result as the model reads it.

use super::oversize::CAPPED_META;
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
        && t.meta.as_ref().is_some_and(|m| m.0.get(CAPPED_META).is_some_and(|v| v == true))
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
