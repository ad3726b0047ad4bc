//! The JetStream session backend against a real nats-server (SESS-31, SESS-32, nats-wire §3): the kit, bind
//! checks (version and each stream misconfiguration), the fence against a second writer, lost-ack adoption and
//! hostile journal contents.
#![cfg(all(feature = "nats", feature = "testing"))]

mod common;

use async_nats::jetstream::{self, stream};
use common::nats::{NatsServer, parse_version};
use fisk_ai::conformance::session::{SessionHooks, check};
use fisk_ai::llm::Message;
use fisk_ai::nats::NatsConnection;
use fisk_ai::session::jetstream::JetStreamSessions;
use fisk_ai::session::{JournalRecord, JournalWriter, Payload, SessionId, SessionStore, UserRecord};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

async fn connect(server: &NatsServer) -> NatsConnection {
    NatsConnection::borrowed(async_nats::connect(server.url()).await.unwrap(), "test-ctx")
}

/// A stream SESS-31 accepts.
fn good(name: &str, prefix: &str) -> stream::Config {
    stream::Config {
        name: name.into(),
        subjects: vec![format!("{prefix}.>")],
        max_messages_per_subject: 1,
        discard: stream::DiscardPolicy::New,
        discard_new_per_subject: true,
        max_message_size: -1,
        ..Default::default()
    }
}

async fn make(nats: &NatsConnection, config: stream::Config) {
    jetstream::new(nats.client().clone()).create_stream(config).await.unwrap();
}

fn user(seq: u64, text: &str) -> JournalRecord {
    JournalRecord::new(seq, Payload::User(UserRecord::new(Message::user(text))))
}

async fn bound(server: &NatsServer, name: &str, prefix: &str) -> (NatsConnection, JetStreamSessions) {
    let nats = connect(server).await;
    make(&nats, good(name, prefix)).await;
    let sessions = JetStreamSessions::bind(&nats, name).await.unwrap();
    (nats, sessions)
}

/// Set `name`'s max message size from a thread of its own: the kit's hooks are synchronous and run on the test's
/// runtime.
fn set_max_message_size(url: &str, name: &str, size: i32) {
    let (url, name) = (url.to_owned(), name.to_owned());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let js = jetstream::new(async_nats::connect(url).await.unwrap());
            let mut stream = js.get_stream(&name).await.unwrap();
            let config = stream::Config { max_message_size: size, ..stream.info().await.unwrap().config.clone() };
            js.update_stream(config).await.unwrap();
        });
    })
    .join()
    .unwrap();
}

#[tokio::test]
#[ignore = "needs nats-server 2.11+"]
async fn sess_31_32_33_the_jetstream_store_keeps_the_session_store_contract() {
    let server = NatsServer::start_fencing();
    let nats = connect(&server).await;
    let n = Arc::new(AtomicUsize::new(0));
    let made = n.clone();
    let fresh = move || {
        let (nats, n) = (nats.clone(), made.clone());
        async move {
            // A fresh stream (and multi-token prefix) per case.
            let i = n.fetch_add(1, Ordering::SeqCst);
            make(&nats, good(&format!("KIT{i}"), &format!("kit.{i}.runs"))).await;
            Arc::new(JetStreamSessions::bind(&nats, &format!("KIT{i}")).await.unwrap()) as Arc<dyn SessionStore>
        }
    };
    // A failed append: the stream refuses every record for a while (a 16-byte limit), then takes them again.
    let last = move || format!("KIT{}", n.load(Ordering::SeqCst) - 1);
    let (url, url2, last2) = (server.url(), server.url(), last.clone());
    let hooks = SessionHooks::new()
        .fail_next_append(move |_| set_max_message_size(&url, &last(), 16))
        .recover(move |_| set_max_message_size(&url2, &last2(), -1));
    let report = check("session (jetstream)", fresh, hooks).await;
    report.assert_passed();
    let skipped: Vec<&str> = report.skipped.iter().map(|(c, _)| *c).collect();
    assert_eq!(skipped, ["a_torn_tail_is_dropped_and_the_next_append_lands"], "no torn tail in a stream: {report}");
}

