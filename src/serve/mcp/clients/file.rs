//! One client's configuration file: where it lives, and reading and editing its server list without losing
//! anything else in it.

use super::ordered::Ordered;
use super::{ClientEntry, ClientScope, McpClient};
use crate::error::{Error, ErrorKind, Location, Result};
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One client's configuration file at one scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFile {
    client: McpClient,
    scope: ClientScope,
    path: PathBuf,
}

/// What [`ClientFile::install`] or [`ClientFile::uninstall`] changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Installed {
    /// The file written (a symlink's target, when the configured path is a symlink).
    pub path: PathBuf,
    /// The copy of the previous file, when there was one.
    pub backup: Option<PathBuf>,
    /// Whether an entry of the same name was there before (and was replaced, or removed).
    pub replaced: bool,
}

/// One server a client's file lists.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedServer {
    /// The entry's name.
    pub name: String,
    /// The command it starts, for a stdio entry.
    pub command: Option<String>,
    /// The command's arguments.
    pub args: Vec<String>,
    /// The address, for a remote entry.
    pub url: Option<String>,
}

impl ClientFile {
    /// The file `client` reads at `scope` (REG-2): the project's file under the current directory, or the user's
    /// under `$HOME` (`$XDG_CONFIG_HOME` for VS Code and Claude Desktop on Linux, the platform's application-data
    /// directory on macOS and Windows).
    ///
    /// | client | project | user |
    /// |---|---|---|
    /// | `claude-desktop` | (none) | `Claude/claude_desktop_config.json` in the config directory |
    /// | `claude-code` | `.mcp.json` | `~/.claude.json` |
    /// | `vscode` | `.vscode/mcp.json` | `Code/User/mcp.json` in the config directory |
    /// | `cursor` | `.cursor/mcp.json` | `~/.cursor/mcp.json` |
    ///
    /// # Errors
    ///
    /// `claude-desktop` at project scope (it has no project file); `HOME` (or `APPDATA` on Windows) unset or not
    /// absolute; an unreadable current directory.
    pub fn locate(client: McpClient, scope: ClientScope) -> Result<Self> {
        let path = match scope {
            ClientScope::Project => {
                let dir = std::env::current_dir()
                    .map_err(|e| Error::new(ErrorKind::Io, format!("cannot read the current directory: {e}")))?;
                dir.join(project_file(client)?)
            }
            ClientScope::User => user_file(client)?,
        };
        Ok(ClientFile { client, scope, path })
    }

    /// The file at `path`, written in `client`'s format as if at `scope`: for a client installed somewhere
    /// [`locate`](Self::locate) does not know.
    pub fn at(client: McpClient, scope: ClientScope, path: impl Into<PathBuf>) -> Self {
        ClientFile { client, scope, path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The client.
    pub fn client(&self) -> McpClient {
        self.client
    }

    /// The scope.
    pub fn scope(&self) -> ClientScope {
        self.scope
    }

    /// The servers the file lists, in file order; none when it does not exist (REG-8).
    ///
    /// # Errors
    ///
    /// The file cannot be read, or is not a JSON object whose server map is an object (REG-4).
    pub fn list(&self) -> Result<Vec<ListedServer>> {
        let Some((_, servers)) = self.read()? else { return Ok(Vec::new()) };
        Ok(servers.0.iter().map(|(name, raw)| listed(name, raw)).collect())
    }

    /// Claude Code's local-scope servers for the project directory `dir`, which Claude Code prefers there over a
    /// user-scope entry of the same name (`claude mcp add` writes local scope by default). They live in the same
    /// `~/.claude.json`, under `projects.<dir>.mcpServers`
    /// (<https://code.claude.com/docs/en/mcp>, "MCP installation scopes"). Empty for any other client or scope.
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list).
    pub fn local_to(&self, dir: &Path) -> Result<Vec<ListedServer>> {
        if (self.client, self.scope) != (McpClient::ClaudeCode, ClientScope::User) {
            return Ok(Vec::new());
        }
        // The file's shape was checked by `read`; only the one project's map is parsed here.
        let Some((top, _)) = self.read()? else { return Ok(Vec::new()) };
        let Some(projects) = top.get("projects") else { return Ok(Vec::new()) };
        let Ok(projects) = serde_json::from_str::<HashMap<String, Project<'_>>>(projects.get()) else {
            return Ok(Vec::new());
        };
        let Some(servers) = dir.to_str().and_then(|d| projects.get(d)).and_then(|p| p.servers.as_ref()) else {
            return Ok(Vec::new());
        };
        Ok(servers.iter().map(|(name, raw)| listed(name, raw)).collect())
    }

