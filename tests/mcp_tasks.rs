//! Tool calls as MCP tasks (TASK-1..6) from the real server, over loopback HTTP on both lifecycles and over the
//! real `cli mcp --stdio` process, through rmcp's client: create, poll and fetch the result; cancel kills the
//! process group; the TTL; the count bound; another session cannot see a task; a gated task asks in its own
//! `input_required` round; progress as the status message.
#![cfg(feature = "mcp")]

mod common;
#[path = "mcp_support/mod.rs"]
mod mcp_support;

use common::procs::wait_gone;
use mcp_support::stdio::StdioServer;
use mcp_support::*;
use rmcp::model::{CallToolResponse, CancelTaskParams, GetTaskParams, UpdateTaskParams};
use serde_json::{Value, json};
use std::time::Duration;

/// Call `name` on a client that declared tasks; the new task's id, or the direct result when none was made.
async fn create(client: &Client, name: &str, args: Value) -> Result<String, rmcp::model::CallToolResult> {
    match client.peer().call_tool_once(params(name, args)).await.expect("tools/call") {
        CallToolResponse::Task(created) => {
            let task = serde_json::to_value(&created).unwrap();
            assert_eq!(task["resultType"], "task", "{task}");
            assert_eq!(task["status"], "working", "TASK-1: a task starts working: {task}");
            Ok(created.task.task_id)
        }
        CallToolResponse::Complete(result) => Err(result),
        other => panic!("neither a task nor a result: {other:?}"),
    }
}

/// `tasks/get` as JSON.
async fn get(client: &Client, id: &str) -> Result<Value, String> {
    match client.peer().get_task(GetTaskParams::new(id)).await {
        Ok(got) => Ok(serde_json::to_value(got).unwrap()),
        Err(e) => Err(e.to_string()),
    }
}

/// Poll until the task's status is one of `until`.
async fn poll(client: &Client, id: &str, until: &[&str]) -> Value {
    for _ in 0..400 {
        let task = get(client, id).await.expect("tasks/get");
        if until.iter().any(|s| task["status"] == *s) {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {id} never reached {until:?}: {:?}", get(client, id).await);
}

/// The single text of a completed task's result.
fn result_text(task: &Value) -> String {
    task["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {task}")).to_owned()
}

#[tokio::test]
async fn task_1_a_declaring_client_gets_a_task_it_polls_to_the_result_on_both_eras() {
    let served = serve(&[]).await;
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), era).await;
        let id = create(&client, "echo", json!({"words": ["as", "a", "task"]})).await.expect("a task");
        let done = poll(&client, &id, &["completed", "failed", "cancelled"]).await;
        assert_eq!(done["status"], "completed", "{era:?}: {done}");
        let out: Value = serde_json::from_str(&result_text(&done)).unwrap();
        assert_eq!(out["output"], "echo: as a task\n", "{era:?}");
        assert_eq!(done["result"]["structuredContent"]["exit_code"], 0, "TYPED-1 inside a task: {done}");
        assert!(done["ttlMs"].as_u64().is_some_and(|t| t > 0) && done["pollIntervalMs"] == 1000, "{done}");

        // A built-in answers at once; a client without the extension sees no change.
        let builtin = create(&client, "base64_encode", json!({"text": "hi"})).await;
        assert!(builtin.is_err(), "{era:?}: built-ins are not tasks");
        client.cancel().await.unwrap();
        let plain = connect(&served.url, TestClient::new(false, Answer::Decline), era).await;
        assert_eq!(exec_json(&call(&plain, "echo", json!({"words": ["x"]})).await)["output"], "echo: x\n");
        assert!(plain.peer().get_task(GetTaskParams::new(&id)).await.is_err(), "{era:?}: no tasks/get undeclared");
        plain.cancel().await.unwrap();
    }
    served.stop().await.unwrap();
}

/// TASK-2: `tasks/cancel` kills the call's process group, the task settles `cancelled`, and the slot is free.
async fn cancel_kills(client: &Client, pidfile: &std::path::Path) {
    let id = create(client, "hang", json!({"pidfile": pidfile.display().to_string()})).await.expect("a task");
    let [a, b] = pids(pidfile).await;
    assert_eq!(get(client, &id).await.unwrap()["status"], "working");
    client.peer().cancel_task(CancelTaskParams::new(&id)).await.expect("tasks/cancel");
    wait_gone(a, "a sleeper of the cancelled task").await;
    wait_gone(b, "a sleeper of the cancelled task").await;
    let settled = poll(client, &id, &["completed", "failed", "cancelled"]).await;
    assert_eq!(settled["status"], "cancelled", "{settled}");
    let next = tokio::time::timeout(Duration::from_secs(20), call(client, "base64_encode", json!({"text": "a"})));
    assert!(!is_error(&next.await.expect("the slot was freed")));
    let again = create(client, "echo", json!({"words": ["next"]})).await.expect("a task");
    assert_eq!(poll(client, &again, &["completed"]).await["status"], "completed");
}

