//! EXEC-12 / EXEC-13: however much a command writes, in whatever chunks, the `output` of its result (the text a
//! model or an MCP client receives) is within the 65536-byte cap: verbatim up to the cap, else the first and last
//! 32768 bytes around the marker, flagged truncated.

use fisk_ai::source::fisk::captured_output;
use fisk_ai::tool::{ExecReport, ToolOutput};
use proptest::prelude::*;

/// The SPEC's numbers, written out so a change in the library shows here.
const CAP: usize = 65536;
const HALF: usize = 32768;
const MARKER: &str = "\n...[output truncated]...\n";

/// A stream as chunks: mostly small, some right around the half and the cap, a few far past it; each chunk a run
/// of one byte value (`0x80` and up are invalid UTF-8 alone) or, when small, a ramp of values (which also makes
/// multi-byte sequences the cut can split).
fn chunks() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let size = prop_oneof![
        6 => 0usize..256,
        2 => (HALF - 4)..(HALF + 4),
        2 => (CAP - 4)..(CAP + 4),
        1 => 0usize..(3 * CAP),
    ];
    let chunk = (size, any::<u8>(), any::<bool>()).prop_map(|(n, b, ramp)| {
        if ramp && n < 4096 { (0..n).map(|i| b.wrapping_add(i as u8)).collect() } else { vec![b; n] }
    });
    prop::collection::vec(chunk, 0..6)
}

/// The capture: the `output` text is the stream itself up to the cap, else its first and last halves around the
/// marker, and is within the cap. Runs over `cases` generated streams.
pub fn check_cap(cases: u32) {
    super::run(cases, chunks(), |chunks| {
        let stream: Vec<u8> = chunks.concat();
        let (output, truncated) = captured_output(chunks.iter().map(Vec::as_slice));
        prop_assert_eq!(truncated, stream.len() > CAP);
        prop_assert!(output == expected(&stream), "{} bytes in, {} chars out", stream.len(), output.chars().count());
        // Lossy decoding turns each bad sequence into one U+FFFD, so the cap holds in characters.
        prop_assert!(output.chars().count() <= CAP + MARKER.len());
        Ok(())
    });
}

/// The result: the EXEC-13 JSON a model or an MCP client reads carries exactly that capped text and the flag.
/// Runs over `cases` generated streams.
pub fn check_result(cases: u32) {
    super::run(cases, chunks(), |chunks| {
        let (output, truncated) = captured_output(chunks.iter().map(Vec::as_slice));
        let result = ToolOutput::exec(ExecReport::new("app run", 0, truncated), &output);
        prop_assert!(!result.is_error());
        let json: serde_json::Value = serde_json::from_str(result.content()).unwrap();
        prop_assert_eq!(json["output"].as_str(), Some(output.as_str()));
        prop_assert_eq!(json.get("truncated").is_some(), truncated);
        prop_assert_eq!(json["command"].as_str(), Some("app run"));
        Ok(())
    });
}

/// EXEC-12 written out: verbatim up to the cap, else head, marker, tail; then invalid UTF-8 replaced.
fn expected(stream: &[u8]) -> String {
    if stream.len() <= CAP {
        return String::from_utf8_lossy(stream).into_owned();
    }
    let mut cut = stream[..HALF].to_vec();
    cut.extend_from_slice(MARKER.as_bytes());
    cut.extend_from_slice(&stream[stream.len() - HALF..]);
    String::from_utf8_lossy(&cut).into_owned()
}
