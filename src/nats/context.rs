//! NATS CLI contexts (A2A-13, CFG-16), resolved exactly as the NATS CLI stores them: `context/<name>.json` in
//! `$XDG_CONFIG_HOME/nats` (or `~/.config/nats`), the selected name in `context.txt` beside it.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The server used when no context is named and none is selected: the NATS CLI's own default.
pub const DEFAULT_URL: &str = "nats://127.0.0.1:4222";

/// A resolved NATS CLI context: where it came from and the connection settings it carries.
///
/// ```
/// use fisk_ai::nats::NatsContext;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("context"))?;
/// std::fs::write(dir.path().join("context/prod.json"), r#"{"url": "nats://a:4222,nats://b:4222", "token": "s3cret"}"#)?;
///
/// let ctx = NatsContext::load_from(dir.path(), Some("prod"))?;
/// assert_eq!(ctx.label(), "prod");
/// assert_eq!(ctx.servers(), ["nats://a:4222", "nats://b:4222"]);
///
/// let missing = NatsContext::load_from(dir.path(), Some("staging")).unwrap_err();
/// assert!(missing.to_string().contains(r#"unknown context "staging""#));
///
/// // Nothing named and nothing selected: the local default server, without credentials.
/// let empty = tempfile::tempdir()?;
/// assert_eq!(NatsContext::load_from(empty.path(), None)?.servers(), ["nats://127.0.0.1:4222"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct NatsContext {
    name: Option<String>,
    file: Option<PathBuf>,
    settings: Settings,
}

/// The keys of a context file the connection uses. Unknown keys are ignored, as the NATS CLI does; so are the
/// JetStream domain and prefixes, which the reference parses but never applies.
#[derive(Clone, Default, Deserialize)]
#[serde(default)]
struct Settings {
    url: Option<String>,
    user: Option<String>,
    password: Option<String>,
    creds: Option<String>,
    nkey: Option<String>,
    user_jwt: Option<String>,
    user_seed: Option<String>,
    token: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    ca: Option<String>,
    tls_first: Option<bool>,
    inbox_prefix: Option<String>,
    socks_proxy: Option<String>,
}

/// The CA file, and the client certificate and key files.
pub(crate) type Tls = (Option<PathBuf>, Option<(PathBuf, PathBuf)>);

/// How the connection authenticates, in the reference's precedence: user/password, creds, nkey, jwt+seed.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Auth {
    None,
    UserPassword(String, String),
    CredsFile(PathBuf),
    NkeySeedFile(PathBuf),
    JwtSeed(String, String),
}

/// Names, files and servers only: a context's password, token, seed and JWT never reach a log through `{:?}`.
impl std::fmt::Debug for NatsContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers: Vec<String> = self.servers().iter().map(|u| redact_url(u)).collect();
        f.debug_struct("NatsContext")
            .field("name", &self.label())
            .field("file", &self.file)
            .field("servers", &servers)
            .finish_non_exhaustive()
    }
}

/// `url` with any user information (`nats://user:pass@host`, `nats://token@host`) replaced by `***`, for errors
/// and logs.
pub(crate) fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let redacted = match rest[..authority_end].rfind('@') {
        Some(at) => format!("***{}", &rest[at..]),
        None => rest.to_owned(),
    };
    match scheme {
        Some(scheme) => format!("{scheme}://{redacted}"),
        None => redacted,
    }
}

impl NatsContext {
    /// Resolve `name` (or the selected context when `None`) in the NATS CLI's configuration directory:
    /// `$XDG_CONFIG_HOME/nats`, or `~/.config/nats` when that is unset.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Config`](crate::ErrorKind::Config), naming the context and the file, for an invalid name, a
    /// missing, unreadable or malformed context file, or a setting this build cannot honour.
    pub fn load(name: Option<&str>) -> Result<NatsContext> {
        Self::load_from(&config_dir()?, name)
    }

