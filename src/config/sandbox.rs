//! `harness.sandbox` (SBX-1..) and `harness.env` (ENV-1..): how children are confined and what they inherit.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self as sde, Deserializer, Visitor};

use super::de;
use crate::exec::{EnvPolicy, Inherit};
use crate::sandbox;

/// `harness.sandbox`: the confinement of every child (command tools, stdio MCP servers, introspection).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct SandboxSettings {
    /// `fs`: the paths children may read, write and execute (Landlock).
    #[serde(deserialize_with = "de::nullable")]
    pub fs: SandboxFs,
    /// `network`: `any` (the default), `loopback` (a network namespace holding only `lo`) or `none`.
    #[serde(deserialize_with = "de::nullable")]
    pub network: NetworkSetting,
    /// `limits`: resource limits.
    #[serde(deserialize_with = "de::nullable")]
    pub limits: SandboxLimits,
    /// `best_effort`: enforce what the kernel can, warn about the rest, instead of refusing to start.
    #[serde(deserialize_with = "de::nullable")]
    pub best_effort: bool,
    /// `landlock_abi`: the lowest Landlock ABI the profile requires; unset means what its rules need.
    #[serde(deserialize_with = "de::nullable")]
    pub landlock_abi: Option<u8>,
}

/// `harness.sandbox.fs`. Relative paths are taken from the configuration file's directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct SandboxFs {
    /// `read`: paths readable beneath.
    #[serde(deserialize_with = "de::nullable")]
    pub read: Vec<PathBuf>,
    /// `write`: paths readable and writable beneath.
    #[serde(deserialize_with = "de::nullable")]
    pub write: Vec<PathBuf>,
    /// `exec`: paths readable and executable beneath.
    #[serde(deserialize_with = "de::nullable")]
    pub exec: Vec<PathBuf>,
}

/// `harness.sandbox.network`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase", expecting = "`any`, `loopback` or `none`")]
#[non_exhaustive]
pub enum NetworkSetting {
    /// `any`.
    #[default]
    Any,
    /// `loopback`.
    Loopback,
    /// `none`.
    None,
}

/// `harness.sandbox.limits`. Sizes are bytes, as a number or with a unit (`512MiB`, `2G`); `cpu` is a duration
/// (`30s`), rounded up to whole seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct SandboxLimits {
    /// `memory`: address space.
    #[serde(deserialize_with = "size")]
    pub memory: Option<u64>,
    /// `cpu`: CPU time.
    #[serde(deserialize_with = "de::positive_duration")]
    pub cpu: Option<super::GoDuration>,
    /// `files`: open file descriptors.
    #[serde(deserialize_with = "count")]
    pub files: Option<u64>,
    /// `processes`: processes of the agent's user.
    #[serde(deserialize_with = "count")]
    pub processes: Option<u64>,
    /// `file_size`: the largest file a child may write.
    #[serde(deserialize_with = "size")]
    pub file_size: Option<u64>,
}

impl SandboxSettings {
    /// Whether any setting is on.
    pub fn is_enabled(&self) -> bool {
        self.profile(None).is_enabled()
    }

