//! Binding an existing stream (SESS-31): the server version and the stream's configuration, each mismatch with
//! the exact change that fixes it.

use crate::error::{Error, Result};
use async_nats::jetstream::stream::{Config, DiscardPolicy};
use std::time::Duration;

/// Fencing on a subject filter (`Nats-Expected-Last-Subject-Sequence-Subject`) arrived in nats-server 2.11.
pub(super) const MIN_SERVER: (u64, u64) = (2, 11);

/// The smallest `max_msg_size` that holds a journal record (SESS-31).
pub(super) const MIN_MESSAGE_SIZE: i32 = 4096;

/// Refuse a server that cannot fence (nats-wire §3), naming the version it reported.
pub(super) fn check_version(stream: &str, context: &str, version: &str) -> Result<()> {
    let mut parts = version.trim().trim_start_matches('v').split(['.', '-']).map(|p| p.parse::<u64>());
    let found = match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => Some((major, minor)),
        _ => None,
    };
    match found {
        Some(v) if v >= MIN_SERVER => Ok(()),
        _ => Err(Error::nats(format!(
            "cannot keep sessions in stream {stream} (context {context}): the NATS server reports version {:?}, but \
             the jetstream session backend needs nats-server {}.{} or newer (it fences each journal with \
             Nats-Expected-Last-Subject-Sequence-Subject); upgrade the server or use the file backend",
            version, MIN_SERVER.0, MIN_SERVER.1
        ))),
    }
}

/// The command that creates a stream SESS-31 accepts, for messages.
pub(super) fn add_hint(stream: &str, prefix: &str) -> String {
    format!(
        "nats stream add {stream} --subjects '{prefix}.>' --storage file --retention limits --discard new \
         --discard-per-subject --max-msgs-per-subject 1 --max-age 0 --max-msg-size -1 --max-msgs -1 --max-bytes -1 \
         --dupe-window 2m --replicas 1 --defaults"
    )
}

/// The journal prefix of `config`, or one error listing every mismatch and how to fix each.
pub(super) fn check_config(config: &Config, context: &str) -> Result<String> {
    let stream = config.name.as_str();
    let mut problems: Vec<String> = Vec::new();
    let wildcards: Vec<&String> = config.subjects.iter().filter(|s| s.contains(['*', '>'])).collect();
    let prefix = match wildcards.as_slice() {
        [one] => match one.strip_suffix(".>").filter(|p| !p.is_empty() && !p.contains(['*', '>'])) {
            Some(prefix) => Some(prefix.to_owned()),
            None => {
                problems.push(format!(
                    "its wildcard subject {one:?} is not of the form <prefix>.> (fix: nats stream edit {stream} \
                     --subjects 'runs.>')"
                ));
                None
            }
        },
        [] => {
            problems.push(format!(
                "it has no wildcard subject <prefix>.> (subjects: {:?}; fix: nats stream edit {stream} --subjects \
                 'runs.>')",
                config.subjects
            ));
            None
        }
        many => {
            problems.push(format!(
                "it has {} wildcard subjects ({many:?}) but journals need exactly one, of the form <prefix>.> (fix: \
                 nats stream edit {stream} --subjects 'runs.>', keeping only literal subjects besides it)",
                many.len()
            ));
            None
        }
    };
    if config.max_messages_per_subject != 1 {
        problems.push(format!(
            "max messages per subject is {} but must be 1 (fix: nats stream edit {stream} --max-msgs-per-subject 1)",
            config.max_messages_per_subject
        ));
    }
    if config.discard != DiscardPolicy::New {
        problems.push(format!(
            "its discard policy is {:?} but must be new (fix: nats stream edit {stream} --discard new)",
            config.discard
        ));
    }
    if !config.discard_new_per_subject {
        problems.push(format!(
            "discard new per subject is off but must be on (fix: nats stream edit {stream} --discard-per-subject)"
        ));
    }
    if config.max_age != Duration::ZERO {
        problems.push(format!(
            "its max age is {:?}, which would expire journals (fix: nats stream edit {stream} --max-age 0)",
            config.max_age
        ));
    }
    if config.max_message_size > 0 && config.max_message_size < MIN_MESSAGE_SIZE {
        problems.push(format!(
            "its max message size is {} bytes but journal records need at least {MIN_MESSAGE_SIZE} (fix: nats \
             stream edit {stream} --max-msg-size -1)",
            config.max_message_size
        ));
    }
    match (prefix, problems.is_empty()) {
        (Some(prefix), true) => Ok(prefix),
        _ => Err(Error::config_key(
            "harness.sessions.options.stream",
            format!("stream {stream} (context {context}) cannot hold session journals: {}", problems.join("; ")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Config {
        Config {
            name: "RUNS".into(),
            subjects: vec!["ops.runs.>".into(), "literal.subject".into()],
            max_messages_per_subject: 1,
            discard: DiscardPolicy::New,
            discard_new_per_subject: true,
            max_message_size: -1,
            ..Config::default()
        }
    }

    #[test]
    fn sess_31_a_multi_token_prefix_binds_and_literal_subjects_are_ignored() {
        assert_eq!(check_config(&good(), "ctx").unwrap(), "ops.runs");
    }

    #[test]
    fn sess_31_every_mismatch_is_named_with_its_fix() {
        let bad = Config {
            subjects: vec!["a.>".into(), "b.*".into()],
            max_messages_per_subject: 5,
            discard: DiscardPolicy::Old,
            discard_new_per_subject: false,
            max_age: Duration::from_secs(60),
            max_message_size: 100,
            ..good()
        };
        let text = check_config(&bad, "ctx").unwrap_err().to_string();
        for want in [
            "stream RUNS (context ctx)",
            "2 wildcard subjects",
            "--max-msgs-per-subject 1",
            "--discard new",
            "--discard-per-subject",
            "--max-age 0",
            "--max-msg-size -1",
        ] {
            assert!(text.contains(want), "{want:?} missing from {text}");
        }
    }

    #[test]
    fn sess_31_a_wildcard_that_is_not_prefix_dot_gt_is_refused() {
        for subjects in [vec!["runs.*".to_owned()], vec![">".to_owned()], vec!["a.*.>".to_owned()]] {
            let text = check_config(&Config { subjects: subjects.clone(), ..good() }, "c").unwrap_err().to_string();
            assert!(text.contains("not of the form <prefix>.>"), "{subjects:?}: {text}");
        }
    }

    #[test]
    fn a_max_message_size_of_4096_or_unlimited_binds() {
        for size in [-1, 0, 4096, 1 << 20] {
            assert!(check_config(&Config { max_message_size: size, ..good() }, "c").is_ok(), "{size}");
        }
    }

    #[test]
    fn nats_wire_3_servers_older_than_2_11_are_refused_naming_the_version() {
        let text = check_version("RUNS", "ctx", "2.9.10").unwrap_err().to_string();
        assert!(text.contains("\"2.9.10\"") && text.contains("2.11"), "{text}");
        assert!(check_version("RUNS", "ctx", "garbage").is_err());
        for ok in ["2.11.0", "2.15.1", "v3.0.0", "2.12.0-beta.1"] {
            assert!(check_version("RUNS", "ctx", ok).is_ok(), "{ok}");
        }
    }
}
