//! One tool imported from a remote agent (IMPORT-9, IMPORT-10): the peer's description and schema as advertised,
//! their prose cleaned for the model (IMPORT-13), each call one tool request on the host's tool subject.

use super::exchange::{Failure, Outgoing, exchange};
use crate::nats::NatsConnection;
use crate::nats::wire::{self, Descriptor, Header, MessageKind, ToolReply, ToolRequest};
use crate::tool::{CallContext, ExecReport, Origin, Tool, ToolInput, ToolKind, ToolOutput, ToolSpec};
use async_trait::async_trait;
use serde_json::json;
use std::time::Duration;

/// Everything a tool of one host shares.
#[derive(Clone)]
pub(crate) struct Host {
    pub(crate) nats: NatsConnection,
    pub(crate) caller: String,
    pub(crate) name: String,
    pub(crate) timeout: Duration,
}

pub(crate) struct RemoteTool {
    spec: ToolSpec,
    /// The peer's own name for it (the spec may be renamed by final naming).
    remote_name: String,
    host: Host,
}

impl RemoteTool {
    /// IMPORT-4 (amended by docs/nats-wire.md §2): an empty description, or a schema whose `type` is not
    /// `object`, is refused with the reason; an absent schema is `{"type":"object"}`. IMPORT-13: the description
    /// and the schema's prose are cleaned here, once. The descriptor is taken apart, never copied (IMPORT-12).
    pub(crate) fn new(host: &Host, origin: &Origin, d: Descriptor) -> Result<Self, (String, String)> {
        let Descriptor { name, mut description, input_schema } = d;
        let shown = || crate::gate::sanitize(&name, 200);
        if description.trim().is_empty() {
            return Err((shown(), "it has an empty description".to_owned()));
        }
        let mut schema = input_schema.unwrap_or_else(|| json!({"type": "object"}));
        // The reply schema holds `input_schema` to an object already; `type`, when present, must say so too.
        if !schema.is_object() || schema.get("type").is_some_and(|t| t != "object") {
            return Err((shown(), "its input_schema is not an object schema".to_owned()));
        }
        crate::source::clean::clean_string(&mut description);
        crate::source::clean::clean_schema(&mut schema);
        // IMPORT-10: no tags, never gated here (the serving agent refuses gated commands), deferrable.
        let spec = ToolSpec::new(name.clone(), ToolKind::Imported, schema)
            .with_description(description)
            .with_origin(origin.clone());
        Ok(RemoteTool { spec, remote_name: name, host: host.clone() })
    }

    /// IMPORT-12: an estimate of the memory this tool's spec holds (its names, description and schema).
    pub(crate) fn held(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.remote_name.capacity()
            + self.spec.name().len()
            + self.spec.description().len()
            + crate::source::bound::held_bytes(self.spec.input_schema())
    }

    /// The outgoing request, checked against the schema (docs/nats-wire.md §2): a non-object input fails here.
    /// The request's id and its bytes.
    fn request(&self, input: &ToolInput) -> Result<(String, Vec<u8>), String> {
        let input = if input.is_null() || input.as_str().trim().is_empty() {
            None
        } else {
            let value = input.to_value().map_err(|e| format!("the input is not JSON: {e}"))?;
            // A2A-9: an empty or null input is left out ("absent means {}").
            Some(value).filter(|v| !v.is_null() && v.as_object().is_none_or(|m| !m.is_empty()))
        };
        let request = ToolRequest {
            header: Header::request(MessageKind::ToolRequest, &self.host.caller, &self.host.name),
            name: self.remote_name.clone(),
            input,
        };
        let value = serde_json::to_value(&request).map_err(|e| e.to_string())?;
        MessageKind::ToolRequest.validate(&value).map_err(|e| format!("the tool request is invalid: {e}"))?;
        let body = wire::encode(&value);
        // A2A-10: the peer refuses a larger request; saying so here names the real problem.
        if body.len() > wire::MAX_MESSAGE_BYTES {
            return Err(format!(
                "the tool request is {} bytes, over the {}-byte limit",
                body.len(),
                wire::MAX_MESSAGE_BYTES
            ));
        }
        Ok((request.header.id, body))
    }
}

