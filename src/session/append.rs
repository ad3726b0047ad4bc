//! The bookkeeping every journal writer shares (SESS-33): a repeated seq is a no-op, a gap is an error, and after a
//! failed append the journal's tail is unknown, so the writer takes nothing more.

use crate::error::{Error, Result};

/// Where a writer stands in its journal.
#[derive(Debug)]
pub(crate) struct AppendGuard {
    last_seq: u64,
    failed: bool,
}

impl AppendGuard {
    /// A writer whose journal ends at `last_seq` (0 for a new one).
    pub(crate) fn new(last_seq: u64) -> Self {
        AppendGuard { last_seq, failed: false }
    }

    /// The seq of the journal's last record.
    #[cfg(feature = "nats")]
    pub(crate) fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Whether record `seq` is still to be written (`false`: the journal has it already), or why it cannot be.
    /// `journal` names the journal in the error, built only on failure.
    pub(crate) fn admit(&self, seq: u64, journal: impl FnOnce() -> String) -> Result<bool> {
        if self.failed {
            return Err(Error::session(format!(
                "{} takes no more records after a failed append; resume the session to continue",
                journal()
            )));
        }
        if seq <= self.last_seq {
            return Ok(false);
        }
        if seq != self.last_seq + 1 {
            return Err(Error::session(format!(
                "cannot append record {seq} to {}: the last record is {}",
                journal(),
                self.last_seq
            )));
        }
        Ok(true)
    }

    /// Record how the append of `seq` went.
    pub(crate) fn settle<T>(&mut self, seq: u64, outcome: Result<T>) -> Result<T> {
        match outcome {
            Ok(v) => {
                self.last_seq = seq;
                Ok(v)
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sess_33_repeated_seq_is_a_no_op_and_a_gap_names_the_journal() {
        let mut g = AppendGuard::new(2);
        assert!(!g.admit(1, || "j".into()).unwrap());
        assert!(!g.admit(2, || "j".into()).unwrap());
        let gap = g.admit(4, || "journal J".into()).unwrap_err().to_string();
        assert!(gap.contains("cannot append record 4 to journal J: the last record is 2"), "{gap}");
        assert!(g.admit(3, || "j".into()).unwrap());
        g.settle(3, Ok(())).unwrap();
        assert!(!g.admit(3, || "j".into()).unwrap());
        assert!(g.admit(4, || "j".into()).unwrap());
    }

    #[test]
    fn sess_33_after_a_failed_append_nothing_more_is_taken() {
        let mut g = AppendGuard::new(0);
        assert!(g.settle::<()>(1, Err(Error::session("disk full"))).is_err());
        let err = g.admit(1, || "journal J".into()).unwrap_err().to_string();
        assert!(err.contains("journal J takes no more records after a failed append"), "{err}");
    }
}
