//! Safe execution of command tools against real processes (EXEC-3, EXEC-7..14).

mod common;

use common::*;
use fisk_ai::exec::ChildEnv;
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::{CallContext, Tool};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const DOC: &str = r#"{"name":"t","commands":[{"name":"run","help":"Run it",
 "flags":[{"name":"level","completions":["a","b"]},{"name":"count"},{"name":"key"}],
 "args":[{"name":"msg"},{"name":"rest","cumulative":true}],
 "restricted_schema":{"type":"object","additionalProperties":false,"properties":{
   "level":{"type":"string","enum":["a","b"]},"count":{"type":"integer"},
   "key":{"type":"string","pattern":"^([0-9a-f]{2})*$"},"msg":{"type":"string"},
   "rest":{"type":"array","items":{"type":"string"}}}}}]}"#;

fn tool_with(binary: &Path, env: ChildEnv) -> Arc<dyn Tool> {
    let app = FiskApp::new(binary).with_env(env);
    app.tools_from_model(AppModel::from_slice(DOC.as_bytes()).unwrap()).unwrap().tools.remove(0)
}

fn tool(dir: &Path, behaviour: &str) -> Arc<dyn Tool> {
    tool_with(&fake_app(dir, behaviour), ChildEnv::new())
}

async fn call(t: &Arc<dyn Tool>, input: &str) -> fisk_ai::ToolOutput {
    t.call(&raw(input), &CallContext::new()).await
}

fn is_dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_dead(pids: &[String]) {
    for _ in 0..100 {
        if pids.iter().all(|p| is_dead(p)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("processes still alive: {pids:?}");
}

#[tokio::test]
async fn exec_11_interleaved_stdout_and_stderr_keep_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(&tool(dir.path(), "interleave"), "{}").await;
    let (output, code, truncated) = exec_output(out.content());
    let want: String = (1..=300).map(|i| format!("out{i}\nerr{i}\n")).collect();
    assert_eq!((code, truncated), (0, false));
    assert_eq!(output, want);
}

/// EXEC-7: a command's stdin is `/dev/null`, open read-only (the access mode is the low two bits of fdinfo's octal
/// `flags`), and reads nothing.
#[tokio::test]
async fn exec_7_stdin_is_dev_null_open_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let (output, code, truncated) = exec_output(call(&tool(dir.path(), "stdin"), "{}").await.content());
    assert_eq!((code, truncated), (0, false));
    let lines: Vec<&str> = output.lines().collect();
    let [fd0, flags, read] = lines[..] else { panic!("unexpected output: {output:?}") };
    assert_eq!(fd0, "fd0=/dev/null");
    let flags = u32::from_str_radix(flags.strip_prefix("flags=").unwrap(), 8).unwrap();
    assert_eq!(flags & 0o3, 0, "O_RDONLY, not writable: flags {flags:o}");
    assert_eq!(read, "read=[]");
}

#[tokio::test]
async fn exec_12_large_output_keeps_head_and_tail_around_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(&tool(dir.path(), "big"), "{}").await;
    let (output, _, truncated) = exec_output(out.content());
    let all: String = "abcdefghijklmnopqrstuvwxyz0123456789\n".repeat(6000)[..200_000].to_owned();
    let want = format!("{}\n...[output truncated]...\n{}", &all[..32768], &all[all.len() - 32768..]);
    assert!(truncated);
    assert!(out.exec_report().unwrap().truncated);
    assert_eq!(output, want);
}

#[tokio::test]
async fn exec_12_invalid_utf8_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (output, _, _) = exec_output(call(&tool(dir.path(), "badutf8"), "{}").await.content());
    assert_eq!(output, "ok \u{FFFD}\u{FFFD} end\n");
}