#[async_trait]
impl Tool for RemoteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The (final) name and the input as the model gave it.
    fn display(&self, input: &ToolInput) -> String {
        if input.is_null() || input.as_str().trim().is_empty() {
            self.spec.name().to_owned()
        } else {
            format!("{} {}", self.spec.name(), input.as_str())
        }
    }

    /// IMPORT-9: a transport failure or an `is_error` reply is an error result; otherwise the EXEC-13 JSON is
    /// rebuilt from `output` and `exec`, or the output is the result's text when no command ran.
    async fn call(&self, input: &ToolInput, ctx: &CallContext) -> ToolOutput {
        let failed = |e: &dyn std::fmt::Display| {
            ToolOutput::error(format!("calling tool \"{}\" on agent \"{}\": {e}", self.remote_name, self.host.name))
        };
        let (id, body) = match self.request(input) {
            Ok(request) => request,
            Err(e) => return failed(&e),
        };
        let timeout = ctx.timeout().map_or(self.host.timeout, |t| t.min(self.host.timeout));
        let subject = wire::tool_subject(&self.host.name);
        let client = self.host.nats.client();
        let out = Outgoing { host: &self.host.name, subject: &subject, id: &id, body, kind: MessageKind::ToolReply };
        let value = match exchange(client, out, timeout, ctx.cancel_token()).await {
            Ok(received) => received.value,
            Err(Failure::Cancelled) => return failed(&"the call was cancelled"),
            Err(e) => return failed(&e),
        };
        let reply: ToolReply = match wire::typed(value) {
            Ok(reply) => reply,
            Err(e) => return failed(&format!("remote agent \"{}\" sent an invalid reply: {e}", self.host.name)),
        };
        result(reply)
    }
}

/// The tool result a validated reply stands for.
fn result(reply: ToolReply) -> ToolOutput {
    let body = reply.body;
    // EXEC-12 holds for what the model reads whoever ran the command: a peer may send up to 768 KiB.
    let (output, cut) = if body.output.len() > crate::exec::OUTPUT_CAP {
        crate::exec::captured_output([body.output.as_bytes()])
    } else {
        (body.output, false)
    };
    if body.is_error {
        return ToolOutput::error(output);
    }
    match body.exec {
        Some(exec) => {
            // A peer's exit code is any JSON integer; one outside i32 is shown as the nearest bound.
            let code = i32::try_from(exec.exit_code).unwrap_or(if exec.exit_code < 0 { i32::MIN } else { i32::MAX });
            ToolOutput::exec(ExecReport::new(exec.command, code, exec.truncated || cut), output)
        }
        None => ToolOutput::success(output),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nats::wire::{ExecResult, ToolReplyBody};
    use serde_json::Value;

    fn reply(body: ToolReplyBody) -> ToolReply {
        let req = Header::request(MessageKind::ToolRequest, "a", "b");
        ToolReply { header: Header::reply(MessageKind::ToolReply, &req, "b"), body }
    }

    #[test]
    fn import_9_is_error_output_is_verbatim() {
        let out =
            result(reply(ToolReplyBody { is_error: true, output: "tool \"x\" is not available".into(), exec: None }));
        assert!(out.is_error());
        assert_eq!(out.content(), "tool \"x\" is not available");
    }

    #[test]
    fn import_9_exec_13_is_rebuilt() {
        let exec = ExecResult { command: "cow say hi".into(), exit_code: 3, truncated: true };
        let out = result(reply(ToolReplyBody { is_error: false, output: "moo".into(), exec: Some(exec) }));
        assert!(!out.is_error());
        let json: Value = serde_json::from_str(out.content()).unwrap();
        assert_eq!(json, json!({"command": "cow say hi", "exit_code": 3, "output": "moo", "truncated": true}));
        assert_eq!(out.exec_output(), Some("moo"));
    }

    #[test]
    fn import_9_huge_exit_code_is_clamped() {
        let exec = ExecResult { command: "x".into(), exit_code: i64::MAX, truncated: false };
        let out = result(reply(ToolReplyBody { is_error: false, output: String::new(), exec: Some(exec) }));
        assert_eq!(out.exec_report().unwrap().exit_code, i32::MAX);
    }

    #[test]
    fn import_9_without_exec_the_output_is_the_text() {
        let out = result(reply(ToolReplyBody { is_error: false, output: "plain".into(), exec: None }));
        assert_eq!((out.content(), out.is_error(), out.exec_report()), ("plain", false, None));
    }
}
