//! Text an import brings with it, made safe for the model once, at import time: a tool's description and the
//! prose of its input schema. Terminal escape sequences and C0/C1 controls (newline and tab kept) are removed and
//! invisible format characters (bidi overrides, zero-width characters) are shown as `\u{...}` escapes, exactly as
//! [`clean_text`](crate::gate::clean_text) does for any text. Tool results are not touched here: they are data,
//! capped already.
//!
//! One walker for both imports (MCPI-15, IMPORT-13): an MCP server's listing and a remote agent's card.

use serde_json::Value;

/// Clean `text` in place; it is left alone (not copied) when there is nothing to clean.
pub(crate) fn clean_string(text: &mut String) {
    if let std::borrow::Cow::Owned(cleaned) = crate::gate::clean_text(text) {
        *text = cleaned;
    }
}

/// Where a value sits in a JSON Schema, as far as cleaning cares.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A schema: its members are keywords.
    Schema,
    /// A map from names to schemas (`properties`, `$defs`, ...): its members are names, whatever they spell.
    Names,
    /// An instance value given as an annotation (`default`, `examples`): every string in it is prose for the model.
    Data,
}

/// Clean every string of `schema` that only informs the model (`description`, `title`, `$comment`, `default`,
/// `examples`, unknown keywords), at any depth, in place.
///
/// Left verbatim, because the peer compares them exactly or they resolve references: property names (object
/// keys), `enum`, `const`, `pattern`, `required`, `dependentRequired`, `type`, `format` and the `$`-identifiers
/// (`$ref`, `$id`, `$anchor`, `$schema`, ...). Changing one of those would make the model send, or the validator
/// accept, something the peer does not. Walked with an explicit stack, so no nesting can overflow the call
/// stack.
pub(crate) fn clean_schema(schema: &mut Value) {
    let mut stack = vec![(schema, Place::Schema)];
    while let Some((value, place)) = stack.pop() {
        match value {
            Value::String(text) => clean_string(text),
            Value::Array(items) => stack.extend(items.iter_mut().map(|item| (item, place))),
            Value::Object(members) => {
                for (key, member) in members.iter_mut() {
                    let inner = match place {
                        Place::Schema => keyword(key),
                        Place::Names => Some(Place::Schema),
                        Place::Data => Some(Place::Data),
                    };
                    if let Some(inner) = inner {
                        stack.push((member, inner));
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// What a schema keyword's value is; `None` for the ones left verbatim.
fn keyword(key: &str) -> Option<Place> {
    match key {
        "enum" | "const" | "pattern" | "required" | "dependentRequired" | "type" | "format" | "$ref"
        | "$dynamicRef" | "$id" | "$anchor" | "$dynamicAnchor" | "$schema" | "$vocabulary" => None,
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => Some(Place::Names),
        "default" | "examples" => Some(Place::Data),
        _ => Some(Place::Schema),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DIRTY: &str = "ok\u{1b}]8;;http://evil\u{7}link\u{1b}]8;;\u{7}\u{1b}[2J\u{9b}31m\r\u{202e}end\u{85}";
    const CLEAN: &str = "oklink\\u{202e}end";

    #[test]
    fn mcpi_15_import_13_schema_prose_is_cleaned_at_any_depth() {
        let mut schema = json!({
            "type": "object",
            "description": DIRTY,
            "title": DIRTY,
            "properties": {
                "description": {"type": "string", "description": DIRTY, "default": DIRTY},
                "list": {"type": "array", "items": {"anyOf": [{"title": DIRTY}]}, "examples": [[DIRTY], {"k": DIRTY}]},
            },
            "$defs": {"x": {"$comment": DIRTY}},
            "x-vendor": DIRTY,
        });
        clean_schema(&mut schema);
        let text = schema.to_string();
        assert!(!text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\u{202e}'), "{text}");
        assert_eq!(schema["description"], CLEAN);
        assert_eq!(schema["properties"]["description"]["description"], CLEAN);
        assert_eq!(schema["properties"]["description"]["default"], CLEAN);
        assert_eq!(schema["properties"]["list"]["items"]["anyOf"][0]["title"], CLEAN);
        assert_eq!(schema["properties"]["list"]["examples"][1]["k"], CLEAN);
        assert_eq!(schema["$defs"]["x"]["$comment"], CLEAN);
        assert_eq!(schema["x-vendor"], CLEAN);
    }

    #[test]
    fn mcpi_15_import_13_compared_values_and_names_stay_verbatim() {
        let odd = "a\u{200b}b";
        let mut schema = json!({
            "type": "object",
            "properties": {odd: {"enum": [odd], "const": odd, "pattern": odd, "format": odd}},
            "required": [odd],
            "$defs": {"d": {"$ref": odd}},
        });
        let before = schema.clone();
        clean_schema(&mut schema);
        assert_eq!(schema, before);
    }

    #[test]
    fn mcpi_15_import_13_clean_text_is_not_copied() {
        let mut text = String::from("List files\n\tin a directory");
        let before = text.as_ptr();
        clean_string(&mut text);
        assert_eq!(text.as_ptr(), before);
    }

    #[test]
    fn mcpi_15_import_13_deep_schemas_do_not_overflow() {
        let mut deep = json!({"description": DIRTY});
        for _ in 0..50_000 {
            // Built by hand: `json!` would serialize the inner value, recursively.
            let mut members = serde_json::Map::new();
            members.insert("items".to_owned(), deep);
            deep = Value::Object(members);
        }
        clean_schema(&mut deep);
        let mut at = &deep;
        while let Some(inner) = at.get("items") {
            at = inner;
        }
        assert_eq!(at["description"], CLEAN);
        // Dropping a Value this deep recurses; take it apart by hand.
        while let Value::Object(mut members) = deep {
            deep = members.remove("items").unwrap_or(Value::Null);
        }
    }
}
