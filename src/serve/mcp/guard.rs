//! Strict `Host` and `Origin` checks (DNS-rebinding protection), run before rmcp sees a request.
//!
//! rmcp's own check splits a header at its last `:` and compares the rest, so `127.0.0.1:8080.evil.example` or
//! `http://127.0.0.1:8080/evil` pass it. Here a header must have exactly the shape HTTP gives it, or it is refused:
//!
//! - `Host`: a DNS name or an IP literal (IPv6 in brackets), optionally followed by `:` and a decimal port
//!   of 1–65535, and the host part must be an allowed host;
//! - `Origin`: `http` or `https`, `://`, a host of that shape and an optional port, and nothing after it.

use std::net::Ipv6Addr;

/// A `Host` or origin authority split into its parts; `host` is lowercase, without IPv6 brackets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Authority {
    pub(crate) host: String,
    pub(crate) port: Option<u16>,
}

/// Parse `host[:port]` strictly; `None` for anything that is not exactly that.
pub(crate) fn parse_authority(value: &str) -> Option<Authority> {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        inside.parse::<Ipv6Addr>().ok()?;
        (inside, after)
    } else {
        match value.find(':') {
            Some(i) => (&value[..i], &value[i..]),
            None => (value, ""),
        }
    };
    let port = match port {
        "" => None,
        p => Some(parse_port(p.strip_prefix(':')?)?),
    };
    if !value.starts_with('[') && !is_name(host) {
        return None;
    }
    Some(Authority { host: host.to_ascii_lowercase(), port })
}

/// A decimal port of 1–65535, digits only (no sign, no spaces).
fn parse_port(p: &str) -> Option<u16> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse::<u16>().ok().filter(|&n| n != 0)
}

/// A DNS name or dotted IPv4 literal: labels of letters, digits and `-`, separated by single dots, one optional
/// trailing dot, at most 253 characters.
fn is_name(host: &str) -> bool {
    let trimmed = host.strip_suffix('.').unwrap_or(host);
    !trimmed.is_empty()
        && trimmed.len() <= 253
        && trimmed.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Whether a `Host` header value is well formed and names an allowed host. `allowed` entries are names or
/// `host:port`; an entry without a port matches any port. `None` allows any well-formed host.
pub(crate) fn host_allowed(value: &str, allowed: Option<&[String]>) -> bool {
    let Some(authority) = parse_authority(value) else {
        return false;
    };
    let Some(allowed) = allowed else {
        return true;
    };
    allowed.iter().any(|entry| entry_matches(entry, &authority))
}

fn entry_matches(entry: &str, authority: &Authority) -> bool {
    let entry = entry.trim();
    // A bare IPv6 literal ("::1") is a host, not host:port.
    let parsed = if entry.parse::<Ipv6Addr>().is_ok() {
        Some(Authority { host: entry.to_ascii_lowercase(), port: None })
    } else {
        parse_authority(entry)
    };
    parsed.is_some_and(|e| {
        e.host.trim_end_matches('.') == authority.host.trim_end_matches('.')
            && e.port.is_none_or(|p| Some(p) == authority.port)
    })
}

/// Whether an `Origin` header value is exactly `scheme://host[:port]` with an http(s) scheme and a host among
/// `names` (any port).
pub(crate) fn origin_allowed(value: &str, names: &[String]) -> bool {
    let Some((scheme, authority)) = value.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    // parse_authority refuses '/', '?', '#', '@' and everything else after the port.
    let Some(authority) = parse_authority(authority) else {
        return false;
    };
    names.iter().any(|n| entry_matches(n, &Authority { host: authority.host.clone(), port: None }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> Vec<String> {
        ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec()
    }

    #[test]
    fn authority_shapes() {
        assert_eq!(parse_authority("127.0.0.1:8080"), Some(Authority { host: "127.0.0.1".into(), port: Some(8080) }));
        assert_eq!(parse_authority("[::1]:80"), Some(Authority { host: "::1".into(), port: Some(80) }));
        assert_eq!(parse_authority("LocalHost"), Some(Authority { host: "localhost".into(), port: None }));
        for bad in [
            "",
            ":80",
            "127.0.0.1:",
            "127.0.0.1:0",
            "127.0.0.1:65536",
            "127.0.0.1:99999",
            "127.0.0.1:abc",
            "127.0.0.1:+80",
            "127.0.0.1:80.evil.example",
            "127.0.0.1:80:80",
            "[::1",
            "[::1]x",
            "[evil]:80",
            "::1",
            "a..b",
            "-a.example",
            "evil example",
            "user@127.0.0.1",
            "127.0.0.1/evil",
        ] {
            assert_eq!(parse_authority(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hosts_match_name_and_optional_port() {
        let allowed = loopback();
        assert!(host_allowed("localhost:8080", Some(&allowed)));
        assert!(host_allowed("[::1]:8080", Some(&allowed)));
        assert!(host_allowed("127.0.0.1", Some(&allowed)));
        assert!(!host_allowed("127.0.0.2:8080", Some(&allowed)));
        assert!(!host_allowed("localhost.evil.example", Some(&allowed)));
        let pinned = vec!["box.example:8443".to_owned()];
        assert!(host_allowed("box.example:8443", Some(&pinned)));
        assert!(!host_allowed("box.example:8444", Some(&pinned)));
        assert!(host_allowed("anything.example:1", None));
        assert!(!host_allowed("anything.example:abc", None));
    }

    #[test]
    fn origins_are_scheme_host_port_and_nothing_else() {
        let names = loopback();
        assert!(origin_allowed("http://127.0.0.1:8080", &names));
        assert!(origin_allowed("https://localhost", &names));
        assert!(origin_allowed("http://[::1]:3000", &names));
        for bad in [
            "null",
            "http://127.0.0.1:8080/evil",
            "http://127.0.0.1:8080/",
            "http://localhost:8080.evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1:abc",
            "ftp://127.0.0.1",
            "http://evil@127.0.0.1",
            "http://127.0.0.1?x",
            "http://example.com",
            "127.0.0.1:8080",
        ] {
            assert!(!origin_allowed(bad, &names), "{bad:?}");
        }
    }
}
