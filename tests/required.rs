//! The required-parameter check that runs before any gate or execution (TOOL-17..20).

use fisk_ai::tool::schema::missing_required;
use serde_json::json;

fn schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"zeta": {}, "subject": {}, "alpha": {}, "level": {}}, "required": ["subject", "level"]})
}

#[test]
fn tool_18_20_missing_parameters_in_schema_order_with_sorted_optionals() {
    let m = missing_required("do", &schema(), r#"{"alpha": 1}"#).unwrap();
    assert_eq!(m.missing, ["subject", "level"]);
    assert_eq!(
        m.to_string(),
        r#"tool "do" was called without required parameter(s): subject, level. required: subject, level; optional: alpha, zeta"#
    );
    let m = missing_required("do", &schema(), r#"{"level": 1}"#).unwrap();
    assert_eq!(
        m.to_string(),
        r#"tool "do" was called without required parameter(s): subject. required: subject, level; optional: alpha, zeta"#
    );
}

#[test]
fn tool_18_any_present_value_counts_as_supplied() {
    for v in ["null", "\"\"", "false", "0", "[]", "{}"] {
        let input = format!(r#"{{"subject": {v}, "level": {v}}}"#);
        assert!(missing_required("do", &schema(), &input).is_none(), "{input}");
    }
}

#[test]
fn tool_19_empty_and_null_mean_every_required_is_missing_non_objects_report_nothing() {
    for input in ["", "  ", "null"] {
        assert_eq!(missing_required("do", &schema(), input).unwrap().missing, ["subject", "level"], "{input:?}");
    }
    for input in ["[1]", "\"x\"", "3", "not json"] {
        assert!(missing_required("do", &schema(), input).is_none(), "{input}");
    }
}

#[test]
fn tool_17_20_no_required_key_means_nothing_required_and_no_optional_suffix_without_optionals() {
    assert!(missing_required("do", &json!({"type": "object", "properties": {"a": {}}}), "{}").is_none());
    let s = json!({"type": "object", "properties": {"a": {}}, "required": ["a"]});
    assert_eq!(
        missing_required("do", &s, "{}").unwrap().to_string(),
        r#"tool "do" was called without required parameter(s): a. required: a"#
    );
}
