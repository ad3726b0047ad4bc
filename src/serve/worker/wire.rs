//! The worker's two messages (WORK-2..4): a run request taken from the work queue, and its result.
//!
//! A request is `{"id", "prompt", "session"?, "metadata"?, "budget"?}`; a result is `{"id", "outcome", "answer",
//! "stats", "cost", "error"}`. Their JSON Schemas are [`REQUEST_SCHEMA`] and [`RESULT_SCHEMA`].

use crate::agent::{RunBudget, RunOutcome, RunStats};
use crate::config::Budget;
use crate::llm::Cost;
use crate::session::SessionId;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The JSON Schema of a run request.
pub const REQUEST_SCHEMA: &str = include_str!("schemas/run.request.json");
/// The JSON Schema of a run result.
pub const RESULT_SCHEMA: &str = include_str!("schemas/run.result.json");

/// The longest error text of a refused request's result, in characters.
pub(super) const MAX_ERROR_CHARS: usize = 2000;

/// The longest request id: it becomes a session id and a subject token.
pub const MAX_ID_LEN: usize = 64;

/// A request whose id is usable, checked against the configured budget.
#[derive(Debug, Clone)]
pub(super) struct Request {
    pub(super) id: String,
    pub(super) prompt: String,
    pub(super) session: SessionId,
    pub(super) metadata: Option<Map<String, Value>>,
    pub(super) budget: RunBudget,
}

/// Why a request cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refused {
    /// No usable id: terminated, logged and counted, with no result (there is nowhere to send one).
    NoId(String),
    /// A usable id but a bad body: an error result under that id.
    Body { id: String, why: String },
}

/// The body as sent; unknown keys are refused so a misspelt `budget` never runs unbounded.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    id: Value,
    prompt: Option<Value>,
    #[serde(default)]
    session: Option<Value>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    budget: Option<Value>,
}

/// WORK-3: a request id is 1 to 64 characters of `[A-Za-z0-9_-]`.
pub(super) fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(format!("the id must be 1 to {MAX_ID_LEN} characters, got {}", id.len()));
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return Err("the id may hold only ASCII letters, digits, '_' and '-'".to_owned());
    }
    Ok(())
}

/// The id of a body that is otherwise unusable, when it has one (so the error result can be sent under it).
fn salvage_id(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let id = value.get("id")?.as_str()?;
    check_id(id).ok().map(|()| id.to_owned())
}

