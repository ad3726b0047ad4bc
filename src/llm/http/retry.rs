//! Retry timing (wire doc §9): the server's `retry-after-ms` / `retry-after`, else capped exponential backoff with
//! jitter, as the official SDKs do.

use reqwest::header::HeaderMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A server-requested wait longer than this is ignored in favor of our own backoff (as the TypeScript SDK does):
/// a call blocked for minutes helps no one, and the budget and timeout settings stay meaningful.
pub(crate) const MAX_SERVER_WAIT: Duration = Duration::from_secs(60);

/// The wait the server asked for: `retry-after-ms` (milliseconds), else `retry-after` (seconds or an HTTP date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(wait) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).and_then(|ms| secs(ms / 1000.0)) {
        return Some(wait);
    }
    let value = get("retry-after")?;
    if let Ok(s) = value.parse::<f64>() {
        return secs(s);
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

fn secs(s: f64) -> Option<Duration> {
    (s.is_finite() && s >= 0.0).then(|| Duration::try_from_secs_f64(s).ok()).flatten()
}

/// `x-should-retry: true|false`, the server's explicit verdict, when present.
pub(crate) fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()).map(str::trim) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    }
}

/// The wait before retry number `retry` (0-based): `min(base · 2^retry, max)`, less up to 25 % jitter so clients
/// that failed together do not retry together.
pub(crate) fn backoff(retry: u32, base: Duration, max: Duration) -> Duration {
    let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
    let wait = base.saturating_mul(factor).min(max);
    // try_from: a configured maximum near Duration::MAX must not overflow the float round trip.
    Duration::try_from_secs_f64(wait.as_secs_f64() * (1.0 - 0.25 * jitter())).unwrap_or(wait)
}

/// A number in `[0, 1)`, different on every call: std's `RandomState` is seeded randomly per process and per
/// instance, and the clock mixes in more. Not cryptographic; it only spreads retries.
fn jitter() -> f64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only date form HTTP/1.1 senders may generate.
pub(crate) fn parse_http_date(s: &str) -> Option<SystemTime> {
    let rest = s.split_once(", ")?.1;
    let mut it = rest.split_ascii_whitespace();
    let day: u32 = it.next()?.parse().ok()?;
    let month = match it.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = it.next()?.parse().ok()?;
    let mut hms = it.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if it.next()? != "GMT" || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 || !(1970..=9999).contains(&year)
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let total = u64::try_from(days).ok()? * 86_400 + h * 3600 + m * 60 + sec;
    UNIX_EPOCH.checked_add(Duration::from_secs(total))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_parse_to_the_right_instant() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_secs(), 784_111_777);
        assert!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT").is_none());
        assert!(parse_http_date("garbage").is_none());
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_jitters_down_at_most_a_quarter() {
        let (base, max) = (Duration::from_millis(500), Duration::from_secs(8));
        assert!(backoff(70, Duration::from_secs(1), Duration::MAX) <= Duration::MAX);
        for (retry, full) in [(0, 500), (1, 1000), (3, 4000), (4, 8000), (9, 8000), (40, 8000)] {
            let w = backoff(retry, base, max);
            assert!(w <= Duration::from_millis(full) && w >= Duration::from_millis(full * 3 / 4), "{retry}: {w:?}");
        }
    }

    #[test]
    fn retry_after_prefers_milliseconds_then_seconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        h.insert("retry-after-ms", "-1".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}