    /// Add `entry`, or update the entry of that name if it serves the same configuration (the same arguments,
    /// whichever executable: a rebuilt or upgraded one replaces the old) (REG-3). An entry of that name that
    /// starts anything else (another configuration of the same name included) is refused, never overwritten;
    /// every other entry and member is kept.
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list); a same-named entry that starts another command; the file, its backup or its
    /// directory cannot be written. The file is left as it was on every error.
    pub fn install(&self, entry: &ClientEntry) -> Result<Installed> {
        let (mut top, mut servers) = self.read()?.unwrap_or_default();
        let replaced = match servers.get(entry.name()) {
            None => false,
            Some(raw) if serves_the_same(entry, raw) => true,
            Some(raw) => return Err(self.not_ours(entry, raw, "choose another name (--name) or uninstall it first")),
        };
        let json = entry.to_json(self.client, self.scope);
        // Nested two levels deep: indent the entry's own lines to match (JSON strings hold no raw newline).
        let text = serde_json::to_string_pretty(&json).map_err(internal)?.replace('\n', "\n    ");
        servers.set(entry.name(), RawValue::from_string(text).map_err(internal)?);
        top.set(self.client.servers_key(), servers.to_raw(2).map_err(internal)?);
        let (path, backup) = self.write(&top)?;
        Ok(Installed { path, backup, replaced })
    }

    /// Remove the entry of `entry`'s name when it is `entry`'s: it serves the same configuration, or it starts
    /// the same executable. `None` when there is no such entry (nothing is written then).
    ///
    /// # Errors
    ///
    /// As [`install`](Self::install); an entry of that name that starts something else (it is left as it was).
    pub fn uninstall(&self, entry: &ClientEntry) -> Result<Option<Installed>> {
        let Some((mut top, mut servers)) = self.read()? else { return Ok(None) };
        let Some(raw) = servers.get(entry.name()) else { return Ok(None) };
        let same_executable = listed(entry.name(), raw).command.as_deref() == entry.command().to_str();
        if !same_executable && !serves_the_same(entry, raw) {
            return Err(self.not_ours(entry, raw, "remove it by hand, or pass the --config it serves"));
        }
        servers.remove(entry.name());
        top.set(self.client.servers_key(), servers.to_raw(2).map_err(internal)?);
        let (path, backup) = self.write(&top)?;
        Ok(Some(Installed { path, backup, replaced: true }))
    }

    /// The file's members and its server list; `None` when the file does not exist. A file that is not a JSON
    /// object, or whose server list is not one, is refused with where it goes wrong (REG-4).
    fn read(&self) -> Result<Option<(Ordered, Ordered)>> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                let message = format!("cannot read {}: {e}", self.path.display());
                return Err(Error::new(ErrorKind::Io, message).with_source(e));
            }
        };
        let text = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(Some(Default::default()));
        }
        let top: Ordered = serde_json::from_slice(text).map_err(|e| self.malformed(&e))?;
        let key = self.client.servers_key();
        let servers = match top.get(key) {
            None => Ordered::default(),
            Some(raw) => serde_json::from_str(raw.get()).map_err(|_| {
                Error::config_key(
                    key,
                    format!("{}: {key:?} is not an object; the file is left as it was", self.path.display()),
                )
            })?,
        };
        Ok(Some((top, servers)))
    }

    fn malformed(&self, e: &serde_json::Error) -> Error {
        Error::config(format!(
            "not a JSON object this command can edit ({e}); the file is left as it was. Comments and trailing commas, \
             which some clients accept, cannot be kept: remove them, or add the entry by hand"
        ))
        .with_location(Location { file: Some(self.path.clone()), line: e.line(), column: e.column() })
    }

    /// Write `top` over the file atomically, keeping its mode and a backup of the previous version (REG-5).
    fn write(&self, top: &Ordered) -> Result<(PathBuf, Option<PathBuf>)> {
        let target = match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(&self.path)
                .map_err(|e| io(format!("{} is a symlink to nowhere: {e}", self.path.display()), e))?,
            _ => self.path.clone(),
        };
        let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| io(format!("cannot create {}: {e}", dir.display()), e))?;
        let previous = std::fs::metadata(&target).ok();
        let backup = match previous {
            Some(_) => {
                let mut name = target.file_name().unwrap_or_default().to_os_string();
                name.push(".bak");
                let backup = target.with_file_name(name);
                // Written like the file itself (a new file, then a rename), never through whatever is at the
                // backup's name: `std::fs::copy` would follow a symlink planted there in a shared directory.
                let old =
                    std::fs::read(&target).map_err(|e| io(format!("cannot back {} up: {e}", target.display()), e))?;
                replace(&backup, &old, previous.as_ref(), self.scope)?;
                Some(backup)
            }
            None => None,
        };
        let text = format!("{}\n", top.render(0));
        replace(&target, text.as_bytes(), previous.as_ref(), self.scope)?;
        Ok((target, backup))
    }
}

