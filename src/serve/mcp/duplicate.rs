//! Arguments that repeat a key. rmcp's JSON-RPC decoding keeps only the last of two equal keys, while a proxy or
//! allow-list in front of the server may read the first, so each transport finds the repeat in the message as the
//! client sent it and hands it to the handler in the request's extensions; the handler refuses the call as every
//! surface does.

use rmcp::model::ClientRequest;
use rmcp::service::{RequestContext, RoleServer};

/// A key the client repeated in a `tools/call`'s arguments.
#[derive(Debug, Clone)]
pub(crate) struct DuplicateArgument(pub(crate) String);

/// The first repeated key in the arguments of `message`, when it is a `tools/call`.
pub(crate) fn in_call(message: &[u8]) -> Option<String> {
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
    crate::dispatch::parse_unique(args.get()).err()?.property().map(str::to_owned)
}

/// Mark `request` with the key `message` (its text) repeats, if any (the stdio transport, which decodes the
/// message itself).
pub(crate) fn mark(request: &mut ClientRequest, message: &[u8]) {
    if let ClientRequest::CallToolRequest(call) = request
        && let Some(key) = in_call(message)
    {
        call.extensions.insert(DuplicateArgument(key));
    }
}

/// The repeated key of the request `context` belongs to, found by either transport: over HTTP it rides on the
/// HTTP request's parts, over stdio on the JSON-RPC request itself.
pub(crate) fn of(context: &RequestContext<RoleServer>) -> Option<&DuplicateArgument> {
    context.extensions.get::<DuplicateArgument>().or_else(|| {
        context.extensions.get::<axum::http::request::Parts>().and_then(|p| p.extensions.get::<DuplicateArgument>())
    })
}
