//! Value rules shared by the decoder and [`Config::validate`](super::Config::validate), the every-mode and
//! mode-specific checks of CFG-2, and the configuration-level warnings.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::{Config, Filter, GoDuration, Mode};
use crate::error::{Error, Result};
use crate::warning::Warning;

/// Largest `max_concurrent_tools` (MCP-16, A2A-11).
pub(crate) const MAX_CONCURRENCY: i64 = 1024;

pub(crate) fn is_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// CFG-5 / IMPORT-1 / MCPI-1 charset.
pub(crate) fn check_name(s: &str) -> std::result::Result<(), String> {
    if is_name(s) {
        Ok(())
    } else if s.is_empty() {
        Err("must not be empty".to_owned())
    } else {
        Err(format!("invalid name {s:?}: use only ASCII letters, digits, '_' and '-' (^[a-zA-Z0-9_-]+$)"))
    }
}

/// RFC 6749 section 3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
pub(crate) fn check_scope(s: &str) -> std::result::Result<(), String> {
    if s.is_empty() {
        return Err("a scope must not be empty".to_owned());
    }
    if s.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b)) {
        Ok(())
    } else {
        Err(format!("invalid scope {s:?}: a scope is printable ASCII without spaces, '\"' or '\\'"))
    }
}

pub(crate) fn check_concurrency(v: i64) -> std::result::Result<(), String> {
    if v < 0 {
        Err(format!("must not be negative, got {v}"))
    } else if v > MAX_CONCURRENCY {
        Err(format!("must be at most {MAX_CONCURRENCY}, got {v}"))
    } else {
        Ok(())
    }
}

pub(crate) fn check_non_negative_duration(d: GoDuration) -> std::result::Result<(), String> {
    if d.is_negative() { Err(format!("must not be negative, got {d}")) } else { Ok(()) }
}

pub(crate) fn check_positive_duration(d: GoDuration) -> std::result::Result<(), String> {
    if d.as_nanos() <= 0 { Err(format!("must be a positive duration, got {d}")) } else { Ok(()) }
}

/// SEL-6: a `tools` entry must compile as a regular expression.
pub(crate) fn check_pattern(p: &str) -> std::result::Result<(), String> {
    regex::Regex::new(p).map(drop).map_err(|e| {
        // The syntax error text spans several lines (pattern, caret, reason); keep the reason.
        let text = e.to_string();
        let reason = match text.rfind("error: ") {
            Some(i) => text[i + "error: ".len()..].trim().to_owned(),
            None => text.split_whitespace().collect::<Vec<_>>().join(" "),
        };
        format!("invalid regular expression {p:?}: {reason}")
    })
}

pub(crate) fn check_backend(what: &str, name: &str) -> std::result::Result<(), String> {
    // Any registered name (the harness checks registration); a name no registry can hold is refused here.
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        Ok(())
    } else {
        Err(format!("invalid {what} backend name {name:?}: use letters, digits, '_' and '-'"))
    }
}

/// MCPI-3: a non-empty list whose first entry (the executable) is not empty.
pub(crate) fn check_command(c: &[String]) -> std::result::Result<(), String> {
    match c.first() {
        None => Err("must be a non-empty list: the executable path followed by its arguments".to_owned()),
        Some(exe) if exe.trim().is_empty() => Err("the first entry (the executable path) must not be empty".to_owned()),
        Some(_) => Ok(()),
    }
}

/// GLOBAL-2: trim, strip leading dashes, drop empties, remove duplicates keeping the first occurrence.
pub(crate) fn normalize_global_flags(v: &[String]) -> Vec<String> {
    dedupe(v.iter().map(|s| s.trim().trim_start_matches('-')))
}

/// CFG-11: trim, drop empties, remove duplicates keeping the first occurrence.
pub(crate) fn normalize_tags(v: &[String]) -> Vec<String> {
    dedupe(v.iter().map(|s| s.trim()))
}

fn dedupe<'a>(it: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in it {
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    out
}

