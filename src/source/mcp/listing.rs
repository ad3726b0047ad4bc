//! A server's `tools/list` replies, read by the transports before rmcp sees them (MCPI-6, MCPI-13, MCPI-15).
//!
//! rmcp parses a listing page into its typed model whole: one tool whose `inputSchema` is not an object fails the
//! page (rmcp then reports only "Unexpected response type"), and every page is held as parsed until the listing
//! ends. Here each page is split into its tools without building anything ([`RawValue`]); each tool is parsed on
//! its own, checked, cleaned for the model and kept as a compact spec (name, description, input schema), or skipped
//! with the reason; the raw page is dropped by the transport as soon as this returns. rmcp gets a page of the kept
//! tools, so the rest of the protocol (cursors, caching, HTTP parameter headers) works as it always does.
//!
//! What rmcp's messages cannot carry (the skipped tools, why a listing failed, why a transport gave up) is kept
//! in the connection's [`Ledger`].

use crate::source::SourcePolicy;
use crate::source::bound::{LISTING_BYTES, held_bytes};
use crate::source::clean::{clean_schema, clean_string};
use rmcp::model::{ErrorData, ListToolsResult, RequestId, ServerJsonRpcMessage, ServerResult, Tool};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex, MutexGuard};

/// The most tools one server may list (skipped ones included).
pub(crate) const MAX_TOOLS: usize = 20_000;

/// What one connection's transport learnt that rmcp's messages cannot carry. Shared by the transport (which
/// writes) and the connection (which reads); cloning shares it.
#[derive(Clone, Default)]
pub(crate) struct Ledger(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    pages: usize,
    listed: usize,
    /// What the kept tools and the skip reasons hold, by [`held_bytes`].
    held: usize,
    /// `(tool, reason)` for each tool skipped (MCPI-6), the name sanitized.
    skipped: Vec<(String, String)>,
    /// Why the listing failed, when it did here.
    failure: Option<String>,
    /// Why the transport ended the connection, when it did.
    fault: Option<String>,
    /// The pipeline's rules for this server: a tool they drop is passed over before it is parsed, held or
    /// counted against [`LISTING_BYTES`] (HARNESS-6).
    policy: SourcePolicy,
}

/// A message as far as telling a listing page goes: only the id and the result, borrowed, nothing built.
#[derive(Deserialize)]
struct Envelope<'a> {
    id: Option<RequestId>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page<'a> {
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
    #[serde(borrow)]
    next_cursor: Option<&'a RawValue>,
}

