use super::*;

// ---- GLOBAL-2 / CFG-11 ---------------------------------------------------------------------------------------------

#[test]
fn global_2_global_flags_are_trimmed_undashed_deduplicated() {
    let c = parse(
        "application_path: /bin/app\nglobal_flags: [\"--context\", \" context \", \"-server\", \"\", \"  \", \"--\", \"server\", \"trace\"]\n",
    );
    assert_eq!(c.global_flags, ["context", "server", "trace"]);
    assert_eq!(c.global_flags(), ["context", "server", "trace"]);
    let mut code = Config::default();
    code.global_flags = vec!["--a".into(), "a".into(), " -b".into()];
    assert_eq!(code.global_flags(), ["a", "b"]);
}

#[test]
fn cfg_11_confirm_tags_are_trimmed_and_deduplicated() {
    let c = parse("harness:\n  confirm_tags: [\" ai:destructive \", \"\", \"prod\", \"ai:destructive\", \"  \"]\n");
    assert_eq!(c.harness.confirm_tags, ["ai:destructive", "prod"]);
    assert_eq!(c.harness.confirm_tags(), ["ai:destructive", "prod"]);
}

// ---- CFG-5 ---------------------------------------------------------------------------------------------------------

#[test]
fn cfg_5_identity_is_derived_from_application_path_base_name() {
    let c = parse("application_path: /usr/bin/nats\n");
    assert_eq!(c.identity().unwrap(), "nats");
    let c = parse("application_path: ./bin/my-app_2\n");
    assert_eq!(c.identity().unwrap(), "my-app_2");
}

#[test]
fn cfg_5_identity_defaults_to_fisk_without_application_path() {
    assert_eq!(parse("").identity().unwrap(), "fisk");
    assert_eq!(parse("identity: \"\"\n").identity().unwrap(), "fisk");
}

#[test]
fn cfg_5_explicit_identity_wins_over_derived() {
    let c = parse("identity: ops\napplication_path: /x/my.app\n");
    assert_eq!(c.identity().unwrap(), "ops");
}

#[test]
fn cfg_5_invalid_derived_identity_is_rejected_asking_for_explicit_identity() {
    let e = err("application_path: /x/my.app\n");
    assert_eq!(e.key(), Some("identity"));
    assert_contains(&e, &["my.app", "set identity explicitly"]);
}

#[test]
fn cfg_5_invalid_explicit_identity_is_rejected_with_location() {
    let e = err("system_prompt: x\nidentity: my agent\n");
    assert_eq!(e.key(), Some("identity"));
    assert_eq!(loc(&e), (2, 11));
    assert_contains(&e, &["my agent", "^[a-zA-Z0-9_-]+$"]);
    let mut c = Config::default();
    c.identity = Some("a.b".into());
    let e = c.validate(Mode::Lenient).unwrap_err();
    assert_eq!(e.key(), Some("identity"));
    assert_contains(&e, &["a.b"]);
}

// ---- GLOBAL-10 -----------------------------------------------------------------------------------------------------

#[test]
fn global_10_global_flags_without_application_path_is_rejected() {
    let e = err("global_flags: [context]\n");
    assert_eq!(e.key(), Some("global_flags"));
    assert_contains(&e, &["global_flags", "application_path"]);
    // Entries that normalize away do not count.
    parse("global_flags: [\"\", \"--\"]\n");
}

// ---- IMPORT-1 / IMPORT-3 -------------------------------------------------------------------------------------------

#[test]
fn import_1_remote_tools_name_with_bad_charset_is_rejected() {
    let e = err("remote_tools:\n  - name: other agent\n");
    assert_eq!(e.key(), Some("remote_tools[0].name"));
    assert_eq!(loc(&e), (2, 11));
    assert_contains(&e, &["other agent"]);
    let e = err("remote_tools:\n  - name: \"\"\n");
    assert_eq!(e.key(), Some("remote_tools[0].name"));
}

#[test]
fn import_1_remote_tools_alias_with_bad_charset_is_rejected() {
    let e = err("remote_tools:\n  - name: a\n  - name: b\n    alias: b.b\n");
    assert_eq!(e.key(), Some("remote_tools[1].alias"));
    assert_eq!(loc(&e), (4, 12));
    assert_contains(&e, &["b.b"]);
}

#[test]
fn import_1_alias_defaults_to_name() {
    let c = parse("remote_tools:\n  - name: a\n  - name: b\n    alias: \"\"\n");
    assert_eq!(c.remote_tools[0].alias(), "a");
    assert_eq!(c.remote_tools[1].alias(), "b");
}

#[test]
fn import_3_host_exclude_tags_is_rejected_naming_host() {
    let e = err("remote_tools:\n  - name: other\n    exclude:\n      tags: [x]\n");
    assert_eq!(e.key(), Some("remote_tools[0].exclude.tags"));
    assert_contains(&e, &["remote_tools[0].exclude.tags", "\"other\""]);
}

#[test]
fn import_3_host_include_tags_is_a_warning_naming_host() {
    let c = parse("remote_tools:\n  - name: other\n    include:\n      tags: [x]\n");
    let w = c.validate(Mode::Lenient).unwrap();
    assert_eq!(w, vec![Warning::ImportIncludeTagsIgnored { section: "remote_tools", name: "other".into() }]);
    assert!(w[0].to_string().contains("other"));
}