#[tokio::test]
#[ignore = "needs nats-server"]
async fn nats_wire_3_bind_refuses_a_server_older_than_2_11_naming_its_version_and_binds_a_newer_one() {
    let server = NatsServer::start();
    let line = server.version();
    let nats = connect(&server).await;
    make(&nats, good("RUNS", "runs")).await;
    let bound = JetStreamSessions::bind(&nats, "RUNS").await;
    let version = parse_version(&line).expect("a version line");
    if version < (2, 11) {
        let text = bound.expect_err("an old server is refused").to_string();
        let found = line.rsplit(' ').next().unwrap().trim_start_matches('v');
        assert!(text.contains(found) && text.contains("2.11") && text.contains("RUNS"), "{text}");
    } else {
        let sessions = bound.unwrap_or_else(|e| panic!("{line} can fence: {e}"));
        assert_eq!(sessions.prefix(), "runs");
    }
}

/// Bind a stream made from `config` and return the error text.
async fn refusal(server: &NatsServer, config: stream::Config) -> String {
    let nats = connect(server).await;
    let name = config.name.clone();
    make(&nats, config).await;
    let e = JetStreamSessions::bind(&nats, &name).await.expect_err("a misconfigured stream is refused");
    let text = e.to_string();
    assert!(text.contains(&name) && text.contains("test-ctx"), "the error names the stream and context: {text}");
    text
}

#[tokio::test]
#[ignore = "needs nats-server 2.11+"]
async fn sess_31_a_missing_stream_is_refused_with_the_command_that_creates_it() {
    let server = NatsServer::start_fencing();
    let nats = connect(&server).await;
    let text = JetStreamSessions::bind(&nats, "NOPE").await.unwrap_err().to_string();
    assert!(
        text.contains("NOPE") && text.contains("does not exist") && text.contains("nats stream add NOPE"),
        "{text}"
    );
    assert!(text.contains("--discard-per-subject") && text.contains("--max-msgs-per-subject 1"), "{text}");
}

#[tokio::test]
#[ignore = "needs nats-server 2.11+"]
async fn sess_31_each_stream_misconfiguration_is_refused_with_its_fix() {
    let server = NatsServer::start_fencing();
    let cases: Vec<(stream::Config, &str)> = vec![
        (stream::Config { subjects: vec!["plain.subject".into()], ..good("NOWILD", "x") }, "no wildcard subject"),
        (
            stream::Config { subjects: vec!["two.>".into(), "wild.*".into()], ..good("TWOWILD", "x") },
            "2 wildcard subjects",
        ),
        (stream::Config { max_messages_per_subject: 5, ..good("PERSUBJ", "p") }, "--max-msgs-per-subject 1"),
        (
            stream::Config { discard: stream::DiscardPolicy::Old, discard_new_per_subject: false, ..good("OLD", "o") },
            "--discard new",
        ),
        (stream::Config { discard_new_per_subject: false, ..good("NOPERSUBJ", "n") }, "--discard-per-subject"),
        (stream::Config { max_age: Duration::from_secs(3600), ..good("AGED", "aged") }, "--max-age 0"),
        (stream::Config { max_message_size: 1024, ..good("SMALL", "s") }, "--max-msg-size -1"),
    ];
    for (config, want) in cases {
        let name = config.name.clone();
        let text = refusal(&server, config).await;
        assert!(text.contains(want), "{name}: {want:?} missing from {text}");
        assert!(text.contains(&format!("nats stream edit {name}")), "{name}: {text}");
    }
}