impl Ledger {
    /// A ledger that passes over the tools `policy` drops.
    pub(crate) fn new(policy: SourcePolicy) -> Self {
        Ledger(Arc::new(Mutex::new(State { policy, ..State::default() })))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// When `raw` is a successful reply to one of the `pending` listing requests, the page it becomes for rmcp
    /// (that request is then no longer pending); `None` for any other message, which is parsed as usual.
    pub(crate) fn reply(&self, raw: &[u8], pending: &mut Vec<RequestId>) -> Option<ServerJsonRpcMessage> {
        let envelope: Envelope<'_> = serde_json::from_slice(raw).ok()?;
        let (id, result) = (envelope.id?, envelope.result?);
        let at = pending.iter().position(|p| *p == id)?;
        pending.swap_remove(at);
        Some(match self.page(result) {
            Ok(page) => ServerJsonRpcMessage::response(ServerResult::ListToolsResult(page), id),
            Err(why) => {
                self.fail(why.clone());
                ServerJsonRpcMessage::error(ErrorData::internal_error(why, None), Some(id))
            }
        })
    }

    /// One page: its tools converted one by one, within [`MAX_TOOLS`] and [`LISTING_BYTES`].
    fn page(&self, result: &RawValue) -> Result<ListToolsResult, String> {
        let page: Page<'_> =
            serde_json::from_str(result.get()).map_err(|_| "its tools/list result is not an object".to_owned())?;
        let tools = page.tools.ok_or("its tools/list result has no tools")?;
        let tools: Vec<&RawValue> =
            serde_json::from_str(tools.get()).map_err(|_| "its tools/list result's tools is not an array")?;
        let next_cursor = match page.next_cursor.map(|c| serde_json::from_str::<Option<String>>(c.get())) {
            None => None,
            Some(Ok(cursor)) => cursor,
            Some(Err(_)) => return Err("its tools/list result's nextCursor is not a string".to_owned()),
        };
        let mut state = self.lock();
        state.pages += 1;
        state.listed = state.listed.saturating_add(tools.len());
        if state.listed > MAX_TOOLS {
            return Err(format!("it lists more than {MAX_TOOLS} tools"));
        }
        let page_number = state.pages;
        let mut kept = Vec::with_capacity(tools.len());
        for (index, raw) in tools.into_iter().enumerate() {
            if state.policy.filters() && raw_name(raw).is_some_and(|name| !state.policy.keeps(&name)) {
                continue;
            }
            let converted = convert(raw).map_err(|(tool, reason)| {
                let tool = tool.unwrap_or_else(|| format!("(unnamed: tool {} of page {page_number})", index + 1));
                (tool, reason)
            });
            let held = match &converted {
                Ok((_, held)) => *held,
                Err((tool, reason)) => tool.len() + reason.len(),
            };
            state.held = state.held.saturating_add(held);
            if state.held > LISTING_BYTES {
                return Err(format!(
                    "the listing went past the {} MiB bound on what one listing may hold, after {} pages",
                    LISTING_BYTES >> 20,
                    state.pages
                ));
            }
            match converted {
                Ok((tool, _)) => kept.push(tool),
                Err(skipped) => state.skipped.push(skipped),
            }
        }
        let mut page = ListToolsResult::with_all_items(kept);
        page.next_cursor = next_cursor;
        Ok(page)
    }

    /// The tools skipped so far, as `(tool, reason)`; taken, so each is reported once.
    pub(crate) fn take_skipped(&self) -> Vec<(String, String)> {
        std::mem::take(&mut self.lock().skipped)
    }

    /// Record why the listing failed; the first reason stands.
    pub(crate) fn fail(&self, why: String) {
        self.lock().failure.get_or_insert(why);
    }

    /// Why the listing failed here, if it did.
    pub(crate) fn failure(&self) -> Option<String> {
        self.lock().failure.clone()
    }

    /// Record why the transport ends the connection; the first reason stands.
    pub(crate) fn set_fault(&self, why: String) {
        self.lock().fault.get_or_insert(why);
    }

    /// Why the transport ended the connection, if it did.
    pub(crate) fn fault(&self) -> Option<String> {
        self.lock().fault.clone()
    }
}

/// One listed tool as its compact spec and what it holds, or `(its name if it has one, why it is skipped)`.
///
/// MCPI-6: a tool with an empty description or a non-object input schema is skipped. MCPI-15: the description and
/// the schema's prose are cleaned for the model here, once.
fn convert(raw: &RawValue) -> Result<(Tool, usize), (Option<String>, String)> {
    let value: Value = serde_json::from_str(raw.get()).map_err(|e| (name_of(raw), unreadable(&e)))?;
    let Value::Object(mut members) = value else {
        return Err((None, format!("it is {}, not an object", shown(&value))));
    };
    let name = match members.remove("name") {
        Some(Value::String(name)) if !name.is_empty() => name,
        _ => return Err((None, "it has no name".to_owned())),
    };
    let tool = Some(crate::gate::sanitize(&name, 200));
    let mut description = match members.remove("description") {
        Some(Value::String(d)) => d,
        None | Some(Value::Null) => String::new(),
        Some(other) => return Err((tool, format!("its description is {}, not a string", shown(&other)))),
    };
    if description.trim().is_empty() {
        return Err((tool, "it has an empty description".to_owned()));
    }
    let mut schema = match members.remove("inputSchema") {
        Some(schema @ Value::Object(_)) => schema,
        None => return Err((tool, "it has no inputSchema".to_owned())),
        Some(other) => return Err((tool, format!("its inputSchema is {}, not an object schema", shown(&other)))),
    };
    if let Some(kind) = schema.get("type").filter(|t| *t != "object") {
        return Err((tool, format!("its inputSchema has type {}, not \"object\"", shown(kind))));
    }
    // The rest (annotations, icons, output schema, _meta) is not used: dropped before anything is held.
    drop(members);
    clean_string(&mut description);
    clean_schema(&mut schema);
    let held = std::mem::size_of::<Tool>() + name.capacity() + description.capacity() + held_bytes(&schema);
    let Value::Object(schema) = schema else {
        return Err((tool, "its inputSchema is not an object schema".to_owned()));
    };
    Ok((Tool::new(name, description, Arc::new(schema)), held))
}

/// The name of a tool that cannot be parsed whole (its other members are skipped, not parsed, however deep).
/// The tool's name exactly as the server wrote it, when it has one, for the pipeline's rules.
fn raw_name(raw: &RawValue) -> Option<std::borrow::Cow<'_, str>> {
    #[derive(Deserialize)]
    struct Named<'a> {
        #[serde(borrow)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<Named<'_>>(raw.get()).ok()?.name
}

fn name_of(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        name: Option<String>,
    }
    let named: Named = serde_json::from_str(raw.get()).ok()?;
    named.name.filter(|n| !n.is_empty()).map(|n| crate::gate::sanitize(&n, 200))
}

/// Why a tool's JSON (already known to be well-formed) cannot be parsed.
fn unreadable(e: &serde_json::Error) -> String {
    if e.to_string().starts_with("recursion limit exceeded") {
        "its definition nests deeper than 128 levels".to_owned()
    } else {
        format!("its definition cannot be read: {e}")
    }
}