    /// Resolve `name` (or the one `context.txt` selects) in `dir`, a NATS CLI configuration directory.
    ///
    /// # Errors
    ///
    /// As [`NatsContext::load`].
    pub fn load_from(dir: &Path, name: Option<&str>) -> Result<NatsContext> {
        let name = match name.filter(|n| !n.is_empty()) {
            Some(n) => Some(n.to_owned()),
            None => selected(dir)?,
        };
        let Some(name) = name else {
            return Ok(NatsContext { name: None, file: None, settings: Settings::default() });
        };
        check_name(&name)?;
        let file = dir.join("context").join(format!("{name}.json"));
        let text = match std::fs::read(&file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::config(format!("unknown context {name:?}: {} does not exist", file.display())));
            }
            Err(e) => {
                return Err(
                    Error::config(format!("NATS context {name:?}: cannot read {}: {e}", file.display())).with_source(e)
                );
            }
        };
        let settings: Settings = serde_json::from_slice(&text).map_err(|e| {
            Error::config(format!(
                "NATS context {name:?}: {} is not a valid context file: {e} (line {}, column {})",
                file.display(),
                e.line(),
                e.column()
            ))
        })?;
        let ctx = NatsContext { name: Some(name), file: Some(file), settings };
        ctx.auth()?;
        ctx.refuse_unsupported()?;
        Ok(ctx)
    }

    /// The context's name, or `(default)` when none was named or selected (CFG-16, INFO).
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or("(default)")
    }

    /// The context's name, `None` for the built-in default.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The context file, `None` for the built-in default.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The servers to connect to: the `url` list, or [`DEFAULT_URL`].
    pub fn servers(&self) -> Vec<String> {
        let urls: Vec<String> = (self.settings.url.as_deref().unwrap_or_default().split(','))
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect();
        if urls.is_empty() { vec![DEFAULT_URL.to_owned()] } else { urls }
    }

    /// The token, added whatever else authenticates (as the reference does).
    pub(crate) fn token(&self) -> Option<&str> {
        set(&self.settings.token)
    }

    /// The inbox prefix, when the context sets one.
    pub(crate) fn inbox_prefix(&self) -> Option<&str> {
        set(&self.settings.inbox_prefix)
    }

    /// Whether the TLS handshake comes before the server's INFO.
    pub(crate) fn tls_first(&self) -> bool {
        self.settings.tls_first.unwrap_or(false)
    }

    /// The CA file and the client certificate and key files, expanded.
    pub(crate) fn tls(&self) -> Result<Tls> {
        let ca = set(&self.settings.ca).map(expand_path);
        let pair = match (set(&self.settings.cert), set(&self.settings.key)) {
            (Some(c), Some(k)) => Some((expand_path(c), expand_path(k))),
            (None, None) => None,
            (Some(_), None) => return Err(self.error("sets cert without key; a client certificate needs both")),
            (None, Some(_)) => return Err(self.error("sets key without cert; a client certificate needs both")),
        };
        Ok((ca, pair))
    }

    /// The authentication the context selects, first match wins.
    pub(crate) fn auth(&self) -> Result<Auth> {
        let s = &self.settings;
        if let Some(user) = set(&s.user) {
            return Ok(Auth::UserPassword(user.to_owned(), s.password.clone().unwrap_or_default()));
        }
        if let Some(creds) = set(&s.creds) {
            if creds.starts_with("op://") {
                return Err(self.error(
                    "creds is a secret-manager reference (op://...), which this build does not resolve; point it \
                     at a credentials file",
                ));
            }
            return Ok(Auth::CredsFile(expand_path(creds)));
        }
        if let Some(nkey) = set(&s.nkey) {
            return Ok(Auth::NkeySeedFile(expand_path(nkey)));
        }
        match (set(&s.user_jwt), set(&s.user_seed)) {
            (Some(jwt), Some(seed)) => Ok(Auth::JwtSeed(jwt.to_owned(), seed.to_owned())),
            (Some(_), None) => Err(self.error("sets user_jwt without user_seed, which is needed to sign the nonce")),
            _ => Ok(Auth::None),
        }
    }

    /// Settings the client library cannot honour are refused rather than silently dropped.
    fn refuse_unsupported(&self) -> Result<()> {
        if set(&self.settings.socks_proxy).is_some() {
            return Err(self.error("sets socks_proxy, which this build's NATS client does not support"));
        }
        Ok(())
    }

    /// A configuration error naming this context and its file.
    pub(crate) fn error(&self, what: &str) -> Error {
        match &self.file {
            Some(file) => Error::config(format!("NATS context {:?} ({}) {what}", self.label(), file.display())),
            None => Error::config(format!("NATS context {} {what}", self.label())),
        }
    }
}

