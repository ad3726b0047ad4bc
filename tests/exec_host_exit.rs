//! EXEC-17 for a host whose `main` returns right after a call: the call's setsid grandchild (a daemon that left the
//! group and holds none of the output) is still killed, because the runtime being dropped waits for the gathered
//! sweep. A test binary of its own without the libtest harness: `main` is the test, and it starts this binary
//! again, with `FISK_AI_TEST_HOST_DIR` set, as the host process.

mod common;

use common::{fake_app, procs, raw};
use fisk_ai::source::fisk::{AppModel, FiskApp};
use fisk_ai::tool::CallContext;
use std::path::Path;
use std::time::Duration;

const HOST_DIR: &str = "FISK_AI_TEST_HOST_DIR";
const DOC: &str = r#"{"name":"t","commands":[{"name":"run","args":[{"name":"msg"}],
 "restricted_schema":{"type":"object","additionalProperties":false,"properties":{"msg":{"type":"string"}}}}]}"#;

fn main() {
    match std::env::var_os(HOST_DIR) {
        Some(dir) => host(Path::new(&dir)),
        None => exec_17_a_hosts_main_returning_right_after_a_call_still_sweeps_it(),
    }
}

/// The host: one call, then the runtime is dropped and the process exits, as `main` returning does.
fn host(dir: &Path) {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let app = FiskApp::new(fake_app(dir, "setsid-grandchild"));
    let tool = app.tools_from_model(AppModel::from_slice(DOC.as_bytes()).unwrap()).unwrap().tools.remove(0);
    let input = serde_json::json!({"msg": dir.join("pid").to_str().unwrap()}).to_string();
    let out = rt.block_on(tool.call(&raw(&input), &CallContext::new()));
    assert!(!out.is_error(), "{}", out.content());
    // Long enough for the blocking pool to have started the queued sweep (tokio cancels a blocking task that has not
    // started when the runtime is dropped, as it always did), far shorter than the sweep's 10 ms gathering.
    std::thread::sleep(Duration::from_millis(2));
    drop(rt);
    std::process::exit(0);
}

fn exec_17_a_hosts_main_returning_right_after_a_call_still_sweeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap()).env(HOST_DIR, dir.path()).status();
    assert!(status.unwrap().success(), "the host process failed");
    let pid = procs::pid_in(&dir.path().join("pid"));
    // Killed by the host before it exited; its status is left to whoever adopted it (init: this process is no
    // subreaper, it started no call itself).
    for _ in 0..100 {
        if !procs::alive(pid) {
            println!("test exec_17_a_hosts_main_returning_right_after_a_call_still_sweeps_it ... ok");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the setsid grandchild (pid {pid}) of a call whose host exited right after it outlived the host");
}