    /// The runtime profile, relative paths taken from `base` (the configuration file's directory).
    pub fn profile(&self, base: Option<&Path>) -> sandbox::Sandbox {
        let resolve = |p: &PathBuf| match base {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.clone(),
        };
        let mut profile = sandbox::Sandbox::new();
        for p in &self.fs.read {
            profile = profile.read(resolve(p));
        }
        for p in &self.fs.write {
            profile = profile.write(resolve(p));
        }
        for p in &self.fs.exec {
            profile = profile.exec(resolve(p));
        }
        let network = match self.network {
            NetworkSetting::Any => sandbox::Network::Any,
            NetworkSetting::Loopback => sandbox::Network::Loopback,
            NetworkSetting::None => sandbox::Network::None,
        };
        let mut limits = sandbox::Limits::new();
        limits.memory = self.limits.memory;
        limits.cpu =
            self.limits.cpu.and_then(super::GoDuration::to_std).map(|d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
        limits.files = self.limits.files;
        limits.processes = self.limits.processes;
        limits.file_size = self.limits.file_size;
        profile = profile.network(network).limits(limits).best_effort(self.best_effort);
        match self.landlock_abi {
            Some(abi) => profile.landlock_abi(abi),
            None => profile,
        }
    }
}

/// `harness.env`: what children inherit of the agent's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, expecting = "a mapping of keys")]
#[non_exhaustive]
pub struct EnvSettings {
    /// `inherit`: `all` (the default), `core` or `none`.
    #[serde(deserialize_with = "de::nullable")]
    pub inherit: InheritSetting,
    /// `include`: names or `*` patterns passed through besides.
    #[serde(deserialize_with = "de::nullable")]
    pub include: Vec<String>,
    /// `set`: fixed values.
    #[serde(deserialize_with = "de::nullable")]
    pub set: BTreeMap<String, String>,
}

/// `harness.env.inherit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase", expecting = "`all`, `core` or `none`")]
#[non_exhaustive]
pub enum InheritSetting {
    /// `all`.
    #[default]
    All,
    /// `core`.
    Core,
    /// `none`.
    None,
}

impl EnvSettings {
    /// Whether anything differs from inheriting everything.
    pub fn is_set(&self) -> bool {
        *self != EnvSettings::default()
    }

    /// The runtime policy.
    pub fn policy(&self) -> EnvPolicy {
        let inherit = match self.inherit {
            InheritSetting::All => Inherit::All,
            InheritSetting::Core => Inherit::Core,
            InheritSetting::None => Inherit::None,
        };
        let policy = self.include.iter().fold(EnvPolicy::new(inherit), |p, i| p.include(i));
        self.set.iter().fold(policy, |p, (k, v)| p.set(k, v))
    }
}

/// A byte size: a number, or a number with `K`, `M`, `G`, `T` (powers of 1024, with or without `iB`/`B`).
fn size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(Size { units: true })
}

/// A positive count.
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(Size { units: false })
}

/// A positive number; with `units`, also a string with a size unit. Checked inside the visitor, so the YAML
/// deserializer locates the error at the value.
struct Size {
    units: bool,
}

impl<'de> Visitor<'de> for Size {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.units {
            f.write_str("a size in bytes: a number, or a number with a unit such as 512MiB or 2G")
        } else {
            f.write_str("a positive number")
        }
    }

    fn visit_none<E: sde::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: sde::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_u64<E: sde::Error>(self, v: u64) -> Result<Self::Value, E> {
        positive(v).map(Some).map_err(E::custom)
    }

    fn visit_i64<E: sde::Error>(self, v: i64) -> Result<Self::Value, E> {
        u64::try_from(v).map_err(|_| E::custom("must be at least 1")).and_then(|v| self.visit_u64(v))
    }

    fn visit_str<E: sde::Error>(self, v: &str) -> Result<Self::Value, E> {
        if !self.units {
            return Err(E::invalid_type(sde::Unexpected::Str(v), &self));
        }
        parse_size(v).map(Some).map_err(E::custom)
    }
}

fn positive(v: u64) -> Result<u64, String> {
    if v == 0 { Err("must be at least 1".to_owned()) } else { Ok(v) }
}

/// `512MiB`, `2G`, `64k`, `1000`.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let n: u64 = number.parse().map_err(|_| format!("{text:?} is not a size (such as 512MiB or 2G)"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let shift = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(format!("{text:?}: unknown unit (use K, M, G or T, as in 512MiB)")),
    };
    let bytes = n.checked_mul(1u64 << shift).ok_or_else(|| format!("{text:?} is too large"))?;
    positive(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sbx_1_sizes_take_binary_units() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
