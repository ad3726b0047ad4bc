//! Compaction (COMP-1..9): when the next request would reach the trigger share of the context window, the older
//! turns are replaced by a summary the same provider writes in a separate request.
//!
//! - The cut falls before a model turn, so every tool result stays with the call it answers (COMP-3); the latest
//!   `keep_recent_turns` model turns and everything after them stay verbatim.
//! - The system prompt and the tools are not touched: the request prefix stays byte-identical and the provider's
//!   prompt cache keeps working (COMP-6).
//! - The summary is journaled before the conversation changes (COMP-4), so a resume folds the same conversation
//!   without calling the model again.
//! - A failed summary ends the turn with an error and leaves the conversation whole (COMP-7).

use super::{Ended, Run, call_model, ended};
use crate::agent::events::RunEvent;
use crate::agent::long_run::CompactionPlan;
use crate::agent::outcome::TerminalReason;
use crate::llm::{Block, CacheMode, Message, Request, Role, StopReason, ToolPlan, Usage};
use crate::select::Toolset;
use crate::session::{CompactionRecord, Payload};

/// The harness's estimate of a request's size: the provider's last count plus a quarter token per byte added since.
const BYTES_PER_TOKEN: usize = 4;

/// The most of one tool result or provider block the summariser is shown: enough for the facts, not a flood.
const TRANSCRIPT_ITEM_MAX: usize = 4_000;

/// What the provider last reported of the context: the tokens of its last request plus reply, and the conversation's
/// content size then.
#[derive(Debug, Clone, Copy)]
pub(super) struct Context {
    tokens: u64,
    size: usize,
}

impl Context {
    /// After a model turn whose request (of content size `sent`) and `reply` used `usage`: measured without another
    /// pass over the conversation.
    pub(super) fn after_turn(usage: &Usage, sent: usize, reply: Option<&Message>) -> Self {
        Context { tokens: usage.total(), size: sent + reply.map_or(0, |m| content_size(std::slice::from_ref(m))) }
    }
}

/// The content bytes of `messages`, as the estimate and CLI-9's preview count them.
pub(super) fn content_size(messages: &[Message]) -> usize {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            Block::Text { text } => text.len(),
            Block::Thinking { text, signature } => text.len() + signature.len(),
            Block::ToolUse { input, .. } => input.as_str().len(),
            Block::ToolResult { content, .. } => content.len(),
            Block::Provider { raw, .. } => raw.get().len(),
        })
        .sum()
}

