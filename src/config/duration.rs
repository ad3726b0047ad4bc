//! Go-style durations (SPEC §0, CFG-3).
//!
//! [`GoDuration::parse`] is a line-by-line port of Go's `time.ParseDuration` and [`GoDuration`]'s
//! [`Display`](fmt::Display) a port of Go's `time.Duration.String`, so a configuration written for the Go agent
//! means the same thing here and durations print the same way (`1h30m0s`, `1.5s`, `500ms`, `1µs`).
//!
//! ```
//! use fisk_ai::config::GoDuration;
//!
//! let d = GoDuration::parse("1.5h").unwrap();
//! assert_eq!(d.to_string(), "1h30m0s");
//! assert_eq!(GoDuration::parse("1d").unwrap_err().to_string(), r#"time: unknown unit "d" in duration "1d""#);
//! ```

use std::fmt;
use std::time::Duration;

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// A signed span of time in nanoseconds with Go's `time.Duration` syntax and rendering.
///
/// Parse with [`GoDuration::parse`] (or [`str::parse`]); display renders like Go's `Duration.String()`.
/// In YAML a duration is a string (`30s`, `1h30m`); a bare number is rejected because Go reads it as
/// nanoseconds, which is never what an operator means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GoDuration(i64);

/// Why a string is not a Go duration. The message matches Go's `time.ParseDuration` wording exactly, for example
/// `time: invalid duration "1x1"`, `time: unknown unit "d" in duration "1d"`, `time: missing unit in duration "1"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDurationError {
    message: String,
}

impl fmt::Display for ParseDurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseDurationError {}

/// Go's `time.quote`: ASCII printable characters as-is (with `"` and `\` escaped), every byte of any other
/// character as `\xHH`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if (c as u32) >= 0x80 || c < ' ' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

fn invalid(orig: &str) -> ParseDurationError {
    ParseDurationError { message: format!("time: invalid duration {}", quote(orig)) }
}