/// Checks that `url` is an `http` or `https` URL without userinfo, where `http` is only allowed for a loopback
/// literal host (`localhost` in any case, `127.0.0.0/8`, `::1`); names are never resolved. This is the rule of
/// PROV-7 (provider base URL) and MCPI-2 (`mcp_servers[].url`). The error is a reason without the URL itself.
///
/// # Errors
///
/// The reason, as text, for a URL that does not parse, has another scheme, plain `http` to a host that is not loopback,
/// or user information.
///
/// ```
/// use fisk_ai::config::check_http_url;
///
/// assert!(check_http_url("https://mcp.example.com/mcp").is_ok());
/// assert!(check_http_url("http://127.0.0.1:8080/").is_ok());
/// assert!(check_http_url("http://example.com/").is_err());
/// assert!(check_http_url("https://user:pw@example.com/").is_err());
/// ```
pub fn check_http_url(url: &str) -> std::result::Result<(), String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".to_owned());
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("must be an absolute URL starting with https:// (or http:// for a loopback host)".to_owned());
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(format!("scheme {scheme:?} is not allowed; use https (or http for a loopback host)"));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if authority.contains('@') {
        return Err("must not embed credentials (user information before '@')".to_owned());
    }
    let (host, port, loopback) = if let Some(r) = authority.strip_prefix('[') {
        let Some(close) = r.find(']') else {
            return Err("has an unterminated IPv6 address literal".to_owned());
        };
        let host = &r[..close];
        let after = &r[close + 1..];
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(p) => Some(p),
                None => return Err("has unexpected characters after the IPv6 address literal".to_owned()),
            },
        };
        let Ok(ip) = host.parse::<Ipv6Addr>() else {
            return Err(format!("has an invalid IPv6 address literal {host:?}"));
        };
        // IPv6 loopback is exactly ::1 (any spelling of it). IPv4-mapped (`::ffff:127.0.0.1`) and IPv4-compatible
        // (`::127.0.0.1`) forms are not accepted: PROV-7's loopback set is 127.0.0.0/8, ::1 and `localhost`, and
        // an IPv4 address in IPv6 clothing is where a check and the connecting stack start to disagree.
        (host, port, ip.is_loopback())
    } else {
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if host.contains(':') {
            return Err("has an IPv6 address that is not enclosed in [ ]".to_owned());
        }
        // `localhost` exactly (not `localhost.`, which is a DNS name), or a dotted-quad IPv4 literal in 127.0.0.0/8.
        // `Ipv4Addr` parses only four decimal parts without leading zeros, so the decimal (`2130706433`), octal
        // (`0177.0.0.1`) and hex (`0x7f.0.0.1`) spellings an URL parser may turn into 127.0.0.1 are refused here
        // rather than trusted to mean the same thing everywhere.
        let loopback =
            host.eq_ignore_ascii_case("localhost") || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback());
        (host, port, loopback)
    };
    if host.is_empty() {
        return Err("has no host".to_owned());
    }
    if let Some(p) = port
        && !p.is_empty()
        && (!p.bytes().all(|b| b.is_ascii_digit()) || p.parse::<u16>().is_err())
    {
        return Err(format!("has an invalid port {p:?}"));
    }
    if scheme == "http" && !loopback {
        return Err(format!(
            "http is only allowed for a loopback host (localhost, 127.0.0.0/8, ::1), not {host:?}; use https"
        ));
    }
    Ok(())
}

fn key_err(key: &str, msg: impl std::fmt::Display) -> Error {
    Error::config_key(key, format!("{key}: {msg}"))
}

/// `<key> <rest>`, for "is required" style messages.
fn req_err(key: &str, rest: &str) -> Error {
    Error::config_key(key, format!("{key} {rest}"))
}

fn check_filter(key: &str, f: Option<&Filter>) -> Result<()> {
    if let Some(f) = f {
        for (i, p) in f.tools.iter().enumerate() {
            check_pattern(p).map_err(|e| key_err(&format!("{key}.tools[{i}]"), e))?;
        }
    }
    Ok(())
}