// ---- MCPI ----------------------------------------------------------------------------------------------------------

#[test]
fn mcpi_1_name_with_bad_charset_is_rejected() {
    let e = err("mcp_servers:\n  - name: git/hub\n    url: https://x.example\n");
    assert_eq!(e.key(), Some("mcp_servers[0].name"));
    assert_eq!(loc(&e), (2, 11));
    assert_contains(&e, &["git/hub"]);
}

#[test]
fn mcpi_1_alias_with_bad_charset_is_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n    alias: \"g h\"\n    url: https://x.example\n");
    assert_eq!(e.key(), Some("mcp_servers[0].alias"));
    assert_contains(&e, &["g h"]);
}

#[test]
fn mcpi_1_duplicate_names_are_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n    url: https://x.example\n  - name: gh\n    command: [srv]\n");
    assert_eq!(e.key(), Some("mcp_servers[1].name"));
    assert_contains(&e, &["duplicate", "\"gh\"", "mcp_servers[0]"]);
}

#[test]
fn mcpi_1_both_url_and_command_is_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n    url: https://x.example\n    command: [srv]\n");
    assert_eq!(e.key(), Some("mcp_servers[0]"));
    assert_contains(&e, &["\"gh\"", "url", "command", "exactly one"]);
}

#[test]
fn mcpi_1_neither_url_nor_command_is_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n");
    assert_eq!(e.key(), Some("mcp_servers[0]"));
    assert_contains(&e, &["\"gh\"", "neither", "exactly one"]);
}

#[test]
fn mcpi_2_url_must_be_https_unless_loopback() {
    let e = err("mcp_servers:\n  - name: gh\n    url: http://mcp.example.com/mcp\n");
    assert_eq!(e.key(), Some("mcp_servers[0].url"));
    assert_eq!(loc(&e), (3, 10));
    assert_contains(&e, &["http://mcp.example.com/mcp", "loopback"]);
    for ok in [
        "http://localhost:3000/mcp",
        "http://LOCALHOST/",
        "http://127.0.0.1:8080",
        "http://127.5.6.7/x",
        "http://[::1]:9/",
        "https://x.example:443/mcp?q=1",
    ] {
        parse(&format!("mcp_servers:\n  - name: a\n    url: \"{ok}\"\n"));
    }
}

#[test]
fn mcpi_2_url_with_userinfo_or_other_scheme_is_rejected() {
    let e = err("mcp_servers:\n  - name: gh\n    url: https://u:p@x.example/\n");
    assert_eq!(e.key(), Some("mcp_servers[0].url"));
    assert_contains(&e, &["credentials"]);
    let e = err("mcp_servers:\n  - name: gh\n    url: ftp://x.example/\n");
    assert_contains(&e, &["ftp"]);
    let e = err("mcp_servers:\n  - name: gh\n    url: x.example/mcp\n");
    assert_eq!(e.key(), Some("mcp_servers[0].url"));
}

// The PROV-7 / MCPI-2 URL table is in prov_7_base_url.rs, shared with the provider.

#[test]
fn mcpi_3_empty_command_is_rejected() {
    let e = err("mcp_servers:\n  - name: local\n    command: []\n");
    assert_eq!(e.key(), Some("mcp_servers[0].command"));
    assert_eq!(loc(&e), (3, 14));
    assert_contains(&e, &["non-empty"]);
    let e = err("mcp_servers:\n  - name: local\n    command: [\"\", --stdio]\n");
    assert_eq!(e.key(), Some("mcp_servers[0].command"));
}

#[test]
fn mcpi_4_bearer_token_env_with_command_is_rejected() {
    let e = err("mcp_servers:\n  - name: local\n    command: [srv]\n    bearer_token_env: TOKEN\n");
    assert_eq!(e.key(), Some("mcp_servers[0].bearer_token_env"));
    assert_contains(&e, &["\"local\"", "bearer_token_env", "url"]);
}

#[test]
fn mcpi_5_exclude_tags_is_rejected_and_include_tags_warns() {
    let e = err("mcp_servers:\n  - name: gh\n    url: https://x.example\n    exclude:\n      tags: [a]\n");
    assert_eq!(e.key(), Some("mcp_servers[0].exclude.tags"));
    assert_contains(&e, &["\"gh\""]);
    let c = parse("mcp_servers:\n  - name: gh\n    url: https://x.example\n    include:\n      tags: [a]\n");
    for mode in [Mode::Lenient, Mode::Server] {
        let mut c = c.clone();
        c.application_path = Some("/bin/x".into());
        c.nats_context = Some("n".into());
        assert_eq!(
            c.validate(mode).unwrap(),
            vec![Warning::ImportIncludeTagsIgnored { section: "mcp_servers", name: "gh".into() }]
        );
    }
}

#[test]
fn mcpi_12_non_positive_timeout_is_rejected() {
    for (v, shown) in [("0s", "0s"), ("-5s", "-5s")] {
        let e = err(&format!("mcp_servers:\n  - name: gh\n    url: https://x.example\n    timeout: {v}\n"));
        assert_eq!(e.key(), Some("mcp_servers[0].timeout"));
        assert_eq!(loc(&e), (4, 14));
        assert_contains(&e, &["positive", shown]);
    }
}
