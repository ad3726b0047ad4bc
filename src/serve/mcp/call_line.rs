//! A `tools/call` line read straight into rmcp's types: the stdio transport's hot path (STDIO-1).
//!
//! rmcp's `ClientJsonRpcMessage` is an untagged enum over flattened structs, so serde buffers the whole message
//! into its `Content` tree and tries variant after variant. In a loop that is 2 us; on a stdio server it is far
//! more, because each call's line arrives just after the previous call's process ran on the same CPU and evicted
//! the server's caches: measured there, that decoding and the duplicate-key probe beside it were 40 of the 80 us a
//! call spent in this crate's server over a minimal one (`benches/mcp_stdio.rs` prints that floor).
//!
//! A `tools/call` in its usual shape is read here in one borrowed pass, its arguments parsed once by the
//! duplicate-key check every call needs anyway. Anything else (another method, a field this reader does not know,
//! such as `task` or `inputResponses`, a repeated key, arguments that are not an object) is left to rmcp's
//! decoding as before, so the two paths can differ in speed only; a test holds them to the same messages.

use crate::dispatch::parse_unique;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonObject, JsonRpcVersion2_0,
    RequestId, RequestMetaObject,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The message `line` holds when it is a `tools/call` this reader takes; `None` leaves it to rmcp.
pub(super) fn tools_call(line: &[u8]) -> Option<ClientJsonRpcMessage> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line<'a> {
        // Checked by its type ("2.0" only), as rmcp checks it.
        #[expect(dead_code, reason = "read for its check")]
        jsonrpc: JsonRpcVersion2_0,
        id: RequestId,
        // Borrowed when it can be: `tools\/call` is still `tools/call`.
        #[serde(borrow)]
        method: Cow<'a, str>,
        #[serde(borrow)]
        params: ObjectOnly<Params<'a>>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Params<'a> {
        name: String,
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
        #[serde(rename = "_meta", default)]
        meta: Option<JsonObject>,
    }
    let ObjectOnly(line): ObjectOnly<Line<'_>> = serde_json::from_slice(line).ok()?;
    if line.method != "tools/call" {
        return None;
    }
    let ObjectOnly(Params { name, arguments, meta }) = line.params;
    let mut params = CallToolRequestParams::new(name);
    if let Some(raw) = arguments {
        // A repeated key or a serde_json private key (refused by the handler, which needs the transport's mark),
        // or arguments that are not an object (an error rmcp words): rmcp's path.
        let serde_json::Value::Object(arguments) = parse_unique(raw.get()).ok()? else { return None };
        params = params.with_arguments(arguments);
    }
    let mut request = CallToolRequest::new(params);
    // Where rmcp's decoding puts `_meta`: the loop moves it into the handler's context from there.
    if let Some(meta) = meta {
        request.extensions.insert(RequestMetaObject::from(meta));
    }
    Some(ClientJsonRpcMessage::request(ClientRequest::CallToolRequest(request), line.id))
}

/// `T` read from a JSON object only: serde's derived structs also read an array by position, which rmcp's
/// requests (flattened) never take.
struct ObjectOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData)).map(ObjectOnly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(params._meta, the request's extensions' meta)` of a `tools/call`.
    fn meta_of(message: &ClientJsonRpcMessage) -> (Option<RequestMetaObject>, Option<RequestMetaObject>) {
        let rmcp::model::JsonRpcMessage::Request(request) = message else { panic!("not a request") };
        let ClientRequest::CallToolRequest(call) = &request.request else { panic!("not a call") };
        (call.params.meta.clone(), call.extensions.get::<RequestMetaObject>().cloned())
    }

    fn slow(line: &str) -> serde_json::Value {
        let message: ClientJsonRpcMessage = serde_json::from_str(line).unwrap();
        serde_json::to_value(message).unwrap()
    }

    /// STDIO-1: every line this reader takes becomes the message rmcp's decoding makes of it (compared as rmcp
    /// serializes them, `_meta` included, which it writes from the request's extensions), and every line it
    /// leaves is one rmcp reads differently or refuses.
    #[test]
    fn stdio_1_the_fast_tools_call_reader_matches_rmcps_decoding_or_declines() {
        let taken = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"words":["hello"]}}}"#,
            r#"{"params":{"arguments":{"n":-3,"f":1.5,"big":18446744073709551615,"e":1e300,"z":-0.0},"name":"x"},"method":"tools/call","id":"abc","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools\/call","params":{"name":"t\u00e9","arguments":{"s":"a\"b\\c\u2028","o":{"deep":[{"k":null}]}}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":null,"_meta":null}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":7,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{"a":[1,2,{"b":true}]}}}"#,
        ];
        for line in taken {
            let fast = tools_call(line.as_bytes()).unwrap_or_else(|| panic!("not taken: {line}"));
            // rmcp writes `_meta` from either place, so where it is kept is checked on its own.
            assert_eq!(meta_of(&fast), meta_of(&serde_json::from_str(line).unwrap()), "{line}");
            assert_eq!(serde_json::to_value(fast).unwrap(), slow(line), "{line}");
        }
        let left = [
            // Another method, and a notification.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            // Fields this reader does not know: the tasks extension, the 2026-07-28 retry, an extra member.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","task":{"ttl":1000}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","inputResponses":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"},"extra":1}"#,
            // A repeated key, at the top, in the arguments or deeper: rmcp keeps the last, the transport marks it.
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"a":1,"a":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"o":{"b":1,"b":2}}}}"#,
            // Not what rmcp accepts either.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":[1]}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            "not json",
            // Arrays, which serde would read into a struct by position and rmcp never takes as a request.
            r#"["2.0",1,"tools/call",["echo",{"text":"x"}]]"#,
            r#"["2.0",1,"tools/call",{"name":"echo","arguments":{"text":"x"}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["echo",{"text":"x"}]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"text":"x"},"_meta":[1]}}"#,
        ];
        for line in left {
            assert!(tools_call(line.as_bytes()).is_none(), "taken: {line}");
        }
    }
}
