//! A small clap CLI that fisk-ai can wrap: `notes`, which pretends to keep notes and prints what it was asked.
//!
//! It answers `--fisk-introspect` with [`fisk_ai::clap::introspection_with_tags`]'s document, so
//! `application_path: target/debug/examples/clap_app` in an `agent.yaml` wraps it like any fisk application; a
//! Rust host can skip the round trip with [`fisk_ai::clap::ClapSource`] and the same [`command`].
//!
//! ```text
//! cargo run --example clap_app --features clap -- --fisk-introspect
//! cargo run --example clap_app --features clap -- note add groceries milk eggs --tag=home
//! ```

use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};
use fisk_ai::clap::{Tags, introspection_with_tags};

/// The CLI's command tree: shared by its own parse and by the hosts that wrap it, so the two never drift.
pub fn command() -> Command {
    Command::new("notes")
        .about("Keep short notes")
        .version("0.1.0")
        .arg(Arg::new("verbose").long("verbose").global(true).action(ArgAction::SetTrue).help("Say more"))
        .subcommand(
            Command::new("note")
                .about("Work with notes")
                .subcommand(
                    Command::new("add")
                        .about("Add a note")
                        .long_about("Add a note with a title and an optional body, one word per argument")
                        .arg(Arg::new("title").required(true).help("The note's title"))
                        .arg(Arg::new("body").num_args(1..).help("The note's words"))
                        .arg(Arg::new("tag").long("tag").action(ArgAction::Append).value_name("TAG").help("A tag"))
                        .arg(
                            Arg::new("priority")
                                .long("priority")
                                .short('p')
                                .value_parser(value_parser!(u8))
                                .default_value("3")
                                .help("1 (high) to 5 (low)"),
                        ),
                )
                .subcommand(
                    Command::new("list")
                        .about("List notes")
                        .arg(Arg::new("limit").long("limit").value_parser(value_parser!(u32)).help("At most this many"))
                        .arg(
                            Arg::new("format")
                                .long("format")
                                .value_parser(["text", "json"])
                                .default_value("text")
                                .help("Output format"),
                        ),
                )
                .subcommand(
                    Command::new("rm")
                        .about("Remove a note")
                        .arg(Arg::new("title").required(true).help("The note to remove"))
                        .arg(Arg::new("force").long("force").action(ArgAction::SetTrue).help("Even if pinned")),
                ),
        )
        .subcommand(Command::new("wipe").about("Delete every note"))
        .subcommand(Command::new("debug").hide(true).about("Internal diagnostics"))
}

/// The tags clap cannot carry: removing a note needs an operator's approval, and wiping is never a tool.
pub fn tags() -> Tags {
    Tags::new().tag("note rm", ["ai:confirm"]).tag("wipe", ["ai:deny"])
}

fn run(m: &ArgMatches) -> String {
    let verbose = |m: &ArgMatches| if m.get_flag("verbose") { " (verbose)" } else { "" };
    match m.subcommand() {
        Some(("note", m)) => match m.subcommand() {
            Some(("add", m)) => {
                let words: Vec<&String> = m.get_many::<String>("body").into_iter().flatten().collect();
                let tags: Vec<&String> = m.get_many::<String>("tag").into_iter().flatten().collect();
                let title = m.get_one::<String>("title").map_or("", String::as_str);
                let priority = m.get_one::<u8>("priority").copied().unwrap_or(3);
                format!(
                    "added note {title:?} ({} words, tags {tags:?}, priority {priority}){}",
                    words.len(),
                    verbose(m)
                )
            }
            Some(("list", m)) => {
                let limit = m.get_one::<u32>("limit").map_or("all".to_owned(), u32::to_string);
                let format = m.get_one::<String>("format").map_or("text", String::as_str);
                format!("no notes yet (limit {limit}, format {format}){}", verbose(m))
            }
            Some(("rm", m)) => {
                let title = m.get_one::<String>("title").map_or("", String::as_str);
                format!("removed note {title:?}{}", if m.get_flag("force") { " (forced)" } else { "" })
            }
            _ => "notes note: name a subcommand".to_owned(),
        },
        Some(("wipe", _)) => "wiped every note".to_owned(),
        Some(("debug", _)) => "all is well".to_owned(),
        _ => "notes: name a subcommand (try --help)".to_owned(),
    }
}

fn main() -> std::process::ExitCode {
    // Answered before clap parses: the flag is not part of the CLI a user sees.
    if std::env::args().nth(1).as_deref() == Some("--fisk-introspect") {
        return match introspection_with_tags(&command(), &tags()) {
            Ok(doc) => {
                println!("{doc}");
                std::process::ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("notes: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    println!("{}", run(&command().get_matches()));
    std::process::ExitCode::SUCCESS
}