/// Parse and check one request body against the configured budget.
pub(super) fn parse(body: &[u8], configured: &Budget, max_cost: Option<Cost>) -> Result<Request, Refused> {
    let wire: Wire = serde_json::from_slice(body).map_err(|e| match salvage_id(body) {
        Some(id) => Refused::Body { id, why: format!("the request is not a valid run request: {e}") },
        None => Refused::NoId(format!("the request is not a valid run request: {e}")),
    })?;
    let id = match &wire.id {
        Value::String(s) => check_id(s).map(|()| s.clone()).map_err(Refused::NoId)?,
        other => return Err(Refused::NoId(format!("the id must be a string, got {}", kind(other)))),
    };
    let body_err = |why: String| Refused::Body { id: id.clone(), why };
    let prompt = match wire.prompt {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(Value::String(_)) => return Err(body_err("prompt must not be empty".to_owned())),
        Some(other) => return Err(body_err(format!("prompt must be a string, got {}", kind(&other)))),
        None => return Err(body_err("prompt is required".to_owned())),
    };
    let session = match wire.session {
        None | Some(Value::Null) => SessionId::new(&id),
        Some(Value::String(s)) => {
            check_id(&s).map_err(|e| body_err(format!("session: {}", e.replace("the id", "the session"))))?;
            SessionId::new(&s)
        }
        Some(other) => return Err(body_err(format!("session must be a string, got {}", kind(&other)))),
    }
    .map_err(|e| body_err(e.to_string()))?;
    let metadata = match wire.metadata {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => return Err(body_err(format!("metadata must be an object, got {}", kind(&other)))),
    };
    let budget = match wire.budget {
        None | Some(Value::Null) => RunBudget::new(),
        Some(b) => narrow(&b, configured, max_cost).map_err(body_err)?,
    };
    Ok(Request { id, prompt, session, metadata, budget })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// WORK-6: a request's budget may only narrow the configured one; a wider value is refused by name rather than
/// silently clamped, so the sender learns its request was not what ran.
fn narrow(b: &Value, configured: &Budget, max_cost: Option<Cost>) -> Result<RunBudget, String> {
    let Value::Object(map) = b else {
        return Err(format!("budget must be an object, got {}", kind(b)));
    };
    let mut out = RunBudget::new();
    for (key, value) in map {
        let positive_int =
            || value.as_u64().filter(|n| *n > 0).ok_or_else(|| format!("budget.{key} must be a positive integer"));
        match key.as_str() {
            "max_tokens" => {
                let n = positive_int()?;
                let limit = configured.max_tokens();
                if n > limit {
                    return Err(widens(key, &n.to_string(), &limit.to_string(), "llm.budget.max_tokens"));
                }
                out = out.with_max_tokens(n);
            }
            "max_iterations" => {
                let n = positive_int()?;
                let limit = configured.max_iterations();
                if n > limit {
                    return Err(widens(key, &n.to_string(), &limit.to_string(), "llm.budget.max_iterations"));
                }
                out = out.with_max_iterations(u32::try_from(n).unwrap_or(u32::MAX));
            }
            "max_cost" => {
                let usd = value.as_f64().filter(|v| v.is_finite() && *v > 0.0);
                let cost = usd
                    .and_then(|v| Cost::from_usd(v).ok())
                    .filter(|c| *c > Cost::ZERO)
                    .ok_or_else(|| format!("budget.{key} must be a positive number of dollars"))?;
                if let Some(limit) = max_cost.filter(|l| cost > *l) {
                    return Err(widens(key, &cost.to_string(), &limit.to_string(), "llm.budget.max_cost"));
                }
                out = out.with_max_cost(cost);
            }
            other => {
                return Err(format!("budget.{other} is not a budget key (max_tokens, max_iterations, max_cost)"));
            }
        }
    }
    Ok(out)
}

fn widens(key: &str, got: &str, limit: &str, config_key: &str) -> String {
    format!("budget.{key} {got} exceeds the configured {limit} ({config_key}): a request may only narrow its budget")
}

/// A run's result, as published to `<results_prefix>.<id>` (WORK-3).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[non_exhaustive]
pub struct RunResult {
    /// The request id.
    pub id: String,
    /// The run's outcome as the library names it: `completed`, `max_iterations`, `budget`, `error`.
    pub outcome: String,
    /// The final answer, when there is one.
    pub answer: Option<String>,
    /// The run's counters (absent for a request that never ran).
    pub stats: Option<ResultStats>,
    /// What the run cost in dollars, `None` when the model's price is unknown or nothing ran.
    pub cost: Option<f64>,
    /// What went wrong, for every outcome but `completed`.
    pub error: Option<String>,
}

/// The counters of a [`RunResult`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResultStats {
    /// The model.
    pub model: String,
    /// Model calls, over every delivery of the request (a resumed run counts its earlier calls).
    pub llm_calls: u32,
    /// Tool calls dispatched.
    pub tool_calls: u32,
    /// Of those, calls of imported tools.
    pub remote_tool_calls: u32,
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_tokens: u64,
    /// Times older turns were summarised.
    pub compactions: u32,
    /// Wall time of this delivery's run, in milliseconds (0 for a result read back from the journal).
    pub latency_ms: u64,
}

