//! Go duration parsing and formatting (SPEC §0, CFG-3), table-tested against Go's own `time_test.go` tables.

use std::time::Duration;

use fisk_ai::config::{GoDuration, format_duration};

const NS: i64 = 1;
const US: i64 = 1_000 * NS;
const MS: i64 = 1_000 * US;
const S: i64 = 1_000 * MS;
const M: i64 = 60 * S;
const H: i64 = 60 * M;

fn parse(s: &str) -> i64 {
    GoDuration::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}")).as_nanos()
}

fn parse_err(s: &str) -> String {
    match GoDuration::parse(s) {
        Ok(d) => panic!("{s:?} should fail, got {} ns", d.as_nanos()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn cfg_3_parse_accepts_go_parse_duration_table() {
    let table: &[(&str, i64)] = &[
        // simple
        ("0", 0),
        ("5s", 5 * S),
        ("30s", 30 * S),
        ("1478s", 1478 * S),
        // sign
        ("-5s", -5 * S),
        ("+5s", 5 * S),
        ("-0", 0),
        ("+0", 0),
        // decimal
        ("5.0s", 5 * S),
        ("5.6s", 5 * S + 600 * MS),
        ("5.s", 5 * S),
        (".5s", 500 * MS),
        ("1.0s", S),
        ("1.00s", S),
        ("1.004s", S + 4 * MS),
        ("1.0040s", S + 4 * MS),
        ("100.00100s", 100 * S + MS),
        // different units
        ("10ns", 10 * NS),
        ("11us", 11 * US),
        ("12µs", 12 * US), // U+00B5
        ("12μs", 12 * US), // U+03BC
        ("13ms", 13 * MS),
        ("14s", 14 * S),
        ("15m", 15 * M),
        ("16h", 16 * H),
        // composite durations
        ("3h30m", 3 * H + 30 * M),
        ("10.5s4m", 4 * M + 10 * S + 500 * MS),
        ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
        ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
        ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
        // large value
        ("52763797000ns", 52_763_797_000 * NS),
        // more than 9 digits after decimal point, see https://golang.org/issue/6617
        ("0.3333333333333333333h", 20 * M),
        // 9007199254740993 = 1<<53+1 cannot be stored precisely in a float64
        ("9007199254740993ns", (1 << 53) + 1),
        // largest duration that can be represented by int64 in nanoseconds
        ("9223372036854775807ns", i64::MAX),
        ("9223372036854775.807us", i64::MAX),
        ("9223372036s854ms775us807ns", i64::MAX),
        ("-9223372036854775808ns", i64::MIN),
        ("-9223372036854775.808us", i64::MIN),
        ("-9223372036s854ms775us808ns", i64::MIN),
        // largest negative round trip value, see https://golang.org/issue/48629
        ("-2562047h47m16.854775808s", i64::MIN),
        // huge string; issue 15011.
        ("0.100000000000000000000h", 6 * M),
        // this value tests the first overflow check in leadingFraction
        ("0.830103483285477580700h", 49 * M + 48 * S + 372_539_827 * NS),
        // the brief's own examples
        ("1.5h", 5400 * S),
        ("-1.5h", -5400 * S),
        ("1h1m1s", H + M + S),
        ("1h30m", 90 * M),
        ("500ms", 500 * MS),
        ("60s", 60 * S),
        ("2m", 2 * M),
        ("120s", 120 * S),
        ("0s", 0),
        ("0.5ms", 500 * US),
        ("1.5us", 1500 * NS),
        ("00010s", 10 * S),
    ];
    for &(input, want) in table {
        assert_eq!(parse(input), want, "parse({input:?})");
    }
}

#[test]
fn cfg_3_parse_rejects_go_parse_duration_error_table_with_go_messages() {
    let table: &[(&str, &str)] = &[
        ("", r#"time: invalid duration """#),
        ("3", r#"time: missing unit in duration "3""#),
        ("-", r#"time: invalid duration "-""#),
        ("+", r#"time: invalid duration "+""#),
        ("s", r#"time: invalid duration "s""#),
        (".", r#"time: invalid duration ".""#),
        ("-.", r#"time: invalid duration "-.""#),
        (".s", r#"time: invalid duration ".s""#),
        ("+.s", r#"time: invalid duration "+.s""#),
        ("-.s", r#"time: invalid duration "-.s""#),
        ("1d", r#"time: unknown unit "d" in duration "1d""#),
        ("1", r#"time: missing unit in duration "1""#),
        ("1.5", r#"time: missing unit in duration "1.5""#),
        ("1h5", r#"time: missing unit in duration "1h5""#),
        ("\u{FFFD}", r#"time: invalid duration "\xef\xbf\xbd""#),
        ("\u{FFFD} hello \u{FFFD} world", r#"time: invalid duration "\xef\xbf\xbd hello \xef\xbf\xbd world""#),
        ("1\u{FFFD}", r#"time: unknown unit "\xef\xbf\xbd" in duration "1\xef\xbf\xbd""#),
        ("5 s", r#"time: unknown unit " s" in duration "5 s""#),
        (" 5s", r#"time: invalid duration " 5s""#),
        ("5s ", r#"time: unknown unit "s " in duration "5s ""#),
        ("1H", r#"time: unknown unit "H" in duration "1H""#),
        ("1sec", r#"time: unknown unit "sec" in duration "1sec""#),
        ("5min", r#"time: unknown unit "min" in duration "5min""#),
        ("1e3s", r#"time: unknown unit "e" in duration "1e3s""#),
        ("--5s", r#"time: invalid duration "--5s""#),
        ("+-5s", r#"time: invalid duration "+-5s""#),
        ("1.2.3s", r#"time: missing unit in duration "1.2.3s""#),
        ("5s\"", r#"time: unknown unit "s\"" in duration "5s\"""#),
        ("5s\\", r#"time: unknown unit "s\\" in duration "5s\\""#),
        ("5\ts", r#"time: unknown unit "\x09s" in duration "5\x09s""#),
        // overflow
        ("9223372036854775810ns", r#"time: invalid duration "9223372036854775810ns""#),
        ("9223372036854775808ns", r#"time: invalid duration "9223372036854775808ns""#),
        ("-9223372036854775809ns", r#"time: invalid duration "-9223372036854775809ns""#),
        ("9223372036854776us", r#"time: invalid duration "9223372036854776us""#),
        ("3000000h", r#"time: invalid duration "3000000h""#),
        ("9223372036854775.808us", r#"time: invalid duration "9223372036854775.808us""#),
        ("9223372036854ms775us808ns", r#"time: invalid duration "9223372036854ms775us808ns""#),
        ("99999999999999999999s", r#"time: invalid duration "99999999999999999999s""#),
        ("2562048h", r#"time: invalid duration "2562048h""#),
    ];
    for &(input, want) in table {
        assert_eq!(parse_err(input), want, "parse({input:?})");
    }
}

#[test]
fn cfg_3_display_matches_go_duration_string_table() {
    let table: &[(i64, &str)] = &[
        // Go's durationTests
        (0, "0s"),
        (NS, "1ns"),
        (1100 * NS, "1.1µs"),
        (2200 * US, "2.2ms"),
        (3300 * MS, "3.3s"),
        (4 * M + 5 * S, "4m5s"),
        (4 * M + 5001 * MS, "4m5.001s"),
        (5 * H + 6 * M + 7001 * MS, "5h6m7.001s"),
        (8 * M + NS, "8m0.000000001s"),
        (i64::MAX, "2562047h47m16.854775807s"),
        (i64::MIN, "-2562047h47m16.854775808s"),
        // the brief's and SPEC's examples
        (90 * M, "1h30m0s"),
        (1500 * MS, "1.5s"),
        (500 * MS, "500ms"),
        (US, "1µs"),
        (-(2 * M + 3500 * MS), "-2m3.5s"),
        (3613 * MS, "3.613s"),
        (30 * S, "30s"),
        (120 * S, "2m0s"),
        (H, "1h0m0s"),
        (-NS, "-1ns"),
        (999 * NS, "999ns"),
        (1000 * NS, "1µs"),
        (1001 * NS, "1.001µs"),
        (999_999 * NS, "999.999µs"),
        (MS, "1ms"),
        (999_999_999 * NS, "999.999999ms"),
        (S, "1s"),
        (S + NS, "1.000000001s"),
        (59 * S, "59s"),
        (M, "1m0s"),
        (61 * S, "1m1s"),
        (H + M + S, "1h1m1s"),
        (100 * H, "100h0m0s"),
        (-5400 * S, "-1h30m0s"),
        (-500 * MS, "-500ms"),
        (-US, "-1µs"),
    ];
    for &(nanos, want) in table {
        assert_eq!(GoDuration::from_nanos(nanos).to_string(), want, "String({nanos})");
    }
}

#[test]
fn cfg_3_display_then_parse_round_trips() {
    // Like Go's TestParseDurationRoundTrip, with a deterministic walk over the range.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut values = vec![0, 1, -1, i64::MAX, i64::MIN, i64::MIN + 1, i64::MAX - 1];
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let shift = (x % 63) as u32;
        values.push((x as i64) >> shift);
    }
    for v in values {
        let s = GoDuration::from_nanos(v).to_string();
        assert_eq!(parse(&s), v, "round trip of {v} via {s:?}");
    }
}

#[test]
fn cfg_3_format_duration_renders_std_durations_like_go() {
    assert_eq!(format_duration(Duration::from_millis(3613)), "3.613s");
    assert_eq!(format_duration(Duration::ZERO), "0s");
    assert_eq!(format_duration(Duration::from_secs(5400)), "1h30m0s");
    assert_eq!(format_duration(Duration::from_micros(1)), "1µs");
    assert_eq!(format_duration(Duration::from_nanos(1100)), "1.1µs");
    assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
    assert_eq!(format_duration(Duration::from_nanos(i64::MAX as u64)), "2562047h47m16.854775807s");
    // Beyond Go's range still renders, in hours.
    assert_eq!(format_duration(Duration::from_nanos(i64::MAX as u64 + 1)), "2562047h47m16.854775808s");
    assert_eq!(format_duration(Duration::new(u64::MAX, 999_999_999)), "5124095576030431h0m15.999999999s");
}

#[test]
fn cfg_3_accessors_and_std_conversions() {
    let d = GoDuration::parse("1.5s").unwrap();
    assert_eq!(d.as_nanos(), 1_500_000_000);
    assert!(!d.is_negative());
    assert_eq!(d.to_std(), Some(Duration::from_millis(1500)));
    let n = GoDuration::parse("-1s").unwrap();
    assert!(n.is_negative());
    assert_eq!(n.to_std(), None);
    assert_eq!(GoDuration::ZERO.to_std(), Some(Duration::ZERO));
    assert_eq!(GoDuration::from_std(Duration::from_secs(90)).to_string(), "1m30s");
    assert_eq!(GoDuration::from_std(Duration::MAX), GoDuration::from_nanos(i64::MAX));
    assert_eq!(GoDuration::from_secs(2), GoDuration::from_nanos(2 * S));
    assert_eq!("2m".parse::<GoDuration>().unwrap(), GoDuration::from_secs(120));
    assert!(GoDuration::from_secs(1) < GoDuration::from_secs(2));
    assert!(GoDuration::from_nanos(-1) < GoDuration::ZERO);
}

#[derive(Debug, serde::Deserialize, serde::Serialize)]
struct Holder {
    d: GoDuration,
}

#[test]
fn cfg_3_serde_reads_strings_and_writes_go_strings() {
    let h: Holder = serde_yaml::from_str("d: 1h30m\n").unwrap();
    assert_eq!(h.d, GoDuration::from_secs(5400));
    assert_eq!(serde_yaml::to_string(&h).unwrap().trim(), "d: 1h30m0s");
    let h: Holder = serde_yaml::from_str("d: \"0\"\n").unwrap();
    assert_eq!(h.d, GoDuration::ZERO);
    let j = serde_json::to_string(&Holder { d: GoDuration::from_nanos(1500 * MS) }).unwrap();
    assert_eq!(j, r#"{"d":"1.5s"}"#);
    let h: Holder = serde_json::from_str(r#"{"d":"-2m3.5s"}"#).unwrap();
    assert_eq!(h.d.to_string(), "-2m3.5s");
}

#[test]
fn cfg_3_serde_rejects_bare_numbers_and_bad_strings() {
    for yaml in ["d: 30\n", "d: 0\n", "d: 1.5\n", "d: -5\n"] {
        let err = serde_yaml::from_str::<Holder>(yaml).unwrap_err().to_string();
        assert!(err.contains("bare number is not accepted"), "{yaml:?}: {err}");
    }
    let err = serde_yaml::from_str::<Holder>("d: 1d\n").unwrap_err().to_string();
    assert!(err.contains(r#"time: unknown unit "d" in duration "1d""#), "{err}");
    let err = serde_json::from_str::<Holder>(r#"{"d": 1000}"#).unwrap_err().to_string();
    assert!(err.contains("bare number is not accepted"), "{err}");
}
