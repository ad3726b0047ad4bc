//! WORK-5: a request delivered `max_deliver` times without a result. The server stops redelivering it and
//! announces that on the consumer's max-deliveries advisory; one worker of the fleet (a queue group) stores the
//! final error result and removes the request from the queue, so the queue moves on and the sender learns why.

use super::Shared;
use super::events::WorkerEvent;
use super::journal::{self, Found};
use super::wire::{self, Refused, RunResult};
use crate::error::{Error, Result};
use crate::tool::CancellationToken;
use futures::StreamExt;
use serde::Deserialize;
use std::sync::Arc;

/// The part of `io.nats.jetstream.advisory.v1.max_deliver` the worker reads.
#[derive(Deserialize)]
struct Advisory {
    stream: String,
    consumer: String,
    stream_seq: u64,
    deliveries: u64,
}

/// Subscribe to the consumer's max-deliveries advisories, in one queue group per consumer so each is handled once.
pub(super) async fn subscribe(shared: &Shared, stream: &str, consumer: &str) -> Result<async_nats::Subscriber> {
    let subject = format!("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{stream}.{consumer}");
    let group = format!("fisk-ai.worker.{stream}.{consumer}");
    shared
        .js
        .client()
        .queue_subscribe(subject.clone(), group)
        .await
        .map_err(|e| Error::nats(format!("cannot subscribe to {subject}: {e}")))
}

pub(super) async fn watch(
    shared: Arc<Shared>,
    mut advisories: async_nats::Subscriber,
    consumer: String,
    stop: CancellationToken,
) {
    loop {
        let message = tokio::select! {
            () = stop.cancelled() => return,
            m = advisories.next() => match m {
                Some(m) => m,
                None => {
                    let what = "the max-deliveries advisory subscription ended: requests past max_deliver are left in the queue";
                    shared.events.emit(&WorkerEvent::Trouble { what });
                    return;
                }
            },
        };
        // Anyone who may publish on the subject could send garbage or a forgery: only an advisory of this consumer,
        // past max_deliver, for a request the consumer has delivered, is acted on.
        let Ok(advisory) = serde_json::from_slice::<Advisory>(&message.payload) else { continue };
        if genuine(&shared, &consumer, &advisory).await {
            settle(&shared, &advisory).await;
        }
    }
}

/// Whether `advisory` names this consumer, at least `max_deliver` deliveries, and a request the consumer has
/// delivered already.
async fn genuine(shared: &Shared, consumer: &str, advisory: &Advisory) -> bool {
    let stream = shared.stream.cached_info().config.name.as_str();
    if advisory.stream != stream || advisory.consumer != consumer {
        return false;
    }
    if advisory.deliveries < u64::from(shared.max_deliver) {
        return false;
    }
    match shared.stream.consumer_info(consumer).await {
        Ok(info) => advisory.stream_seq <= info.delivered.stream_sequence,
        Err(_) => false,
    }
}

/// Store the final result of the request at `stream_seq`, then remove it from the queue. A request whose session
/// ended (its last delivery finished the run but could not store the result) is answered from its journal.
async fn settle(shared: &Shared, advisory: &Advisory) {
    let seq = advisory.stream_seq;
    // Gone already (another worker settled it, or it was acknowledged in the meantime): nothing to do.
    let Ok(stored) = shared.stream.get_raw_message(seq).await else { return };
    let (id, request) = match wire::parse(&stored.payload, &shared.budget, shared.max_cost) {
        Ok(request) => (Some(request.id.clone()), Some(request)),
        Err(Refused::Body { id, .. }) => (Some(id), None),
        Err(Refused::NoId(_)) => (None, None),
    };
    if let Some(id) = &id {
        let ended = match &request {
            Some(r) => match journal::find(shared, id, &r.session, &r.prompt).await {
                Ok(Found::Ended(result)) => Some(result),
                _ => None,
            },
            None => None,
        };
        let deliveries = advisory.deliveries;
        let result = ended.unwrap_or_else(|| {
            RunResult::refused(
                id,
                format!(
                    "the request was delivered {deliveries} times (expose.agent.worker.max_deliver) without a \
                     result: each worker that took it stopped or failed before it could store one"
                ),
            )
        });
        if let Err(e) = shared.publish(&result).await {
            // Left in the stream: the operator sees it with `nats stream view`, and nothing is lost.
            let what = format!("cannot store the final result of request {id}: {e}");
            shared.events.emit(&WorkerEvent::Trouble { what: &what });
            return;
        }
    }
    if let Err(e) = shared.stream.delete_message(seq).await {
        let what = format!("cannot remove exhausted request {seq} from the queue: {e}");
        shared.events.emit(&WorkerEvent::Trouble { what: &what });
    }
    shared.events.emit(&WorkerEvent::Exhausted { id: id.as_deref(), stream_seq: seq });
}
