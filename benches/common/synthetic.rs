//! The synthetic large tree shared by the load and listing benches and the `large_tree` example: `groups` groups of
//! `leaves` leaves, each with a precomputed restricted schema, two flags and an argument, plus one global flag.
//! Written as text so that generating it costs almost no memory (the example measures peak RSS).

use std::fmt::Write;

/// The introspection document of the tree.
#[allow(dead_code)]
pub fn synthetic(groups: usize, leaves: usize) -> Vec<u8> {
    let mut out = String::with_capacity(groups * leaves * 900);
    out.push_str(r#"{"name":"synthetic","help":"","commands":["#);
    for g in 0..groups {
        if g > 0 {
            out.push(',');
        }
        write!(out, r#"{{"name":"group{g}","help":"A group","commands":["#).unwrap();
        for l in 0..leaves {
            if l > 0 {
                out.push(',');
            }
            let impact = if l % 2 == 0 { "impact:ro" } else { "impact:rw" };
            write!(
                out,
                r#"{{"name":"leaf{l}","help":"Leaf {l} of group {g}","tags":["scope:user","{impact}"],"restricted_schema":{{"additionalProperties":false,"properties":{{"name":{{"description":"Name","type":"string"}},"force":{{"description":"Force","type":"boolean"}},"level":{{"description":"Level","enum":["a","b","c"],"type":"string"}}}},"required":["name"],"type":"object"}},"flags":[{{"name":"force","help":"Force","boolean":true,"cumulative":false}},{{"name":"level","help":"Level","boolean":false,"cumulative":false,"completions":["a","b","c"]}}],"args":[{{"name":"name","help":"Name","required":true,"cumulative":false}}]}}"#
            )
            .unwrap();
        }
        out.push_str("]}");
    }
    out.push_str(r#"],"flags":[{"name":"context","help":"Context","boolean":false,"cumulative":false}]}"#);
    out.into_bytes()
}

/// A tree whose commands share nothing: every leaf has three flags and a positional argument of its own names and
/// help, so no two schemas are equal (a real application's commands differ; the tree above shares one schema).
#[allow(dead_code)]
pub fn distinct(groups: usize, leaves: usize) -> Vec<u8> {
    let mut out = String::with_capacity(groups * leaves * 1400);
    out.push_str(r#"{"name":"synthetic","help":"","commands":["#);
    for g in 0..groups {
        if g > 0 {
            out.push(',');
        }
        write!(out, r#"{{"name":"group{g}","help":"A group","commands":["#).unwrap();
        for l in 0..leaves {
            if l > 0 {
                out.push(',');
            }
            let impact = if l % 2 == 0 { "impact:ro" } else { "impact:rw" };
            let id = format!("{g}x{l}");
            write!(
                out,
                r#"{{"name":"leaf{l}","help":"Leaf {l} of group {g}","tags":["scope:user","{impact}"],"restricted_schema":{{"additionalProperties":false,"properties":{{"target{id}":{{"description":"The target of {id}","type":"string"}},"force{id}":{{"description":"Force {id}","type":"boolean"}},"level{id}":{{"description":"Level of {id}","enum":["a","b","c"],"type":"string"}},"limit{id}":{{"description":"Limit of {id}","type":"integer"}}}},"required":["target{id}"],"type":"object"}},"flags":[{{"name":"force{id}","help":"Force {id}","boolean":true,"cumulative":false}},{{"name":"level{id}","help":"Level of {id}","boolean":false,"cumulative":false,"completions":["a","b","c"]}},{{"name":"limit{id}","help":"Limit of {id}","boolean":false,"cumulative":false}}],"args":[{{"name":"target{id}","help":"The target of {id}","required":true,"cumulative":false}}]}}"#
            )
            .unwrap();
        }
        out.push_str("]}");
    }
    out.push_str(r#"],"flags":[{"name":"context","help":"Context","boolean":false,"cumulative":false}]}"#);
    out.into_bytes()
}
