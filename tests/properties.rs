//! Property tests (issue 16): each property runs [`CASES`] generated cases in the normal suite and [`LONG`] in an
//! ignored long variant that `.ci/run` runs. The generators live in `tests/properties/`, one file per property.

#[path = "properties/argv.rs"]
mod argv;
#[path = "properties/config.rs"]
mod config;
#[path = "properties/journal.rs"]
mod journal;
#[path = "properties/output.rs"]
mod output;
#[path = "properties/sanitize.rs"]
mod sanitize;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Cases per property in the normal suite.
const CASES: u32 = 10_000;
/// Cases per property in the long variants.
const LONG: u32 = 1_000_000;

/// Runs `test` on `cases` values of `strategy` with a fresh random seed; a failure panics with the shrunk input.
/// Nothing is persisted: a failing input is printed, and belongs in a named regression test.
fn run<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    if let Err(e) = TestRunner::new(config).run(&strategy, test) {
        panic!("{e}");
    }
}

#[test]
fn exec_1_5_the_argv_mapper_refuses_naming_the_property_or_renders_every_value_after_its_flag_or_the_separator() {
    argv::check(CASES);
}

#[test]
#[ignore = "long variant: 1M cases; .ci/run runs it"]
fn exec_1_5_the_argv_mapper_long() {
    argv::check(LONG);
}

#[test]
fn cfg_1_any_bytes_parse_to_a_config_or_a_located_error() {
    config::check(CASES);
}

#[test]
#[ignore = "long variant: 1M cases; .ci/run runs it"]
fn cfg_1_any_bytes_parse_to_a_config_or_a_located_error_long() {
    config::check(LONG);
}

#[test]
fn sess_13_30_a_damaged_journal_folds_without_a_repeated_turn_or_is_a_session_error() {
    journal::check(CASES);
}

#[test]
#[ignore = "long variant: 1M cases; .ci/run runs it"]
fn sess_13_30_a_damaged_journal_folds_without_a_repeated_turn_or_is_a_session_error_long() {
    journal::check(LONG);
}

#[test]
fn gate_8_sanitized_text_holds_no_control_or_format_character() {
    sanitize::check(CASES);
}

#[test]
#[ignore = "long variant: 1M cases; .ci/run runs it"]
fn gate_8_sanitized_text_holds_no_control_or_format_character_long() {
    sanitize::check(LONG);
}

#[test]
fn exec_12_13_a_command_result_is_within_the_output_cap() {
    output::check(CASES);
}

#[test]
#[ignore = "long variant: 1M cases; .ci/run runs it"]
fn exec_12_13_a_command_result_is_within_the_output_cap_long() {
    output::check(LONG);
}