#[tokio::test]
async fn task_2_cancel_kills_the_process_group_over_http_and_stdio() {
    let served = serve(&["max_concurrent_tools: 1"]).await;
    for era in ERAS {
        let client = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), era).await;
        cancel_kills(&client, &served.path(&format!("pids-{era:?}"))).await;
        client.cancel().await.unwrap();
    }
    assert!(served.events().iter().any(|e| e.starts_with("cancelled hang")), "{:?}", served.events());
    served.stop().await.unwrap();

    let user = TestClient::new(false, Answer::Decline).with_tasks();
    let (mut server, client) = StdioServer::connect(&["max_concurrent_tools: 1"], user, Era::Modern).await;
    cancel_kills(&client, &server.path("pids")).await;
    client.cancel().await.unwrap();
    assert!(server.exited().await.success(), "{}", server.stderr());
}

#[tokio::test]
async fn task_3_past_max_new_tasks_are_refused_until_kept_ones_expire() {
    // With an audit trail, which records the refusal (AUD-1).
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("trail.jsonl");
    let extra = format!("  audit:\n    file: {}\n", trail.display());
    let yaml = config_yaml(dir.path(), &["tool_timeout: 1s", "tasks: {ttl: 1s, max: 1}"], &extra);
    let served = serve_config(dir, fisk_ai::Config::from_yaml_str(&yaml).unwrap(), |b| b).await;
    let client = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), Era::Modern).await;
    let id = create(&client, "echo", json!({"words": ["one"]})).await.expect("a task");
    assert_eq!(poll(&client, &id, &["completed"]).await["status"], "completed");
    let refused = create(&client, "echo", json!({"words": ["two"]})).await.expect_err("refused, not queued");
    assert!(is_error(&refused), "{refused:?}");
    let why = text(&refused);
    assert!(why.contains("expose.agent.mcp.tasks.max") && why.contains("1 tasks"), "{why}");
    let records: Vec<Value> =
        std::fs::read_to_string(&trail).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let refusal = records.iter().find(|r| r["event"] == "refused").expect("the refusal is recorded");
    assert!(refusal["reason"].as_str().unwrap().contains("tasks.max"), "{refusal}");
    let call: Vec<&str> =
        records.iter().filter(|r| r["call"] == refusal["call"]).map(|r| r["event"].as_str().unwrap()).collect();
    assert_eq!(call, ["requested", "refused"]);
    // The finished task is kept one TTL, then dropped with its result; then there is room again.
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let gone = get(&client, &id).await.expect_err("expired");
    assert!(gone.contains("unknown task"), "{gone}");
    let again = create(&client, "echo", json!({"words": ["three"]})).await.expect("room again");
    assert_eq!(poll(&client, &again, &["completed"]).await["status"], "completed");
    client.cancel().await.unwrap();
    served.stop().await.unwrap();
}

#[tokio::test]
async fn task_3_a_task_still_running_at_its_ttl_is_stopped_and_fails() {
    // An approval nobody answers outlives the TTL (the confirmation timeout is longer).
    let served =
        serve_with(&["tool_timeout: 1s", "tasks: {ttl: 1s}"], |b| b.confirm_timeout(Duration::from_secs(60))).await;
    let client = connect(&served.url, TestClient::new(true, Answer::Hang).with_tasks(), Era::Modern).await;
    let id = create(&client, "purge", json!({"target": "late"})).await.expect("a task");
    assert_eq!(poll(&client, &id, &["input_required"]).await["status"], "input_required");
    let failed = poll(&client, &id, &["completed", "failed", "cancelled"]).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    // Two clocks stop it at the same instant: this server's deadline on the call, and rmcp's TTL sweep on the
    // next poll (which aborts the call, killing its group the same way). Either may report it.
    let why = failed["error"]["message"].as_str().unwrap().to_lowercase();
    assert!(why.contains("ttl") && !why.contains("cancel"), "{failed}");
    assert!(served.ran().is_empty(), "nothing ran: {:?}", served.ran());
    client.cancel().await.unwrap();
    served.stop().await.unwrap();
}

