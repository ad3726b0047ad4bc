//! The two endpoint loops. Tool intake blocks while every slot is busy (A2A-11), so a saturated server leaves
//! requests on the queue group for another member instead of buffering them.

use super::handler::Shared;
use async_nats::service::endpoint::Endpoint;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How long calls in progress get to finish after a shutdown, before they are stopped (their process groups
/// killed) and answered with an error.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Answer discovery requests until `stop`.
pub(crate) async fn discovery(shared: Arc<Shared>, mut endpoint: Endpoint, stop: CancellationToken) {
    loop {
        let request = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            r = endpoint.next() => match r { Some(r) => r, None => break },
        };
        shared.discovery(&request).await;
    }
    let _ = endpoint.stop().await;
}

/// Take tool requests until `stop`, then let calls in progress finish within [`SHUTDOWN_GRACE`].
pub(crate) async fn tools(shared: Arc<Shared>, mut endpoint: Endpoint, stop: CancellationToken) {
    let mut calls = JoinSet::new();
    loop {
        let request = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            r = endpoint.next() => match r { Some(r) => r, None => break },
        };
        while calls.try_join_next().is_some() {}
        let Some(call) = shared.intake(&request).await else { continue };
        // Back-pressure: the next request is not read until this one has a slot.
        let permit = tokio::select! {
            biased;
            () = stop.cancelled() => None,
            p = shared.slots.clone().acquire_owned() => p.ok(),
        };
        let shared = Arc::clone(&shared);
        match permit {
            Some(permit) => {
                calls.spawn(async move { shared.call(&request, call, permit).await });
            }
            None => {
                // Shutting down before it started: answered, never run.
                shared.refuse_stopping(&request, call).await;
                break;
            }
        }
    }
    // Unsubscribe first, so new requests go to the other members of the queue group.
    let _ = endpoint.stop().await;
    let idle = async { while calls.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, idle).await.is_err() {
        shared.calls_cancel.cancel();
        while calls.join_next().await.is_some() {}
    }
}