impl Run<'_> {
    /// COMP-1: summarise the older turns when the next request would reach the trigger; `Err` ends the turn.
    /// Returns the conversation's content size when it was measured (compaction on), for the request event.
    pub(super) async fn compact_if_needed(&mut self) -> Result<Option<usize>, Ended> {
        let Some(plan) = self.inner.long.compaction.as_ref() else { return Ok(None) };
        let size = content_size(&self.messages);
        let before = self.estimate(size);
        if before < plan.threshold {
            return Ok(Some(size));
        }
        let Some(cut) = cut(&self.messages, plan.keep_recent_turns) else {
            // Nothing older than the kept turns: the request goes as it is, and the provider says if it no longer fits.
            return Ok(Some(size));
        };
        self.compact(plan, cut, (before, size)).await.map(Some)
    }

    /// The estimated size of the next request, in tokens.
    fn estimate(&mut self, size: usize) -> u64 {
        let context =
            *self.context.get_or_insert_with(|| Context { tokens: prefix_tokens(self.system, self.inner), size: 0 });
        context.tokens.saturating_add((size.saturating_sub(context.size) / BYTES_PER_TOKEN) as u64)
    }

    /// Returns the compacted conversation's content size.
    async fn compact(&mut self, plan: &CompactionPlan, cut: Cut, (before, size): (u64, usize)) -> Result<usize, Ended> {
        let inner = self.inner;
        let transcript = transcript(&self.messages[..cut.summarised]);
        let system = [plan.prompt.clone()];
        let asked = [Message::user(transcript)];
        let no_tools = ToolPlan::new(Toolset::new(Vec::new(), Vec::new()), false);
        let max_output = inner.config.llm.budget.max_output_tokens().map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let request = Request::new(&inner.model, &system, &asked, &no_tools)
            .with_max_output_tokens(max_output)
            .with_cache(CacheMode::Off)
            .with_timeout(Some(inner.config.llm.budget.call_timeout()));
        let provider = &inner.provider.capabilities().provider;
        let span = crate::llm::spans::chat_span(provider, &inner.model, self.stats.llm_calls, max_output);
        let response = match call_model(inner, &self.cancel, &request, &span).await {
            Ok(response) => response,
            Err(_) if self.cancel.is_cancelled() => return Err(self.cancelled()),
            Err(end) => return Err(failed(end.error.map(|e| e.to_string()).unwrap_or_default())),
        };
        self.count(response.usage);
        let summary = Message { role: Role::Assistant, content: response.content }.text();
        if response.stop_reason == StopReason::MaxTokens {
            return Err(failed("the summary was cut at the output limit (llm.budget.max_output_tokens)".to_owned()));
        }
        if summary.trim().is_empty() {
            return Err(failed(format!("the summary came back empty (stop reason {})", response.stop_reason)));
        }
        let message = summary_message(&summary, self.messages.get(cut.summarised).filter(|_| cut.carries_prompt));
        let replaced = cut.summarised + usize::from(cut.carries_prompt);
        let removed = content_size(&self.messages[..replaced]);
        let after_size = size.saturating_sub(removed) + content_size(std::slice::from_ref(&message));
        let after = before.saturating_sub((removed / BYTES_PER_TOKEN) as u64)
            + (content_size(std::slice::from_ref(&message)) / BYTES_PER_TOKEN) as u64;
        let record = CompactionRecord::new(replaced as u64, message, response.usage, (before, after));
        let message = match self.record(Payload::Compaction(record)).await? {
            Payload::Compaction(c) => c.message,
            _ => return Err(ended(TerminalReason::Error, "internal error: the journal returned another record")),
        };
        self.messages.splice(..replaced, [message]);
        // The next trace shows the whole conversation again.
        self.sent = 0;
        self.context = Some(Context { tokens: after, size: after_size });
        self.stats.compactions = self.stats.compactions.saturating_add(1);
        tracing::info!(tokens_before = before, tokens_after = after, replaced, "conversation compacted");
        self.emit(RunEvent::Compacted { tokens_before: before, tokens_after: after, replaced, usage: response.usage });
        Ok(after_size)
    }
}

/// Where the conversation is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cut {
    /// Messages summarised, from the start.
    summarised: usize,
    /// Whether the message right after them is a user prompt (no tool results) that joins the summary verbatim.
    carries_prompt: bool,
}

/// COMP-3: the cut before the `keep`-th last model turn, so no result is parted from its call; `None` when no model
/// turn is older than those.
fn cut(messages: &[Message], keep: usize) -> Option<Cut> {
    let turns: Vec<usize> =
        messages.iter().enumerate().filter(|(_, m)| m.role == Role::Assistant).map(|(i, _)| i).collect();
    let mut first_kept = *turns.get(turns.len().checked_sub(keep)?)?;
    // A paused turn (LOOP-8) and its continuation are one turn: their server blocks go back together.
    while first_kept > 0 && messages[first_kept - 1].role == Role::Assistant {
        first_kept -= 1;
    }
    if first_kept == 0 || turns.first().is_none_or(|first| *first >= first_kept) {
        return None;
    }
    // The user message before the kept turns: a prompt (or follow-up) stays verbatim; tool results are summarised
    // with the call they answer.
    let before = &messages[first_kept - 1];
    let prompt = before.role == Role::User && !before.content.iter().any(|b| matches!(b, Block::ToolResult { .. }));
    let summarised = if prompt { first_kept - 1 } else { first_kept };
    // A prompt carried over needs something older to summarise.
    if !messages[..summarised].iter().any(|m| m.role == Role::Assistant) {
        return None;
    }
    Some(Cut { summarised, carries_prompt: prompt })
}

/// The user message opening the compacted conversation: the summary, then the carried prompt's blocks.
fn summary_message(summary: &str, prompt: Option<&Message>) -> Message {
    let mut content = vec![Block::text(format!(
        "[Summary of the earlier conversation, compacted to fit the context window]\n\n{}",
        summary.trim()
    ))];
    if let Some(prompt) = prompt {
        content.extend(prompt.content.iter().cloned());
    }
    Message { role: Role::User, content }
}

