//! WORK-2: the worker binds what the operator made and checks it, never creating or changing anything: a mismatch
//! is refused with the `nats` command that fixes it.

use crate::error::{Error, Result};
use async_nats::jetstream::{
    self,
    consumer::{AckPolicy, Info as ConsumerInfo},
    stream::{Config as StreamConfig, RetentionPolicy},
};
use std::time::Duration;

/// What the worker checks the operator's objects against.
pub(super) struct Expected<'a> {
    pub(super) stream: &'a str,
    pub(super) consumer: &'a str,
    pub(super) results_prefix: &'a str,
    pub(super) ack_wait: Duration,
    pub(super) max_deliver: u32,
    pub(super) context: &'a str,
}

impl Expected<'_> {
    fn refuse(&self, what: impl std::fmt::Display) -> Error {
        Error::config_key("expose.agent.worker", format!("expose.agent.worker: {what} (context {})", self.context))
    }
}

/// The work queue's stream: it must exist with work-queue retention (WORK-2).
pub(super) fn check_stream(config: &StreamConfig, want: &Expected<'_>) -> Result<()> {
    if config.retention != RetentionPolicy::WorkQueue {
        return Err(want.refuse(format!(
            "stream {} has {:?} retention but a work queue needs work-queue retention, which a stream cannot change \
             to: make it anew, losing what it holds (fix: nats stream rm {}; nats stream add {} --subjects \
             '<requests subject>' --retention work --storage file --defaults)",
            want.stream, config.retention, want.stream, want.stream
        )));
    }
    if config.deny_delete {
        return Err(want.refuse(format!(
            "stream {} denies deletes, so a request past max_deliver could never be removed from the queue (fix: \
             make it anew without --deny-delete: nats stream rm {}; nats stream add {} ...)",
            want.stream, want.stream, want.stream
        )));
    }
    Ok(())
}

/// The consumer: durable, pull, explicit acks, and the configured ack wait and max deliver (WORK-2).
pub(super) fn check_consumer(info: &ConsumerInfo, want: &Expected<'_>) -> Result<()> {
    let c = &info.config;
    let (stream, consumer) = (want.stream, want.consumer);
    let add = format!(
        "nats consumer add {stream} {consumer} --pull --ack explicit --wait {}s --max-deliver {} --deliver all \
         --max-pending {} --defaults",
        want.ack_wait.as_secs_f64(),
        want.max_deliver,
        1000
    );
    if c.durable_name.as_deref() != Some(consumer) {
        return Err(want.refuse(format!(
            "consumer {consumer} on stream {stream} is not durable (fix: nats consumer rm {stream} {consumer}; {add})"
        )));
    }
    if c.deliver_subject.is_some() {
        return Err(want.refuse(format!(
            "consumer {consumer} on stream {stream} is a push consumer but the worker pulls (fix: nats consumer rm \
             {stream} {consumer}; {add})"
        )));
    }
    if c.ack_policy != AckPolicy::Explicit {
        return Err(want.refuse(format!(
            "consumer {consumer} on stream {stream} acks {:?} but the worker acks each request explicitly (fix: nats \
             consumer rm {stream} {consumer}; {add})",
            c.ack_policy
        )));
    }
    if c.ack_wait != want.ack_wait {
        return Err(want.refuse(format!(
            "consumer {consumer} has ack wait {:?} but expose.agent.worker.ack_wait is {:?} (fix: nats consumer edit \
             {stream} {consumer} --wait {}s, or set ack_wait to match)",
            c.ack_wait,
            want.ack_wait,
            want.ack_wait.as_secs_f64()
        )));
    }
    if c.max_deliver != i64::from(want.max_deliver) {
        return Err(want.refuse(format!(
            "consumer {consumer} has max deliver {} but expose.agent.worker.max_deliver is {} (fix: nats consumer \
             edit {stream} {consumer} --max-deliver {}, or set max_deliver to match)",
            c.max_deliver, want.max_deliver, want.max_deliver
        )));
    }
    Ok(())
}

/// The results stream: some stream stores `<results_prefix>.<id>`, with deduplication, so a result published
/// twice is kept once (WORK-3).
pub(super) async fn check_results(js: &jetstream::Context, want: &Expected<'_>) -> Result<String> {
    let prefix = want.results_prefix;
    let probe = format!("{prefix}.probe");
    let minutes = want.ack_wait.saturating_mul(want.max_deliver).as_secs().div_ceil(60).max(2);
    let fix = format!(
        "nats stream add RESULTS --subjects '{prefix}.>' --storage file --retention limits --dupe-window {minutes}m \
         --defaults"
    );
    let name = js.stream_by_subject(probe.as_str()).await.map_err(|e| {
        let text = e.to_string();
        if text.contains("no stream") || text.contains("not found") || text.contains("10037") {
            want.refuse(format!("no stream stores the results subject {prefix}.> (fix: {fix})"))
        } else {
            Error::nats(format!("cannot look up the stream of {prefix}.> (context {}): {e}", want.context))
        }
    })?;
    let mut stream = js
        .get_stream(&name)
        .await
        .map_err(|e| Error::nats(format!("cannot read results stream {name} (context {}): {e}", want.context)))?;
    let info = stream
        .info()
        .await
        .map_err(|e| Error::nats(format!("cannot read results stream {name} (context {}): {e}", want.context)))?;
    if info.config.retention == RetentionPolicy::WorkQueue {
        return Err(want.refuse(format!(
            "results stream {name} has work-queue retention, so a result read once would be gone (fix: {fix})"
        )));
    }
    // A result is published again when its request's ack was lost, up to once per ack_wait until max_deliver.
    let needed = want.ack_wait.saturating_mul(want.max_deliver);
    if info.config.duplicate_window < needed {
        let minutes = needed.as_secs().div_ceil(60).max(1);
        return Err(want.refuse(format!(
            "results stream {name} has a duplicate window of {:?}, under ack_wait x max_deliver ({needed:?}), so a \
             result published again after a lost ack could be kept twice (fix: nats stream edit {name} \
             --dupe-window {minutes}m)",
            info.config.duplicate_window
        )));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want() -> Expected<'static> {
        Expected {
            stream: "WORK",
            consumer: "workers",
            results_prefix: "results",
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            context: "test",
        }
    }

    #[test]
    fn work_2_a_stream_without_work_queue_retention_is_refused_with_its_fix() {
        let mut config = StreamConfig { name: "WORK".into(), ..Default::default() };
        let err = check_stream(&config, &want()).unwrap_err().to_string();
        assert!(err.contains("--retention work"), "{err}");
        config.retention = RetentionPolicy::WorkQueue;
        check_stream(&config, &want()).unwrap();
    }
}
