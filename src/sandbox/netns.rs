//! `network: loopback` (SBX-3): a network namespace holding only `lo`, made once per confinement and joined by
//! each of its children before `exec`.
//!
//! The confinement step makes it: started in its hold mode, it unshares a network namespace (inside a user
//! namespace of its own, mapping only the agent's user, when the agent is not root), brings `lo` up, reports, and
//! waits; meanwhile this process opens its `/proc/<pid>/ns/` links, which keep the namespaces once it is gone.
//! Children then join them with `setns(2)`: a few microseconds, where making a namespace per call would cost
//! more and leave the kernel a namespace to tear down after every call.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// The loopback-only network namespace of one confinement, with the user namespace owning it when the agent is
/// not root.
#[derive(Debug)]
pub(crate) struct Loopback {
    user: Option<OwnedFd>,
    net: OwnedFd,
}

impl Loopback {
    /// Make the namespaces; `own_user` puts them in a user namespace of their own (what an agent without
    /// `CAP_SYS_ADMIN` needs). `Err` says why not, for the setting's refusal.
    pub(crate) fn new(own_user: bool) -> Result<Loopback, String> {
        #[cfg(fisk_confine)]
        {
            let (user, net) = super::step::hold(own_user)?;
            Ok(Loopback { user, net })
        }
        #[cfg(not(fisk_confine))]
        {
            let _ = own_user;
            Err("it is made by the confinement step, which this build lacks (no C compiler for x86_64 or aarch64)"
                .to_owned())
        }
    }

    /// The user namespace to join first, when there is one.
    pub(crate) fn user(&self) -> Option<BorrowedFd<'_>> {
        self.user.as_ref().map(AsFd::as_fd)
    }

    /// The network namespace.
    pub(crate) fn net(&self) -> BorrowedFd<'_> {
        self.net.as_fd()
    }

    /// Join the namespaces: in the child, after the fork (async-signal-safe: two `setns(2)` calls).
    pub(crate) fn join(&self) -> std::io::Result<()> {
        use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
        if let Some(user) = self.user() {
            move_into_link_name_space(user, Some(LinkNameSpaceType::User))?;
        }
        move_into_link_name_space(self.net(), Some(LinkNameSpaceType::Network))?;
        Ok(())
    }
}
