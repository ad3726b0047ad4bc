//! Call one `ask_human_*` tool with the terminal prompter and print its result to stdout.
//!
//! ```text
//! cargo run --example hitl_prompt -- TOOL JSON_INPUT
//! cargo run --example hitl_prompt -- ask_human_select '{"question": "Which stream?", "options": ["ORDERS", "EVENTS"]}'
//! ```
//!
//! Before asking it writes `working...` to stderr, so the blank line separating the prompt from earlier output
//! (HITL-10) shows. The prompt goes to stderr too, so `hitl_prompt ... > out.txt` leaves only the result in the
//! file: the tool's JSON (`{"selected":"EVENTS"}`), or `error: <text>` and exit status 1 for an error result. Used
//! by `tests/hitl_tmux.rs` to drive a real terminal.

use fisk_ai::operator::{TerminalPrompter, hitl_tools};
use fisk_ai::tool::{CallContext, ToolInput};
use std::process::ExitCode;
use std::sync::Arc;

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "ask_human_confirm".into());
    let input = args.next().unwrap_or_else(|| r#"{"question": "Proceed?"}"#.into());

    let tools = hitl_tools(Arc::new(TerminalPrompter::stderr()));
    let Some(tool) = tools.iter().find(|t| t.spec().name() == name) else {
        eprintln!("unknown tool {name}; known: ask_human_confirm, ask_human_select, ask_human_input");
        return ExitCode::from(2);
    };
    let input = match ToolInput::from_json(input) {
        Ok(input) => input,
        Err(e) => {
            eprintln!("the input is not JSON: {e}");
            return ExitCode::from(2);
        }
    };
    eprintln!("working...");
    let out = tool.call(&input, &CallContext::new()).await;
    if out.is_error() {
        println!("error: {}", out.content());
        return ExitCode::FAILURE;
    }
    println!("{}", out.content());
    ExitCode::SUCCESS
}