#[tokio::test]
async fn exec_13_nonzero_exit_is_a_normal_result_with_the_exact_shape() {
    let dir = tempfile::tempdir().unwrap();
    let out = call(&tool(dir.path(), "exit7"), r#"{"msg": "x"}"#).await;
    assert!(!out.is_error());
    assert_eq!(out.content(), r#"{"command":"run -- x","exit_code":7,"output":"partial\n"}"#);
    let report = out.exec_report().unwrap();
    assert_eq!((report.command.as_str(), report.exit_code, report.truncated), ("run -- x", 7, false));
}

#[tokio::test]
async fn exec_3_bad_arguments_are_error_results_naming_the_property_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path(), "record");
    let ran = dir.path().join("ran");
    for (input, property, want) in [
        (r#"{"colour": 1}"#, "colour", "unknown property \"colour\""),
        (r#"{"count": "many"}"#, "count", "property \"count\""),
        (r#"{"level": "z"}"#, "level", "property \"level\""),
        (r#"{"key": "zz"}"#, "key", "property \"key\""),
        (r#"{"rest": "not-a-list"}"#, "rest", "property \"rest\""),
        (r#"["a"]"#, "", "must be a JSON object"),
    ] {
        let out = call(&t, input).await;
        assert!(out.is_error(), "{input}");
        assert!(out.content().contains(want), "{input}: {}", out.content());
        assert!(out.content().contains("did not run") || property.is_empty(), "{}", out.content());
        assert!(out.exec_report().is_none());
        assert!(!ran.exists(), "{input} started a process");
    }
    // The same tool runs for a valid input, proving the record would have been seen.
    let out = call(&t, r#"{"level": "a", "count": 2, "key": "0aff", "msg": "m", "rest": ["x"]}"#).await;
    assert!(!out.is_error(), "{}", out.content());
    assert_eq!(out.exec_report().unwrap().command, "run --level=a --count=2 --key=0aff -- m x");
    assert!(ran.exists());
}

#[tokio::test]
async fn exec_5_empty_and_null_input_run_the_bare_path() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path(), "echo-args");
    for input in ["{}", "null", " null "] {
        let out = call(&t, input).await;
        assert_eq!(split_args(&exec_output(out.content()).0), ["run"], "{input}");
    }
}

#[tokio::test]
async fn exec_10_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let t = tool(dir.path(), "grandchild");
    let ctx = CallContext::new().with_timeout(Duration::from_millis(300));
    let input = serde_json::json!({"msg": pidfile.to_str().unwrap()}).to_string();
    let out = t.call(&raw(&input), &ctx).await;
    assert!(out.is_error());
    assert!(
        out.content().contains("did not finish within 300ms") && out.content().contains("killed"),
        "{}",
        out.content()
    );
    let pids: Vec<String> = std::fs::read_to_string(&pidfile).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(pids.len(), 2);
    wait_dead(&pids).await;
}

#[tokio::test]
async fn exec_10_cancellation_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let t = tool(dir.path(), "grandchild");
    let token = CancellationToken::new();
    let ctx = CallContext::new().with_cancel(token.clone());
    let input = serde_json::json!({"msg": pidfile.to_str().unwrap()}).to_string();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    });
    let out = t.call(&raw(&input), &ctx).await;
    canceller.await.unwrap();
    assert!(out.is_error() && out.content().contains("cancelled"), "{}", out.content());
    let pids: Vec<String> = std::fs::read_to_string(&pidfile).unwrap().lines().map(str::to_owned).collect();
    wait_dead(&pids).await;
}

#[tokio::test]
async fn exec_10_descendants_holding_the_output_do_not_outlive_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let t = tool(dir.path(), "linger");
    let input = serde_json::json!({"msg": pidfile.to_str().unwrap()}).to_string();
    // No deadline: the call must still end once the leader exits.
    let out = call(&t, &input).await;
    assert!(!out.is_error(), "{}", out.content());
    assert_eq!(exec_output(out.content()).0, "leader done\n");
    let pids: Vec<String> = std::fs::read_to_string(&pidfile).unwrap().lines().map(str::to_owned).collect();
    wait_dead(&pids).await;
}

#[tokio::test]
async fn exec_14_a_binary_that_cannot_start_is_an_error_result_naming_it() {
    let t = tool_with(Path::new("/nonexistent/app"), ChildEnv::new());
    let out = call(&t, "{}").await;
    assert!(out.is_error());
    assert!(out.content().contains("/nonexistent/app"), "{}", out.content());
}

