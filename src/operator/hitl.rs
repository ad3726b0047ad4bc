//! The human-in-the-loop tools (SPEC section 11): `ask_human_confirm`, `ask_human_select` and `ask_human_input`.
//!
//! Each tool asks the operator through a [`Prompter`] and always returns a normal result the model can act on
//! (HITL-6); only a malformed call is an error result (HITL-8). Nothing but an explicit answer counts: nobody to ask,
//! an interrupt, end of input, a cancelled run, a timeout or a failing prompt is the negative outcome with a reason,
//! never a guess (HITL-7).
//!
//! Everything the model wrote that the operator sees (the question, each option, the default) is sanitized as in
//! GATE-8 and capped at [`HITL_TEXT_LIMIT`] characters (HITL-9); the prompter never receives raw model text.

use super::{Answer, Prompter};
use crate::gate::sanitize;
use crate::tool::{CallContext, Exposure, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::fmt;
use std::sync::Arc;

/// The longest question, option or default shown to the operator, in characters (HITL-9); longer text is cut and
/// ends with `…`.
pub const HITL_TEXT_LIMIT: usize = 500;

/// The most options `ask_human_select` offers (HITL-4).
pub const HITL_MAX_OPTIONS: usize = 25;

const CONFIRM: &str = "ask_human_confirm";
const SELECT: &str = "ask_human_select";
const INPUT: &str = "ask_human_input";

/// The system segment added when the HITL tools are enabled (HITL-12, LOOP-2). It is part of the session
/// fingerprint, so its text never changes within a release.
const NOTE: &str = "You are running non-interactively: nobody reads your replies while you work. A question \
written as plain text never reaches the human operator; it ends the run unanswered. The ask_human_* tools are the \
only way to get an answer or a decision from the operator: ask_human_confirm for a yes/no question, \
ask_human_select to have them choose one option from a short list, ask_human_input for a free-text value. Use them \
sparingly, only when you cannot proceed safely or correctly without the operator. When a tool reports that nobody \
answered (confirmed false, or selected/value null with a reason), do not guess what the operator would have said \
and do not ask the same question again: continue without that answer if that is safe, otherwise stop and explain \
what you needed.";

/// The text of the system segment that tells the model how to reach the operator (HITL-12): it runs
/// non-interactively, a plain-text question never reaches the operator and ends the run, and the `ask_human_*`
/// tools are the only way to get an answer or a decision.
///
/// The agent adds it after `system_prompt` when the tools are enabled (LOOP-2).
///
/// ```
/// let note = fisk_ai::operator::hitl_note();
/// assert!(note.contains("non-interactively"));
/// assert!(note.contains("ask_human_confirm") && note.contains("ask_human_select") && note.contains("ask_human_input"));
/// ```
#[must_use]
pub fn hitl_note() -> &'static str {
    NOTE
}

