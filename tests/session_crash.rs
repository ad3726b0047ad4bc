//! The crash suite (SESS-14, SESS-15, DESIGN §6.9): the example CLI runs a scripted multi-tool conversation
//! against the fake Messages API and the `stepper` fake app, which logs every invocation with the pid of the CLI
//! that started it. The test SIGKILLs the CLI at random points, resumes, and checks after every kill:
//!
//! - the journal parses (a torn last line is tolerated);
//! - no model turn already recorded is requested again;
//! - no tool call whose result was recorded runs again, and at most one call repeats per crash (the one whose
//!   result was not yet recorded);
//! - the final answer is reached and the session ends `completed`.
//!
//! Kill points are random but reproducible: the seed is printed, and `FISK_AI_CRASH_SEED` replays it. The default
//! run kills 20 times; `crash_suite_long` (ignored by default, run by `.ci/run`) kills 100 times.

mod common;
mod fake_anthropic;
mod stepper;

use stepper::Stepper;
use stepper::crash::crash_suite;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invariant_9_sess_14_15_a_resumed_session_never_repeats_a_recorded_model_turn_or_tool_result_crash_suite_20_kill_points()
 {
    crash_suite(20, |_, turns| Stepper::start(turns)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long variant: the crash suite at 100 kill points; .ci/run runs it"]
async fn crash_suite_long() {
    crash_suite(100, |_, turns| Stepper::start(turns)).await;
}