#[tokio::test]
async fn exec_9_working_directory_and_pwd_follow_the_tool_working_dir() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let t = tool_with(&fake_app(dir.path(), "env"), ChildEnv::new().with_working_dir(work.path()));
    let (output, _, _) = exec_output(call(&t, "{}").await.content());
    assert!(output.lines().any(|l| l == format!("PWD={}", work.path().display())), "{output}");
    assert!(output.lines().any(|l| l == "LLMFORMAT=1"), "{output}");
}

#[tokio::test]
async fn invariant_3_no_key_outside_the_schema_reaches_argv_even_when_the_document_allows_extra_properties() {
    // A document whose schema forgets additionalProperties:false must not open up its hidden flags.
    let doc = r#"{"name":"t","commands":[{"name":"c","flags":[{"name":"dangerous","boolean":true,"hidden":true}],
      "restricted_schema":{"type":"object","properties":{}}}]}"#;
    let dir = tempfile::tempdir().unwrap();
    let app = FiskApp::new(fake_app(dir.path(), "record"));
    let t = app.tools_from_model(AppModel::from_slice(doc.as_bytes()).unwrap()).unwrap().tools.remove(0);
    assert_eq!(t.spec().input_schema()["additionalProperties"], false);
    let out = call(&t, r#"{"dangerous": true}"#).await;
    assert!(out.is_error() && out.content().contains("unknown property \"dangerous\""), "{}", out.content());
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test]
async fn exec_10_an_enormous_deadline_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path(), "exit7");
    let out = t.call(&raw("{}"), &CallContext::new().with_timeout(Duration::MAX)).await;
    assert_eq!(exec_output(out.content()).1, 7);
}