/// The NATS CLI's configuration directory.
fn config_dir() -> Result<PathBuf> {
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("nats"));
    }
    home()
        .map(|h| h.join(".config").join("nats"))
        .ok_or_else(|| Error::config("cannot find the NATS CLI contexts: neither XDG_CONFIG_HOME nor HOME is set"))
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The trimmed contents of `context.txt`, `None` when it is absent or empty.
fn selected(dir: &Path) -> Result<Option<String>> {
    let file = dir.join("context.txt");
    match std::fs::read_to_string(&file) {
        Ok(text) => Ok(Some(text.trim().to_owned()).filter(|n| !n.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => {
            Err(Error::config(format!("cannot read the selected NATS context from {}: {e}", file.display()))
                .with_source(e))
        }
    }
}

/// A name must be non-empty and hold no `..`, `/` or `\`: it names a file inside the context directory.
fn check_name(name: &str) -> Result<()> {
    if name.contains("..") || name.contains('/') || name.contains('\\') {
        return Err(Error::config(format!(
            "invalid NATS context name {name:?}: a name may not contain \"..\", \"/\" or \"\\\""
        )));
    }
    Ok(())
}

fn set(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

/// Environment variables expanded (`$VAR`, `${VAR}`; unset ones become empty, as Go's `os.ExpandEnv`), then a
/// leading `~` to the home directory.
pub(crate) fn expand_path(raw: &str) -> PathBuf {
    let expanded = expand_env(raw, |k| std::env::var(k).ok());
    if (expanded == "~" || expanded.starts_with("~/"))
        && let Some(home) = home()
    {
        return home.join(expanded.trim_start_matches('~').trim_start_matches('/'));
    }
    PathBuf::from(expanded)
}

fn expand_env(raw: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, tail) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], &braced[end + 1..]),
                None => ("", after),
            }
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
        } else {
            out.push_str(&lookup(name).unwrap_or_default());
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion_follows_go() {
        let env = |k: &str| (k == "D").then(|| "/srv".to_owned());
        assert_eq!(expand_env("$D/a.creds", env), "/srv/a.creds");
        assert_eq!(expand_env("${D}/b", env), "/srv/b");
        assert_eq!(expand_env("$NOPE/c", env), "/c");
        assert_eq!(expand_env("a$", env), "a$");
        assert_eq!(expand_env("${D", env), "${D");
    }

    #[test]
    fn urls_lose_their_user_information() {
        assert_eq!(redact_url("nats://u:p@h:4222"), "nats://***@h:4222");
        assert_eq!(redact_url("tls://t0ken@h"), "tls://***@h");
        assert_eq!(redact_url("nats://h:4222/x@y"), "nats://h:4222/x@y");
        assert_eq!(redact_url("u:p@h"), "***@h");
        assert_eq!(redact_url("nats://h"), "nats://h");
    }

    #[test]
    fn names_cannot_leave_the_context_directory() {
        for bad in ["../x", "a/b", "a\\b", ".."] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_name("prod-1").is_ok());
    }
}
