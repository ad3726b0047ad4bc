//! `mcp_servers[].pins` and `remote_tools[].pins` (PIN-2): what a changed or new imported tool does.

use serde::Deserialize;

/// What happens to an imported tool whose description or input schema differs from its pin, or that was not there
/// when its server was first pinned (PIN-2, PIN-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase", expecting = "`refuse` or `warn`")]
#[non_exhaustive]
pub enum PinMode {
    /// `refuse` (the default): a changed tool is dropped and a new one quarantined, each with a warning, until an
    /// operator accepts it.
    #[default]
    Refuse,
    /// `warn`: the tool is offered, with the same warning.
    Warn,
}

impl PinMode {
    /// The name as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            PinMode::Refuse => "refuse",
            PinMode::Warn => "warn",
        }
    }
}
