//! Invariant 8 (PROV-7, MCPI-2): a base URL is `https`, or `http` only to a loopback literal (`localhost`,
//! 127.0.0.0/8, `::1`), never with userinfo. One table drives every entry point that applies the rule: the
//! shared check, the Anthropic provider's `with_base_url`, and `mcp_servers[].url` in the configuration. A second
//! check asks the HTTP client's own URL parser (WHATWG, through reqwest) where each accepted `http` URL really
//! goes, so the check cannot accept a spelling the client resolves to somewhere else.

use fisk_ai::config::check_http_url;

/// Accepted, with why.
const GOOD: &[(&str, &str)] = &[
    ("https://api.example.com", "https to any host"),
    ("https://proxy.example.com/anthropic/", "https with a path"),
    ("https://[2001:db8::1]:8443/", "https to an IPv6 literal"),
    ("https://2130706433/", "https to any host, however spelled: the https rule does not depend on the host"),
    ("http://localhost", "the name localhost"),
    ("http://LOCALHOST:8080", "localhost is case-insensitive"),
    ("http://127.0.0.1:1", "127.0.0.0/8"),
    ("http://127.255.255.254/", "all of 127.0.0.0/8, not only 127.0.0.1"),
    ("http://[::1]:9/", "::1"),
    ("http://[0:0:0:0:0:0:0:1]/", "::1 written out is still ::1"),
    ("http://127.0.0.1:/", "an empty port means the default port"),
    // Schemes are case-insensitive (RFC 3986 §3.1), and the client lower-cases them too.
    ("HTTP://127.0.0.1", "an uppercase http scheme to loopback"),
    ("HTTPS://api.example", "an uppercase https scheme"),
];

/// Refused, with the decision PROV-7 implies for each.
const BAD: &[(&str, &str)] = &[
    ("http://api.anthropic.com", "http to a name"),
    ("http://10.0.0.1:80", "http to a private address is not loopback"),
    ("http://128.0.0.1/", "just outside 127.0.0.0/8"),
    ("http://[2001:db8::1]/", "http to a global IPv6 address"),
    ("HTTP://api.example", "an uppercase scheme does not turn http into https"),
    // IPv4 inside IPv6: loopback is exactly ::1, so neither form counts, whatever it embeds.
    ("http://[::ffff:127.0.0.1]/", "IPv4-mapped loopback is not ::1"),
    ("http://[::ffff:10.0.0.1]/", "IPv4-mapped private address"),
    ("http://[::127.0.0.1]/", "IPv4-compatible (deprecated) form is not ::1"),
    // Unspecified addresses are not loopback addresses, even where connecting to them reaches this host.
    ("http://0.0.0.0/", "the unspecified IPv4 address"),
    ("http://[::]/", "the unspecified IPv6 address"),
    // Other spellings of 127.0.0.1: the WHATWG parser maps them to 127.0.0.1, but PROV-7 accepts literals, and
    // only the dotted-quad one is unambiguous across parsers, so these fail closed.
    ("http://2130706433/", "decimal IPv4 spelling"),
    ("http://0177.0.0.1/", "octal IPv4 spelling"),
    ("http://0x7f.0.0.1/", "hex IPv4 spelling"),
    ("http://127.1/", "short IPv4 spelling"),
    // Names other than exactly localhost are resolved, so they are names, not loopback literals.
    ("http://localhost./", "localhost. (fully qualified) is a DNS name"),
    ("http://localhost.evil.example/", "a name under localhost"),
    ("http://localhost.example.com", "a name starting with localhost"),
    ("http://127.0.0.1.nip.io", "a name starting with a loopback address"),
    // Userinfo is refused outright, and it must not disguise the host either way round.
    ("http://127.0.0.1@evil.example", "the host is evil.example; 127.0.0.1 is a user name"),
    ("http://evil.example@127.0.0.1", "userinfo, even to loopback"),
    ("https://user:pw@api.anthropic.com", "credentials in an https URL"),
    ("https://user@example.com", "a user name alone"),
    // Not a usable http(s) URL at all.
    ("ftp://127.0.0.1", "another scheme"),
    ("ws://localhost/", "another scheme"),
    ("api.anthropic.com", "no scheme"),
    ("localhost:8080", "no scheme"),
    ("https:///path", "no host"),
    ("https://example.com:port/", "a non-numeric port"),
    ("https://example.com:70000/", "a port out of range"),
    ("https://exa mple.com", "a space"),
    ("https://api.example.com/\u{7}x", "a control character that is not whitespace"),
    ("https://example.com:+80/", "a port with a sign, which u16 parsing alone would take"),
    ("https://[::1]x/", "text after an IPv6 literal"),
    ("https://[::1/", "an unterminated IPv6 literal"),
    ("https://::1/", "IPv6 without brackets"),
];