/// IMPORT-3 / MCPI-5: an import's `exclude.tags` is an error.
fn check_import_filters(key: &str, name: &str, include: Option<&Filter>, exclude: Option<&Filter>) -> Result<()> {
    check_filter(&format!("{key}.include"), include)?;
    check_filter(&format!("{key}.exclude"), exclude)?;
    if exclude.is_some_and(|f| !f.tags.is_empty()) {
        return Err(key_err(
            &format!("{key}.exclude.tags"),
            format!("entry {name:?}: exclude.tags is not allowed because imported tools carry no tags"),
        ));
    }
    Ok(())
}

/// The checks of CFG-2 that run in every mode.
pub(crate) fn common(cfg: &Config) -> Result<()> {
    // CFG-5, explicit or derived.
    cfg.identity()?;

    // GLOBAL-10.
    let has_app = cfg.application_path.as_ref().is_some_and(|p| !p.as_os_str().is_empty());
    if !cfg.global_flags().is_empty() && !has_app {
        return Err(req_err(
            "global_flags",
            "is set but application_path is not; global flags belong to the wrapped application",
        ));
    }

    // WORK-1, APPR-1.
    if let Some(worker) = &cfg.expose.agent.worker {
        worker.validate()?;
    }
    super::fleet::validate_approvals(&cfg.harness.approvals, cfg.nats_context.as_deref())?;

    // KNOW-1.
    cfg.harness.knowledge.validate()?;

    // SEL-6 for every filter.
    check_filter("include", cfg.include.as_ref())?;
    check_filter("exclude", cfg.exclude.as_ref())?;
    if let Some(pair) = &cfg.expose.agent.tools {
        check_filter("expose.agent.tools.include", pair.include.as_ref())?;
        check_filter("expose.agent.tools.exclude", pair.exclude.as_ref())?;
    }

    // IMPORT-1, IMPORT-3.
    for (i, host) in cfg.remote_tools.iter().enumerate() {
        let key = format!("remote_tools[{i}]");
        check_name(&host.name).map_err(|e| key_err(&format!("{key}.name"), e))?;
        if let Some(alias) = host.alias.as_deref().filter(|a| !a.is_empty()) {
            check_name(alias).map_err(|e| key_err(&format!("{key}.alias"), e))?;
        }
        check_import_filters(&key, &host.name, host.include.as_ref(), host.exclude.as_ref())?;
    }

    // MCPI-1..5, MCPI-12.
    for (i, s) in cfg.mcp_servers.iter().enumerate() {
        let key = format!("mcp_servers[{i}]");
        check_name(&s.name).map_err(|e| key_err(&format!("{key}.name"), e))?;
        if let Some(j) = cfg.mcp_servers[..i].iter().position(|o| o.name == s.name) {
            return Err(key_err(
                &format!("{key}.name"),
                format!("duplicate name {:?}: mcp_servers[{j}] already uses it; names must be unique", s.name),
            ));
        }
        if let Some(alias) = s.alias.as_deref().filter(|a| !a.is_empty()) {
            check_name(alias).map_err(|e| key_err(&format!("{key}.alias"), e))?;
        }
        let url = s.url.as_deref().filter(|u| !u.is_empty());
        match (url, &s.command) {
            (Some(_), Some(_)) => {
                return Err(key_err(
                    &key,
                    format!("entry {:?} sets both url and command; set exactly one of them", s.name),
                ));
            }
            (None, None) => {
                return Err(key_err(
                    &key,
                    format!("entry {:?} sets neither url nor command; set exactly one of them", s.name),
                ));
            }
            (Some(u), None) => {
                check_http_url(u).map_err(|e| key_err(&format!("{key}.url"), format!("invalid url {u:?}: {e}")))?;
            }
            (None, Some(c)) => {
                check_command(c).map_err(|e| key_err(&format!("{key}.command"), e))?;
                if s.bearer_token_env.as_deref().is_some_and(|b| !b.is_empty()) {
                    return Err(key_err(
                        &format!("{key}.bearer_token_env"),
                        format!("entry {:?}: bearer_token_env is only valid with url, not with command", s.name),
                    ));
                }
            }
        }
        if let Some(oauth) = &s.oauth {
            check_oauth(&key, s, oauth)?;
        }
        if let Some(t) = s.timeout {
            check_positive_duration(t).map_err(|e| key_err(&format!("{key}.timeout"), e))?;
        }
        check_import_filters(&key, &s.name, s.include.as_ref(), s.exclude.as_ref())?;
    }

    // MCP-16, MCP-17, A2A-11 (ports are u16 by type).
    if let Some(mcp) = &cfg.expose.agent.mcp {
        check_concurrency(i64::from(mcp.max_concurrent_tools))
            .map_err(|e| key_err("expose.agent.mcp.max_concurrent_tools", e))?;
        if let Some(t) = mcp.tool_timeout {
            check_non_negative_duration(t).map_err(|e| key_err("expose.agent.mcp.tool_timeout", e))?;
        }
        // TASK-3: a task is stopped at its TTL, so one shorter than a call's own bound would cut calls short.
        if mcp.tasks.ttl.is_some() && mcp.tasks.ttl() < mcp.tool_timeout() {
            return Err(key_err(
                "expose.agent.mcp.tasks.ttl",
                format!(
                    "must be at least tool_timeout ({}), or tasks are stopped before their calls end",
                    super::format_duration(mcp.tool_timeout())
                ),
            ));
        }
    }
    if let Some(auth) = cfg.expose.agent.mcp.as_ref().and_then(|m| m.auth.as_ref()) {
        check_auth(auth)?;
    }
    let a2a = &cfg.expose.agent.a2a;
    check_concurrency(i64::from(a2a.max_concurrent_tools))
        .map_err(|e| key_err("expose.agent.a2a.max_concurrent_tools", e))?;
    if let Some(t) = a2a.tool_timeout {
        check_non_negative_duration(t).map_err(|e| key_err("expose.agent.a2a.tool_timeout", e))?;
    }
    check_a2a_queue(i64::from(a2a.queue)).map_err(|e| key_err("expose.agent.a2a.queue", e))?;

    // DEMO-1: only the scripted provider reads a script; with any other it would be ignored.
    if cfg.llm.script.is_some() && cfg.llm.provider != super::SCRIPTED_PROVIDER {
        let provider = &cfg.llm.provider;
        return Err(key_err(
            "llm.script",
            format!("only the scripted provider reads a script, and llm.provider is \"{provider}\""),
        ));
    }

    // CFG-9 (CFG-8 holds by type).
    if let Some(t) = cfg.llm.budget.call_timeout {
        check_positive_duration(t).map_err(|e| key_err("llm.budget.call_timeout", e))?;
    }

    // BUILTIN-1: a name listed twice.
    for (i, t) in cfg.harness.tools.iter().enumerate() {
        if let Some(j) = cfg.harness.tools[..i].iter().position(|o| o.name == t.name) {
            return Err(key_err(
                &format!("harness.tools[{i}].name"),
                format!("tool {:?} is listed twice (also harness.tools[{j}])", t.name),
            ));
        }
    }

    // MEM-18, MEM-22, SESS-25, SESS-31.
    let mem = &cfg.harness.memory;
    check_backend("memory", &mem.backend).map_err(|e| key_err("harness.memory.backend", e))?;
    if mem.backend == "jetstream" && mem.options.bucket.as_deref().is_none_or(str::is_empty) {
        return Err(req_err(
            "harness.memory.options.bucket",
            "is required for the jetstream memory backend (the name of an existing KV bucket)",
        ));
    }
    let ses = &cfg.harness.sessions;
    check_backend("sessions", &ses.backend).map_err(|e| key_err("harness.sessions.backend", e))?;
    if ses.backend == "jetstream" && ses.options.stream.as_deref().is_none_or(str::is_empty) {
        return Err(req_err(
            "harness.sessions.options.stream",
            "is required for the jetstream sessions backend (the name of an existing stream)",
        ));
    }
    Ok(())
}

