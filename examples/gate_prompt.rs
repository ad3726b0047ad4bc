//! Ask one approval on the terminal and print the decision to stdout as `decision=<word>`.
//!
//! ```text
//! cargo run --example gate_prompt -- [COMMAND [COMMAND_LINE [TRIGGER [tool|exact]]]]
//! ```
//!
//! The prompt goes to stderr, so `gate_prompt > out.txt` leaves only the decision in the file. Used by
//! `tests/gate_tmux.rs` to drive a real terminal.

use fisk_ai::gate::{ConfirmGate, ConfirmRequest, Decision, Remember, TerminalGate};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_else(|| "stream rm".into());
    let command_line = args.next().unwrap_or_else(|| "nats stream rm ORDERS --force".into());
    let trigger = args.next().unwrap_or_else(|| "ai:confirm".into());
    // What `harness.approvals.remember` would say.
    let remember = if args.next().as_deref() == Some("exact") { Remember::Exact } else { Remember::Tool };
    let tool = command.replace(' ', "_");

    let gate = TerminalGate::stderr();
    let req = ConfirmRequest::new(tool, command, &command_line, trigger).with_remember(remember);
    // What the agent loop does: nobody to ask means decline, without prompting (GATE-6).
    let decision = if gate.can_ask() { gate.confirm(&req).await } else { Decision::Decline };
    let word = match decision {
        Decision::Decline => "decline",
        Decision::Once => "once",
        Decision::ForConversation => "for_conversation",
        Decision::ForConversationExact => "for_conversation_exact",
        Decision::Abort => "abort",
        _ => "unknown",
    };
    println!("decision={word}");
}
