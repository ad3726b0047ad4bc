//! `cli chat` over piped stdin (CONV-8): the real example binary, the real Anthropic provider over loopback HTTP to
//! the in-process fake Messages API. Each line is a prompt; `/clear` and `/exit` work as on a terminal; the answers
//! stream to stdout. Crossing a chat and a one-shot session on resume is refused both ways (CONV-4).
#![cfg(all(feature = "anthropic", feature = "mcp", feature = "nats", feature = "terminal"))]

mod common;
mod fake_anthropic;

use common::*;
use fake_anthropic::{FakeAnthropic, Reply, streamed};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use tokio::io::AsyncWriteExt;

fn answer(text: &str) -> Reply {
    streamed(&[json!({"type": "text", "text": text})], "end_turn")
}

fn config(dir: &Path) -> PathBuf {
    let config = dir.join("agent.yaml");
    let app = root().join("examples/cowsay/cowsay");
    let yaml =
        format!("identity: chatter\napplication_path: {}\nsystem_prompt: Chat.\nllm:\n  model: m\n", app.display());
    std::fs::write(&config, yaml).unwrap();
    config
}

/// `cli <command> --config ... --base-url ... <args>` with `input` piped to stdin.
async fn cli(server: &FakeAnthropic, dir: &Path, command: &str, args: &[&str], input: &str) -> Output {
    let config = config(dir);
    let state = dir.join("state");
    let mut base = vec![command, "--config", config.to_str().unwrap(), "--base-url"];
    let url = server.url();
    base.push(&url);
    base.extend(["--state-dir", state.to_str().unwrap()]);
    base.extend(args);
    let mut cmd = tokio::process::Command::from(example_cli(&base, dir));
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    child.wait_with_output().await.unwrap()
}

/// `cli chat` against `server` with every stream piped, left running.
fn spawn_chat(server: &FakeAnthropic, dir: &Path) -> tokio::process::Child {
    let config = config(dir);
    let url = server.url();
    let args = ["chat", "--config", config.to_str().unwrap(), "--base-url", &url];
    let mut cmd = tokio::process::Command::from(example_cli(&args, dir));
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// The texts of the user turns a request sent.
fn user_texts(body: &Value) -> Vec<String> {
    (body["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            content => (content.as_array().unwrap().iter()).filter_map(|b| b["text"].as_str()).collect::<String>(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conv_8_piped_prompts_each_get_an_answer_and_the_chat_exits_0() {
    let server = FakeAnthropic::with_replies([answer("one."), answer("two."), answer("three.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let out = cli(&server, dir.path(), "chat", &[], "first\nsecond\n\nthird\n").await;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "one.\ntwo.\nthree.\n", "the answers stream to stdout, one per prompt; stderr:\n{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "the empty line is no prompt");
    assert_eq!(user_texts(requests[2].body_json()), ["first", "second", "third"], "follow-ups carry earlier turns");
    assert!(stderr.contains("[turn: 1 model call(s)"), "each turn's counters: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conv_8_piped_clear_and_exit_work_as_on_a_terminal() {
    let server = FakeAnthropic::with_replies([answer("a."), answer("b.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let input = "before\n/clear\nafter\n/exit\nnever\n";
    let out = cli(&server, dir.path(), "chat", &["--checkpoint", "--name", "piped"], input).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a.\nb.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "nothing after /exit");
    assert_eq!(user_texts(requests[1].body_json()), ["after"], "after /clear only the new prompt");
    assert!(stderr.contains("session piped holds the conversation before /clear"), "{stderr}");
    // `session show` lists the rotated sessions and their link.
    let state = dir.path().join("state");
    let shown = example_cli(&["session", "--state-dir", state.to_str().unwrap(), "show", "piped"], dir.path())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let next = shown.lines().find_map(|l| l.strip_prefix("Conversation:   piped (this) -> ")).unwrap_or_else(|| {
        panic!("no link in:\n{shown}");
    });
    assert!(shown.contains("Status:         suspended") && shown.contains("Kind:           chat"), "{shown}");
    let shown =
        example_cli(&["session", "--state-dir", state.to_str().unwrap(), "show", next], dir.path()).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(&format!("Conversation:   piped -> {next} (this)")), "{shown}");
    assert!(shown.contains("Prompt:         after"), "{shown}");
    // The session after /clear resumes as a chat: its conversation goes on from "after".
    server.push(answer("c."));
    let resumed = cli(&server, dir.path(), "chat", &["--resume", next], "more\n").await;
    assert_eq!(resumed.status.code(), Some(0), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(String::from_utf8_lossy(&resumed.stdout), "c.\n");
    assert_eq!(user_texts(server.requests()[2].body_json()), ["after", "more"]);

    // CONV-4 through the CLI: the rotated chat session resumes as a chat only, a one-shot run as a run only.
    let run = cli(&server, dir.path(), "run", &["--resume", "piped"], "").await;
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1));
    assert!(stderr.contains("session piped is a chat session; resume it as a chat"), "{stderr}");
    server.push(streamed(&[json!({"type": "text", "text": "x"})], "max_tokens"));
    let one_shot = cli(&server, dir.path(), "run", &["--checkpoint", "--name", "once", "hi"], "").await;
    assert_eq!(one_shot.status.code(), Some(1), "{}", String::from_utf8_lossy(&one_shot.stderr));
    let chat = cli(&server, dir.path(), "chat", &["--resume", "once"], "").await;
    let stderr = String::from_utf8_lossy(&chat.stderr);
    assert_eq!(chat.status.code(), Some(1));
    assert!(stderr.contains("session once is a one-shot run; resume it with `run --resume once`"), "{stderr}");
}

/// A piped line past the 1 MiB prompt bound (64 MiB without a newline) is skipped with an error, read in bounded
/// memory, and the chat goes on with the next line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conv_8_an_oversize_piped_line_is_skipped_in_bounded_memory() {
    use tokio::io::AsyncReadExt;
    let server = FakeAnthropic::with_replies([answer("fine.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_chat(&server, dir.path());
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let block = vec![b'x'; 1 << 20];
    for _ in 0..64 {
        stdin.write_all(&block).await.unwrap();
    }
    stdin.write_all(b"\n").await.unwrap();
    let mut said = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&said).contains("that line was skipped") {
        let n = stderr.read(&mut buf).await.unwrap();
        assert!(n > 0, "stderr ended: {}", String::from_utf8_lossy(&said));
        said.extend_from_slice(&buf[..n]);
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    assert!(peak_kb < 48 << 10, "the chat held {peak_kb} kB while reading a 64 MiB line");
    stdin.write_all(b"hello\n").await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fine.\n");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(user_texts(server.requests()[0].body_json()), ["hello"]);
}

/// SIGTERM while the chat waits for the next prompt ends it at once, with the last turn's outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conv_8_sigterm_at_the_prompt_ends_the_chat() {
    use tokio::io::AsyncReadExt;
    let server = FakeAnthropic::with_replies([answer("fine.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_chat(&server, dir.path());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").await.unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !got.ends_with(b"fine.\n") {
        let n = stdout.read(&mut buf).await.unwrap();
        assert!(n > 0, "stdout ended early");
        got.extend_from_slice(&buf[..n]);
    }
    // The chat now waits for a line that never comes (stdin stays open).
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(0), "ended by the signal's handler, not killed by it");
    drop(stdin);
}