/// A short, sanitized rendering of a server's value for a reason.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("\"{}\"", crate::gate::sanitize(s, 40)),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(tools: Value, cursor: Option<&str>) -> Vec<u8> {
        let result = json!({"tools": tools, "nextCursor": cursor});
        json!({"jsonrpc": "2.0", "id": 4, "result": result}).to_string().into_bytes()
    }

    fn listed(message: ServerJsonRpcMessage) -> ListToolsResult {
        match message.into_response() {
            Some((ServerResult::ListToolsResult(page), RequestId::Number(4))) => page,
            _ => panic!("not the listing reply"),
        }
    }

    #[test]
    fn only_a_pending_listing_reply_is_taken() {
        let ledger = Ledger::default();
        let raw = page(json!([]), None);
        assert!(ledger.reply(&raw, &mut vec![RequestId::Number(3)]).is_none(), "not pending");
        let note = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
        assert!(ledger.reply(note, &mut vec![RequestId::Number(4)]).is_none());
        let mut pending = vec![RequestId::Number(4)];
        let got = listed(ledger.reply(&raw, &mut pending).unwrap());
        assert!(got.tools.is_empty() && got.next_cursor.is_none() && pending.is_empty());
    }

    #[test]
    fn mcpi_6_bad_tools_are_skipped_one_by_one_with_reasons() {
        let ok = json!({"name": "ok", "description": "fine", "inputSchema": {"type": "object"}});
        let tools = json!([
            {"name": "s", "description": "d", "inputSchema": "string"},
            {"name": "n", "description": "d", "inputSchema": 5},
            {"name": "a", "description": "d", "inputSchema": [1, 2]},
            {"name": "t", "description": "d", "inputSchema": {"type": "string"}},
            {"name": "e", "description": " ", "inputSchema": {}},
            {"description": "d", "inputSchema": {}},
            7,
            ok,
        ]);
        let ledger = Ledger::default();
        let got = listed(ledger.reply(&page(tools, Some("next")), &mut vec![RequestId::Number(4)]).unwrap());
        assert_eq!(got.tools.len(), 1);
        assert_eq!((got.tools[0].name.as_ref(), got.next_cursor.as_deref()), ("ok", Some("next")));
        let skipped = ledger.take_skipped();
        let reasons: Vec<(&str, &str)> = skipped.iter().map(|(t, r)| (t.as_str(), r.as_str())).collect();
        assert_eq!(
            reasons,
            [
                ("s", "its inputSchema is \"string\", not an object schema"),
                ("n", "its inputSchema is 5, not an object schema"),
                ("a", "its inputSchema is an array, not an object schema"),
                ("t", "its inputSchema has type \"string\", not \"object\""),
                ("e", "it has an empty description"),
                ("(unnamed: tool 6 of page 1)", "it has no name"),
                ("(unnamed: tool 7 of page 1)", "it is 7, not an object"),
            ]
        );
    }

    #[test]
    fn a_tool_nested_too_deep_is_skipped_by_name() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let raw = format!(
            r#"{{"jsonrpc":"2.0","id":4,"result":{{"tools":[{{"inputSchema":{{"x":{deep}}},"name":"deep","description":"d"}}]}}}}"#
        );
        let ledger = Ledger::default();
        assert!(listed(ledger.reply(raw.as_bytes(), &mut vec![RequestId::Number(4)]).unwrap()).tools.is_empty());
        assert_eq!(
            ledger.take_skipped(),
            [("deep".to_owned(), "its definition nests deeper than 128 levels".to_owned())]
        );
    }

    #[test]
    fn a_malformed_page_fails_the_listing_with_the_reason() {
        let ledger = Ledger::default();
        let raw = br#"{"jsonrpc":"2.0","id":4,"result":{"tools":{"not":"an array"}}}"#;
        let error = ledger.reply(raw, &mut vec![RequestId::Number(4)]).unwrap().into_error().unwrap();
        assert!(error.0.message.contains("not an array"), "{}", error.0.message);
        assert_eq!(ledger.failure().as_deref(), Some(&*error.0.message));
    }

    #[test]
    fn harness_6_tools_the_policy_drops_are_not_held_counted_or_reported() {
        // One description past the listing's whole bound: held, it fails the page; dropped by the pipeline's
        // policy, it is passed over before it is parsed, and so is a broken tool the operator excluded.
        let huge = json!({"name": "dump_all", "description": "d".repeat(LISTING_BYTES + 1), "inputSchema": {}});
        let broken = json!({"name": "dump_raw", "description": "d", "inputSchema": 5});
        let ok = json!({"name": "status", "description": "fine", "inputSchema": {"type": "object"}});
        let raw = page(json!([huge, broken, ok]), None);

        let held = Ledger::default().reply(&raw, &mut vec![RequestId::Number(4)]).unwrap();
        assert!(held.into_response().is_none(), "without a policy the page is past the bound");

        let policy = SourcePolicy::new().exclude(crate::select::Rule::tools(["^dump_"]).unwrap());
        let ledger = Ledger::new(policy);
        let got = listed(ledger.reply(&raw, &mut vec![RequestId::Number(4)]).unwrap());
        let names: Vec<&str> = got.tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["status"]);
        assert!(ledger.take_skipped().is_empty(), "an excluded tool is not reported as skipped");
        assert!(ledger.failure().is_none());
    }
}
