use super::{Block, Caps, Delta, Message, ModelProvider, ProviderError, ProviderErrorKind, Request, Response};
use async_trait::async_trait;
use std::collections::VecDeque;
use std::sync::Mutex;

/// A deterministic provider that replays scripted replies and records every request: for host tests and
/// examples that must run without an API key.
///
/// ```
/// use fisk_ai::llm::{Block, Message, ModelProvider, Request, Response, ScriptedProvider, StopReason, ToolPlan, Usage};
/// use fisk_ai::select::Selection;
///
/// let provider = ScriptedProvider::new([Response::new(vec![Block::text("42")], StopReason::EndTurn, Usage::default())]);
/// let plan = ToolPlan::new(Selection::new().apply(Vec::new()).unwrap(), false);
/// let messages = [Message::user("what is six times seven?")];
/// # futures::executor::block_on(async {
/// let reply = provider.call(&Request::new("test-model", &[], &messages, &plan)).await.unwrap();
/// assert_eq!(reply.content, vec![Block::text("42")]);
/// assert_eq!(provider.requests()[0].messages, messages);
/// # });
/// ```
#[derive(Debug)]
pub struct ScriptedProvider {
    caps: Caps,
    script: Mutex<VecDeque<Result<Response, ProviderError>>>,
    seen: Mutex<Vec<RecordedRequest>>,
}

/// What a [`ScriptedProvider`] was asked.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// Model id.
    pub model: String,
    /// System segments.
    pub system: Vec<String>,
    /// The conversation as sent.
    pub messages: Vec<Message>,
    /// Tool names with their deferral flag, in request order.
    pub tools: Vec<(String, bool)>,
    /// Whether the search tool was requested.
    pub search: bool,
    /// Whether thinking was requested.
    pub thinking: bool,
    /// The output cap.
    pub max_output_tokens: Option<u32>,
    /// The call timeout the run asked for.
    pub timeout: Option<std::time::Duration>,
}

impl ScriptedProvider {
    /// Reply with `responses`, in order; a call past the end is an error.
    pub fn new(responses: impl IntoIterator<Item = Response>) -> Self {
        Self::with_results(responses.into_iter().map(Ok))
    }

    /// Reply with scripted results, errors included.
    pub fn with_results(results: impl IntoIterator<Item = Result<Response, ProviderError>>) -> Self {
        ScriptedProvider {
            caps: Caps::new("scripted"),
            script: Mutex::new(results.into_iter().collect()),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Declare different capabilities (for example tool search, to exercise deferral).
    #[must_use]
    pub fn with_caps(mut self, caps: Caps) -> Self {
        self.caps = caps;
        self
    }

    /// Append a reply to the script.
    pub fn push(&self, result: Result<Response, ProviderError>) {
        self.script.lock().unwrap_or_else(|e| e.into_inner()).push_back(result);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many scripted replies are left.
    pub fn remaining(&self) -> usize {
        self.script.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[async_trait]
impl ModelProvider for ScriptedProvider {
    fn capabilities(&self) -> &Caps {
        &self.caps
    }

    async fn call(&self, req: &Request<'_>) -> Result<Response, ProviderError> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).push(RecordedRequest {
            model: req.model.to_owned(),
            system: req.system.to_vec(),
            messages: req.messages.to_vec(),
            tools: req.tools.iter().map(|(t, d)| (t.spec().name().to_owned(), d)).collect(),
            search: req.tools.search(),
            thinking: req.thinking,
            max_output_tokens: req.max_output_tokens,
            timeout: req.timeout,
        });
        let reply = self.script.lock().unwrap_or_else(|e| e.into_inner()).pop_front().unwrap_or_else(|| {
            Err(ProviderError::new(ProviderErrorKind::Config, "the scripted provider has no reply left"))
        });
        // CONV-5: a provider that does not stream tells the sink each block whole.
        if let (Some(sink), Ok(response)) = (req.deltas(), &reply) {
            for block in &response.content {
                match block {
                    Block::Text { text } => sink.delta(Delta::Text(text)),
                    Block::Thinking { text, .. } => sink.delta(Delta::Thinking(text)),
                    _ => {}
                }
            }
        }
        reply
    }
}
