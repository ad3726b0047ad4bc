//! The fast load path: the introspection document is kept whole and parsed once with borrowed strings, and each
//! leaf keeps only byte ranges of its restricted schema, flags and args, decoded when needed and not kept.
//!
//! A 10,000-command tree then loads without allocating its flags, args and schemas: most of those tools are never
//! called, and a schema is built only for a listing or a call. Everything the classic [`AppModel`](super::AppModel)
//! decode rejects is rejected here too (flags and args are checked without being kept); on any failure the caller
//! falls back to the classic decode, so error messages stay exactly as they were.

use super::model::{ArgModel, FlagModel, null_as_default};
use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

/// The top-level object, borrowing from the document. Fields only checked are zero-sized.
#[derive(Deserialize)]
pub(crate) struct DocApp<'a> {
    #[serde(default, rename = "name")]
    _name: Str,
    #[serde(default, rename = "help")]
    _help: Str,
    #[serde(default, rename = "version")]
    _version: Option<Str>,
    #[serde(default, borrow, deserialize_with = "null_as_default")]
    pub(crate) commands: Vec<DocCmd<'a>>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) flags: Vec<FlagModel>,
}

/// One command node, as [`CmdModel`](super::CmdModel) but borrowing; flags and args stay raw.
#[derive(Deserialize)]
pub(crate) struct DocCmd<'a> {
    #[serde(borrow)]
    pub(crate) name: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) help: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) help_long: Cow<'a, str>,
    #[serde(default)]
    pub(crate) hidden: bool,
    #[serde(default, borrow, deserialize_with = "null_as_default")]
    pub(crate) tags: Vec<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(crate) flags: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(crate) args: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "null_as_default")]
    pub(crate) commands: Vec<DocCmd<'a>>,
    #[serde(default, borrow, alias = "restrictedSchema", alias = "RestrictedSchema")]
    pub(crate) restricted_schema: Option<&'a RawValue>,
}

/// Parse `text` (leading noise before the JSON tolerated, as [`AppModel::from_slice`](super::AppModel::from_slice)
/// does). Flags and args are kept raw: [`checked`] or [`checked_while`] then checks them as the classic decode would.
pub(crate) fn parse(text: &str) -> Option<DocApp<'_>> {
    match serde_json::from_str::<DocApp<'_>>(text) {
        Ok(app) => Some(app),
        Err(_) => {
            let start = text.find("\n{")? + 1;
            serde_json::from_str(&text[start..]).ok()
        }
    }
}

/// A document at least this large is checked on a second thread while its tools are built: the check is about a
/// third of the load, and a thread costs tens of microseconds.
const PARALLEL_CHECK_BYTES: usize = 256 * 1024;

/// Run `work` and [`checked`] side by side (on another thread when `doc_len` is large enough and one can be had),
/// returning whether the check passed and what `work` returned.
pub(crate) fn checked_while<R>(commands: &[DocCmd<'_>], doc_len: usize, work: impl FnOnce() -> R) -> (bool, R) {
    if doc_len < PARALLEL_CHECK_BYTES {
        return (checked(commands), work());
    }
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new().name("fisk-ai-check".into()).spawn_scoped(s, || checked(commands));
        let out = work();
        // The check cannot panic on any input; were it to, the classic decode would report the document.
        let ok = match spawned {
            Ok(handle) => handle.join().unwrap_or(false),
            Err(_) => checked(commands),
        };
        (ok, out)
    })
}