#[test]
fn invariant_8_prov_7_the_url_check_accepts_exactly_the_good_table() {
    for (url, why) in GOOD {
        assert!(check_http_url(url).is_ok(), "{url} ({why}): {:?}", check_http_url(url));
    }
    for (url, why) in BAD {
        assert!(check_http_url(url).is_err(), "{url} should be refused ({why})");
    }
}

#[test]
fn mcpi_2_prov_7_mcp_server_urls_follow_the_same_table() {
    // A JSON string is a valid YAML double-quoted scalar, escapes included (the control-character row).
    let config = |url: &str| {
        let quoted = serde_json::to_string(url).unwrap();
        fisk_ai::Config::from_yaml_str(&format!("mcp_servers:\n  - name: gh\n    url: {quoted}\n"))
    };
    for (url, why) in GOOD {
        assert!(config(url).is_ok(), "{url} ({why}): {:?}", config(url).err());
    }
    for (url, why) in BAD {
        let err = config(url).expect_err(url);
        // The configuration refuses control characters anywhere before looking at keys; every other row is
        // refused by the URL rule, naming the key.
        if !url.chars().any(char::is_control) {
            assert!(err.to_string().contains("mcp_servers[0].url"), "{url} ({why}): {err}");
        }
    }
}

#[cfg(feature = "anthropic")]
mod anthropic {
    use super::*;
    use fisk_ai::llm::anthropic::AnthropicProvider;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const KEY: &str = "sk-test";

    #[test]
    fn invariant_8_prov_7_base_url_follows_the_table_and_the_error_names_the_setting() {
        for (url, why) in GOOD {
            let p = AnthropicProvider::new(KEY).with_base_url(url).unwrap_or_else(|e| panic!("{url} ({why}): {e}"));
            assert_eq!(p.endpoint(), format!("{}/v1/messages", url.trim_end_matches('/')));
        }
        for (url, why) in BAD {
            let err = AnthropicProvider::new(KEY).with_base_url(url).expect_err(url);
            assert!(err.is_config(), "{url} ({why})");
            let msg = err.to_string();
            assert!(msg.contains("ANTHROPIC_BASE_URL") && msg.contains("--base-url"), "{url}: {msg}");
        }
        assert_eq!(AnthropicProvider::new(KEY).endpoint(), "https://api.anthropic.com/v1/messages");
    }

    /// Whether the client's parsed host is loopback. The client serializes hosts canonically (an IPv4 address as a
    /// dotted quad, IPv6 in brackets), so parsing its serialization with the standard library is exact.
    fn client_loopback(parsed: &reqwest::Url) -> bool {
        let Some(host) = parsed.host_str() else { return false };
        if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip == Ipv6Addr::LOCALHOST);
        }
        host.eq_ignore_ascii_case("localhost") || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// What the HTTP client will connect to for an accepted URL, according to its own parser.
    #[test]
    fn invariant_8_prov_7_every_accepted_http_url_is_loopback_to_the_http_client_too() {
        for (url, why) in GOOD {
            let parsed =
                reqwest::Url::parse(url).unwrap_or_else(|e| panic!("{url} ({why}): the client refuses it: {e}"));
            assert!(parsed.username().is_empty() && parsed.password().is_none(), "{url}: userinfo");
            if parsed.scheme() != "http" {
                assert_eq!(parsed.scheme(), "https", "{url}");
                continue;
            }
            let loopback = client_loopback(&parsed);
            assert!(loopback, "{url} ({why}) is accepted as loopback but the client goes to {:?}", parsed.host_str());
        }
        // The refused spellings the client would map to 127.0.0.1: refusing them is a choice (fail closed), not a
        // misreading; if the client ever stops mapping them, the rows above stay right.
        for url in ["http://2130706433/", "http://0177.0.0.1/", "http://0x7f.0.0.1/", "http://127.1/"] {
            assert_eq!(reqwest::Url::parse(url).unwrap().host_str(), Some("127.0.0.1"), "{url}");
        }
        // Userinfo before the host: the client's host is the part after '@'.
        let parsed = reqwest::Url::parse("http://127.0.0.1@evil.example").unwrap();
        assert_eq!(parsed.host_str(), Some("evil.example"));
    }
}

