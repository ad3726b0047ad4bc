use super::*;

// ---- KNOW-1: harness.knowledge, with the reference implementation's keys ----------------------------------------

#[test]
fn know_1_every_knowledge_key_parses_with_the_reference_defaults() {
    let cfg = parse("harness:\n  knowledge:\n    enabled: true\n    paths: [docs]\n");
    let k = &cfg.harness.knowledge;
    assert!(k.enabled);
    assert_eq!(k.paths, [PathBuf::from("docs")]);
    assert_eq!((k.top_k, k.max_injected_tokens, k.directory.as_ref()), (5, 6000, None));
    assert!(k.embeddings.is_none());
    let cfg = parse(
        "harness:\n  knowledge:\n    enabled: true\n    paths: [docs, README.md]\n    directory: idx\n    top_k: 20\n    \
         max_injected_tokens: 100\n    embeddings:\n      base_url: http://127.0.0.1:9/v1\n      model: m\n      \
         api_key_env: EMBED_KEY\n      timeout: 5s\n      query_prefix: 'query: '\n      document_prefix: '{title}: '\n",
    );
    let k = &cfg.harness.knowledge;
    let e = k.embeddings.as_ref().expect("embeddings");
    assert_eq!((k.top_k, k.max_injected_tokens), (20, 100));
    assert_eq!(k.directory.as_deref(), Some(Path::new("idx")));
    assert_eq!((e.base_url.as_deref(), e.model.as_deref()), (Some("http://127.0.0.1:9/v1"), Some("m")));
    assert_eq!(
        (e.timeout(), e.query_prefix.as_str(), e.document_prefix.as_str()),
        (Duration::from_secs(5), "query: ", "{title}: ")
    );
    assert!(cfg.bearer_token_envs().contains(&"EMBED_KEY".to_owned()), "the key variable is scrubbed from children");
    assert!(!parse("harness:\n  knowledge:\n").harness.knowledge.enabled);
}

#[test]
fn know_1_bad_values_are_refused_with_their_key_and_location() {
    let e = err("harness:\n  knowledge:\n    enabled: true\n    paths: [d]\n    top_k: 21\n");
    assert_eq!(e.key(), Some("harness.knowledge.top_k"));
    assert_eq!(loc(&e), (5, 12));
    assert_contains(&e, &["at most 20"]);
    let e = err("harness:\n  knowledge:\n    top_k: 0\n");
    assert_eq!(e.key(), Some("harness.knowledge.top_k"));
    let e = err("harness:\n  knowledge:\n    enabled: true\n");
    assert_eq!(e.key(), Some("harness.knowledge.paths"));
    assert_eq!(loc(&e).0, 3, "located at the knowledge block: {e}");
    let e = err("harness:\n  knowledge:\n    paths: [d]\n    embeddings:\n      base_url: http://127.0.0.1:9/v1\n");
    assert_eq!(e.key(), Some("harness.knowledge.embeddings.model"));
    assert_eq!(loc(&e).0, 5, "located at the embeddings block: {e}");
    let e = err("harness:\n  knowledge:\n    embeddings:\n      model: m\n      base_url: 'ftp://x'\n");
    assert_eq!(e.key(), Some("harness.knowledge.embeddings.base_url"));
    assert_eq!(loc(&e).0, 5);
    let e = err("harness:\n  knowledge:\n    enabled: true\n    pathz: [d]\n");
    assert_eq!(e.key(), Some("harness.knowledge.pathz"));
    assert_eq!(loc(&e), (4, 5));
    let e = err(
        "harness:\n  knowledge:\n    embeddings:\n      model: m\n      base_url: http://127.0.0.1:9\n      dims: 3\n",
    );
    assert_eq!(e.key(), Some("harness.knowledge.embeddings.dims"));
    assert_eq!(loc(&e).0, 6);
}

#[test]
fn know_12_mcp_builtins_parses_as_a_list_of_names() {
    let cfg = parse("expose:\n  agent:\n    mcp:\n      builtins: [knowledge_search]\n");
    let mcp = cfg.expose.agent.mcp.as_ref().expect("mcp");
    assert_eq!(mcp.builtins.as_deref(), Some(&["knowledge_search".to_owned()][..]));
    let e = err("expose:\n  agent:\n    mcp:\n      builtins: knowledge_search\n");
    assert_eq!(e.key(), Some("expose.agent.mcp.builtins"));
    assert_eq!(loc(&e).0, 4);
}