#[tokio::test]
async fn task_4_another_session_cannot_see_or_cancel_a_task() {
    let served = serve(&[]).await;
    let pidfile = served.path("pids").display().to_string();
    let owner = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), Era::Legacy).await;
    let other = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), Era::Legacy).await;
    let id = create(&owner, "hang", json!({"pidfile": pidfile})).await.expect("a task");
    let [a, b] = pids(&served.path("pids")).await;
    let foreign = get(&other, &id).await.expect_err("invisible to another session");
    let unknown = get(&other, "00000000-0000-4000-8000-000000000000").await.expect_err("unknown");
    assert_eq!(foreign.replace(&id, "ID"), unknown.replace("00000000-0000-4000-8000-000000000000", "ID"));
    assert!(other.peer().cancel_task(CancelTaskParams::new(&id)).await.is_err());
    let mut answers = rmcp::model::InputResponses::new();
    answers.insert("approval".to_owned(), json!({"action": "accept", "content": {"approve": true}}));
    assert!(other.peer().update_task(UpdateTaskParams::new(&id, answers)).await.is_err());
    assert_eq!(get(&owner, &id).await.unwrap()["status"], "working", "the other session's cancel did nothing");
    assert!(common::procs::alive(a) && common::procs::alive(b), "the other session's cancel killed nothing");
    owner.peer().cancel_task(CancelTaskParams::new(&id)).await.expect("the owner cancels");
    assert_eq!(poll(&owner, &id, &["completed", "failed", "cancelled"]).await["status"], "cancelled");
    wait_gone(a, "a sleeper").await;
    wait_gone(b, "a sleeper").await;
    owner.cancel().await.unwrap();
    other.cancel().await.unwrap();
    served.stop().await.unwrap();
}

/// Answer a gated task's approval round with `answer`; the settled task.
async fn approve_task(client: &Client, target: &str, answer: Value) -> Value {
    let id = create(client, "purge", json!({"target": target})).await.expect("a task");
    let asking = poll(client, &id, &["input_required", "completed"]).await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    let asked = &asking["inputRequests"]["approval"];
    assert_eq!(asked["method"], "elicitation/create", "{asking}");
    assert!(asked["params"]["message"].as_str().unwrap().contains(&format!("purge -- {target}")), "{asking}");
    let mut answers = rmcp::model::InputResponses::new();
    answers.insert("approval".to_owned(), answer);
    client.peer().update_task(UpdateTaskParams::new(&id, answers)).await.expect("tasks/update");
    poll(client, &id, &["completed", "failed", "cancelled"]).await
}

#[tokio::test]
async fn task_5_a_gated_task_asks_in_its_own_round_under_the_same_rules() {
    let served = serve(&[]).await;
    let client = connect(&served.url, TestClient::new(true, Answer::Decline).with_tasks(), Era::Modern).await;
    let yes = approve_task(&client, "a", json!({"action": "accept", "content": {"approve": true}})).await;
    assert_eq!(serde_json::from_str::<Value>(&result_text(&yes)).unwrap()["output"], "purged a\n", "{yes}");
    let no = approve_task(&client, "b", json!({"action": "decline"})).await;
    assert_eq!(no["result"]["isError"], true, "{no}");
    let half = approve_task(&client, "c", json!({"action": "accept", "content": {"approve": "yes"}})).await;
    assert_eq!(half["result"]["isError"], true, "only an explicit approval runs it: {half}");
    client.cancel().await.unwrap();

    // A client that cannot be asked is refused under confirm_over_mcp: always, as for a direct call.
    let mute = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), Era::Modern).await;
    let id = create(&mute, "purge", json!({"target": "d"})).await.expect("a task");
    let refused = poll(&mute, &id, &["completed", "failed", "cancelled"]).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    mute.cancel().await.unwrap();
    assert_eq!(served.ran(), ["purge a"], "only the approved call ran");
    served.stop().await.unwrap();
}

#[tokio::test]
async fn task_6_progress_becomes_the_status_message() {
    let dir = tempfile::tempdir().unwrap();
    let app = common::fake_app(dir.path(), "progress-app");
    let yaml = format!("identity: prog\napplication_path: {}\nexpose:\n  agent:\n    mcp: {{}}\n", app.display());
    let served = serve_config(dir, fisk_ai::Config::from_yaml_str(&yaml).unwrap(), |b| b).await;
    let client = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), Era::Modern).await;
    for (name, quoted) in [("tick", true), ("quiet", false)] {
        let id = create(&client, name, json!({})).await.expect("a task");
        let mut seen = Vec::new();
        loop {
            let task = get(&client, &id).await.unwrap();
            if let Some(m) = task["statusMessage"].as_str() {
                seen.push(m.to_owned());
            }
            if task["status"] != "working" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(seen.iter().any(|m| m.starts_with("running for 1s")), "{name}: {seen:?}");
        assert_eq!(seen.iter().any(|m| m.contains("step ")), quoted, "{name}: ai:progress decides: {seen:?}");
        assert!(!seen.iter().any(|m| m.contains("hunter2") && !quoted), "{name}: {seen:?}");
    }
    client.cancel().await.unwrap();
    served.stop().await.unwrap();
}

