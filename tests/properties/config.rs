//! CFG-1..4: the configuration parser, for any byte string, gives a configuration or an error that says where in
//! the file the problem is, and never panics.

use fisk_ai::Config;
use proptest::prelude::*;

/// A configuration using most blocks, so mutations land in every part of the parser.
const VALID: &str = "identity: ops
application_path: /usr/local/bin/app
system_prompt: |
  You help.
global_flags: [--context, server]
include:
  tools: ['^stream_']
exclude:
  tags: [dangerous]
harness:
  confirm_tags: [ai:destructive]
  tools:
    - name: read_file
      confirm: true
      options: {root: docs}
  memory:
    enabled: true
    options: {directory: /tmp/m}
  sessions:
    backend: file
expose:
  agent:
    mcp:
      port: 8080
      tool_timeout: 30s
      confirm_over_mcp: auto
llm:
  model: m
  thinking: {enabled: true}
  budget:
    max_iterations: 20
    call_timeout: 90s
";

/// YAML's structural tokens, so random documents are more than one bad scalar.
const TOKENS: [&str; 24] = [
    "\n",
    "  ",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "#",
    "---\n",
    "...\n",
    "&a ",
    "*a",
    "!!str ",
    "|\n",
    ">\n",
    "'",
    "\"",
    "llm",
    "budget",
    "call_timeout",
    "5x",
    "\t",
];

#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let token = prop::sample::select(TOKENS.to_vec()).prop_map(|t| t.as_bytes().to_vec());
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Replace(at, b)),
        (any::<usize>(), prop_oneof![token, prop::collection::vec(any::<u8>(), 1..8)])
            .prop_map(|(at, b)| Edit::Insert(at, b)),
        (any::<usize>(), 1usize..40).prop_map(|(at, n)| Edit::Delete(at, n)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
    match edit {
        Edit::Replace(i, b) if !bytes.is_empty() => {
            let i = i % bytes.len();
            bytes[i] = *b;
        }
        Edit::Replace(..) => {}
        Edit::Insert(i, b) => {
            let i = at(*i, bytes.len());
            bytes.splice(i..i, b.iter().copied());
        }
        Edit::Delete(i, n) => {
            let i = at(*i, bytes.len());
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
        Edit::Truncate(i) => {
            let i = at(*i, bytes.len());
            bytes.truncate(i);
        }
    }
}

/// A mutated valid configuration, a soup of YAML tokens, or arbitrary bytes.
fn document() -> impl Strategy<Value = Vec<u8>> {
    let token = prop::sample::select(TOKENS.to_vec());
    prop_oneof![
        6 => prop::collection::vec(edit(), 1..5).prop_map(|edits| {
            let mut bytes = VALID.as_bytes().to_vec();
            edits.iter().for_each(|e| apply(&mut bytes, e));
            bytes
        }),
        3 => prop::collection::vec(token, 0..30).prop_map(|t| t.concat().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..200),
    ]
}

/// Runs the property over `cases` generated documents.
pub fn check(cases: u32) {
    assert!(Config::from_yaml_bytes(VALID.as_bytes()).is_ok(), "the seed document must parse");
    super::run(cases, document(), |bytes| {
        if let Err(e) = Config::from_yaml_bytes(&bytes) {
            prop_assert!(e.is_config(), "{e:?}");
            let at = e.location();
            prop_assert!(
                at.is_some_and(|l| l.line >= 1 && l.column >= 1),
                "no location: {e}\n{:?}",
                String::from_utf8_lossy(&bytes)
            );
        }
        Ok(())
    });
}
