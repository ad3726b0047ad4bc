//! The structured final answer over the Messages API (OUT-1, OUT-4): a forced [`FINAL_ANSWER_TOOL`] on the way
//! out, and its call turned back into the answer's text on the way in.
//!
//! Anthropic has no response format; a tool's `input_schema` is the native way to constrain output, so the final
//! answer is asked for as one more tool. Its input schema must be an object schema: any other is wrapped as the
//! single required property [`ANSWER_KEY`] and unwrapped on decode.

use crate::llm::output::ANSWER_KEY;
use crate::llm::{Block, FINAL_ANSWER_TOOL, OutputSchema, Response, StopReason};
use serde::Deserialize;
use serde_json::value::RawValue;

const DESCRIPTION: &str = "Call this tool exactly once, when you have finished, with your final answer as its \
    input; the input must be valid against the tool's input schema. Do not write the final answer as text.";
const DESCRIPTION_WRAPPED: &str = "Call this tool exactly once, when you have finished, with your final answer as \
    the value of its \"answer\" property; that value must be valid against the property's schema. Do not write the \
    final answer as text.";

/// The final tool's JSON, rendered once per schema (OUT-4): a custom tool like the plan's, never deferred.
pub(super) fn tool(schema: &OutputSchema) -> &[u8] {
    schema.wire(render)
}