impl ResultStats {
    pub(super) fn of(stats: &RunStats) -> ResultStats {
        ResultStats {
            model: stats.model.clone(),
            llm_calls: stats.llm_calls,
            tool_calls: stats.tool_calls,
            remote_tool_calls: stats.remote_tool_calls,
            input_tokens: stats.usage.input_tokens,
            output_tokens: stats.usage.output_tokens,
            cache_read_tokens: stats.usage.cache_read_tokens,
            cache_creation_tokens: stats.usage.cache_creation_tokens,
            compactions: stats.compactions,
            latency_ms: u64::try_from(stats.latency.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl RunResult {
    /// The result of a run that ended.
    pub(super) fn of(id: &str, outcome: &RunOutcome) -> RunResult {
        RunResult {
            id: id.to_owned(),
            outcome: outcome.reason.as_str().to_owned(),
            answer: outcome.answer.clone(),
            stats: Some(ResultStats::of(&outcome.stats)),
            cost: outcome.stats.cost.map(Cost::usd),
            // A provider's error body can be long and hold anything.
            error: outcome.error.as_ref().map(|e| crate::gate::sanitize(&e.to_string(), MAX_ERROR_CHARS)),
        }
    }

    /// An `error` result for a request that did not run. `why` can quote the request (a parse error names an
    /// unknown key), so it is sanitized and bounded like any peer text shown to a person (GATE-8).
    pub(super) fn refused(id: &str, why: impl AsRef<str>) -> RunResult {
        RunResult {
            id: id.to_owned(),
            outcome: crate::session::TerminalReason::Error.as_str().to_owned(),
            answer: None,
            stats: None,
            cost: None,
            error: Some(crate::gate::sanitize(why.as_ref(), MAX_ERROR_CHARS)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn budget() -> Budget {
        serde_json::from_value(json!({"max_tokens": 1000, "max_iterations": 10})).unwrap()
    }

    fn parse_json(v: Value) -> Result<Request, Refused> {
        parse(v.to_string().as_bytes(), &budget(), Cost::from_usd(1.0).ok())
    }

    #[test]
    fn work_3_ids_are_1_to_64_of_the_session_charset() {
        assert!(check_id("a").is_ok());
        assert!(check_id(&"x".repeat(64)).is_ok());
        for bad in ["", "a.b", "a b", "a*", "é", &"x".repeat(65)] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn work_3_a_bad_body_with_a_usable_id_is_refused_under_that_id() {
        let r = parse_json(json!({"id": "r1"})).unwrap_err();
        assert_eq!(r, Refused::Body { id: "r1".into(), why: "prompt is required".into() });
        let r = parse_json(json!({"id": "r1", "prompt": "x", "extra": 1})).unwrap_err();
        assert!(matches!(r, Refused::Body { ref id, ref why } if id == "r1" && why.contains("extra")), "{r:?}");
        let r = parse(b"{\"id\": \"r2\", \"prompt\": 5}", &budget(), None).unwrap_err();
        assert!(matches!(r, Refused::Body { ref id, .. } if id == "r2"));
        assert!(matches!(parse(b"not json", &budget(), None), Err(Refused::NoId(_))));
        assert!(matches!(parse_json(json!({"id": "a.b", "prompt": "x"})), Err(Refused::NoId(_))));
        assert!(matches!(parse_json(json!({"id": 7, "prompt": "x"})), Err(Refused::NoId(_))));
    }

    #[test]
    fn work_3_a_refusal_quoting_the_request_is_bounded_and_sanitized() {
        let key = format!("\u{1b}[31m{}", "k".repeat(100_000));
        let Err(Refused::Body { id, why }) = parse_json(json!({"id": "r1", "prompt": "x", key: 1})) else { panic!() };
        let result = RunResult::refused(&id, why);
        let error = result.error.unwrap();
        assert!(error.chars().count() <= MAX_ERROR_CHARS + 1 && !error.contains('\u{1b}'), "{}", error.len());
    }

    #[test]
    fn work_6_a_budget_may_narrow_and_never_widen() {
        let ok = parse_json(json!({"id": "r", "prompt": "x", "budget": {"max_tokens": 500, "max_iterations": 3}}));
        let b = ok.unwrap().budget;
        assert_eq!((b.max_tokens(), b.max_iterations()), (Some(500), Some(3)));
        for (key, v) in [("max_tokens", json!(1001)), ("max_iterations", json!(11)), ("max_cost", json!(1.5))] {
            let r = parse_json(json!({"id": "r", "prompt": "x", "budget": {key: v}})).unwrap_err();
            let Refused::Body { why, .. } = r else { panic!() };
            assert!(why.contains(&format!("budget.{key}")) && why.contains("only narrow"), "{why}");
        }
        for bad in [json!({"max_tokens": 0}), json!({"max_tokens": -1}), json!({"wider": 1}), json!([1])] {
            assert!(parse_json(json!({"id": "r", "prompt": "x", "budget": bad})).is_err());
        }
    }

    #[test]
    fn the_session_defaults_to_the_id() {
        let r = parse_json(json!({"id": "r9", "prompt": "x"})).unwrap();
        assert_eq!(r.session.as_str(), "r9");
        let r = parse_json(json!({"id": "r9", "prompt": "x", "session": "ticket-4"})).unwrap();
        assert_eq!(r.session.as_str(), "ticket-4");
    }

    #[test]
    fn work_4_the_schemas_accept_what_is_sent_and_parse() {
        let result = serde_json::to_value(RunResult::refused("r1", "bad")).unwrap();
        for (schema, doc) in [
            (RESULT_SCHEMA, result),
            (REQUEST_SCHEMA, json!({"id": "r1", "prompt": "x", "metadata": {"k": 1}, "budget": {"max_tokens": 5}})),
        ] {
            let schema: Value = serde_json::from_str(schema).unwrap();
            let validator = jsonschema::validator_for(&schema).unwrap();
            assert!(validator.is_valid(&doc), "{doc}");
        }
    }
}