#[tokio::test]
async fn exec_6_13_gate_8_the_display_quotes_what_could_be_misread_and_the_result_command_stays_the_plain_join() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path(), "echo-args");
    let input = r#"{"key": "", "msg": "x --dry-run", "rest": ["", "it's", "a\u202eb\u200bc\ufeff"]}"#;
    let argv = ["run", "--key=", "--", "x --dry-run", "", "it's", "a\u{202e}b\u{200b}c\u{feff}"];
    assert_eq!(t.display(&raw(input)), "run --key='' -- 'x --dry-run' '' 'it'\\''s' 'a\u{202e}b\u{200b}c\u{feff}'");
    // Shown to an operator, the invisible characters become visible too.
    assert_eq!(
        fisk_ai::gate::sanitize(&t.display(&raw(input)), fisk_ai::gate::PROMPT_LIMIT),
        r"run --key='' -- 'x --dry-run' '' 'it'\''s' 'a\u{202e}b\u{200b}c\u{feff}'"
    );
    let out = call(&t, input).await;
    let v: serde_json::Value = serde_json::from_str(out.content()).unwrap();
    assert_eq!(v["command"], argv.join(" "), "EXEC-13 keeps the plain join");
    let (output, _, _) = exec_output(out.content());
    assert_eq!(split_args(&output), argv, "the command got exactly these elements");
    // Plain input reads as before.
    assert_eq!(t.display(&raw(r#"{"level": "a", "msg": "moo"}"#)), "run --level=a -- moo");
}

#[test]
fn invariant_4_exec_8_child_env_names_the_prov_16_credentials_and_operator_named_ones() {
    // Written out from SPEC PROV-16 (tests/common), not taken from the library's constant.
    // The union over every provider compiled in (PROV-16): the openai provider adds its key.
    let mut spec = SPEC_PROV_16.to_vec();
    if cfg!(feature = "openai") {
        spec.push("OPENAI_API_KEY");
    }
    // EXEC-18: the nats feature's credential variables, written out from the issue.
    if cfg!(feature = "nats") {
        spec.extend(["NATS_USER", "NATS_PASSWORD", "NATS_TOKEN", "NATS_NKEY", "NATS_CREDS"]);
    }
    assert_eq!(ChildEnv::new().scrubbed().collect::<Vec<_>>(), spec);
    // An operator-named credential is added once, however often it is named (MCPI-4).
    let env = ChildEnv::new().with_scrubbed("GITHUB_TOKEN").with_scrubbed("GITHUB_TOKEN").with_scrubbed(spec[0]);
    let mut want = spec.clone();
    want.push("GITHUB_TOKEN");
    assert_eq!(env.scrubbed().collect::<Vec<_>>(), want);
}

#[test]
fn exec_9_child_env_reports_the_working_dir_it_was_given() {
    assert_eq!(ChildEnv::new().working_dir(), None, "unset: the child inherits the process working directory");
    let env = ChildEnv::new().with_working_dir("/srv/tools");
    assert_eq!(env.working_dir(), Some(Path::new("/srv/tools")));
}

#[tokio::test]
async fn exec_10_an_abandoned_call_kills_the_whole_process_group() {
    // A caller that drops the call's future (no cancel token, no timeout) must not leave the command's
    // descendants running: the process group is killed when the call is dropped, not only the leader.
    let (call, pids) = spawn_with_pidfile("grandchild", 2).await;
    assert_eq!(pids.len(), 2, "both sleepers started");
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    wait_dead(&pids).await;
}

#[tokio::test]
async fn exec_2_false_for_a_plain_boolean_flag_renders_nothing_unless_it_defaults_to_true() {
    // A boolean flag without --no-x cannot be turned off from the command line; that matters only when its
    // default is true (Go's ParseBool spellings). Defaulting to false, `false` simply leaves the flag out.
    let doc = |default: &str| {
        format!(
            r#"{{"name":"t","commands":[{{"name":"run","flags":[{{"name":"dry","boolean":true,"default":["{default}"]}}],
             "restricted_schema":{{"type":"object","properties":{{"dry":{{"type":"boolean"}}}}}}}}]}}"#
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let app = FiskApp::new(fake_app(dir.path(), "echo-args"));
    for (default, refused) in [("false", false), ("0", false), ("true", true), ("T", true), ("1", true)] {
        let t = app.tools_from_model(AppModel::from_slice(doc(default).as_bytes()).unwrap()).unwrap().tools.remove(0);
        let out = call(&t, r#"{"dry":false}"#).await;
        assert_eq!(out.is_error(), refused, "default {default}: {}", out.content());
        if refused {
            assert!(out.content().contains("cannot be set to false"), "{}", out.content());
        } else {
            assert_eq!(split_args(&exec_output(out.content()).0), ["run"], "default {default}: no flag rendered");
        }
    }
}

