//! Conformance kits (feature `testing`): suites that take any [`MemoryStore`](crate::memory::MemoryStore) or
//! [`SessionStore`](crate::session::SessionStore) and check it keeps its trait's contract. This crate runs them
//! against every backend it ships (file, in-memory, JetStream); a host writing its own store runs the same kit in
//! its tests.
//!
//! Each kit runs every case, even after one fails, and returns a [`Report`] naming each failed case and what it
//! saw. [`Report::assert_passed`] panics with all of them, for use in a test.
//!
//! - [`memory`]: create/overwrite/compare-and-swap/revision semantics and conflicts, read, list, delete.
//! - [`session`]: create/open, append ordering, idempotent sequence, refusal after a failure, torn tails where the
//!   backend has them, the second writer's lock error, list and remove.

pub mod memory;
pub mod session;

use std::fmt;

/// One case a kit ran that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// The case's name, e.g. `create_is_exclusive`.
    pub case: &'static str,
    /// What the case expected and what the store did.
    pub message: String,
}

/// The outcome of a kit: the cases that held and the ones that did not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The suite, e.g. `memory (jetstream)`.
    pub suite: String,
    /// Cases that held, in the order run.
    pub passed: Vec<&'static str>,
    /// Cases that did not, in the order run.
    pub failed: Vec<Failure>,
    /// Cases not run, with why: a case that does not apply (a store without revisions has no compare-and-swap)
    /// or needs a hook the store under test did not provide. Never counted as held.
    pub skipped: Vec<(&'static str, String)>,
}

impl Report {
    pub(crate) fn new(suite: impl Into<String>) -> Self {
        Report { suite: suite.into(), ..Report::default() }
    }

    /// Record `case`'s outcome.
    pub(crate) fn record(&mut self, case: &'static str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.passed.push(case),
            Err(message) => self.failed.push(Failure { case, message }),
        }
    }

    /// Record `case` as not run, and why.
    pub(crate) fn skip(&mut self, case: &'static str, why: impl Into<String>) {
        self.skipped.push((case, why.into()));
    }

    /// Whether every case that ran held (skipped cases are listed in [`skipped`](Self::skipped)).
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }

    /// Panic, listing every failed case, unless every case held.
    ///
    /// # Panics
    ///
    /// When any case failed; the message is this report's [`Display`](fmt::Display).
    #[track_caller]
    pub fn assert_passed(&self) {
        assert!(self.is_ok(), "{self}");
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.passed.len() + self.failed.len();
        write!(f, "{}: {} of {total} cases held", self.suite, self.passed.len())?;
        if !self.skipped.is_empty() {
            write!(f, "; {} skipped", self.skipped.len())?;
        }
        writeln!(f)?;
        for failure in &self.failed {
            writeln!(f, "  FAILED {}: {}", failure.case, failure.message)?;
        }
        for (case, why) in &self.skipped {
            writeln!(f, "  SKIPPED {case}: {why}")?;
        }
        Ok(())
    }
}

/// `Err(message)` unless `cond`: the kits' one assertion.
pub(crate) fn ensure(cond: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(message()) }
}
