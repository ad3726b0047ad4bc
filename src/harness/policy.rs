//! The policy hook a harness hands every surface (POL-1, POL-6): the host's, else `harness.policy.command`.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::exec::ChildEnv;
use crate::policy::{CommandPolicy, PolicyHook};
use std::sync::Arc;

/// The host's hook, else the configured command (started with the harness's scrubbed environment); both at once
/// is ambiguous and refused.
pub(crate) fn resolve(
    config: &Config,
    injected: Option<Arc<dyn PolicyHook>>,
    env: &ChildEnv,
) -> Result<Option<Arc<dyn PolicyHook>>> {
    let configured = config.harness.policy.command.as_ref();
    match (injected, configured) {
        (Some(_), Some(_)) => Err(config.locate(Error::config_key(
            "harness.policy.command",
            "harness.policy.command is set but the host gave a policy hook too; remove one of them",
        ))),
        (Some(hook), None) => Ok(Some(hook)),
        (None, Some(argv)) => {
            let hook = CommandPolicy::new(argv.iter().cloned()).map_err(|e| config.locate(e))?;
            Ok(Some(Arc::new(hook.with_timeout(config.harness.policy.timeout()).with_env(env.clone()))))
        }
        (None, None) => Ok(None),
    }
}