/// Whether every command's flags and args decode as the classic model's would.
pub(crate) fn checked(commands: &[DocCmd<'_>]) -> bool {
    commands.iter().all(|c| {
        c.flags.is_none_or(|f| serde_json::from_str::<SeqCheck<FlagCheck>>(f.get()).is_ok())
            && c.args.is_none_or(|a| serde_json::from_str::<SeqCheck<ArgCheck>>(a.get()).is_ok())
            && checked(&c.commands)
    })
}

/// The byte range of `part` inside `base`, which it borrows from.
pub(crate) fn range_in(base: &str, part: &str) -> Range<usize> {
    // Both are slices of the same document, so the address difference is the offset.
    let start = part.as_ptr() as usize - base.as_ptr() as usize;
    debug_assert!(start + part.len() <= base.len());
    start..start + part.len()
}

/// A leaf's flags and args, decoded.
#[derive(Debug, Default, Clone)]
pub(crate) struct Shape {
    pub(crate) flags: Vec<FlagModel>,
    pub(crate) args: Vec<ArgModel>,
}

/// What a leaf keeps of the document: byte ranges into the shared text, decoded for each use.
#[derive(Debug)]
pub(crate) struct LeafParts {
    text: Arc<String>,
    schema: Option<Range<usize>>,
    flags: Option<Range<usize>>,
    args: Option<Range<usize>>,
    /// The flags and args of a command the classic decode already owns; otherwise they are decoded from the
    /// document for each use and not kept, so memory does not grow with each distinct command called.
    kept: Option<Shape>,
}

impl LeafParts {
    /// Parts borrowed from the shared document `text`.
    pub(crate) fn borrowed(text: Arc<String>, cmd: &DocCmd<'_>, schema: Option<&str>) -> Self {
        let range = |raw: Option<&RawValue>| raw.map(|r| range_in(&text, r.get()));
        LeafParts {
            schema: schema.map(|s| range_in(&text, s)),
            flags: range(cmd.flags),
            args: range(cmd.args),
            kept: None,
            text,
        }
    }

    /// Parts of a command the classic decode already owns: only the schema text is kept.
    pub(crate) fn owned(schema: Option<&str>, flags: Vec<FlagModel>, args: Vec<ArgModel>) -> Self {
        let text = Arc::new(schema.unwrap_or("").to_owned());
        LeafParts {
            schema: schema.map(|_| 0..text.len()),
            flags: None,
            args: None,
            kept: Some(Shape { flags, args }),
            text,
        }
    }

    /// The restricted schema's JSON text, when the document has an object there.
    pub(crate) fn schema(&self) -> Option<&str> {
        self.schema.clone().map(|r| &self.text[r])
    }

    /// The flags and args: the kept ones, else decoded from the document for this use (a few microseconds for a
    /// command's handful; keeping each called command's would grow with every distinct command a client calls).
    pub(crate) fn shape(&self) -> Result<Cow<'_, Shape>, String> {
        match &self.kept {
            Some(s) => Ok(Cow::Borrowed(s)),
            None => self.decode().map(Cow::Owned),
        }
    }

    /// The flags and args for building a schema, empty when they do not decode (checked at load, so they do).
    pub(crate) fn shape_for_schema(&self) -> Cow<'_, Shape> {
        self.shape().unwrap_or_default()
    }

    /// The names of the flags and args, all a precomputed schema's global merge needs: borrowed from the document
    /// rather than decoding every flag in full for a listing.
    pub(crate) fn names(&self) -> Vec<Cow<'_, str>> {
        if let Some(s) = &self.kept {
            return s.flags.iter().map(|f| &f.name).chain(s.args.iter().map(|a| &a.name)).map(|n| n.into()).collect();
        }
        let mut out = Vec::new();
        for r in [&self.flags, &self.args].into_iter().flatten() {
            // Checked at load, so this decodes; were it not to, the merge would only skip fewer globals.
            if let Ok(Some(named)) = serde_json::from_str::<Option<Vec<Named<'_>>>>(&self.text[r.clone()]) {
                out.extend(named.into_iter().map(|n| n.name));
            }
        }
        out
    }

    fn decode(&self) -> Result<Shape, String> {
        fn part<T: for<'de> Deserialize<'de>>(text: &str, r: &Option<Range<usize>>) -> Result<Vec<T>, String> {
            match r {
                None => Ok(Vec::new()),
                Some(r) => serde_json::from_str::<Option<Vec<T>>>(&text[r.clone()])
                    .map(Option::unwrap_or_default)
                    .map_err(|e| format!("its flags or args do not decode: {e}")),
            }
        }
        Ok(Shape { flags: part(&self.text, &self.flags)?, args: part(&self.text, &self.args)? })
    }
}

/// A flag or arg by name only.
#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
}

/// Any JSON string, checked and dropped.
#[derive(Default)]
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON array or `null` whose elements must decode as `T`, each checked and dropped.
struct SeqCheck<T>(PhantomData<T>);

impl<T> Default for SeqCheck<T> {
    fn default() -> Self {
        SeqCheck(PhantomData)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for SeqCheck<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = SeqCheck<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array or null")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(SeqCheck::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(SeqCheck::default())
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
                d.deserialize_seq(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<T>()?.is_some() {}
                Ok(SeqCheck::default())
            }
        }
        d.deserialize_option(V(PhantomData))
    }
}

/// [`FlagModel`]'s shape, checked without being kept.
#[derive(Deserialize)]
#[allow(dead_code, reason = "decoded only to reject what the classic model rejects")]
struct FlagCheck {
    name: Str,
    #[serde(default)]
    help: Str,
    #[serde(default)]
    default: SeqCheck<Str>,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    hidden: bool,
    #[serde(default)]
    boolean: bool,
    #[serde(default)]
    negatable: bool,
    #[serde(default)]
    cumulative: bool,
    #[serde(default)]
    completions: SeqCheck<Str>,
}

/// [`ArgModel`]'s shape, checked without being kept.
#[derive(Deserialize)]
#[allow(dead_code, reason = "decoded only to reject what the classic model rejects")]
struct ArgCheck {
    name: Str,
    #[serde(default)]
    help: Str,
    #[serde(default)]
    default: SeqCheck<Str>,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    hidden: bool,
    #[serde(default)]
    cumulative: bool,
}
