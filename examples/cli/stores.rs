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
pub(crate) async fn probe(config: &Config, identity: &str, working_dir: &std::path::Path) -> StoreReach {
    use fisk_ai::memory::{MemoryBackends, MemorySettings};
    use fisk_ai::nats::SharedNats;
    use fisk_ai::session::{SessionBackends, SessionSettings};
    let memory_on = config.harness.memory.enabled && config.harness.memory.backend == "jetstream";
    let sessions_on = config.llm.model.is_some() && config.harness.sessions.backend == "jetstream";
    let shared = SharedNats::from_context(config.nats_context.as_deref(), identity);
    let line = |result: Result<(), fisk_ai::Error>| match result {
        Ok(()) => "reachable".to_owned(),
        Err(e) => format!("unreachable: {}", fisk_ai::gate::sanitize(&e.to_string(), 400)),
    };
    let mut reach = StoreReach::default();
    if memory_on {
        let settings = MemorySettings::new(config, identity, working_dir).with_nats(Some(&shared));
        reach.memory = Some(line(MemoryBackends::with_defaults().open(&settings).await.map(drop)));
    }
    if sessions_on {
        let settings = SessionSettings::new(config).with_nats(Some(&shared));
        reach.sessions = Some(line(SessionBackends::with_defaults().open(&settings).await.map(drop)));
    }
    reach
}

#[cfg(not(feature = "nats"))]
pub(crate) async fn probe(_: &Config, _: &str, _: &std::path::Path) -> StoreReach {
    StoreReach::default()
}