/// Start `behaviour` with a pid file as its last argument in a task of its own, and wait (bounded) until the file
/// names `n` processes: the call's task and the pids found (fewer than `n` if they never all appeared).
async fn spawn_with_pidfile(behaviour: &str, n: usize) -> (tokio::task::JoinHandle<fisk_ai::ToolOutput>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let t = tool(dir.path(), behaviour);
    let input = serde_json::json!({"msg": pidfile.to_str().unwrap()}).to_string();
    // The directory lives as long as the call: the fake application's link is in it.
    let call = tokio::spawn(async move {
        let _dir = dir;
        t.call(&raw(&input), &CallContext::new()).await
    });
    let mut pids: Vec<String> = Vec::new();
    for _ in 0..200 {
        pids = std::fs::read_to_string(&pidfile).unwrap_or_default().lines().map(str::to_owned).collect();
        if pids.len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    (call, pids)
}

/// Run `behaviour` with a pid file as its last argument under `ctx`: the result and the pid the grandchild wrote.
async fn run_with_pidfile(behaviour: &str, ctx: &CallContext) -> (fisk_ai::ToolOutput, i32) {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let t = tool(dir.path(), behaviour);
    let input = serde_json::json!({"msg": pidfile.to_str().unwrap()}).to_string();
    let out = t.call(&raw(&input), ctx).await;
    (out, procs::pid_in(&pidfile))
}

#[tokio::test]
async fn exec_17_a_setsid_grandchild_does_not_outlive_a_call_that_ended_normally() {
    // The grandchild left the process group and holds none of the output, and its parent exited: only its
    // ancestry (it was reparented to us) and its inherited environment tie it to the call.
    let (out, pid) = run_with_pidfile("setsid-grandchild", &CallContext::new()).await;
    assert!(!out.is_error(), "{}", out.content());
    assert_eq!(exec_output(out.content()).0, "leader done\n");
    procs::wait_gone(pid, "the setsid grandchild").await;
}

#[tokio::test]
async fn exec_17_calls_ending_together_are_swept_together_and_spare_a_running_call() {
    // After-exit sweeps are gathered and checked against one read of /proc: every lineage of the batch is still
    // found, and a call still running (its leader and its setsid grandchild) is nobody else's.
    let (running, pids) = spawn_with_pidfile("setsid-hang", 1).await;
    let running_grandchild: i32 = pids[0].parse().expect("a pid");

    let ctx = CallContext::new();
    let ended = futures::future::join_all((0..4).map(|_| run_with_pidfile("setsid-grandchild", &ctx)));
    for (out, pid) in ended.await {
        assert_eq!(exec_output(out.content()).0, "leader done\n");
        procs::wait_gone(pid, "a setsid grandchild of a call that ended with others").await;
    }
    // Past the gathering window, twice over: the running call's processes are untouched.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(procs::alive(running_grandchild), "the running call's grandchild was killed by another call's sweep");
    assert!(!running.is_finished(), "the running call was ended by another call's sweep");
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    procs::wait_gone(running_grandchild, "the aborted call's setsid grandchild").await;
}

#[tokio::test]
async fn exec_17_a_setsid_grandchild_does_not_outlive_a_call_killed_at_its_deadline() {
    // The leader hangs, so the grandchild is still its child when the deadline kills the group it has left.
    let ctx = CallContext::new().with_timeout(Duration::from_secs(3));
    let (out, pid) = run_with_pidfile("setsid-hang", &ctx).await;
    assert!(out.is_error() && out.content().contains("did not finish within 3s"), "{}", out.content());
    procs::wait_gone(pid, "the setsid grandchild").await;
}

#[tokio::test]
async fn exec_17_a_hosts_own_children_are_neither_killed_nor_reaped() {
    // A first call makes this process a subreaper, so the host's orphan below is reparented to it as a call's is.
    let (_, first) = run_with_pidfile("setsid-grandchild", &CallContext::new()).await;
    procs::wait_gone(first, "the first call's setsid grandchild").await;
    // The host's children: a sleeper, one that has exited (its status is the host's to collect), and an orphan
    // of the host's own, reparented to this process.
    let mut sleeper = std::process::Command::new("sleep").arg("1000").spawn().unwrap();
    let mut exited = std::process::Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
    let orphan = std::process::Command::new("sh")
        .args(["-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!"])
        .output()
        .unwrap();
    let orphan: i32 = String::from_utf8(orphan.stdout).unwrap().trim().parse().unwrap();
    for _ in 0..400 {
        if procs::zombie(exited.id() as i32) && procs::parent(orphan) == Some(std::process::id() as i32) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(procs::zombie(exited.id() as i32), "the host's short child has exited");
    assert_eq!(procs::parent(orphan), Some(std::process::id() as i32), "the host's orphan was reparented to us");

    // A call whose setsid grandchild is killed and reaped: the sweep looked at every child of this process.
    let (_, pid) = run_with_pidfile("setsid-grandchild", &CallContext::new()).await;
    procs::wait_gone(pid, "the setsid grandchild").await;

    assert!(procs::alive(sleeper.id() as i32), "the host's sleeper was killed");
    assert!(procs::alive(orphan), "the host's orphan was killed");
    assert_eq!(exited.wait().unwrap().code(), Some(3), "the host's exit status was taken");
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    // The orphan is this process's to reap now.
    let orphan = nix::unistd::Pid::from_raw(orphan);
    nix::sys::signal::kill(orphan, nix::sys::signal::Signal::SIGKILL).unwrap();
    nix::sys::wait::waitpid(orphan, None).unwrap();
}