/// The summarised messages as plain text for the summariser: who said what, which tools ran and what they returned
/// (long items shortened), without reasoning.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::with_capacity(content_size(messages).min(1 << 20) + 64 * messages.len());
    for message in messages {
        let who = if message.role == Role::User { "user" } else { "assistant" };
        for block in &message.content {
            match block {
                Block::Text { text } if !text.is_empty() => out.push_str(&format!("[{who}]\n{text}\n\n")),
                Block::ToolUse { id, name, input } => {
                    out.push_str(&format!("[tool call {id}: {name}]\n{}\n\n", shorten(input.as_str())));
                }
                Block::ToolResult { tool_use_id, content, is_error } => {
                    let kind = if *is_error { "tool error" } else { "tool result" };
                    out.push_str(&format!("[{kind} {tool_use_id}]\n{}\n\n", shorten(content)));
                }
                Block::Provider { kind, raw } => out.push_str(&format!("[{kind}]\n{}\n\n", shorten(raw.get()))),
                _ => {}
            }
        }
    }
    out
}

/// `text` cut to [`TRANSCRIPT_ITEM_MAX`] bytes (at a character boundary), saying how much was left out.
fn shorten(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= TRANSCRIPT_ITEM_MAX {
        return text.into();
    }
    let mut end = TRANSCRIPT_ITEM_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[... {} more bytes not shown]", &text[..end], text.len() - end).into()
}

/// The estimated tokens of the request prefix (system prompt and tools), for a conversation the provider has not
/// counted yet (a run's first request, or a resumed one).
fn prefix_tokens(system: &[String], inner: &crate::agent::Inner) -> u64 {
    let system: usize = system.iter().map(String::len).sum();
    let tools: usize = inner
        .plan
        .iter()
        .map(|(tool, _)| {
            let spec = tool.spec();
            spec.name().len() + spec.description().len() + spec.input_schema().to_string().len()
        })
        .sum();
    ((system + tools) / BYTES_PER_TOKEN) as u64
}

/// A compaction that failed: the turn ends, the conversation stays whole.
fn failed(why: String) -> Ended {
    ended(TerminalReason::Error, format!("compaction failed: {why}; the conversation was kept whole"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(calls: usize) -> [Message; 2] {
        let uses = (0..calls).map(|i| Block::ToolUse {
            id: format!("c{i}"),
            name: "t".into(),
            input: crate::tool::ToolInput::empty(),
        });
        let results = (0..calls).map(|i| Block::tool_result(format!("c{i}"), "ok", false));
        [Message::assistant(uses.collect()), Message { role: Role::User, content: results.collect() }]
    }

    #[test]
    fn comp_3_the_cut_falls_before_a_model_turn() {
        let mut m = vec![Message::user("go")];
        for _ in 0..4 {
            m.extend(turn(2));
        }
        assert_eq!(cut(&m, 2), Some(Cut { summarised: 5, carries_prompt: false }));
        assert_eq!(m[5].role, Role::Assistant);
        assert_eq!(cut(&m, 4), None, "nothing older than the kept turns");
    }

    #[test]
    fn comp_3_a_follow_up_before_the_kept_turns_stays_verbatim() {
        let mut m = vec![Message::user("go")];
        m.extend(turn(1));
        m.push(Message::assistant(vec![Block::text("done")]));
        m.push(Message::user("and now?"));
        m.extend(turn(1));
        assert_eq!(cut(&m, 1), Some(Cut { summarised: 4, carries_prompt: true }));
        assert_eq!(m[4].text(), "and now?");
    }

    #[test]
    fn comp_3_a_paused_turn_stays_with_its_continuation() {
        let mut m = vec![Message::user("go")];
        m.extend(turn(1));
        m.push(Message::assistant(vec![Block::text("searching")]));
        m.extend(turn(1));
        // Messages: 0 user, 1-2 turn, 3 paused, 4-5 continuation; keeping one turn keeps 3 too.
        assert_eq!(cut(&m, 1), Some(Cut { summarised: 3, carries_prompt: false }));
    }

    #[test]
    fn long_items_are_shortened_at_a_character_boundary() {
        let text = "é".repeat(TRANSCRIPT_ITEM_MAX);
        assert!(shorten(&text).ends_with(&format!("{} more bytes not shown]", TRANSCRIPT_ITEM_MAX)));
    }
}