#[test]
fn prov_7_llm_base_url_follows_the_same_table_and_the_error_names_the_key() {
    let config = |url: &str| {
        let quoted = serde_json::to_string(url).unwrap();
        fisk_ai::Config::from_yaml_str(&format!("llm:\n  base_url: {quoted}\n"))
    };
    for (url, why) in GOOD {
        let c = config(url).unwrap_or_else(|e| panic!("{url} ({why}): {e}"));
        assert_eq!(c.llm.base_url.as_deref(), Some(*url));
    }
    for (url, why) in BAD {
        let err = config(url).expect_err(url);
        if !url.chars().any(char::is_control) {
            assert!(err.to_string().contains("llm.base_url"), "{url} ({why}): {err}");
        }
    }
    assert_eq!(config("").unwrap().llm.base_url, None, "empty is unset");
}

/// A base URL set in code (not parsed) is checked by every factory again, naming `llm.base_url`.
#[cfg(any(feature = "anthropic", feature = "openai"))]
fn factories_refuse_bad_llm_base_url(factory: &dyn fisk_ai::llm::ProviderFactory) {
    for (url, why) in BAD {
        let mut config = fisk_ai::Config::from_yaml_str("llm:\n  model: m\n").unwrap();
        config.llm.base_url = Some((*url).to_owned());
        let settings = fisk_ai::llm::ProviderSettings::new(&config).with_api_key("k");
        let err = factory.check(&settings).expect_err(url);
        assert!(err.to_string().contains("llm.base_url"), "{url} ({why}): {err}");
        assert!(factory.build(&settings).is_err(), "{url}");
    }
}

#[cfg(feature = "anthropic")]
#[test]
fn prov_7_the_anthropic_factory_checks_llm_base_url() {
    factories_refuse_bad_llm_base_url(&fisk_ai::llm::anthropic::AnthropicFactory);
}

/// `llm.base_url` is where the Anthropic provider sends its requests (`<base>/v1/messages`), when neither
/// `--base-url` nor `ANTHROPIC_BASE_URL` is set.
#[cfg(feature = "anthropic")]
#[tokio::test]
async fn prov_7_the_anthropic_factory_honours_llm_base_url() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if std::env::var_os("ANTHROPIC_BASE_URL").is_some() {
        return; // The variable wins, by design.
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut head = vec![0u8; 256];
        let n = conn.read(&mut head).await.unwrap();
        // A 400 is not retried, so one request is all there is.
        conn.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await.unwrap();
        String::from_utf8_lossy(&head[..n]).into_owned()
    });
    let config =
        fisk_ai::Config::from_yaml_str(&format!("llm:\n  model: m\n  base_url: http://127.0.0.1:{port}/\n")).unwrap();
    let settings = fisk_ai::llm::ProviderSettings::new(&config).with_api_key("k");
    let provider = fisk_ai::llm::ProviderRegistry::with_defaults().build(&settings).unwrap();
    let plan = fisk_ai::llm::ToolPlan::new(fisk_ai::Selection::new().apply(Vec::new()).unwrap(), true);
    let messages = [fisk_ai::llm::Message::user("x")];
    let err = provider.call(&fisk_ai::llm::Request::new("m", &[], &messages, &plan)).await.unwrap_err();
    assert_eq!(err.http_status(), Some(400), "{err}");
    assert!(server.await.unwrap().starts_with("POST /v1/messages HTTP/1.1"));
}

#[cfg(feature = "openai")]
mod openai {
    use super::*;
    use fisk_ai::llm::openai::{OpenAiFactory, OpenAiProvider};

    #[test]
    fn invariant_8_prov_7_openai_base_url_follows_the_table_and_the_error_names_the_setting() {
        for (url, why) in GOOD {
            let p = OpenAiProvider::new("k").with_base_url(url).unwrap_or_else(|e| panic!("{url} ({why}): {e}"));
            assert_eq!(p.endpoint(), format!("{}/chat/completions", url.trim_end_matches('/')));
        }
        for (url, why) in BAD {
            let err = OpenAiProvider::new("k").with_base_url(url).expect_err(url);
            assert!(err.is_config(), "{url} ({why})");
            let msg = err.to_string();
            assert!(msg.contains("OPENAI_BASE_URL") && msg.contains("--base-url"), "{url}: {msg}");
        }
        assert_eq!(OpenAiProvider::new("k").endpoint(), "https://api.openai.com/v1/chat/completions");
    }

    #[test]
    fn prov_7_the_openai_factory_checks_llm_base_url() {
        factories_refuse_bad_llm_base_url(&OpenAiFactory);
    }
}