/// OAUTHC-1: an `oauth` block goes with `url` alone and names its client and the secret's variable.
fn check_oauth(key: &str, s: &super::McpServerEntry, oauth: &super::McpOAuth) -> Result<()> {
    let key = format!("{key}.oauth");
    if s.command.is_some() {
        return Err(key_err(&key, format!("entry {:?}: oauth is only valid with url, not with command", s.name)));
    }
    if s.bearer_token_env.as_deref().is_some_and(|b| !b.is_empty()) {
        return Err(key_err(&key, format!("entry {:?} sets both oauth and bearer_token_env; set one of them", s.name)));
    }
    if oauth.client_id.trim().is_empty() {
        return Err(req_err(&format!("{key}.client_id"), "is required: this client's id at the issuer"));
    }
    let var = &oauth.client_secret_env;
    let is_var = var.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !is_var {
        return Err(key_err(
            &format!("{key}.client_secret_env"),
            format!("must name an environment variable ([A-Za-z_][A-Za-z0-9_]*), got {var:?}"),
        ));
    }
    Ok(())
}

/// AUTH-1: what an `auth` block needs to check a token at all.
fn check_auth(auth: &super::McpAuth) -> Result<()> {
    const KEY: &str = "expose.agent.mcp.auth";
    if auth.issuer.is_none() {
        return Err(req_err(&format!("{KEY}.issuer"), "is required: the authorization server tokens must come from"));
    }
    if auth.audience.is_none() {
        return Err(req_err(
            &format!("{KEY}.audience"),
            "is required: this server's resource URL, which tokens must name in aud (RFC 8707)",
        ));
    }
    match (&auth.jwks_url, &auth.jwks_file) {
        (Some(_), Some(_)) => Err(key_err(KEY, "sets both jwks_url and jwks_file; set exactly one of them")),
        (None, None) => Err(key_err(KEY, "sets neither jwks_url nor jwks_file; set exactly one of them")),
        _ => Ok(()),
    }
}

