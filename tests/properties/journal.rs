//! SESS-13 / SESS-30: any truncation or corruption of a valid journal, read the way the file store reads it,
//! folds or is refused as a session error; it never panics and never yields a turn twice.

use fisk_ai::agent::TerminalReason;
use fisk_ai::llm::{Block, Message, Role, StopReason, Usage};
use fisk_ai::session::{
    AssistantRecord, ConfirmChoice, ConfirmRecord, Journal, JournalRecord, Meta, Payload, TerminalRecord,
    ToolResultRecord, UserRecord,
};
use fisk_ai::tool::ToolInput;
use fisk_ai::{Error, Result};
use proptest::prelude::*;

/// A journal of `turns` tool turns (each with two calls, its answers and results), a follow-up prompt and an end.
/// Every turn differs from every other in its text, its call ids and their inputs, so no single edit makes two
/// turns equal.
fn journal(turns: u32) -> Vec<u8> {
    let fp = serde_json::from_value(serde_json::json!({"provider": "anthropic", "model": "m", "system_hash": "a",
        "tools_hash": "b", "thinking_mode": "off", "max_tokens": 1000, "max_iterations": 50}))
    .unwrap();
    let mut payloads = vec![Payload::Meta(Meta::new("run", fp, "the prompt"))];
    for n in 1..=turns {
        let call = |c: &str| Block::ToolUse {
            id: format!("call-{n}-{c}"),
            name: "tool".into(),
            input: ToolInput::from_json(format!(r#"{{"turn":{n},"call":"{c}"}}"#)).unwrap(),
        };
        let turn = Message::assistant(vec![Block::text(format!("turn {n} of {turns}")), call("a"), call("b")]);
        let usage = Usage { input_tokens: u64::from(n), output_tokens: 1, ..Usage::default() };
        payloads.push(Payload::Assistant(AssistantRecord::new(n, turn, StopReason::ToolUse, usage)));
        let id = format!("call-{n}-a");
        payloads.push(Payload::Confirm(ConfirmRecord::answer(
            ConfirmChoice::Once,
            &id,
            "tool",
            "tool a",
            "ai:confirm",
        )));
        payloads.push(Payload::ToolResult(ToolResultRecord::new(id, format!("result {n}a"), false, false)));
        payloads.push(Payload::ToolResult(ToolResultRecord::new(
            format!("call-{n}-b"),
            format!("result {n}b"),
            true,
            n % 2 == 0,
        )));
    }
    payloads.push(Payload::User(UserRecord::new(Message::user("and then?"))));
    let end = Message::assistant(vec![Block::text("the end")]);
    payloads.push(Payload::Assistant(AssistantRecord::new(turns + 1, end, StopReason::EndTurn, Usage::default())));
    payloads.push(Payload::Terminal(TerminalRecord::new(TerminalReason::Completed, None)));
    let mut bytes = Vec::new();
    for (seq, p) in (1..).zip(payloads) {
        bytes.extend(JournalRecord::new(seq, p).to_json());
        bytes.push(b'\n');
    }
    bytes
}

/// The file store's reading rule (SESS-30): a final line without its newline that does not parse is a torn write
/// and is dropped; any other line that does not parse is corruption.
fn read(bytes: &[u8]) -> Result<Vec<JournalRecord>> {
    let mut records = Vec::new();
    let mut lines = bytes.split_inclusive(|b| *b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let whole = line.ends_with(b"\n");
        match JournalRecord::from_json(line.strip_suffix(b"\n").unwrap_or(line)) {
            Ok(r) => records.push(r),
            Err(_) if !whole && lines.peek().is_none() => break,
            Err(e) => return Err(Error::session(format!("corrupt line: {e}"))),
        }
    }
    Ok(records)
}

#[derive(Debug, Clone)]
enum Damage {
    Truncate(usize),
    Flip(usize, u8),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    DropLine(usize),
    RepeatLine(usize),
    SwapLines(usize, usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<usize>().prop_map(Damage::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Damage::Flip(i, b)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Damage::Delete(i, n)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(i, b)| Damage::Insert(i, b)),
        any::<usize>().prop_map(Damage::DropLine),
        any::<usize>().prop_map(Damage::RepeatLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Damage::SwapLines(a, b)),
    ]
}

fn apply(bytes: Vec<u8>, d: &Damage) -> Vec<u8> {
    let pos = |i: usize| i % (bytes.len() + 1);
    let mut lines: Vec<Vec<u8>> = bytes.split_inclusive(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    let n = lines.len().max(1);
    match d {
        Damage::Truncate(i) => return bytes[..pos(*i)].to_vec(),
        Damage::Flip(i, b) if !bytes.is_empty() => {
            let mut out = bytes.clone();
            out[i % bytes.len()] = *b;
            return out;
        }
        Damage::Flip(..) => return bytes,
        Damage::Delete(i, len) => {
            let mut out = bytes.clone();
            let at = pos(*i);
            out.drain(at..(at + len).min(bytes.len()));
            return out;
        }
        Damage::Insert(i, b) => {
            let mut out = bytes.clone();
            let at = pos(*i);
            out.splice(at..at, b.iter().copied());
            return out;
        }
        Damage::DropLine(i) if !lines.is_empty() => drop(lines.remove(i % n)),
        Damage::RepeatLine(i) if !lines.is_empty() => {
            let line = lines[i % n].clone();
            lines.insert(i % n, line);
        }
        Damage::SwapLines(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
        _ => {}
    }
    lines.concat()
}

/// The assistant turns and the tool results of a folded journal, each must appear once.
fn assert_no_repeats(j: &Journal) -> std::result::Result<(), TestCaseError> {
    let turns: Vec<&Message> = j.messages.iter().filter(|m| m.role == Role::Assistant).collect();
    for (i, t) in turns.iter().enumerate() {
        prop_assert!(!turns[..i].contains(t), "turn {i} repeats an earlier one: {t:?}");
    }
    let mut answered: Vec<&str> = Vec::new();
    let recorded = j.messages.iter().flat_map(|m| m.content.iter());
    let pending = j.pending.iter().flat_map(|p| p.results.values());
    for block in recorded.chain(pending) {
        if let Block::ToolResult { tool_use_id, .. } = block {
            prop_assert!(!answered.contains(&tool_use_id.as_str()), "call {tool_use_id} has two results");
            answered.push(tool_use_id);
        }
    }
    prop_assert_eq!(j.llm_calls as usize, turns.len(), "every counted model call is one turn in the conversation");
    Ok(())
}

/// Runs the property over `cases` damaged journals.
pub fn check(cases: u32) {
    let strategy = (1u32..5, prop::collection::vec(damage(), 1..4));
    let whole: Vec<Vec<u8>> = (0..5).map(journal).collect();
    for (turns, bytes) in whole.iter().enumerate().skip(1) {
        let j = Journal::fold(read(bytes).unwrap()).unwrap();
        assert_eq!(j.llm_calls as usize, turns + 1, "the undamaged journal folds whole");
    }
    super::run(cases, strategy, |(turns, damages)| {
        let bytes = damages.iter().fold(whole[turns as usize].clone(), apply);
        match read(&bytes).and_then(Journal::fold) {
            Ok(j) => assert_no_repeats(&j)?,
            Err(e) => prop_assert!(e.is_session(), "{e:?}"),
        }
        Ok(())
    });
}