/// Consumes the leading `[0-9]*`; `None` on overflow (Go's `leadingInt`).
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let bytes = s.as_bytes();
    let mut x: u64 = 0;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if !c.is_ascii_digit() {
            break;
        }
        if x > (1 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > 1 << 63 {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Consumes the leading `[0-9]*` of a fraction, silently dropping precision on overflow (Go's `leadingFraction`).
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let bytes = s.as_bytes();
    let mut x: u64 = 0;
    let mut scale: f64 = 1.0;
    let mut overflow = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if !c.is_ascii_digit() {
            break;
        }
        i += 1;
        if overflow {
            continue;
        }
        if x > ((1u64 << 63) - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => NANOSECOND,
        "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
        "ms" => MILLISECOND,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        _ => return None,
    })
}

impl GoDuration {
    /// The zero duration.
    pub const ZERO: GoDuration = GoDuration(0);

    /// A duration of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: i64) -> Self {
        GoDuration(nanos)
    }

    /// A duration of `secs` seconds, saturating at the `i64` nanosecond range.
    pub const fn from_secs(secs: i64) -> Self {
        GoDuration(secs.saturating_mul(SECOND as i64))
    }

    /// Parses a Go duration string: an optional sign, then one or more decimal numbers (with optional fraction)
    /// each followed by a unit `ns`, `us` (`µs`, `μs`), `ms`, `s`, `m` or `h`, such as `300ms`, `-1.5h` or
    /// `2h45m`. A lone `0` is accepted without a unit. This is an exact port of Go's `time.ParseDuration`:
    /// the same strings are accepted, with the same values and the same error messages.
    ///
    /// # Errors
    ///
    /// A [`ParseDurationError`] with Go's message for a string `time.ParseDuration` refuses: a missing or unknown unit,
    /// a bad number, an overflow.
    pub fn parse(s: &str) -> Result<GoDuration, ParseDurationError> {
        let orig = s;
        let mut s = s;
        let mut d: u64 = 0;
        let mut neg = false;

        if let Some(c) = s.bytes().next()
            && (c == b'-' || c == b'+')
        {
            neg = c == b'-';
            s = &s[1..];
        }
        if s == "0" {
            return Ok(GoDuration(0));
        }
        if s.is_empty() {
            return Err(invalid(orig));
        }
        while !s.is_empty() {
            let first = s.as_bytes()[0];
            if !(first == b'.' || first.is_ascii_digit()) {
                return Err(invalid(orig));
            }
            let before = s.len();
            let (mut v, rest) = leading_int(s).ok_or_else(|| invalid(orig))?;
            s = rest;
            let pre = before != s.len();

            let mut f: u64 = 0;
            let mut scale: f64 = 1.0;
            let mut post = false;
            if s.as_bytes().first() == Some(&b'.') {
                s = &s[1..];
                let before = s.len();
                let (ff, sc, rest) = leading_fraction(s);
                f = ff;
                scale = sc;
                s = rest;
                post = before != s.len();
            }
            if !pre && !post {
                return Err(invalid(orig));
            }

            let i = s.bytes().position(|c| c == b'.' || c.is_ascii_digit()).unwrap_or(s.len());
            if i == 0 {
                return Err(ParseDurationError { message: format!("time: missing unit in duration {}", quote(orig)) });
            }
            let u = &s[..i];
            s = &s[i..];
            let Some(unit) = unit_nanos(u) else {
                return Err(ParseDurationError {
                    message: format!("time: unknown unit {} in duration {}", quote(u), quote(orig)),
                });
            };
            if v > (1 << 63) / unit {
                return Err(invalid(orig));
            }
            v *= unit;
            if f > 0 {
                // float64 is needed to be nanosecond accurate for fractions of hours.
                v += (f as f64 * (unit as f64 / scale)) as u64;
                if v > 1 << 63 {
                    return Err(invalid(orig));
                }
            }
            d += v;
            if d > 1 << 63 {
                return Err(invalid(orig));
            }
        }
        if neg {
            return Ok(GoDuration((d as i64).wrapping_neg()));
        }
        if d > (1 << 63) - 1 {
            return Err(invalid(orig));
        }
        Ok(GoDuration(d as i64))
    }

    /// The duration in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }

    /// Whether the duration is below zero.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// Whether the duration is exactly zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// The duration as a [`std::time::Duration`], or `None` when it is negative.
    pub fn to_std(self) -> Option<Duration> {
        u64::try_from(self.0).ok().map(Duration::from_nanos)
    }

    /// A duration from a [`std::time::Duration`], saturating at Go's largest duration (about 292 years).
    pub fn from_std(d: Duration) -> GoDuration {
        GoDuration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

impl std::str::FromStr for GoDuration {
    type Err = ParseDurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GoDuration::parse(s)
    }
}

impl From<GoDuration> for i64 {
    fn from(d: GoDuration) -> i64 {
        d.0
    }
}

/// Go's `fmtFrac`: writes the fraction of `v / 10^prec` (without trailing zeros, and without the point when it
/// is zero) before `w` and returns the new start and `v / 10^prec`.
fn fmt_frac(buf: &mut [u8], mut w: usize, mut v: u128, prec: usize) -> (usize, u128) {
    let mut print = false;
    for _ in 0..prec {
        let digit = (v % 10) as u8;
        print = print || digit != 0;
        if print {
            w -= 1;
            buf[w] = digit + b'0';
        }
        v /= 10;
    }
    if print {
        w -= 1;
        buf[w] = b'.';
    }
    (w, v)
}

/// Go's `fmtInt`: writes `v` in decimal before `w` and returns the new start.
fn fmt_int(buf: &mut [u8], mut w: usize, mut v: u128) -> usize {
    if v == 0 {
        w -= 1;
        buf[w] = b'0';
    } else {
        while v > 0 {
            w -= 1;
            buf[w] = (v % 10) as u8 + b'0';
            v /= 10;
        }
    }
    w
}

/// Go's `Duration.format` over a magnitude of nanoseconds and a sign.
fn format_nanos(u: u128, neg: bool) -> String {
    let mut buf = [0u8; 64];
    let mut w = buf.len();
    let mut u = u;
    if u < u128::from(SECOND) {
        // Durations below one second use smaller units, like 1.2ms.
        w -= 1;
        buf[w] = b's';
        w -= 1;
        let prec;
        if u == 0 {
            buf[w] = b'0';
            return String::from_utf8_lossy(&buf[w..]).into_owned();
        } else if u < u128::from(MICROSECOND) {
            prec = 0;
            buf[w] = b'n';
        } else if u < u128::from(MILLISECOND) {
            prec = 3;
            // U+00B5 'µ' micro sign == 0xC2 0xB5
            w -= 1;
            buf[w] = 0xC2;
            buf[w + 1] = 0xB5;
        } else {
            prec = 6;
            buf[w] = b'm';
        }
        let (nw, nu) = fmt_frac(&mut buf, w, u, prec);
        w = fmt_int(&mut buf, nw, nu);
    } else {
        w -= 1;
        buf[w] = b's';
        let (nw, nu) = fmt_frac(&mut buf, w, u, 9);
        w = nw;
        u = nu;
        // u is now integer seconds
        w = fmt_int(&mut buf, w, u % 60);
        u /= 60;
        // u is now integer minutes
        if u > 0 {
            w -= 1;
            buf[w] = b'm';
            w = fmt_int(&mut buf, w, u % 60);
            u /= 60;
            // u is now integer hours; Go stops at hours because days can be different lengths.
            if u > 0 {
                w -= 1;
                buf[w] = b'h';
                w = fmt_int(&mut buf, w, u);
            }
        }
    }
    if neg {
        w -= 1;
        buf[w] = b'-';
    }
    String::from_utf8_lossy(&buf[w..]).into_owned()
}

impl fmt::Display for GoDuration {
    /// Renders like Go's `Duration.String()`: `0s`, `1ns`, `1.1µs`, `2.2ms`, `3.3s`, `4m5s`, `5h6m7.001s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_nanos(u128::from(self.0.unsigned_abs()), self.0 < 0))
    }
}

