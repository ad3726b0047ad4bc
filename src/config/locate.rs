//! Finds the line and column of a key path (`mcp_servers[1].name`) in YAML text, so errors found after decoding can
//! point into the file too.
//!
//! The YAML deserializer only reveals positions through errors, so this walks the document down the path and fails
//! on purpose at the target value; the position of that error is the answer.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};

#[derive(Debug, PartialEq)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
    /// The second occurrence of this key, the key itself (not its value): where a duplicate is.
    Again(&'a str),
}

/// Splits `a.b[0].c` into segments; `None` when the path is not of that shape.
fn segments(path: &str) -> Option<Vec<Seg<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key.is_empty() {
            return None;
        }
        out.push(Seg::Key(key));
        while let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            out.push(Seg::Index(r[..end].parse().ok()?));
            rest = &r[end + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(out)
}

const FOUND: &str = "\u{0}located";

struct Walk<'p, 'a>(&'p [Seg<'a>]);

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.0.first() {
            None => d.deserialize_any(Fail),
            Some(Seg::Key(_) | Seg::Again(_)) => d.deserialize_map(self),
            Some(Seg::Index(_)) => d.deserialize_seq(self),
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if let Some(Seg::Again(want)) = self.0.first() {
            let mut seen = false;
            while map.next_key_seed(SecondKey { want, seen: &mut seen })?.is_some() {
                map.next_value::<IgnoredAny>()?;
            }
            return Ok(());
        }
        let Some(Seg::Key(want)) = self.0.first() else { return Ok(()) };
        while let Some(key) = map.next_key::<String>()? {
            if key == *want {
                return map.next_value_seed(Walk(&self.0[1..]));
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(Seg::Index(want)) = self.0.first() else { return Ok(()) };
        let mut i = 0;
        while i < *want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
        seq.next_element_seed(Walk(&self.0[1..])).map(drop)
    }

    // Anything else (a scalar where a block was expected) means the path is not there.
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Reads one mapping key; fails at the second key equal to `want`, so the error carries that key's position.
struct SecondKey<'w> {
    want: &'w str,
    seen: &'w mut bool,
}

impl<'de> DeserializeSeed<'de> for SecondKey<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for SecondKey<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<(), E> {
        if key != self.want {
            return Ok(());
        }
        if *self.seen {
            return Err(E::custom(FOUND));
        }
        *self.seen = true;
        Ok(())
    }

    // A non-string key (`1: x`) is never the duplicate of a named field.
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// Fails at whatever value it is asked to visit.
struct Fail;

impl Fail {
    fn deserialize_with<'de, D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Fail {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        Err(E::custom(FOUND))
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(A::Error::custom(FOUND))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(A::Error::custom(FOUND))
    }
}

/// The 1-based line and column of the value at `path`, or of its nearest non-root ancestor present in `yaml`.
pub(crate) fn locate(yaml: &str, path: &str) -> Option<(usize, usize)> {
    let segs = segments(path)?;
    (1..=segs.len()).rev().find_map(|n| walk(yaml, &segs[..n]))
}

/// The 1-based line and column of the second occurrence of the last key of `path` (the key, not its value): where
/// a duplicate key is written.
pub(crate) fn locate_duplicate(yaml: &str, path: &str) -> Option<(usize, usize)> {
    let mut segs = segments(path)?;
    match segs.pop()? {
        Seg::Key(last) => segs.push(Seg::Again(last)),
        _ => return None,
    }
    walk(yaml, &segs)
}

/// Where a problem the YAML library reports without a position is: the start of the second document for "more
/// than one document", else the first position the library does report for any document (a later parse error),
/// else the end of the text, which is where an unexpected end of input is.
pub(crate) fn fallback(yaml: &str) -> (usize, usize) {
    for (i, doc) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let at = match Fail.deserialize_with(doc) {
            Err(e) if i > 0 || !e.to_string().contains(FOUND) => e.location(),
            _ => None,
        };
        if let Some(l) = at {
            return (l.line(), l.column());
        }
    }
    let line = yaml.matches('\n').count() + 1;
    let column = yaml.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn walk(yaml: &str, segs: &[Seg<'_>]) -> Option<(usize, usize)> {
    let de = serde_yaml::Deserializer::from_str(yaml);
    match Walk(segs).deserialize(de) {
        // The marker is our own error text: only an error this walk raised at its target is a position.
        Err(e) if e.to_string().contains(FOUND) => e.location().map(|l| (l.line(), l.column())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_parse_key_paths() {
        assert_eq!(segments("a.b[2].c"), Some(vec![Seg::Key("a"), Seg::Key("b"), Seg::Index(2), Seg::Key("c")]));
        assert_eq!(segments("a[0][1]"), Some(vec![Seg::Key("a"), Seg::Index(0), Seg::Index(1)]));
        assert_eq!(segments("a..b"), None);
        assert_eq!(segments("a[x]"), None);
    }

    #[test]
    fn locate_finds_values_and_falls_back_to_ancestors() {
        let y = "a: 1\nlist:\n  - name: x\n  - name: y\n    deep: {k: v}\n";
        assert_eq!(locate(y, "a"), Some((1, 4)));
        assert_eq!(locate(y, "list[1].name"), Some((4, 11)));
        assert_eq!(locate(y, "list[1].deep.k"), Some((5, 15)));
        assert_eq!(locate(y, "list[1].missing"), Some((4, 5)));
        assert_eq!(locate(y, "list[7]"), Some((3, 3)));
        assert_eq!(locate(y, "nothing.here"), None);
        assert_eq!(locate("", "a"), None);
    }

    #[test]
    fn locate_duplicate_finds_the_second_key() {
        assert_eq!(locate_duplicate("a: 1\nb: 2\na: 3\n", "a"), Some((3, 1)));
        assert_eq!(locate_duplicate("l:\n  - x: 1\n    x: 2\n", "l[0].x"), Some((3, 5)));
        assert_eq!(locate_duplicate("a: 1\n", "a"), None);
    }
}