#[test]
fn task_3_settings_are_checked_where_they_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let ok = fisk_ai::Config::from_yaml_str(&config_yaml(dir.path(), &["tasks: {ttl: 2h, max: 1024}"], "")).unwrap();
    let tasks = &ok.expose.agent.mcp.as_ref().unwrap().tasks;
    assert_eq!((tasks.ttl(), tasks.max()), (Duration::from_secs(7200), 1024));
    let defaults = fisk_ai::Config::from_yaml_str(&config_yaml(dir.path(), &[], "")).unwrap();
    let tasks = &defaults.expose.agent.mcp.as_ref().unwrap().tasks;
    assert_eq!((tasks.ttl(), tasks.max()), (fisk_ai::config::DEFAULT_MCP_TASK_TTL, 64));
    // Unwritten, the TTL is never shorter than tool_timeout: a call run as a task is not cut short.
    let long = fisk_ai::Config::from_yaml_str(&config_yaml(dir.path(), &["tool_timeout: 1h"], "")).unwrap();
    assert_eq!(long.expose.agent.mcp.as_ref().unwrap().task_ttl(), Duration::from_secs(3600));
    assert_eq!(defaults.expose.agent.mcp.as_ref().unwrap().task_ttl(), fisk_ai::config::DEFAULT_MCP_TASK_TTL);
    for (line, needle) in [
        ("tasks: {ttl: 5s}", "tool_timeout"),
        ("tasks: {max: 1025}", "at most 1024"),
        ("tasks: {max: -1}", "negative"),
        ("tasks: {ttl: 0s}", "ttl"),
        ("tasks: {queue: 3}", "queue"),
    ] {
        let err = fisk_ai::Config::from_yaml_str(&config_yaml(dir.path(), &[line], "")).unwrap_err().to_string();
        assert!(err.contains("tasks") && err.contains(needle), "{line}: {err}");
    }
}

/// Hostile: one session cannot take every task place (it keeps at most a quarter of `max`), and its running tasks
/// end with it: closing the session kills their process groups.
#[tokio::test]
async fn task_3_a_session_keeps_its_share_of_tasks_and_they_end_with_it() {
    let served = serve(&["tasks: {max: 4}"]).await;
    let pidfile = served.path("pids").display().to_string();
    let owner = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), Era::Legacy).await;
    let other = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), Era::Legacy).await;
    let _hanging = create(&owner, "hang", json!({"pidfile": pidfile})).await.expect("a task");
    let [a, b] = pids(&served.path("pids")).await;
    let refused = create(&owner, "echo", json!({"words": ["two"]})).await.expect_err("past its share");
    let why = text(&refused);
    assert!(is_error(&refused) && why.contains("this session (or caller) already keeps 1 tasks"), "{why}");
    let told = served.events().into_iter().find(|e| e.starts_with("task refused echo"));
    assert!(told.is_some_and(|e| e.contains("share")), "the operator is told: {:?}", served.events());
    let theirs = create(&other, "echo", json!({"words": ["three"]})).await.expect("another session has room");
    assert_eq!(poll(&other, &theirs, &["completed"]).await["status"], "completed");
    // The client closes its session (DELETE): nobody can reach its task any more, so it is stopped.
    owner.cancel().await.unwrap();
    wait_gone(a, "a sleeper of the closed session's task").await;
    wait_gone(b, "a sleeper of the closed session's task").await;
    other.cancel().await.unwrap();
    served.stop().await.unwrap();
}

/// A session with a running task is not evicted to make room for a new one: at `max_sessions` the newcomer is
/// refused (503) rather than the task lost.
#[tokio::test]
async fn task_4_a_session_with_a_running_task_is_not_evicted() {
    let served = serve(&["max_sessions: 1"]).await;
    let pidfile = served.path("pids").display().to_string();
    let owner = connect(&served.url, TestClient::new(false, Answer::Decline).with_tasks(), Era::Legacy).await;
    let id = create(&owner, "hang", json!({"pidfile": pidfile})).await.expect("a task");
    let [a, b] = pids(&served.path("pids")).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "late", "version": "1"}}});
    let late = reqwest::Client::new()
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), 503, "the busy session was kept");
    assert_eq!(get(&owner, &id).await.unwrap()["status"], "working");
    assert!(common::procs::alive(a) && common::procs::alive(b), "the task still runs");
    owner.peer().cancel_task(CancelTaskParams::new(&id)).await.expect("the owner cancels");
    wait_gone(a, "a sleeper").await;
    wait_gone(b, "a sleeper").await;
    owner.cancel().await.unwrap();
    served.stop().await.unwrap();
}
