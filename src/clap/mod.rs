//! Rust CLIs built with [clap](https://docs.rs/clap) as tool sources (feature `clap`).
//!
//! [`introspection`] renders the fisk introspection document for any `clap::Command` tree, so a clap CLI that
//! answers `--fisk-introspect` with it is wrapped by [`FiskApp`](crate::FiskApp) (or the Go reference) unchanged.
//! [`ClapSource`] skips the round trip: it renders the document in process from the `Command` value, builds the
//! tools from it without spawning the binary, and runs each call through the same hardened runner.
//!
//! What maps (CLAP-1): nested subcommands; hidden commands and arguments (emitted `hidden`, so not tools and not
//! properties); positionals in index order, required or not, and arrays when they take several values; flags and
//! options by long name, with value names, defaults, possible values (as `enum`), `ArgAction::Append` (as arrays)
//! and boolean flags (`SetTrue`, `SetFalse`, `Count`: the model's `true` gives `--x`); the root's global
//! arguments (the application's global flags); `about`/`long_about` and `help`/`long_help` as descriptions (an
//! argument's two joined by a blank line); and typed value parsers as JSON types (`integer`, `number`, `boolean`,
//! else `string`). clap's generated `help` subcommand and its `--help` and `--version` flags are neither tools nor
//! properties.
//!
//! As fisk does for its sized integers, the full `schema` states what clap checks that the strict tool-input subset
//! cannot: an integer type's range (`u8` as `minimum: 0, maximum: 255`) and a positional's `num_args` as `minItems`
//! and `maxItems`. The `restricted_schema`, which the model sees and calls are checked against, leaves them out, so
//! clap refuses an out-of-range value when it parses, and its message is the call's result.
//!
//! What cannot map, because the crate's argv is `path --long=value -- positionals`: options without a long name,
//! options that take two or more values at once (`num_args(2..)` on a flag: `--x=v` gives one), and the root's
//! non-global arguments when it has subcommands are left out. A root without subcommands gives no tools, as a fisk
//! application without commands does.
//!
//! Tags come from a side table ([`Tags`]); a path the tree does not have is an error (CLAP-3).
//!
//! ```
//! use clap::{Arg, ArgAction, Command};
//! use fisk_ai::clap::{Tags, introspection, introspection_with_tags};
//!
//! let cli = Command::new("nats").subcommand(
//!     Command::new("stream").about("Manage streams").subcommand(
//!         Command::new("rm")
//!             .about("Remove a stream")
//!             .arg(Arg::new("force").long("force").action(ArgAction::SetTrue))
//!             .arg(Arg::new("stream").required(true)),
//!     ),
//! );
//! let doc: serde_json::Value = serde_json::from_str(&introspection(&cli)).unwrap();
//! let rm = &doc["commands"][0]["commands"][0];
//! assert_eq!(rm["name"], "rm");
//! assert_eq!(rm["restricted_schema"]["required"], serde_json::json!(["stream"]));
//!
//! let tagged = introspection_with_tags(&cli, &Tags::new().tag("stream rm", ["ai:confirm"])).unwrap();
//! assert!(tagged.contains(r#""tags":["ai:confirm"]"#));
//! let err = introspection_with_tags(&cli, &Tags::new().tag("stream delete", ["ai:deny"])).unwrap_err();
//! assert!(err.to_string().contains("\"stream delete\""));
//! ```

mod document;
mod source;
mod tags;

pub use source::ClapSource;
pub use tags::Tags;

use crate::error::Result;

/// The fisk introspection document (one line of JSON, as `app --fisk-introspect` prints it) for the clap tree
/// `cmd`, untagged. The tree is cloned and built first (`Command::build`), so global arguments propagate as they
/// do when clap parses.
///
/// `cmd` must be a tree clap itself accepts: clap's `build` checks it with debug assertions, and the binary's own
/// parse would fail the same way.
///
/// ```
/// use clap::{Arg, Command, value_parser};
///
/// let cli = Command::new("app")
///     .subcommand(Command::new("sleep").arg(Arg::new("seconds").long("seconds").value_parser(value_parser!(u32))));
/// let doc: serde_json::Value = serde_json::from_str(&fisk_ai::clap::introspection(&cli)).unwrap();
/// let seconds = &doc["commands"][0]["restricted_schema"]["properties"]["seconds"];
/// assert_eq!(seconds["type"], "integer");
/// ```
pub fn introspection(cmd: &::clap::Command) -> String {
    // An empty table names no path, so it cannot fail.
    document::render(cmd, &Tags::new()).unwrap_or_default()
}

/// [`introspection`], each command carrying the tags `tags` gives its path.
///
/// # Errors
///
/// A configuration error naming the first path in `tags` that is not a command of `cmd` (CLAP-3).
///
/// ```
/// use clap::Command;
/// use fisk_ai::clap::{Tags, introspection_with_tags};
///
/// let cli = Command::new("app").subcommand(Command::new("wipe"));
/// let doc = introspection_with_tags(&cli, &Tags::new().tag("wipe", ["ai:confirm"])).unwrap();
/// assert!(doc.contains(r#""tags":["ai:confirm"]"#));
/// assert!(introspection_with_tags(&cli, &Tags::new().tag("wip", ["ai:confirm"])).is_err());
/// ```
pub fn introspection_with_tags(cmd: &::clap::Command, tags: &Tags) -> Result<String> {
    document::render(cmd, tags)
}
