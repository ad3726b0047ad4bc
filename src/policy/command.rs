//! `harness.policy.command` (POL-6, POL-7): an external program asked about each call, JSON on stdin and a
//! decision on stdout, within a bounded time. Anything but a well-formed decision in time is a denial.

use super::{PolicyCall, PolicyHook, Verdict};
use crate::exec::{ChildEnv, ChildKind};
use crate::tool::ToolOutput;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A decision larger than this is not read: the hook is refused.
const MAX_REPLY: u64 = 1 << 20;
/// The default bound on one answer.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// An external policy program, started once per decision without a shell, in its own process group, with the
/// harness's scrubbed environment (no provider, NATS or import credential reaches it), killed at the timeout.
///
/// Before a call it reads one JSON object on stdin:
/// `{"phase": "before", "tool": ..., "input": {...}, "caller": ... | null, "surface": "agent" | "mcp" | "a2a",
/// "gated_by": ... | null}` and answers one JSON object on stdout: `{"decision": "allow"}`,
/// `{"decision": "deny", "reason": "..."}`, `{"decision": "ask"}` or `{"decision": "rewrite", "input": {...}}`.
///
/// After the call it is asked again with `"phase": "after"` and `"output"`, `"is_error"`, and answers
/// `{"decision": "keep"}` or `{"decision": "redact", "output": "..."}`.
///
/// A timeout, a non-zero exit, a reply over 1 MiB, or anything else on stdout denies the call (before) or withholds
/// the result (after), with a reason naming the hook. Its stderr is discarded.
///
/// ```no_run
/// use fisk_ai::policy::CommandPolicy;
/// use std::time::Duration;
///
/// let hook = CommandPolicy::new(["/usr/local/bin/ops-policy", "--strict"]).unwrap().with_timeout(Duration::from_secs(2));
/// ```
#[derive(Debug, Clone)]
pub struct CommandPolicy {
    program: PathBuf,
    args: Vec<String>,
    timeout: Duration,
    env: ChildEnv,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    decision: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    output: Option<String>,
}

impl CommandPolicy {
    /// The program and its arguments.
    ///
    /// # Errors
    ///
    /// A configuration error when `argv` is empty.
    pub fn new<I, S>(argv: I) -> crate::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut argv = argv.into_iter().map(Into::into);
        let program = argv.next().filter(|p| !p.is_empty()).ok_or_else(|| {
            crate::Error::config_key("harness.policy.command", "harness.policy.command needs the program to run")
        })?;
        Ok(CommandPolicy {
            program: program.into(),
            args: argv.collect(),
            timeout: DEFAULT_TIMEOUT,
            env: ChildEnv::new(),
        })
    }

    /// Bound each answer (default 5 s).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Start the program with this environment policy (the harness gives its own scrubbed one).
    #[must_use]
    pub fn with_env(mut self, env: ChildEnv) -> Self {
        self.env = env;
        self
    }

    fn name(&self) -> String {
        crate::gate::sanitize(&self.program.display().to_string(), 200)
    }

    /// Ask the program; its parsed reply, or why there is none.
    async fn ask(&self, request: &Value) -> Result<Reply, String> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        self.env.apply(cmd.as_std_mut(), &self.program, ChildKind::Hook).map_err(|e| format!("cannot start: {e}"))?;
        let mut child = cmd.spawn().map_err(|e| format!("cannot start: {e}"))?;
        let body = serde_json::to_vec(request).map_err(|e| e.to_string())?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let exchange = async {
            // Written while the answer is read, so a hook that answers before reading a large input is not stuck on
            // a full pipe; stdin closes when written, stdout when read (a flooding hook then gets EPIPE).
            let write = async move {
                if let Some(mut stdin) = stdin {
                    let _ = stdin.write_all(&body).await;
                }
            };
            let read = async move {
                let mut out = Vec::new();
                if let Some(stdout) = stdout {
                    stdout.take(MAX_REPLY + 1).read_to_end(&mut out).await.map_err(|e| e.to_string())?;
                }
                Ok::<_, String>(out)
            };
            let ((), out) = tokio::join!(write, read);
            let out = out?;
            let status = child.wait().await.map_err(|e| e.to_string())?;
            Ok::<_, String>((status, out))
        };
        let (status, out) = match tokio::time::timeout(self.timeout, exchange).await {
            Ok(done) => done?,
            Err(_) => {
                // Its whole process group, so a child it started does not outlive the answer.
                if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
                    let _ =
                        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                }
                let _ = child.kill().await;
                return Err(format!("no answer within {}", crate::config::format_duration(self.timeout)));
            }
        };
        if out.len() as u64 > MAX_REPLY {
            return Err("its answer is over 1 MiB".to_owned());
        }
        if !status.success() {
            return Err(format!("it exited with {status}"));
        }
        serde_json::from_slice(&out).map_err(|e| format!("its answer is not a decision ({e})"))
    }
}

fn request(phase: &str, call: &PolicyCall<'_>) -> Value {
    json!({
        "phase": phase,
        "tool": call.tool,
        "input": call.input,
        "caller": call.caller,
        "surface": call.surface.as_str(),
        "gated_by": call.gated_by,
    })
}

#[async_trait]
impl PolicyHook for CommandPolicy {
    async fn before(&self, call: &PolicyCall<'_>) -> Verdict {
        let reply = match self.ask(&request("before", call)).await {
            Ok(reply) => reply,
            Err(why) => return Verdict::Deny(format!("the policy hook {} failed: {why}", self.name())),
        };
        match (reply.decision.as_str(), reply.input) {
            ("allow", _) => Verdict::Allow,
            ("ask", _) => Verdict::Ask,
            ("deny", _) => Verdict::Deny(reply.reason.unwrap_or_else(|| "no reason given".to_owned())),
            ("rewrite", Some(input)) => Verdict::Rewrite(input),
            (other, _) => Verdict::Deny(format!(
                "the policy hook {} answered {:?}, which is not allow, deny, ask or rewrite with an input",
                self.name(),
                crate::gate::sanitize(other, 100)
            )),
        }
    }

    async fn after(&self, call: &PolicyCall<'_>, output: &ToolOutput) -> Option<ToolOutput> {
        let mut req = request("after", call);
        req["output"] = Value::String(output.content().to_owned());
        req["is_error"] = Value::Bool(output.is_error());
        // The reason can quote what the hook printed (GATE-8).
        let withheld = |why: String| {
            let why = crate::gate::sanitize(&why, 500);
            Some(ToolOutput::error(format!("the result was withheld: the policy hook {} failed: {why}", self.name())))
        };
        match self.ask(&req).await {
            Ok(reply) => match (reply.decision.as_str(), reply.output) {
                ("keep", _) => None,
                // The replacement keeps the result's error flag: redacting never turns a failure into a success.
                ("redact", Some(text)) if output.is_error() => Some(ToolOutput::error(text)),
                ("redact", Some(text)) => Some(ToolOutput::success(text)),
                (other, _) => {
                    withheld(format!("it answered {:?}, not keep or redact", crate::gate::sanitize(other, 100)))
                }
            },
            Err(why) => withheld(why),
        }
    }
}
