//! Registering a stdio MCP server with the assistants people run it from: Claude Desktop, Claude Code, VS Code and
//! Cursor (REG-1..8).
//!
//! [`ClientEntry`] is the server an assistant should start (this executable, `mcp --stdio --config <file>`, and
//! the names of the variables it needs); [`ClientFile`] is one client's configuration file, which
//! [`install`](ClientFile::install), [`uninstall`](ClientFile::uninstall) and [`list`](ClientFile::list) read and
//! edit. A host CLI offers the same `mcp install` command the example does with a few lines:
//!
//! ```no_run
//! use fisk_ai::serve::mcp::{ClientEntry, ClientFile, ClientScope, McpClient};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let entry = ClientEntry::for_config("ops", std::env::current_exe()?, "agent.yaml".as_ref())?
//!     .env_ref("OPS_API_TOKEN");
//! let file = ClientFile::locate(McpClient::Cursor, ClientScope::User)?;
//! let done = file.install(&entry)?;
//! println!("{} {}", if done.replaced { "updated" } else { "added" }, done.path.display());
//! for name in entry.unreferenced(McpClient::Cursor, ClientScope::User) {
//!     println!("set {name} in the environment Cursor runs in");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! What every write keeps (REG-3..6): the file's other members, byte for byte and in order, and its other servers;
//! its mode; a copy of the previous file beside it (`<file>.bak`); and a file that cannot be read as JSON is
//! refused with its position and left as it was. The write is atomic (a temporary file renamed over the old one),
//! so a client reading the file sees the old or the new version, never half of one. A symlinked file (a dotfiles
//! checkout) is written through to its target.
//!
//! The requirements, by ID:
//!
//! - REG-1: an entry starts this executable by absolute path with `mcp --stdio --config <absolute config>`.
//! - REG-2: each client's documented file at each scope ([`ClientFile::locate`]); Claude Desktop has no project file.
//! - REG-3: other entries and members are kept; installing again updates the entry; a same-named entry that starts
//!   something else is refused.
//! - REG-4: a file that is not a JSON object (or whose server map is not one) is refused with its position, untouched.
//! - REG-5: the write is atomic, keeps the mode, backs the old file up, and follows a symlink.
//! - REG-6: the entry's name defaults to the configuration's `identity`.
//! - REG-7: no secret is written; needed variables are referenced by name, or listed.
//! - REG-8: `list` shows a file's entries; a missing file lists none.
//!
//! No secret is written (REG-7): an entry holds a path, arguments and variable *names*. Where the client expands
//! variables in its file (Claude Code's project `.mcp.json`, VS Code, Cursor) the entry references them there;
//! elsewhere [`ClientEntry::unreferenced`] lists them for the user to set.

mod file;
mod ordered;

pub use file::{ClientFile, Installed, ListedServer};

use crate::error::{Error, Result};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// An assistant that starts MCP servers over stdio from a configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpClient {
    /// Claude Desktop: `claude_desktop_config.json`, user scope only.
    ClaudeDesktop,
    /// Claude Code: `.mcp.json` in the project, or `~/.claude.json` for the user.
    ClaudeCode,
    /// VS Code: `.vscode/mcp.json` in the project, or `mcp.json` in the user profile.
    VsCode,
    /// Cursor: `.cursor/mcp.json` in the project, or `~/.cursor/mcp.json` for the user.
    Cursor,
}

impl McpClient {
    /// Every client, in the order the CLI lists them (a slice, so a client added later is no breaking change).
    pub const ALL: &'static [McpClient] =
        &[McpClient::ClaudeDesktop, McpClient::ClaudeCode, McpClient::VsCode, McpClient::Cursor];

    /// The name the CLI takes: `claude-desktop`, `claude-code`, `vscode` or `cursor`.
    pub fn name(self) -> &'static str {
        match self {
            McpClient::ClaudeDesktop => "claude-desktop",
            McpClient::ClaudeCode => "claude-code",
            McpClient::VsCode => "vscode",
            McpClient::Cursor => "cursor",
        }
    }

    /// The key of the object that maps server names to entries: VS Code's is `servers`, the others' `mcpServers`.
    pub(crate) fn servers_key(self) -> &'static str {
        match self {
            McpClient::VsCode => "servers",
            _ => "mcpServers",
        }
    }

    /// How this client's file at `scope` writes a reference to the variable `name`, if it expands one there.
    ///
    /// - Claude Code expands `${NAME}` in a project's `.mcp.json`
    ///   (<https://code.claude.com/docs/en/mcp>, "Environment variable expansion in `.mcp.json`"); its docs promise
    ///   nothing for `~/.claude.json`, and a reference left unexpanded would hand the server the literal text.
    /// - VS Code substitutes `${env:NAME}` in `mcp.json`
    ///   (<https://code.visualstudio.com/docs/copilot/reference/mcp-configuration>,
    ///   <https://code.visualstudio.com/docs/reference/variables-reference>).
    /// - Cursor interpolates `${env:NAME}` in `mcp.json` (<https://cursor.com/docs/context/mcp>, "Config
    ///   interpolation").
    /// - Claude Desktop documents no expansion (<https://modelcontextprotocol.io/docs/develop/connect-local-servers>).
    fn reference(self, scope: ClientScope, name: &str) -> Option<String> {
        match (self, scope) {
            (McpClient::ClaudeCode, ClientScope::Project) => Some(format!("${{{name}}}")),
            (McpClient::VsCode | McpClient::Cursor, _) => Some(format!("${{env:{name}}}")),
            _ => None,
        }
    }
}

