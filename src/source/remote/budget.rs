//! IMPORT-12: how much the tool specs imported from remote agents may hold in memory, in total.
//!
//! One card is at most [`MAX_MESSAGE_BYTES`](crate::nats::wire::MAX_MESSAGE_BYTES) on the wire, but parsed it can
//! take over ten times that (every `0,` of a schema's array is a whole JSON node), and a listing reads one card per
//! `remote_tools` host. The specs each card leaves behind (name, description, schema; the raw reply is dropped) are
//! counted here against one bound shared by every host of the listing, so hostile or broken peers cannot make the
//! agent hold more than [`MAX_REMOTE_SPEC_BYTES`] however many hosts they answer for.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The most bytes (estimated as held in memory, not as JSON text) the tool specs of one `remote_tools` listing may
/// hold, every host together. Far above any real listing (hundreds of tools take a few hundred KiB), far below
/// what a few hostile cards could otherwise make the agent hold. Past it the host's import fails, naming the host,
/// what was read and this bound.
pub const MAX_REMOTE_SPEC_BYTES: usize = crate::source::bound::LISTING_BYTES;

/// The share of [`MAX_REMOTE_SPEC_BYTES`] the hosts of one listing have used. Cloning shares it: give one to every
/// [`RemoteAgent`](super::RemoteAgent) of a listing ([`with_budget`](super::RemoteAgent::with_budget)); the agent
/// builders do. A host discovered again replaces its earlier card's share.
#[derive(Debug, Clone)]
pub struct ListingBudget(Arc<Mutex<Ledger>>);

#[derive(Debug)]
struct Ledger {
    bound: usize,
    /// Per host: the bytes its card took on the wire and what its specs hold.
    cards: BTreeMap<String, Card>,
}

#[derive(Debug, Clone, Copy)]
struct Card {
    read: usize,
    held: usize,
}

impl Default for ListingBudget {
    fn default() -> Self {
        Self::new()
    }
}

impl ListingBudget {
    /// An unused budget of [`MAX_REMOTE_SPEC_BYTES`].
    pub fn new() -> Self {
        Self::bounded(MAX_REMOTE_SPEC_BYTES)
    }

    /// A budget of `bound` bytes (tests use a small one).
    pub(crate) fn bounded(bound: usize) -> Self {
        ListingBudget(Arc::new(Mutex::new(Ledger { bound, cards: BTreeMap::new() })))
    }

    fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the specs of every host's latest card hold now.
    pub fn held(&self) -> usize {
        self.lock().cards.values().fold(0, |sum, c| sum.saturating_add(c.held))
    }

    /// Charge `host`'s card: `read` bytes on the wire whose specs hold `held`, replacing the host's earlier card.
    /// Past the bound the card is refused (charged nothing; the host's earlier card no longer counts either, as
    /// its import fails) with the reason, which names what was read and the bound.
    pub(crate) fn charge(&self, host: &str, read: usize, held: usize) -> Result<(), String> {
        let mut ledger = self.lock();
        ledger.cards.remove(host);
        let others = ledger.cards.values().fold(Card { read: 0, held: 0 }, |sum, c| Card {
            read: sum.read.saturating_add(c.read),
            held: sum.held.saturating_add(c.held),
        });
        let total = others.held.saturating_add(held);
        if total > ledger.bound {
            let before = match ledger.cards.len() {
                0 => String::new(),
                n => format!(
                    " on top of the {n} card(s) of other hosts ({} read, holding {})",
                    shown(others.read),
                    shown(others.held)
                ),
            };
            return Err(format!(
                "its card ({} read) would hold {} of tool specs{before}: {} in all, past the {} bound on what the \
                 remote_tools listing may hold (IMPORT-12)",
                shown(read),
                shown(held),
                shown(total),
                shown(ledger.bound)
            ));
        }
        ledger.cards.insert(host.to_owned(), Card { read, held });
        Ok(())
    }
}

/// A byte count for people: bytes below 1 KiB, else KiB or MiB with one decimal.
fn shown(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)] // Display only.
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1 << 20 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{:.1} MiB", b / f64::from(1u32 << 20))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_12_hosts_share_the_bound_and_a_host_again_replaces_its_card() {
        let budget = ListingBudget::bounded(1000);
        budget.charge("a", 100, 600).unwrap();
        budget.charge("a", 100, 600).unwrap();
        assert_eq!(budget.held(), 600, "the host's second card replaced its first");
        let shared = budget.clone();
        let err = shared.charge("b", 2048, 500).unwrap_err();
        assert!(err.contains("its card (2.0 KiB read) would hold 500 bytes"), "{err}");
        assert!(err.contains("1 card(s) of other hosts (100 bytes read, holding 600 bytes)"), "{err}");
        assert!(err.contains("1.1 KiB in all, past the 1000 bytes bound"), "{err}");
        assert_eq!(budget.held(), 600, "a refused card is not charged");
        budget.charge("b", 10, 400).unwrap();
        assert_eq!(budget.held(), 1000);
    }

    #[test]
    fn import_12_the_default_bound_is_32_mib() {
        let err = ListingBudget::new().charge("h", 1, MAX_REMOTE_SPEC_BYTES + 1).unwrap_err();
        assert!(
            err.ends_with("past the 32.0 MiB bound on what the remote_tools listing may hold (IMPORT-12)"),
            "{err}"
        );
    }
}
