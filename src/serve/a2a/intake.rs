//! The two endpoint loops. Tool intake never blocks: a request runs, waits in the bounded queue, or is answered
//! busy at once (A2A-11, A2A-14), so no request is dropped unanswered.

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

/// Take tool requests until `stop`, then let calls in progress finish within [`SHUTDOWN_GRACE`]. Intake never
/// blocks (A2A-14): a request runs in a free slot, else waits in one of the queue's places, else is answered busy
/// (`503`) at once. Reading on keeps the client library's buffer from filling, which would drop requests unseen.
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
        if let Ok(permit) = shared.slots.clone().try_acquire_owned() {
            let shared = Arc::clone(&shared);
            calls.spawn(async move { shared.call(&request, call, permit).await });
            continue;
        }
        let Ok(place) = shared.waiting.clone().try_acquire_owned() else {
            shared.refuse_busy(&request, call).await;
            continue;
        };
        let (shared, stop) = (Arc::clone(&shared), stop.clone());
        calls.spawn(async move {
            // Slots are handed out in arrival order (tokio's semaphore is fair).
            let permit = tokio::select! {
                biased;
                () = stop.cancelled() => None,
                p = shared.slots.clone().acquire_owned() => p.ok(),
            };
            drop(place);
            match permit {
                Some(permit) => shared.call(&request, call, permit).await,
                // Shutting down before it started: answered, never run.
                None => shared.refuse_stopping(&request, call).await,
            }
        });
    }
    // Unsubscribe first, so new requests go to the other members of the queue group.
    let _ = endpoint.stop().await;
    let idle = async { while calls.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, idle).await.is_err() {
        shared.calls_cancel.cancel();
        while calls.join_next().await.is_some() {}
    }
}