#[tokio::test]
#[ignore = "needs nats-server 2.11+"]
async fn sess_32_a_concurrent_second_writer_gets_the_lock_error_and_nothing_is_overwritten() {
    let server = NatsServer::start_fencing();
    let (nats, sessions) = bound(&server, "RUNS", "ops.runs").await;
    let id = SessionId::new("shared").unwrap();
    let mut first = sessions.create(&id).await.unwrap();
    first.append(&user(1, "first 1")).await.unwrap();
    first.append(&user(2, "first 2")).await.unwrap();
    let (records, mut second) = sessions.open(&id).await.unwrap();
    assert_eq!(records.len(), 2);
    // Both race for record 3: the one that lands first wins, the other is refused.
    let (r1, r2) = (user(3, "first 3"), user(3, "second 3"));
    let (a, b) = tokio::join!(first.append(&r1), second.append(&r2));
    assert!(a.is_ok() != b.is_ok(), "exactly one writer wins: {a:?} {b:?}");
    let loser = a.as_ref().err().or(b.as_ref().err()).unwrap().to_string();
    assert!(loser.contains("locked") && loser.contains("shared") && loser.contains("RUNS"), "{loser}");
    let winner_text = if a.is_ok() { "first 3" } else { "second 3" };
    // The loser stays refused; the winner carries on.
    let (winner, refused) = if a.is_ok() { (&mut first, &mut second) } else { (&mut second, &mut first) };
    assert!(refused.append(&user(4, "loser 4")).await.is_err());
    winner.append(&user(4, "winner 4")).await.unwrap();
    let got = sessions.read(&id).await.unwrap();
    let texts: Vec<String> = got
        .iter()
        .map(|r| match &r.payload {
            Payload::User(u) => u.message.text(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(texts, ["first 1", "first 2", winner_text, "winner 4"]);
    // Reads leave no consumer behind.
    let mut raw = jetstream::new(nats.client().clone()).get_stream("RUNS").await.unwrap();
    assert_eq!(raw.info().await.unwrap().state.consumer_count, 0);
    // Listed, with the time of its last message as "updated".
    let listed = sessions.list().await.unwrap();
    assert!(listed.iter().any(|e| e.id == id && e.updated.is_some()), "{listed:?}");
    // A second create of the session is "already exists".
    let e = sessions.create(&id).await.unwrap_err().to_string();
    assert!(e.contains("already exists"), "{e}");
}

#[tokio::test]
#[ignore = "needs nats-server 2.11+"]
async fn sess_32_a_lost_acknowledgement_is_recognized_by_the_nonce_and_adopted() {
    let server = NatsServer::start_fencing();
    let nats = connect(&server).await;
    // A short duplicate window, so the retry meets the fence (10071) rather than the server's de-duplication.
    make(&nats, stream::Config { duplicate_window: Duration::from_millis(100), ..good("RUNS", "runs") }).await;
    let sessions = JetStreamSessions::bind(&nats, "RUNS").await.unwrap();
    let id = SessionId::new("lost-ack").unwrap();
    let mut writer = sessions.create_writer(&id).await.unwrap();
    writer.append(&user(1, "one")).await.unwrap();
    // Record 2 lands with this writer's msg-id, but its acknowledgement never reaches the writer.
    let js = jetstream::new(nats.client().clone());
    let landed = user(2, "two");
    let publish = jetstream::message::PublishMessage::build()
        .payload(landed.to_json().into())
        .message_id(format!("{}-2", writer.nonce()));
    js.send_publish("runs.lost-ack.2", publish).await.unwrap().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The writer's retry is fenced out, finds its own message and adopts it.
    writer.append(&landed).await.unwrap();
    writer.append(&user(3, "three")).await.unwrap();
    assert_eq!(sessions.read(&id).await.unwrap().iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);

    // Within the default duplicate window (the server answers the retry as a duplicate or fences it): adopted too.
    make(&nats, good("DEDUP", "dedup")).await;
    let dedup = JetStreamSessions::bind(&nats, "DEDUP").await.unwrap();
    let mut writer = dedup.create_writer(&id).await.unwrap();
    writer.append(&user(1, "one")).await.unwrap();
    let publish = jetstream::message::PublishMessage::build()
        .payload(landed.to_json().into())
        .message_id(format!("{}-2", writer.nonce()));
    js.send_publish("dedup.lost-ack.2", publish).await.unwrap().await.unwrap();
    writer.append(&landed).await.unwrap();
    writer.append(&user(3, "three")).await.unwrap();
    assert_eq!(dedup.read(&id).await.unwrap().iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);

    // The same landing by a foreign writer is the lock error instead.
    let other = SessionId::new("foreign").unwrap();
    let mut writer = sessions.create_writer(&other).await.unwrap();
    writer.append(&user(1, "one")).await.unwrap();
    let publish = jetstream::message::PublishMessage::build()
        .payload(user(2, "theirs").to_json().into())
        .message_id("0123456789abcdef0123456789abcdef-2");
    js.send_publish("runs.foreign.2", publish).await.unwrap().await.unwrap();
    let e = writer.append(&user(2, "mine")).await.unwrap_err().to_string();
    assert!(e.contains("locked") && e.contains("runs.foreign.2"), "{e}");
}

#[tokio::test]
#[ignore = "needs nats-server 2.11+"]
async fn hostile_journal_contents_are_clear_errors_naming_stream_subject_and_sequence() {
    let server = NatsServer::start_fencing();
    let (nats, sessions) = bound(&server, "RUNS", "runs").await;
    let js = jetstream::new(nats.client().clone());
    let put = |subject: &'static str, body: Vec<u8>| {
        let js = js.clone();
        async move { js.publish(subject, body.into()).await.unwrap().await.unwrap() }
    };
    // An unparsable body.
    let mut w = sessions.create(&SessionId::new("garbage").unwrap()).await.unwrap();
    w.append(&user(1, "one")).await.unwrap();
    drop(w);
    put("runs.garbage.2", b"{not json".to_vec()).await;
    let e = sessions.read(&SessionId::new("garbage").unwrap()).await.unwrap_err().to_string();
    assert!(e.contains("corrupt") && e.contains("RUNS") && e.contains("runs.garbage.2"), "{e}");
    assert!(sessions.open(&SessionId::new("garbage").unwrap()).await.is_err());
    // An oversize body: a megabyte of noise is reported by size, not echoed.
    put("runs.big._meta", vec![b'x'; 1 << 20]).await;
    let e = sessions.read(&SessionId::new("big").unwrap()).await.unwrap_err().to_string();
    assert!(e.contains("runs.big._meta") && e.contains("1048576 bytes") && e.len() < 2000, "{e}");
    // A foreign writer's message: a valid record on the wrong subject, and a subject that is no journal's.
    let mut w = sessions.create(&SessionId::new("foreign").unwrap()).await.unwrap();
    w.append(&user(1, "one")).await.unwrap();
    drop(w);
    put("runs.foreign.3", user(2, "misplaced").to_json()).await;
    let e = sessions.read(&SessionId::new("foreign").unwrap()).await.unwrap_err().to_string();
    assert!(e.contains("runs.foreign.3") && e.contains("not record 3"), "{e}");
    let mut w = sessions.create(&SessionId::new("odd").unwrap()).await.unwrap();
    w.append(&user(1, "one")).await.unwrap();
    drop(w);
    put("runs.odd.notes", b"hello".to_vec()).await;
    let e = sessions.read(&SessionId::new("odd").unwrap()).await.unwrap_err().to_string();
    assert!(e.contains("runs.odd.notes") && e.contains("not a journal subject"), "{e}");
    // Listing still works around broken journals, and a missing session is named.
    assert!(sessions.list().await.unwrap().len() >= 4);
    let e = sessions.read(&SessionId::new("absent").unwrap()).await.unwrap_err().to_string();
    assert!(e.contains("absent") && e.contains("no such session"), "{e}");
}

/// SESS-34 (issue 24 item 9): a session stream deleted mid-run fails the next append at once, naming the stream
/// and the command that creates it, instead of retrying "no responders" until the 15 s acknowledgement bound.
#[tokio::test]
#[ignore = "needs nats-server 2.11+"]
async fn sess_34_a_deleted_session_stream_fails_the_next_append_at_once_with_its_fix() {
    let server = NatsServer::start_fencing();
    let (nats, sessions) = bound(&server, "GONE", "ops.gone").await;
    let id = SessionId::new("deleted-mid-run").unwrap();
    let mut writer = sessions.create(&id).await.unwrap();
    writer.append(&user(1, "before")).await.unwrap();
    assert!(jetstream::new(nats.client().clone()).delete_stream("GONE").await.unwrap().success);
    let text = writer.append(&user(2, "after")).await.unwrap_err().to_string();
    assert!(text.contains("session stream GONE no longer exists"), "{text}");
    assert!(text.contains("nats stream add GONE --subjects 'ops.gone.>'"), "the fix: {text}");
    assert!(!text.contains("no acknowledgement within"), "the final answer, not the acknowledgement bound: {text}");
}