/// The three human-in-the-loop tools, in the order HITL-1 lists them: `ask_human_confirm`, `ask_human_select`,
/// `ask_human_input`. All are [`ToolKind::Builtin`], never deferred, and ask `prompter`.
///
/// Results (HITL-6), all normal (non-error) results:
///
/// | tool | answered | not answered |
/// |------|----------|--------------|
/// | `ask_human_confirm` | `{"confirmed": true}` on an explicit yes, `{"confirmed": false}` on a no | `{"confirmed": false, "reason": "..."}` |
/// | `ask_human_select` | `{"selected": "<option>"}` | `{"selected": null, "reason": "..."}` |
/// | `ask_human_input` | `{"value": "<text>"}` (may be empty) | `{"value": null, "reason": "..."}` |
///
/// `selected` is the option exactly as the model supplied it at the chosen index, not the sanitized text the
/// operator saw, so the model can match it against its own list.
///
/// Errors (HITL-8): input that is not a JSON object matching the schema, a question that is empty once sanitized,
/// zero or more than [`HITL_MAX_OPTIONS`] options, and (designed) an option that is empty once sanitized or that
/// looks the same as another one once sanitized, since the operator could not tell which one they pick.
///
/// ```
/// use fisk_ai::operator::{NoOperator, hitl_tools};
/// use fisk_ai::tool::{CallContext, ToolInput};
/// use std::sync::Arc;
///
/// # futures::executor::block_on(async {
/// let tools = hitl_tools(Arc::new(NoOperator));
/// let names: Vec<&str> = tools.iter().map(|t| t.spec().name()).collect();
/// assert_eq!(names, ["ask_human_confirm", "ask_human_select", "ask_human_input"]);
///
/// // Nobody to ask: a negative answer with a reason, never a guess.
/// let input = ToolInput::from_json(r#"{"question": "Delete the ORDERS stream?"}"#).unwrap();
/// let out = tools[0].call(&input, &CallContext::new()).await;
/// assert!(!out.is_error());
/// let result: serde_json::Value = serde_json::from_str(out.content()).unwrap();
/// assert_eq!(result["confirmed"], false);
/// assert!(result["reason"].is_string());
/// # });
/// ```
pub fn hitl_tools(prompter: Arc<dyn Prompter>) -> Vec<Arc<dyn Tool>> {
    [Which::Confirm, Which::Select, Which::Input]
        .into_iter()
        .map(|which| Arc::new(HitlTool { spec: which.spec(), which, prompter: prompter.clone() }) as Arc<dyn Tool>)
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Confirm,
    Select,
    Input,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Confirm => CONFIRM,
            Which::Select => SELECT,
            Which::Input => INPUT,
        }
    }

    /// The field of the result that carries the answer.
    fn field(self) -> &'static str {
        match self {
            Which::Confirm => "confirmed",
            Which::Select => "selected",
            Which::Input => "value",
        }
    }

    fn spec(self) -> ToolSpec {
        let question = |what: &str| json!({"type": "string", "description": what});
        let (description, schema) = match self {
            Which::Confirm => (
                "Ask the human operator a yes/no question at the terminal and wait for the answer. Use it before a \
                 risky or irreversible step the operator may not want, or when only the operator can decide. Do \
                 not use it for facts you can find with other tools, for steps the task already asks for, or to \
                 chat. Returns {\"confirmed\": true} only on an explicit yes, otherwise {\"confirmed\": false}, \
                 with a \"reason\" when nobody answered (no operator, interrupted, cancelled). Treat false as no: \
                 do not go ahead and do not ask again.",
                json!({
                    "type": "object",
                    "properties": {
                        "question": question("The yes/no question, short and self-contained (shown as plain text)")
                    },
                    "required": ["question"],
                    "additionalProperties": false
                }),
            ),
            Which::Select => (
                "Ask the human operator to choose one option from a short list at the terminal and wait for the \
                 choice. Use it when the operator must pick between alternatives you cannot decide between \
                 yourself. Do not use it for a yes/no question (use ask_human_confirm) or when any option would \
                 do. Give 1 to 25 short, distinct options. Returns {\"selected\": \"<option>\"}, the option \
                 exactly as you wrote it, or {\"selected\": null, \"reason\": \"...\"} when nobody chose (no \
                 operator, interrupted, cancelled). Never pick an option yourself after a null.",
                json!({
                    "type": "object",
                    "properties": {
                        "question": question("What the operator is choosing, short and self-contained"),
                        "options": {
                            "type": "array",
                            "items": {"type": "string"},
                            "minItems": 1,
                            "maxItems": HITL_MAX_OPTIONS,
                            "description": "The choices, in display order (1 to 25, each distinct)"
                        }
                    },
                    "required": ["question", "options"],
                    "additionalProperties": false
                }),
            ),
            Which::Input => (
                "Ask the human operator to type a free-text value at the terminal and wait for it. Use it for a \
                 value only the operator knows (a name, an identifier, a short instruction). Do not use it for \
                 yes/no questions or fixed choices (use ask_human_confirm or ask_human_select), or for secrets. \
                 An optional default is offered for the operator to accept. Returns {\"value\": \"<text>\"} (an empty \
                 string is a valid answer) or {\"value\": null, \"reason\": \"...\"} when nobody answered (no \
                 operator, interrupted, cancelled); do not invent a value after a null.",
                json!({
                    "type": "object",
                    "properties": {
                        "question": question("What to type, short and self-contained"),
                        "default": {"type": "string", "description": "A value the operator can accept with Enter"}
                    },
                    "required": ["question"],
                    "additionalProperties": false
                }),
            ),
        };
        ToolSpec::new(self.name(), ToolKind::Builtin, schema)
            .with_exposure(Exposure::AgentOnly)
            .with_description(description)
            .with_no_defer(true)
    }
}

