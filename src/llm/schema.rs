//! A tool's input schema as a provider sends it (PROV-13), shared by every HTTP provider so each sends the same
//! normalized schema for the same tool.

use serde_json::{Map, Value};

/// A tool's input schema as the providers send it (PROV-13): `type` is always `object`, `properties` and `required`
/// map to their fields, every other key is forwarded verbatim. With `annotate`, the copy's non-required properties
/// say they are optional, because models under-weight absence from `required` and ask for defaults they need not.
pub(crate) fn input_schema(schema: &Value, annotate: bool) -> Value {
    let mut out = Map::new();
    out.insert("type".to_owned(), Value::from("object"));
    let Some(obj) = schema.as_object() else { return Value::Object(out) };
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (key, value) in obj {
        match key.as_str() {
            "type" => {}
            "properties" if annotate => {
                out.insert(key.clone(), annotate_optional(value, &required));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

fn annotate_optional(properties: &Value, required: &[&str]) -> Value {
    let Some(props) = properties.as_object() else { return properties.clone() };
    let annotated = props
        .iter()
        .map(|(name, prop)| {
            let prop = match prop.as_object() {
                Some(p) if !required.contains(&name.as_str()) => {
                    let mut p = p.clone();
                    let desc = match p.get("description").and_then(Value::as_str) {
                        Some(d) if !d.is_empty() => format!("{d} (optional)"),
                        _ => "Optional.".to_owned(),
                    };
                    p.insert("description".to_owned(), Value::from(desc));
                    Value::Object(p)
                }
                _ => prop.clone(),
            };
            (name.clone(), prop)
        })
        .collect();
    Value::Object(annotated)
}
