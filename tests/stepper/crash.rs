//! The crash suite's scenario (SESS-14, SESS-15, DESIGN §6.9), shared by the file and JetStream runs; see
//! `tests/session_crash.rs` for what it checks.

use super::{ANSWER, Stepper, finish};
use fisk_ai::session::SessionId;
use std::collections::HashSet;
use std::time::Duration;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        // xorshift64*: plenty for spreading kill points.
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

fn seed() -> u64 {
    let seed = std::env::var("FISK_AI_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    eprintln!("crash suite seed {seed} (replay with FISK_AI_CRASH_SEED={seed})");
    seed
}

fn conversation() -> Vec<Vec<String>> {
    [["a1", "a2"], ["b1", "b2"], ["c1", "c2"]].iter().map(|t| t.iter().map(|s| s.to_string()).collect()).collect()
}

/// Lines of a completed journal: meta, 3 x (assistant + 2 results), final assistant, terminal.
const FULL_JOURNAL: u64 = 12;

/// One attempt (a run or a resume) and what was true before it started.
struct Attempt {
    pid: u32,
    recorded_turns: usize,
    recorded_results: HashSet<String>,
    first_request: usize,
    requests_end: usize,
}

/// Returns how many kills landed (a run may finish before its kill point) and how many calls ran twice because a
/// kill fell between a step's start and its recorded result (reported, so a run shows its kills land mid-step).
async fn scenario(s: Stepper, rng: &mut Rng, n: usize, kills: usize) -> (usize, usize) {
    let mut repeated = 0;
    let id = SessionId::new(format!("crash-{n}")).unwrap();
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut killed = 0;
    loop {
        // Before each attempt: what the journal holds (it must always parse).
        let exists = s.journal_lines(&id) > 0;
        let (recorded_turns, recorded_results) = if exists {
            let j = s.journal(&id).await.unwrap_or_else(|e| panic!("scenario {n}: the journal must parse: {e}"));
            let turns = j.llm_calls as usize;
            let mut results: HashSet<String> = HashSet::new();
            for m in &j.messages {
                for b in &m.content {
                    if let fisk_ai::llm::Block::ToolResult { tool_use_id, .. } = b {
                        results.insert(tool_use_id.trim_start_matches("call-").to_owned());
                    }
                }
            }
            if let Some(p) = &j.pending {
                results.extend(p.results.keys().map(|k| k.trim_start_matches("call-").to_owned()));
            }
            if j.is_completed() {
                // The kill landed after the end was recorded: the answer was reached (and is in the journal).
                assert_eq!(j.messages.last().map(|m| m.text()).as_deref(), Some(ANSWER), "scenario {n}");
                break;
            }
            (turns, results)
        } else {
            (0, HashSet::new())
        };
        let args: Vec<&str> =
            if exists { vec!["--resume", id.as_str()] } else { vec!["--checkpoint", "--name", id.as_str()] };
        let first_request = s.server.request_count();
        let mut child = s.run(&args).spawn().unwrap();
        let pid = child.id().unwrap();
        // Either kill it at a random point or let it finish; a run that ends before its kill point is not a kill.
        let finished = if killed == kills {
            Some(finish(child).await)
        } else {
            // A random point: once the journal reaches a random line count at or past where it is now, plus jitter
            // (so kills land inside model calls and tool runs too).
            let now = s.journal_lines(&id) as u64;
            let target = now + rng.below(FULL_JOURNAL.saturating_sub(now));
            let jitter = Duration::from_millis(rng.below(40));
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while (s.journal_lines(&id) as u64) < target && child.try_wait().unwrap().is_none() {
                assert!(tokio::time::Instant::now() < deadline, "scenario {n}: no progress to line {target}");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(jitter).await;
            if child.try_wait().unwrap().is_some() {
                Some(finish(child).await)
            } else {
                let _ = child.start_kill();
                let _ = child.wait().await;
                killed += 1;
                None
            }
        };
        attempts.push(Attempt {
            pid,
            recorded_turns,
            recorded_results,
            first_request,
            requests_end: s.server.request_count(),
        });
        if let Some(f) = finished {
            assert_eq!(f.code, Some(0), "scenario {n}: the attempt that ends by itself completes\n{}", f.stderr);
            assert_eq!(f.stdout.trim(), ANSWER, "scenario {n}: the final answer is reached");
            break;
        }
    }

    // Let steps orphaned by a kill finish logging before judging.
    s.wait_for("orphaned steps to finish", Duration::from_secs(10), |s| s.starts().len() == s.ends().len()).await;
    let turns = s.request_turns();
    let last_turn = conversation().len();
    assert!(turns.iter().all(|t| *t <= last_turn), "scenario {n}: the model was asked past its final reply: {turns:?}");
    let starts = s.starts_by();
    let pids: HashSet<u32> = attempts.iter().map(|a| a.pid).collect();
    for (i, a) in attempts.iter().enumerate() {
        for t in &turns[a.first_request..a.requests_end] {
            assert!(
                *t >= a.recorded_turns,
                "scenario {n} attempt {i}: turn {t} was requested again though {} turns were recorded",
                a.recorded_turns
            );
        }
        let mine: Vec<&String> = starts.iter().filter(|(_, p)| *p == a.pid).map(|(t, _)| t).collect();
        for token in &mine {
            assert!(
                !a.recorded_results.contains(token.as_str()),
                "scenario {n} attempt {i}: {token} ran again though its result was recorded"
            );
        }
        // Earlier runs of a token: by an earlier attempt, or orphaned (started after its CLI died).
        let earlier_pids: HashSet<u32> = attempts[..i].iter().map(|e| e.pid).collect();
        let earlier: HashSet<&String> =
            starts.iter().filter(|(_, p)| earlier_pids.contains(p) || !pids.contains(p)).map(|(t, _)| t).collect();
        let repeats = mine.iter().filter(|t| earlier.contains(*t)).count();
        assert!(repeats <= 1, "scenario {n} attempt {i}: {repeats} tool calls repeated after one crash: {mine:?}");
        repeated += repeats;
    }
    let j = s.journal(&id).await.unwrap();
    assert_eq!(j.status(), "completed", "scenario {n}");
    let all: HashSet<String> = s.starts().into_iter().collect();
    assert_eq!(all.len(), 6, "scenario {n}: every step ran: {all:?}");
    (killed, repeated)
}

/// Kill `points` times over scenarios whose [`Stepper`] `make` sets up (given the scenario's number and the
/// conversation), checking SESS-14/15 after each.
pub async fn crash_suite<F, Fut>(points: usize, make: F)
where
    F: Fn(usize, Vec<Vec<String>>) -> Fut,
    Fut: std::future::Future<Output = Stepper>,
{
    let mut rng = Rng(seed());
    let mut done = 0;
    let mut n = 0;
    let mut repeated = 0;
    while done < points {
        n += 1;
        // Up to two kills per scenario: the first run, then the first resume; the next attempt finishes.
        let (kills, repeats) = scenario(make(n, conversation()).await, &mut rng, n, (points - done).min(2)).await;
        done += kills;
        repeated += repeats;
    }
    eprintln!("crash suite: {done} kills over {n} scenarios; {repeated} calls repeated by a kill mid-step");
}