fn render(schema: &OutputSchema) -> Vec<u8> {
    let wrapped = !schema.is_object();
    let mut out = Vec::with_capacity(schema.json().len() + 512);
    out.extend_from_slice(br#"{"type":"custom","name":"#);
    write_json(&mut out, FINAL_ANSWER_TOOL);
    out.extend_from_slice(br#","description":"#);
    write_json(&mut out, if wrapped { DESCRIPTION_WRAPPED } else { DESCRIPTION });
    out.extend_from_slice(br#","input_schema":"#);
    if wrapped {
        let _ = serde_json::to_writer(&mut out, &wrapper(schema.schema()));
    } else {
        out.extend_from_slice(schema.json().as_bytes());
    }
    out.extend_from_slice(br#","defer_loading":false}"#);
    out
}

/// An object schema holding `schema` as its one required property [`ANSWER_KEY`]. Definitions move to the wrapper's
/// root, so the schema's own `#/$defs/...` and `#/definitions/...` references still resolve.
fn wrapper(schema: &serde_json::Value) -> serde_json::Value {
    let mut inner = schema.clone();
    let mut root = serde_json::Map::new();
    if let Some(object) = inner.as_object_mut() {
        for key in ["$defs", "definitions"] {
            if let Some(defs) = object.remove(key) {
                root.insert(key.to_owned(), defs);
            }
        }
    }
    root.insert("type".to_owned(), "object".into());
    root.insert("properties".to_owned(), serde_json::json!({ ANSWER_KEY: inner }));
    root.insert("required".to_owned(), serde_json::json!([ANSWER_KEY]));
    root.insert("additionalProperties".to_owned(), false.into());
    serde_json::Value::Object(root)
}

/// Write the tools array: the plan's cached rendering (`[]`-less when empty) with the final tool spliced in last,
/// without re-rendering the plan.
pub(super) fn write_tools(out: &mut Vec<u8>, plan_tools: &[u8], final_tool: &[u8]) {
    match plan_tools.strip_suffix(b"]") {
        Some(open) if open.len() > 1 => {
            out.extend_from_slice(open);
            out.push(b',');
        }
        _ => out.push(b'['),
    }
    out.extend_from_slice(final_tool);
    out.push(b']');
}

fn write_json(out: &mut Vec<u8>, value: &str) {
    let _ = serde_json::to_writer(out, value);
}

#[derive(Deserialize)]
struct Wrapped<'a> {
    #[serde(borrow)]
    answer: &'a RawValue,
}

/// The reply with every `final_answer` call as a text block holding its input (unwrapped when the schema was
/// wrapped), for both the streamed and the whole reply. When those were its only tool calls, the turn ends there
/// (`end_turn`), so the loop reads it as the final answer.
pub(super) fn answer(mut response: Response, schema: &OutputSchema) -> Response {
    let wrapped = !schema.is_object();
    let (mut finals, mut calls) = (0, 0);
    for block in &mut response.content {
        let Block::ToolUse { name, input, .. } = block else { continue };
        calls += 1;
        if name != FINAL_ANSWER_TOOL {
            continue;
        }
        finals += 1;
        let text = input.as_str();
        // An input that does not have the wrapper's shape is kept whole: validation then says what is wrong.
        let text = match serde_json::from_str::<Wrapped<'_>>(text) {
            Ok(w) if wrapped => w.answer.get().to_owned(),
            _ => text.to_owned(),
        };
        *block = Block::Text { text };
    }
    if finals > 0 && finals == calls && response.stop_reason == StopReason::ToolUse {
        response.stop_reason = StopReason::EndTurn;
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_4_a_wrapped_schema_keeps_its_definitions_reachable() {
        let schema = OutputSchema::new(json!({
            "type": "array",
            "items": {"$ref": "#/$defs/Item"},
            "$defs": {"Item": {"type": "string"}}
        }))
        .unwrap();
        let tool: serde_json::Value = serde_json::from_slice(&render(&schema)).unwrap();
        let input = &tool["input_schema"];
        assert_eq!(input["$defs"]["Item"]["type"], "string", "{input}");
        assert_eq!(input["properties"]["answer"]["items"]["$ref"], "#/$defs/Item");
        assert!(input["properties"]["answer"].get("$defs").is_none());
        // The wrapper, with its hoisted definitions, accepts what the schema accepts.
        let wrapper = OutputSchema::new(input.clone()).unwrap();
        assert!(wrapper.validate(r#"{"answer": ["a", "b"]}"#).is_ok());
        assert!(wrapper.validate(r#"{"answer": [1]}"#).is_err());
    }
    use crate::llm::Usage;
    use crate::tool::ToolInput;
    use serde_json::json;

    fn call(name: &str, input: &str) -> Block {
        Block::ToolUse {
            id: format!("toolu_{name}"),
            name: name.to_owned(),
            input: ToolInput::from_json(input).unwrap(),
        }
    }

    #[test]
    fn out_4_the_final_tool_is_spliced_last_into_any_tools_array() {
        let schema = OutputSchema::new(json!({"type": "object"})).unwrap();
        let tool = super::tool(&schema).to_vec();
        let mut out = Vec::new();
        write_tools(&mut out, b"", &tool);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 1);
        out.clear();
        write_tools(&mut out, br#"[{"name":"a"}]"#, &tool);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!((v[0]["name"].as_str(), v[1]["name"].as_str()), (Some("a"), Some(FINAL_ANSWER_TOOL)));
        assert_eq!(v[1]["input_schema"], json!({"type": "object"}));
    }

    #[test]
    fn out_4_a_final_call_becomes_the_answer_text_and_ends_the_turn_only_when_alone() {
        let array = OutputSchema::new(json!({"type": "array"})).unwrap();
        let alone = Response::new(
            vec![call(FINAL_ANSWER_TOOL, r#"{"answer": [1, 2]}"#)],
            StopReason::ToolUse,
            Usage::default(),
        );
        let r = answer(alone, &array);
        assert_eq!((r.content, r.stop_reason), (vec![Block::text("[1, 2]")], StopReason::EndTurn));
        // Not the wrapper's shape: kept whole, for validation to reject.
        let odd =
            Response::new(vec![call(FINAL_ANSWER_TOOL, r#"{"items": 1}"#)], StopReason::ToolUse, Usage::default());
        assert_eq!(answer(odd, &array).content, vec![Block::text(r#"{"items": 1}"#)]);
        let mixed = Response::new(
            vec![call("count", "{}"), call(FINAL_ANSWER_TOOL, r#"{"answer": []}"#)],
            StopReason::ToolUse,
            Usage::default(),
        );
        let r = answer(mixed, &array);
        assert_eq!(r.stop_reason, StopReason::ToolUse, "another call still runs");
        assert_eq!(r.content[1], Block::text("[]"));
    }
}