/// The mode-specific checks of CFG-2.
pub(crate) fn mode(cfg: &Config, mode: Mode) -> Result<()> {
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    match mode {
        Mode::Lenient => {}
        Mode::Agent => {
            if !cfg.remote_tools.is_empty() && !set(&cfg.nats_context) {
                return Err(req_err("nats_context", "is required when remote_tools is set"));
            }
            if cfg.expose.agent.mcp.is_none() {
                if !set(&cfg.identity) {
                    return Err(req_err("identity", "is required to run an agent (unless expose.agent.mcp is set)"));
                }
                if !set(&cfg.system_prompt) {
                    return Err(req_err(
                        "system_prompt",
                        "is required to run an agent (unless expose.agent.mcp is set)",
                    ));
                }
            }
            if !set(&cfg.llm.model) {
                return Err(Error::config_key("llm.model", "llm.model is required"));
            }
        }
        Mode::Server => {
            if cfg.application_path.as_ref().is_none_or(|p| p.as_os_str().is_empty()) {
                return Err(req_err(
                    "application_path",
                    "is required to serve agent-to-agent (a2a serves the application's commands, not built-in tools)",
                ));
            }
            if !set(&cfg.nats_context) {
                return Err(req_err("nats_context", "is required to serve agent-to-agent"));
            }
        }
    }
    Ok(())
}

/// IMPORT-3 / MCPI-5: `include.tags` on an import is ignored with a warning.
pub(crate) fn warnings(cfg: &Config) -> Vec<Warning> {
    let tags = |f: &Option<Filter>| f.as_ref().is_some_and(|f| !f.tags.is_empty());
    let hosts = cfg.remote_tools.iter().filter(|h| tags(&h.include)).map(|h| ("remote_tools", &h.name));
    let servers = cfg.mcp_servers.iter().filter(|s| tags(&s.include)).map(|s| ("mcp_servers", &s.name));
    hosts
        .chain(servers)
        .map(|(section, name)| Warning::ImportIncludeTagsIgnored { section, name: name.clone() })
        .collect()
}

/// A2A-14: `expose.agent.a2a.queue` is 0 (unset) to 1024.
pub(crate) fn check_a2a_queue(v: i64) -> Result<(), String> {
    let max = super::expose::MAX_A2A_QUEUE as i64;
    if (0..=max).contains(&v) { Ok(()) } else { Err(format!("must be between 0 and {max}, got {v}")) }
}