/// Renders a [`std::time::Duration`] the way Go's `Duration.String()` renders it, for example `3.613s`,
/// `1h30m0s` or `250ms`. Durations beyond Go's range (about 292 years) still render, in hours.
pub fn format_duration(d: Duration) -> String {
    format_nanos(d.as_nanos(), false)
}

impl serde::Serialize for GoDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Visits a Go duration string, then applies `check` (inside the visitor, so a YAML error gets its location).
pub(crate) struct DurationVisitor {
    pub(crate) check: fn(GoDuration) -> Result<(), String>,
}

/// The units a duration accepts, for every parse error.
const UNITS: &str = "valid units are ns, us (or µs), ms, s, m and h, as in \"300ms\", \"1m30s\" or \"2h\"";

impl serde::de::Visitor<'_> for DurationVisitor {
    type Value = GoDuration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Go duration string such as \"30s\"")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<GoDuration, E> {
        // The parser keeps Go's exact wording; the operator also needs to know what would have been accepted.
        let d = GoDuration::parse(v).map_err(|e| E::custom(format!("{e}; {UNITS}")))?;
        (self.check)(d).map_err(E::custom)?;
        Ok(d)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<GoDuration, E> {
        Err(E::custom(format!("invalid duration {v}: a bare number is not accepted, write it with a unit; {UNITS}")))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<GoDuration, E> {
        Err(E::custom(format!("invalid duration {v}: a bare number is not accepted, write it with a unit; {UNITS}")))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<GoDuration, E> {
        Err(E::custom(format!("invalid duration {v}: a bare number is not accepted, write it with a unit; {UNITS}")))
    }
}

impl<'de> serde::Deserialize<'de> for GoDuration {
    /// Reads a Go duration string; numbers are rejected (Go would read them as nanoseconds).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DurationVisitor { check: |_| Ok(()) })
    }
}
