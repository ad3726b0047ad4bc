//! Arguments the server refuses as the client sent them, before rmcp's decoding changes what they say:
//! - a key given twice, of which rmcp's JSON-RPC decoding keeps only the last, while a proxy or allow-list in front
//!   of the server may read the first;
//! - a key in serde_json's private namespace: rmcp decodes arguments into `serde_json::Value`s, which read an
//!   object whose first key is `$serde_json::private::RawValue` as the JSON in that key's string, so a proxy and
//!   the server would read different arguments, and a key given twice inside the string would be merged unseen.
//!
//! Each transport reads the arguments as sent with dispatch's one parse, and hands its refusal to the handler in
//! the request's extensions; the handler refuses the call with that text, as every surface does.

use crate::tool::schema::InputError;
use rmcp::model::ClientRequest;
use rmcp::service::{RequestContext, RoleServer};

/// Why the arguments of a `tools/call`, as the client sent them, are refused.
#[derive(Debug, Clone)]
pub(crate) struct RefusedArguments(pub(crate) InputError);

/// Why dispatch's one parse refuses the arguments of `message`, when it is a `tools/call`: a key given twice, a
/// key in serde_json's private namespace, or whatever else that parse refuses and rmcp's decoding would not.
pub(crate) fn in_call(message: &[u8]) -> Option<InputError> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        // Borrowed when it can be: a method written with escapes (`tools\/call`) is still `tools/call` to rmcp.
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        arguments: Option<&'a serde_json::value::RawValue>,
    }
    let Ok(Probe { method: Some(method), params: Some(Params { arguments: Some(args) }) }) =
        serde_json::from_slice::<Probe<'_>>(message)
    else {
        return None;
    };
    if method != "tools/call" {
        return None;
    }
    crate::dispatch::parse_unique(args.get()).err()
}

/// Mark `request` with why the arguments in `message` (its text) are refused, if they are (the stdio transport,
/// which decodes the message itself).
pub(crate) fn mark(request: &mut ClientRequest, message: &[u8]) {
    if let ClientRequest::CallToolRequest(call) = request
        && let Some(error) = in_call(message)
    {
        call.extensions.insert(RefusedArguments(error));
    }
}

/// Why the arguments of the request `context` belongs to are refused, found by either transport: over HTTP it
/// rides on the HTTP request's parts, over stdio on the JSON-RPC request itself.
pub(crate) fn of(context: &RequestContext<RoleServer>) -> Option<&RefusedArguments> {
    context.extensions.get::<RefusedArguments>().or_else(|| {
        context.extensions.get::<axum::http::request::Parts>().and_then(|p| p.extensions.get::<RefusedArguments>())
    })
}
