//! What a model turn's reply is checked and shown with: its deltas as run events (CONV-5), a duplicate call id,
//! and CLI-9's preview of what is being sent.

use crate::agent::events::{EventSink, RunEvent};
use crate::llm::{Block, Message};

/// CONV-5: a reply's deltas, as run events.
pub(super) struct Relay<'a> {
    pub(super) events: &'a dyn EventSink,
    pub(super) iteration: u32,
}

impl crate::llm::DeltaSink for Relay<'_> {
    fn delta(&self, delta: crate::llm::Delta<'_>) {
        self.events.emit(&RunEvent::Delta { iteration: self.iteration, delta });
    }
}

/// The first tool-call id a turn uses twice: results pair with calls by id, so such a turn cannot be answered.
pub(super) fn duplicate_call_id(content: &[Block]) -> Option<&str> {
    let ids: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    ids.iter().enumerate().find(|(i, id)| ids[..*i].contains(id)).map(|(_, id)| *id)
}

/// CLI-9's preview of what is being sent: the quoted start of the latest text, or the number of tool results; and
/// an approximate content size (`size` when the caller measured it already).
pub(super) fn preview(messages: &[Message], size: Option<usize>) -> (String, usize) {
    let size = size.unwrap_or_else(|| super::compact::content_size(messages));
    let Some(last) = messages.last() else { return (String::new(), size) };
    let results = last.content.iter().filter(|b| matches!(b, Block::ToolResult { .. })).count();
    let preview = if results == 1 {
        "1 tool result".to_owned()
    } else if results > 1 {
        format!("{results} tool results")
    } else {
        let text: String = last.text().chars().take(60).collect();
        format!("{text:?}")
    };
    (preview, size)
}