/// One of the three tools.
struct HitlTool {
    which: Which,
    spec: ToolSpec,
    prompter: Arc<dyn Prompter>,
}

impl fmt::Debug for HitlTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HitlTool").field("name", &self.which.name()).finish_non_exhaustive()
    }
}

/// A validated, sanitized question.
#[derive(Debug)]
struct Question {
    /// What the operator sees.
    question: String,
    /// `ask_human_select`: (shown text, the model's original) per option.
    options: Vec<(String, String)>,
    /// `ask_human_input`: the sanitized default, unless empty.
    default: Option<String>,
}

impl HitlTool {
    fn error(&self, message: impl fmt::Display) -> ToolOutput {
        ToolOutput::error(format!("{}: {message}", self.which.name()))
    }

    /// `{"<field>": <false|null>, "reason": "..."}`.
    fn negative(&self, reason: &str) -> ToolOutput {
        let nothing = if self.which == Which::Confirm { Value::Bool(false) } else { Value::Null };
        let mut result = serde_json::Map::new();
        result.insert(self.which.field().to_owned(), nothing);
        result.insert("reason".to_owned(), Value::String(reason.to_owned()));
        ToolOutput::json(&Value::Object(result))
    }

    /// Check and sanitize the call (HITL-8, HITL-9); `Err` is the error result.
    fn parse(&self, input: &ToolInput) -> Result<Question, ToolOutput> {
        // `null` counts as `{}` (EXEC-5), so the model hears which parameter is missing.
        let value = if input.is_null() {
            Value::Object(serde_json::Map::new())
        } else {
            input.to_value().map_err(|e| self.error(format!("invalid JSON arguments: {e}")))?
        };
        // Counted before schema validation so the message states the count rather than echoing the whole list.
        if self.which == Which::Select
            && let Some(options) = value.get("options").and_then(Value::as_array)
        {
            if options.is_empty() {
                return Err(self.error("\"options\" is empty; give at least 1 option"));
            }
            if options.len() > HITL_MAX_OPTIONS {
                return Err(
                    self.error(format!("\"options\" has {} entries; give at most {HITL_MAX_OPTIONS}", options.len()))
                );
            }
        }
        let text = |key: &str| value.get(key).and_then(Value::as_str);

        let question = sanitize(text("question").unwrap_or_default(), HITL_TEXT_LIMIT);
        if question.is_empty() {
            return Err(self.error(
                "\"question\" is empty once control characters, escape sequences and surrounding whitespace are \
                 removed; ask a question in plain text",
            ));
        }
        let mut options: Vec<(String, String)> = Vec::new();
        if let Some(list) = value.get("options").and_then(Value::as_array) {
            for (i, original) in list.iter().filter_map(Value::as_str).enumerate() {
                let shown = sanitize(original, HITL_TEXT_LIMIT);
                if shown.is_empty() {
                    return Err(self.error(format!(
                        "option {} is empty once control characters and escape sequences are removed",
                        i + 1
                    )));
                }
                if let Some(j) = options.iter().position(|(s, _)| *s == shown) {
                    return Err(self.error(format!(
                        "options {} and {} look the same to the operator; make every option distinct",
                        j + 1,
                        i + 1
                    )));
                }
                options.push((shown, original.to_owned()));
            }
        }
        // A default with nothing visible left offers nothing.
        let default = text("default").map(|d| sanitize(d, HITL_TEXT_LIMIT)).filter(|d| !d.is_empty());
        Ok(Question { question, options, default })
    }