/// Write `bytes` to a temporary file beside `target`, with `previous`'s mode (a new file: 0600 for a user's file,
/// which sits among private state, 0644 for a project's), then rename it over `target` and sync the directory.
fn replace(target: &Path, bytes: &[u8], previous: Option<&std::fs::Metadata>, scope: ClientScope) -> Result<()> {
    use std::io::Write;
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(target.file_name().unwrap_or_default());
    // Unpredictable, so nobody sharing the directory can take the name first and make the write fail.
    tmp_name.push(format!(".{}.{:016x}.tmp", std::process::id(), unpredictable()));
    let tmp = dir.join(tmp_name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let mode = previous.map(|m| m.permissions().mode() & 0o7777).unwrap_or(match scope {
            ClientScope::User => 0o600,
            ClientScope::Project => 0o644,
        });
        options.mode(mode);
        mode
    };
    #[cfg(not(unix))]
    let _ = (previous, scope);
    let written = (|| -> std::io::Result<()> {
        let mut file = options.open(&tmp)?;
        // The umask narrowed the mode at creation; the previous file's mode is restored exactly.
        #[cfg(unix)]
        std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, target)?;
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(format!("cannot write {}: {e}", target.display()), e)
    })
}

/// 64 bits no one else can guess: the standard library's per-process random hash keys, over the time.
fn unpredictable() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    h.finish()
}

/// Rendering JSON this module built itself cannot fail; if it ever did, it is reported, never a panic.
fn internal(e: serde_json::Error) -> Error {
    Error::new(ErrorKind::Io, format!("cannot render the client file's JSON: {e}")).with_source(e)
}

fn io(message: String, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, message).with_source(e)
}

impl ClientFile {
    /// The refusal of a same-named entry that is not `entry`'s, naming what it starts; `what_now` says what to do.
    fn not_ours(&self, entry: &ClientEntry, raw: &RawValue, what_now: &str) -> Error {
        let other = listed(entry.name(), raw);
        let what = match (other.command, other.url) {
            (Some(command), _) => std::iter::once(command).chain(other.args).collect::<Vec<_>>().join(" "),
            (None, Some(url)) => url,
            (None, None) => "something else".to_owned(),
        };
        Error::config(format!(
            "{}: an entry named {:?} is already there and starts {what}; {what_now} (the file is left as it was)",
            self.path.display(),
            entry.name()
        ))
    }
}

/// Whether the entry `raw` serves what `entry` serves: a stdio entry with the same arguments (`mcp --stdio
/// --config <the same absolute path>`), whichever executable starts it.
fn serves_the_same(entry: &ClientEntry, raw: &RawValue) -> bool {
    let there = listed(entry.name(), raw);
    there.command.is_some() && there.args == entry.args()
}

/// One project of `~/.claude.json`: only its servers are read.
#[derive(serde::Deserialize)]
struct Project<'a> {
    #[serde(borrow, rename = "mcpServers")]
    servers: Option<std::collections::BTreeMap<String, &'a RawValue>>,
}

/// What a listing shows of one raw entry; an entry that is not an object shows as nothing but its name.
fn listed(name: &str, raw: &RawValue) -> ListedServer {
    let value: serde_json::Value = serde_json::from_str(raw.get()).unwrap_or_default();
    let text = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let args = value
        .get("args")
        .and_then(|a| a.as_array())
        .map(|a| a.iter().map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())).collect());
    ListedServer { name: name.to_owned(), command: text("command"), args: args.unwrap_or_default(), url: text("url") }
}

fn project_file(client: McpClient) -> Result<&'static str> {
    Ok(match client {
        McpClient::ClaudeDesktop => {
            return Err(Error::config("claude-desktop has no project configuration; use --scope user".to_owned()));
        }
        McpClient::ClaudeCode => ".mcp.json",
        McpClient::VsCode => ".vscode/mcp.json",
        McpClient::Cursor => ".cursor/mcp.json",
    })
}

/// The user's file for `client` (sources on [`McpClient::reference`] and in the table on
/// [`ClientFile::locate`]; the Claude Desktop and VS Code locations are those the clients document per platform).
fn user_file(client: McpClient) -> Result<PathBuf> {
    let home = env_dir("HOME")?;
    Ok(match client {
        McpClient::ClaudeCode => home.join(".claude.json"),
        McpClient::Cursor => home.join(".cursor").join("mcp.json"),
        McpClient::ClaudeDesktop => config_dir(&home)?.join("Claude").join("claude_desktop_config.json"),
        McpClient::VsCode => config_dir(&home)?.join("Code").join("User").join("mcp.json"),
    })
}

/// Where desktop applications keep their settings: `~/Library/Application Support` on macOS, `%APPDATA%` on
/// Windows, `$XDG_CONFIG_HOME` (else `~/.config`) elsewhere.
fn config_dir(home: &Path) -> Result<PathBuf> {
    if cfg!(target_os = "macos") {
        return Ok(home.join("Library").join("Application Support"));
    }
    if cfg!(windows) {
        return env_dir("APPDATA");
    }
    Ok(env_dir("XDG_CONFIG_HOME").unwrap_or_else(|_| home.join(".config")))
}

/// An absolute directory from the variable `name`.
fn env_dir(name: &str) -> Result<PathBuf> {
    match std::env::var_os(name).map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => Ok(dir),
        _ => Err(Error::config(format!(
            "{name} is not set to an absolute directory, so the user's file cannot be found"
        ))),
    }
}
