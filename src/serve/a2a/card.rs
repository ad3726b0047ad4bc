//! The agent card (A2A-8): built and serialized once at startup; each discovery reply only prepends its header.

use crate::error::{Error, Result};
use crate::nats::wire::{self, Descriptor, MAX_MESSAGE_BYTES, MessageKind, NAMESPACE};
use crate::select::Toolset;
use serde::Serialize;
use serde_json::Value;

/// The card's own fields, serialized without braces, ready to follow a header.
pub(crate) struct CardBody {
    fields: Vec<u8>,
}

#[derive(Serialize)]
struct Fields<'a> {
    name: &'a str,
    version: &'a str,
    protocols: [&'static str; 1],
    tools: Vec<Descriptor>,
}

impl CardBody {
    /// The card for `tools`, checked once against the schema (and against the size peers accept).
    pub(crate) fn new(identity: &str, version: &str, tools: &Toolset) -> Result<CardBody> {
        let version = if version.is_empty() { "dev" } else { version };
        let tools = tools
            .iter()
            .map(|t| {
                let schema = t.spec().input_schema();
                // A2A-8: `{"type":"object"}` when the command has no object schema.
                let schema = if schema.is_object() { schema.clone() } else { serde_json::json!({"type": "object"}) };
                Descriptor {
                    name: t.spec().name().to_owned(),
                    description: t.spec().description().to_owned(),
                    input_schema: Some(schema),
                }
            })
            .collect();
        let value = serde_json::to_vec(&Fields { name: identity, version, protocols: [NAMESPACE], tools })
            .map_err(|e| Error::config(format!("the agent card cannot be serialized: {e}")))?;
        // `{...}` without its braces.
        let fields = value.strip_prefix(b"{").and_then(|v| v.strip_suffix(b"}")).unwrap_or_default().to_vec();
        let card = CardBody { fields };
        let sample = card.reply(&wire::Header::request(MessageKind::DiscoveryRequest, "probe", identity), identity);
        if sample.len() > MAX_MESSAGE_BYTES {
            return Err(Error::selection(format!(
                "the agent card is {} bytes, over the {MAX_MESSAGE_BYTES} bytes peers accept (A2A-10): serve fewer \
                 tools (expose.agent.tools) or shorter descriptions",
                sample.len()
            )));
        }
        let parsed: Value = serde_json::from_slice(&sample).unwrap_or(Value::Null);
        MessageKind::DiscoveryReply
            .validate(&parsed)
            .map_err(|e| Error::selection(format!("the agent card does not validate: {e}")))?;
        Ok(card)
    }

    /// The discovery reply to `request`: its header, then the card's fields.
    pub(crate) fn reply(&self, request: &wire::Header, identity: &str) -> Vec<u8> {
        let header = wire::encode(&wire::Header::reply(MessageKind::DiscoveryReply, request, identity));
        // An encoded header is a JSON object: it ends with its closing brace.
        let open = header.strip_suffix(b"}").unwrap_or(&header);
        let mut out = Vec::with_capacity(header.len() + self.fields.len() + 1);
        out.extend_from_slice(open);
        out.push(b',');
        out.extend_from_slice(&self.fields);
        out.push(b'}');
        out
    }
}
