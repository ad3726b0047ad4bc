//! `cli chat` on a real terminal (CONV-7): the example CLI in a private tmux server against the fake Messages API,
//! wrapping the fake `mcp-app`, whose gated `purge` leaves a line in a `ran` file when it runs. Prompts are typed
//! with `send-keys`; the answers stream to stdout, which goes to a file, while the line editor and stderr show on
//! the screen.
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "terminal"))]

mod common;
mod fake_anthropic;
mod tmux;

use fake_anthropic::{FakeAnthropic, Reply, streamed};
use fisk_ai::session::{FileSessionStore, Journal, SessionId, SessionStore};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::time::Duration;
use tmux::{Pane, quote, require_tmux};

fn answer(text: &str) -> Reply {
    streamed(&[json!({"type": "text", "text": text})], "end_turn")
}

fn purge(id: &str) -> Reply {
    streamed(&[json!({"type": "tool_use", "id": id, "name": "purge", "input": {"target": "ORDERS"}})], "tool_use")
}

/// The texts of the user turns a request sent (tool results aside).
fn user_texts(body: &Value) -> Vec<String> {
    (body["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "user")
        .filter_map(|m| match &m["content"] {
            Value::String(s) => Some(s.clone()),
            content => {
                let text: String = content.as_array()?.iter().filter_map(|b| b["text"].as_str()).collect();
                (!text.is_empty()).then_some(text)
            }
        })
        .collect()
}

/// Type `line` at the chat's prompt once it is back on screen (`n` prompts shown so far, counting this one).
fn say(pane: &Pane, line: &str) {
    pane.wait_screen("the prompt", |s| s.lines().last().is_some_and(|l| l.trim_end() == ">"));
    pane.keys(&["-l", line]);
    pane.keys(&["Enter"]);
}

fn approvals(screen: &str) -> usize {
    screen.matches("Approval needed for \"purge\"").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tmux; .ci/run provides it"]
async fn conv_7_a_chat_on_a_terminal_follows_up_clears_cancels_a_turn_and_rotates_its_session() {
    let test = "conv_7_a_chat_on_a_terminal";
    require_tmux(test);
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "mcp-app");
    let config = dir.path().join("agent.yaml");
    let yaml =
        format!("identity: tmuxchat\napplication_path: {}\nsystem_prompt: Do it.\nllm:\n  model: m\n", app.display());
    std::fs::write(&config, yaml).unwrap();
    let slow = answer("too late").with_delay(Duration::from_secs(60));
    let replies =
        [purge("c1"), answer("first answer"), answer("second answer"), slow, purge("c2"), answer("after clear")];
    let server = FakeAnthropic::with_replies(replies).await;
    let state = dir.path().join("state");
    let args = format!(
        "chat --config {} --state-dir {} --base-url {} --api-key test-key --checkpoint --name chat-a",
        quote(config.to_str().unwrap()),
        quote(state.to_str().unwrap()),
        quote(&server.url()),
    );
    let pane = Pane::start("cli", test, &args, "");

    // A gated call, allowed for the conversation; then the answer streams to stdout.
    say(&pane, "hello");
    pane.wait_screen("the approval prompt", |s| approvals(s) == 1 && s.contains("> No, decline"));
    pane.keys(&["Down", "Down", "Enter"]);
    pane.wait_stdout("the first answer", |o| o.contains("first answer"));

    // A follow-up carries the earlier turns.
    say(&pane, "and then?");
    pane.wait_stdout("the second answer", |o| o.contains("second answer"));
    assert_eq!(user_texts(server.requests()[2].body_json()), ["hello", "and then?"]);

    // Ctrl-C while the model is slow cancels that turn only (SIGINT straight to the CLI: through the pane's shell
    // the signal would also end the `sh` running it).
    say(&pane, "slow");
    let start = std::time::Instant::now();
    while server.requests().len() < 4 {
        assert!(start.elapsed() < tmux::PATIENCE, "the slow request never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(pane.example_pid("cli")), Signal::SIGINT).unwrap();
    pane.wait_screen("the cancelled turn", |s| s.contains("error: the turn was cancelled"));

    // After /clear the next request holds only the new prompt, and the allowance is gone: purge is asked again.
    say(&pane, "/clear");
    pane.wait_screen("the reset", |s| s.contains("notice: the conversation was cleared"));
    say(&pane, "fresh");
    pane.wait_screen("the approval prompt again", |s| approvals(s) == 2 && s.contains("> No, decline"));
    pane.keys(&["Enter"]);
    pane.wait_stdout("the answer after the reset", |o| o.contains("after clear"));
    let requests = server.requests();
    assert_eq!(user_texts(requests[4].body_json()), ["fresh"], "only the new prompt after /clear");
    assert_eq!(std::fs::read_to_string(dir.path().join("ran")).unwrap_or_default().lines().count(), 1);

    say(&pane, "/exit");
    let (code, out) = pane.finished();
    let screen = pane.screen(false);
    assert_eq!(code, "0", "{screen}");
    assert!(!out.contains("too late"), "the cancelled turn's answer never came: {out}");

    // Two sessions: the first suspended and resumable, ending where the reset happened, linked to the second.
    let store = FileSessionStore::new(&state);
    let fold = |id: String| {
        let store = store.clone();
        async move { Journal::fold(store.read(&SessionId::new(id).unwrap()).await.unwrap()).unwrap() }
    };
    let first = fold("chat-a".into()).await;
    assert_eq!(first.status(), "suspended");
    assert_eq!(first.allowed, ["purge"], "its own answers stay with it");
    let last = first.messages.last().unwrap();
    assert_eq!(last.text(), "slow", "it ends where the reset happened: the cancelled turn's prompt");
    let next = first.next.clone().expect("linked to the session that goes on");
    let second = fold(next.clone()).await;
    assert_eq!((second.previous.as_deref(), second.meta.prompt.as_str()), (Some("chat-a"), "fresh"));
    assert!(second.allowed.is_empty());
    assert!(screen.contains(&format!("notice: continuing in session {next}")), "{screen}");
    assert_eq!(store.list().await.unwrap().len(), 2);
}
