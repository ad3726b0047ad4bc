//! Reachability of the JetStream memory and session stores for `fisk info` (MEM-28, INFO-7): each is bound as a
//! run would bind it, over one shared connection (CFG-15); a failure is reported, never fatal.

use fisk_ai::Config;

/// One line per JetStream store: `reachable` or `unreachable: <why>`; `None` for stores that are not JetStream.
#[derive(Default)]
pub(crate) struct StoreReach {
    pub(crate) memory: Option<String>,
    pub(crate) sessions: Option<String>,
}

#[cfg(feature = "nats")]
pub(crate) async fn probe(config: &Config) -> StoreReach {
    let memory_on = config.harness.memory.enabled && config.harness.memory.backend == "jetstream";
    let sessions_on = config.llm.model.is_some() && config.harness.sessions.backend == "jetstream";
    let mut reach = StoreReach::default();
    if !memory_on && !sessions_on {
        return reach;
    }
    let line = |result: Result<(), &fisk_ai::Error>| match result {
        Ok(()) => "reachable".to_owned(),
        Err(e) => format!("unreachable: {}", fisk_ai::gate::sanitize(&e.to_string(), 400)),
    };
    // Opened as a run opens them (same backends, options and one shared connection, CFG-15).
    let opened = fisk_ai::Harness::builder().config(config.clone()).open_stores().await;
    let stores = match opened {
        Ok(stores) => stores,
        Err(e) => {
            let why = line(Err(&e));
            reach.memory = memory_on.then(|| why.clone());
            reach.sessions = sessions_on.then_some(why);
            return reach;
        }
    };
    if memory_on {
        reach.memory = stores.memory().map(|m| line(m.map(drop)));
    }
    if sessions_on {
        reach.sessions = Some(line(stores.sessions().map(drop)));
    }
    reach
}

#[cfg(not(feature = "nats"))]
pub(crate) async fn probe(_: &Config) -> StoreReach {
    StoreReach::default()
}