impl fmt::Display for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for McpClient {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        McpClient::ALL.iter().copied().find(|c| c.name() == s).ok_or_else(|| {
            let known: Vec<&str> = McpClient::ALL.iter().map(|c| c.name()).collect();
            Error::config(format!("unknown MCP client {s:?}; known: {}", known.join(", ")))
        })
    }
}

/// Whose configuration an entry goes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ClientScope {
    /// The user's own file, for every project (the default: nothing is written into a repository).
    #[default]
    User,
    /// The project's file in the current directory, shared with whoever checks the project out.
    Project,
}

impl ClientScope {
    /// The name the CLI takes: `user` or `project`.
    pub fn name(self) -> &'static str {
        match self {
            ClientScope::User => "user",
            ClientScope::Project => "project",
        }
    }
}

impl fmt::Display for ClientScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClientScope {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "user" => Ok(ClientScope::User),
            "project" => Ok(ClientScope::Project),
            other => Err(Error::config(format!("unknown scope {other:?}; known: user, project"))),
        }
    }
}

/// One stdio server entry: the command a client starts, its arguments and the variables it needs, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientEntry {
    name: String,
    command: PathBuf,
    args: Vec<String>,
    env: Vec<String>,
}

impl ClientEntry {
    /// An entry named `name` that starts `command` with `args`. `command` must be an absolute path: clients start
    /// servers from a directory of their own choosing, with a `PATH` of their own.
    ///
    /// # Errors
    ///
    /// An empty name or one with control characters; a relative `command`.
    pub fn stdio<A>(name: impl Into<String>, command: impl Into<PathBuf>, args: A) -> Result<Self>
    where
        A: IntoIterator,
        A::Item: Into<String>,
    {
        let name = name.into();
        let args: Vec<String> = args.into_iter().map(Into::into).collect();
        let command = command.into();
        if name.trim().is_empty() || name.chars().any(char::is_control) {
            return Err(Error::config(format!("the server name {name:?} is empty or has control characters")));
        }
        if !command.is_absolute() {
            return Err(Error::config(format!("the server command {} is not an absolute path", command.display())));
        }
        Ok(ClientEntry { name, command, args, env: Vec::new() })
    }

    /// The entry that serves `config` over stdio with `executable` (`<executable> mcp --stdio --config <config>`),
    /// the configuration made absolute against the current directory.
    ///
    /// # Errors
    ///
    /// As [`stdio`](Self::stdio); a configuration path that cannot be made absolute or is not UTF-8.
    pub fn for_config(name: impl Into<String>, executable: impl Into<PathBuf>, config: &Path) -> Result<Self> {
        let config = std::path::absolute(config)
            .map_err(|e| Error::config(format!("cannot make {} absolute: {e}", config.display())).with_source(e))?;
        let config = config.to_str().ok_or_else(|| {
            Error::config(format!("the configuration path {} is not UTF-8; clients store JSON", config.display()))
        })?;
        let args = ["mcp", "--stdio", "--config", config].map(str::to_owned).to_vec();
        Self::stdio(name, executable, args)
    }

    /// Pass the variable `name` from the client's environment to the server (its value is never written).
    #[must_use]
    pub fn env_ref(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        if !self.env.contains(&name) {
            self.env.push(name);
        }
        self
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The command a client starts.
    pub fn command(&self) -> &Path {
        &self.command
    }

    /// The command's arguments.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The variables the server needs that `client` cannot be told about in its file by reference (REG-7). The
    /// user adds each to the entry's `env` block: a client starting a stdio server passes it only a few variables
    /// of its own environment (the MCP SDKs' default set: `HOME`, `PATH`, `USER` and the like), so setting one
    /// where the client runs is not enough.
    pub fn unreferenced(&self, client: McpClient, scope: ClientScope) -> Vec<&str> {
        self.env.iter().filter(|n| client.reference(scope, n).is_none()).map(String::as_str).collect()
    }

    /// The entry as `client` writes it at `scope`, documented per client on [`McpClient`]'s variants.
    pub fn to_json(&self, client: McpClient, scope: ClientScope) -> serde_json::Value {
        let mut entry = serde_json::Map::new();
        // Claude Code and VS Code name the transport; Claude Desktop and Cursor infer it from `command`.
        if matches!(client, McpClient::ClaudeCode | McpClient::VsCode) {
            entry.insert("type".into(), "stdio".into());
        }
        entry.insert("command".into(), self.command.to_string_lossy().into_owned().into());
        entry.insert("args".into(), self.args.clone().into());
        let env: serde_json::Map<String, serde_json::Value> =
            self.env.iter().filter_map(|n| client.reference(scope, n).map(|r| (n.clone(), r.into()))).collect();
        if !env.is_empty() {
            entry.insert("env".into(), env.into());
        }
        entry.into()
    }
}
