//! Canonical JSON for digests (session fingerprints, approval keys, import pins): a leaf every module may use.

use serde_json::Value;

/// Canonical JSON: object keys sorted, no insignificant whitespace (whatever map order `serde_json` was built
/// with). Strings and numbers use `serde_json`'s own encoding.
pub(crate) fn write_canonical(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, k.as_str());
                out.push(b':');
                write_canonical(out, &map[k.as_str()]);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        // Scalars serialize identically in any map mode; writing to a Vec cannot fail.
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// `bytes` as lowercase hex (digests in records, pins and approval keys).
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}
