//! Cleaning what a remote agent advertises (IMPORT-13): its tools' descriptions reach the model and the operator's
//! terminal, so terminal control sequences and bidi/invisible format characters are taken out once, at import.

use serde_json::Value;

/// `text` with C0/C1 controls (but `\n` and `\t`) and terminal escape sequences stripped, and bidi/invisible format
/// characters escaped as `\u{...}` ([`crate::gate::clean_text`]).
pub(super) fn clean(text: &str) -> String {
    crate::gate::clean_text(text).into_owned()
}

/// Clean, in place, every `description` and `title` string anywhere in `schema` (property schemas, `items`,
/// `anyOf` branches, `$defs`...). Property names and values (`enum`, `default`) are data the model must send back
/// verbatim, so they are left alone.
pub(super) fn clean_schema(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(s) if key == "description" || key == "title" => *s = clean(s),
                    Value::Object(_) | Value::Array(_) => clean_schema(value),
                    _ => {}
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean_schema),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn import_13_nested_descriptions_are_cleaned_and_data_is_not() {
        let mut schema = json!({"type": "object", "description": "a\u{1b}[31mb", "properties": {
            "x": {"type": "string", "title": "t\u{202e}", "description": "d\u{7}", "enum": ["e\u{7}"]},
            "y": {"anyOf": [{"description": "\u{9b}2Jz"}]}
        }});
        clean_schema(&mut schema);
        assert_eq!(schema["description"], "ab");
        assert_eq!(schema["properties"]["x"]["title"], "t\\u{202e}");
        assert_eq!(schema["properties"]["x"]["description"], "d");
        assert_eq!(schema["properties"]["x"]["enum"][0], "e\u{7}", "values are data, left alone");
        assert!(!schema["properties"]["y"]["anyOf"][0]["description"].as_str().unwrap().contains('\u{9b}'));
    }
}