    /// Ask, bounded by the run's cancellation and the call's deadline (never a hang, HITL-7).
    async fn ask<T>(&self, ctx: &CallContext, asking: impl Future<Output = Answer<T>>) -> Result<T, String> {
        let bounded = async {
            match ctx.timeout() {
                Some(limit) => tokio::time::timeout(limit, asking).await.map_err(|_| {
                    format!("the operator did not answer within {}", crate::config::format_duration(limit))
                }),
                None => Ok(asking.await),
            }
        };
        let answer = tokio::select! {
            biased;
            () = ctx.cancel_token().cancelled() => return Err(CANCELLED.to_owned()),
            answer = bounded => answer?,
        };
        match answer {
            Answer::Given(value) => Ok(value),
            Answer::Unavailable => Err(NO_OPERATOR.to_owned()),
            Answer::Interrupted => Err(INTERRUPTED.to_owned()),
            Answer::Failed(why) => Err(format!("the prompt failed ({}); no answer was given", sanitize(&why, 200))),
        }
    }
}

const NO_OPERATOR: &str = "no operator can be asked in this run (it is not attached to an interactive terminal); \
                           no answer was given";
const INTERRUPTED: &str = "the operator dismissed the question (interrupt or end of input) without answering";
const CANCELLED: &str = "the run was cancelled before the operator answered";

#[async_trait]
impl Tool for HitlTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// `ask_human_confirm <question>`, the question sanitized and capped as shown to the operator (CLI-7 shows it
    /// only with `--verbose`, HITL-13); just the name when the input has no usable question.
    fn display(&self, input: &ToolInput) -> String {
        let question = input
            .to_value()
            .ok()
            .and_then(|v| v.get("question").and_then(Value::as_str).map(|q| sanitize(q, HITL_TEXT_LIMIT)))
            .unwrap_or_default();
        if question.is_empty() { self.which.name().to_owned() } else { format!("{} {question}", self.which.name()) }
    }

    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput {
        let q = match self.parse(input) {
            Ok(q) => q,
            Err(error) => return error,
        };
        // Deny by default (HITL-7), checked in the gate's order (GATE-6): nobody to ask, then a cancelled run.
        if !self.prompter.can_ask() {
            return self.negative(NO_OPERATOR);
        }
        if ctx.cancel_token().is_cancelled() {
            return self.negative(CANCELLED);
        }
        match self.which {
            Which::Confirm => match self.ask(ctx, self.prompter.confirm(&q.question)).await {
                Ok(true) => ToolOutput::json(&json!({"confirmed": true})),
                Ok(false) => ToolOutput::json(&json!({"confirmed": false})),
                Err(reason) => self.negative(&reason),
            },
            Which::Select => {
                let shown: Vec<String> = q.options.iter().map(|(shown, _)| shown.clone()).collect();
                match self.ask(ctx, self.prompter.select(&q.question, &shown)).await {
                    Ok(i) => match q.options.get(i) {
                        Some((_, original)) => ToolOutput::json(&json!({"selected": original})),
                        None => self.negative(&format!(
                            "the prompt reported choice {i} of {} options; no option was selected",
                            q.options.len()
                        )),
                    },
                    Err(reason) => self.negative(&reason),
                }
            }
            Which::Input => match self.ask(ctx, self.prompter.input(&q.question, q.default.as_deref())).await {
                Ok(text) => ToolOutput::json(&json!({"value": text})),
                Err(reason) => self.negative(&reason),
            },
        }
    }
}
