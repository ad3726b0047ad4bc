//! NATS CLI contexts and the connection made from them (A2A-13, CFG-16, docs/nats-wire.md §1).
//!
//! The resolution rules are checked with `NatsContext::load_from` on context directories the tests write. Every
//! credential kind a context can carry (user/password, token, nkey seed file, creds file, user_jwt + user_seed, TLS
//! with a CA and with a client certificate) is then proven against a real `nats-server` configured to require it:
//! the context connects, and wrong credentials fail naming the context. Those tests are
//! `#[ignore = "needs nats-server ..."]`; `.ci/run` runs them against nats-server 2.9 and 2.15.

#![cfg(feature = "nats")]

mod common;

use base64::Engine;
use common::nats::{NatsServer, context_dir};
use fisk_ai::ErrorKind;
use fisk_ai::nats::{ConnectionEvent, DEFAULT_URL, NatsConnection, NatsContext};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long any one wait may take before the test gives up (a guard against hangs, not a timing assert).
const GUARD: Duration = Duration::from_secs(30);

fn load(dir: &Path, name: Option<&str>) -> fisk_ai::Result<NatsContext> {
    NatsContext::load_from(dir, name)
}

/// Connect through context `name` of `dir` and prove the connection works with a round trip to the server.
async fn connect(dir: &Path, name: &str) -> fisk_ai::Result<NatsConnection> {
    let ctx = load(dir, Some(name))?;
    let nats = tokio::time::timeout(GUARD, NatsConnection::connect(&ctx, "ctx-test")).await.expect("connect hung")?;
    tokio::time::timeout(GUARD, nats.client().flush()).await.expect("flush hung").expect("flush after connect");
    Ok(nats)
}

/// A connect that must fail as a NATS error naming the context, for the reason `why` (in the error's chain).
async fn refused(dir: &Path, name: &str, why: &str) -> String {
    let err = match connect(dir, name).await {
        Ok(_) => panic!("context {name} connected with wrong credentials"),
        Err(e) => e,
    };
    assert_eq!(err.kind(), ErrorKind::Nats, "{err}");
    let text = err.to_string();
    assert!(text.contains(&format!("context {name}")), "the error names the context: {text}");
    let chain = format!("{err:#}");
    assert!(chain.contains(why), "{name} fails because of {why:?}: {chain}");
    text
}

fn config_error(result: fisk_ai::Result<NatsContext>) -> String {
    match result {
        Ok(ctx) => panic!("context {} loaded; expected a configuration error", ctx.label()),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Config, "{e}");
            e.to_string()
        }
    }
}

// ---- resolution (no server) ----

/// CFG-16: with no name, the context `context.txt` selects is the one loaded (its contents trimmed).
#[test]
fn cfg_16_the_context_selected_in_context_txt_is_loaded() {
    let dir = context_dir("prod", json!({"url": "nats://a.example:4222, nats://b.example:4222"}), false);
    std::fs::write(dir.path().join("context.txt"), "  prod \n").unwrap();
    let ctx = load(dir.path(), None).unwrap();
    assert_eq!(ctx.name(), Some("prod"));
    assert_eq!(ctx.label(), "prod");
    assert_eq!(ctx.file(), Some(dir.path().join("context/prod.json").as_path()));
    assert_eq!(ctx.servers(), ["nats://a.example:4222", "nats://b.example:4222"]);

    // An empty name is "no name": the selected one again.
    assert_eq!(load(dir.path(), Some("")).unwrap().name(), Some("prod"));
}

/// CFG-16: neither a name nor a selection (no context.txt, or an empty one) is not an error: the local default
/// server without credentials, shown as `(default)`.
#[test]
fn cfg_16_nothing_selected_is_the_local_default_server() {
    let empty = tempfile::tempdir().unwrap();
    for selection in [None, Some(""), Some(" \n")] {
        if let Some(text) = selection {
            std::fs::write(empty.path().join("context.txt"), text).unwrap();
        }
        let ctx = load(empty.path(), None).unwrap();
        assert_eq!(ctx.servers(), [DEFAULT_URL]);
        assert_eq!(DEFAULT_URL, "nats://127.0.0.1:4222");
        assert_eq!((ctx.name(), ctx.file(), ctx.label()), (None, None, "(default)"));
    }
    // A context without a url also means the default server.
    let dir = context_dir("bare", json!({"token": "t"}), true);
    assert_eq!(load(dir.path(), None).unwrap().servers(), [DEFAULT_URL]);
}

/// A2A-13: a missing context file is `unknown context "<name>"`, naming the file looked for; a selection naming
/// a missing file too.
#[test]
fn a2a_13_a_missing_context_is_unknown_and_names_the_file() {
    let dir = context_dir("prod", json!({}), false);
    let text = config_error(load(dir.path(), Some("staging")));
    assert!(text.contains(r#"unknown context "staging""#), "{text}");
    let file = dir.path().join("context/staging.json");
    assert!(text.contains(&file.display().to_string()), "names the file: {text}");

    std::fs::write(dir.path().join("context.txt"), "gone\n").unwrap();
    let text = config_error(load(dir.path(), None));
    assert!(text.contains(r#"unknown context "gone""#), "{text}");
}

/// A2A-13: a context file that is not JSON names the context, the file, and the line and column.
#[test]
fn a2a_13_malformed_json_names_the_file_line_and_column() {
    let dir = context_dir("broken", json!({}), false);
    let file = dir.path().join("context/broken.json");
    std::fs::write(&file, "{\n  \"url\": \"nats://x:4222\",\n  \"token\": oops\n}\n").unwrap();
    let text = config_error(load(dir.path(), Some("broken")));
    assert!(text.contains(r#""broken""#), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("line 3, column"), "{text}");

    // A key of the wrong type is malformed too.
    std::fs::write(&file, "{\"tls_first\": \"yes\"}").unwrap();
    let text = config_error(load(dir.path(), Some("broken")));
    assert!(text.contains("line 1, column"), "{text}");
}

/// A2A-13: a name may hold no `..`, `/` or `\`, whether it is given or read from context.txt; a file path is not a
/// name.
#[test]
fn a2a_13_invalid_names_are_refused() {
    let dir = context_dir("prod", json!({}), false);
    for bad in ["../prod", "..", "a/b", "a\\b", "/etc/passwd", "context/prod"] {
        let text = config_error(load(dir.path(), Some(bad)));
        assert!(text.contains("invalid NATS context name"), "{bad}: {text}");
    }
    std::fs::write(dir.path().join("context.txt"), "../context/prod\n").unwrap();
    let text = config_error(load(dir.path(), None));
    assert!(text.contains("invalid NATS context name"), "{text}");
}

/// Set in the child process [`cfg_16_load_reads_xdg_config_home_then_home`] starts: the context name it must find.
const CHILD_EXPECTS: &str = "FISK_AI_TEST_CHILD_EXPECTS_CONTEXT";

/// CFG-16: `NatsContext::load` reads `$XDG_CONFIG_HOME/nats`, or `~/.config/nats` when XDG_CONFIG_HOME is unset.
/// The environment is the child's (this test binary run again), never changed in this process.
#[test]
fn cfg_16_load_reads_xdg_config_home_then_home() {
    if let Ok(want) = std::env::var(CHILD_EXPECTS) {
        let ctx = NatsContext::load(None).unwrap();
        assert_eq!(ctx.label(), want);
        let named = NatsContext::load(Some(&want)).unwrap();
        assert_eq!(named.servers(), [format!("nats://{want}.example:4222")]);
        println!("CHILD-LOADED {want}");
        return;
    }
    let child = |envs: &[(&str, &Path)], want: &str| {
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command.args(["--exact", "cfg_16_load_reads_xdg_config_home_then_home", "--nocapture", "--test-threads=1"]);
        command.env_remove("XDG_CONFIG_HOME").env(CHILD_EXPECTS, want);
        for (k, v) in envs {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains(&format!("CHILD-LOADED {want}")), "{want}: {text}");
    };
    let xdg_dir = context_dir("xdgctx", json!({"url": "nats://xdgctx.example:4222"}), true);
    let xdg = common::nats::xdg_home_for(xdg_dir.path());
    let home = tempfile::tempdir().unwrap();
    let home_nats = home.path().join(".config/nats/context");
    std::fs::create_dir_all(&home_nats).unwrap();
    std::fs::write(home_nats.join("homectx.json"), r#"{"url": "nats://homectx.example:4222"}"#).unwrap();
    std::fs::write(home.path().join(".config/nats/context.txt"), "homectx").unwrap();

    child(&[("XDG_CONFIG_HOME", xdg.path()), ("HOME", home.path())], "xdgctx");
    child(&[("HOME", home.path())], "homectx");
}

/// A2A-13: what the connection cannot honour is refused when the context loads, naming the context and file: an
/// `op://` secret-manager creds reference, a socks proxy, a user_jwt without its seed, half a client certificate.
#[tokio::test]
async fn a2a_13_settings_this_build_cannot_honour_are_refused() {
    for (name, settings, says) in [
        ("op", json!({"creds": "op://vault/nats/creds"}), "op://"),
        ("socks", json!({"socks_proxy": "socks5://127.0.0.1:1080"}), "socks_proxy"),
        ("jwt", json!({"user_jwt": "eyJ0eXAiOiJKV1QifQ.e30.c2ln"}), "user_jwt without user_seed"),
    ] {
        let dir = context_dir(name, settings, false);
        let text = config_error(load(dir.path(), Some(name)));
        assert!(text.contains(says), "{name}: {text}");
        assert!(text.contains(&format!("NATS context {name:?}")), "{name}: {text}");
        assert!(text.contains(&dir.path().join(format!("context/{name}.json")).display().to_string()), "{text}");
    }
    // Half a client certificate loads (it is a TLS setting) but cannot connect.
    let dir = context_dir("half", json!({"cert": "/nope/client.pem"}), false);
    let ctx = load(dir.path(), Some("half")).unwrap();
    let err = NatsConnection::connect(&ctx, "x").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("cert without key"), "{err}");
}

/// A2A-13: path-valued keys get environment variables expanded (`$VAR`, `${VAR}`, unset ones empty), then a
/// leading `~` to the home directory. The paths here do not exist, so the error shows the path the connection
/// tried to read, before any server is needed.
#[tokio::test]
async fn a2a_13_paths_expand_environment_variables_then_home() {
    let home = std::env::var("HOME").expect("HOME is set for the tests");
    let missing = "fisk-ai-no-such-dir-7Qx2/seed.nk";
    for (raw, want) in [
        (format!("$HOME/{missing}"), format!("{home}/{missing}")),
        (format!("${{HOME}}/{missing}"), format!("{home}/{missing}")),
        (format!("~/{missing}"), format!("{home}/{missing}")),
        (format!("$FISK_AI_TEST_UNSET_VARIABLE_9Z/{missing}"), format!("/{missing}")),
    ] {
        let dir = context_dir("paths", json!({"nkey": raw}), false);
        let ctx = load(dir.path(), Some("paths")).unwrap();
        let err = NatsConnection::connect(&ctx, "x").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{err}");
        assert!(err.to_string().contains(&format!("nkey file {want},")), "{raw} -> {want}: {err}");
    }
    // A creds file the same way; a missing one is a configuration error naming it.
    let dir = context_dir("paths", json!({"creds": "$HOME/fisk-ai-no-such-dir-7Qx2/user.creds"}), false);
    let err = NatsConnection::connect(&load(dir.path(), Some("paths")).unwrap(), "x").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    assert!(err.to_string().contains(&format!("creds file {home}/fisk-ai-no-such-dir-7Qx2/user.creds")), "{err}");
    // The CA file the same way.
    let dir = context_dir("paths", json!({"ca": "~/fisk-ai-no-such-dir-7Qx2/ca.pem"}), false);
    let err = NatsConnection::connect(&load(dir.path(), Some("paths")).unwrap(), "x").await.unwrap_err();
    assert!(err.to_string().contains(&format!("{home}/fisk-ai-no-such-dir-7Qx2/ca.pem")), "{err}");
}

// ---- credentials against real servers ----

/// A2A-13: user and password.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_user_and_password_connect() {
    let server = NatsServer::start_with("authorization { user: agent, password: \"pa55 word\" }");
    let good = server.context_dir("up", json!({"url": server.url(), "user": "agent", "password": "pa55 word"}), false);
    connect(good.path(), "up").await.unwrap();
    // Precedence (docs/nats-wire.md §1): user/password before creds, nkey and jwt, which are then never read.
    let first = server.context_dir(
        "up-first",
        json!({"url": server.url(), "user": "agent", "password": "pa55 word", "creds": "/nope/u.creds",
            "nkey": "/nope/u.nk", "user_jwt": "x", "user_seed": "y"}),
        false,
    );
    connect(first.path(), "up-first").await.unwrap();

    let bad = server.context_dir("up-bad", json!({"url": server.url(), "user": "agent", "password": "nope"}), false);
    let text = refused(bad.path(), "up-bad", "authorization violation").await;
    assert!(text.contains(&server.url()), "names the server: {text}");
    let none = server.context_dir("up-none", json!({"url": server.url()}), false);
    refused(none.path(), "up-none", "authorization violation").await;
}

/// A2A-13: a token.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_a_token_connects() {
    let server = NatsServer::start_with("authorization { token: \"s3cret-t0ken\" }");
    let good = server.context_dir("tok", json!({"url": server.url(), "token": "s3cret-t0ken"}), true);
    // Selected in context.txt: no name needed.
    let ctx = load(good.path(), None).unwrap();
    let nats = NatsConnection::connect(&ctx, "tok").await.unwrap();
    nats.client().flush().await.unwrap();
    assert_eq!(nats.context(), "tok");

    let bad = server.context_dir("tok-bad", json!({"url": server.url(), "token": "wrong"}), false);
    refused(bad.path(), "tok-bad", "authorization violation").await;
}

/// A2A-13: an nkey seed file, named with `~` and with `$HOME` (path expansion proven against a real server).
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_an_nkey_seed_file_connects() {
    let user = nkeys::KeyPair::new_user();
    let server = NatsServer::start_with(&format!("authorization {{ users = [ {{ nkey: {} }} ] }}", user.public_key()));
    let home = PathBuf::from(std::env::var("HOME").expect("HOME is set for the tests"));
    let seeds = tempfile::tempdir_in(&home).unwrap();
    let seed_file = seeds.path().join("user.nk");
    std::fs::write(&seed_file, format!("{}\n", user.seed().unwrap())).unwrap();
    let relative = seed_file.strip_prefix(&home).unwrap().display().to_string();

    for (name, path) in [
        ("nk-plain", seed_file.display().to_string()),
        ("nk-tilde", format!("~/{relative}")),
        ("nk-env", format!("${{HOME}}/{relative}")),
    ] {
        // Precedence: the nkey before jwt+seed, which are then never used.
        let dir = server.context_dir(
            name,
            json!({"url": server.url(), "nkey": path, "user_jwt": "x", "user_seed": "y"}),
            false,
        );
        connect(dir.path(), name).await.unwrap_or_else(|e| panic!("{name}: {e}"));
    }

    // A seed the server does not know.
    let stranger = tempfile::tempdir().unwrap();
    let other = stranger.path().join("other.nk");
    std::fs::write(&other, nkeys::KeyPair::new_user().seed().unwrap()).unwrap();
    let bad = server.context_dir("nk-bad", json!({"url": server.url(), "nkey": other}), false);
    refused(bad.path(), "nk-bad", "authorization violation").await;
}

/// Operator mode: an operator, an account it signs and users the account signs.
struct Operator {
    conf: String,
    account: nkeys::KeyPair,
    _dir: tempfile::TempDir,
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A NATS JWT (`ed25519-nkey`) with `nats` as its claims' `nats` object, signed by `issuer`.
fn jwt(issuer: &nkeys::KeyPair, subject: &str, name: &str, nats: Value) -> String {
    use sha2::Digest;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut claims = json!({"iat": now, "iss": issuer.public_key(), "name": name, "sub": subject, "nats": nats});
    // The jti is a hash of the claims without it, as the Go library writes it.
    let digest = sha2::Sha256::digest(claims.to_string().as_bytes());
    claims["jti"] = json!(digest.iter().map(|b| format!("{b:02X}")).collect::<String>());
    let signing_input =
        format!("{}.{}", b64url(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#), b64url(claims.to_string().as_bytes()));
    let signature = issuer.sign(signing_input.as_bytes()).unwrap();
    format!("{signing_input}.{}", b64url(&signature))
}

impl Operator {
    fn new() -> Operator {
        let operator = nkeys::KeyPair::new_operator();
        let account = nkeys::KeyPair::new_account();
        let operator_jwt = jwt(&operator, &operator.public_key(), "fisk-op", json!({"type": "operator", "version": 2}));
        let unlimited = json!({"subs": -1, "conn": -1, "leaf": -1, "imports": -1, "exports": -1, "data": -1,
            "payload": -1, "wildcards": true});
        let account_jwt = jwt(
            &operator,
            &account.public_key(),
            "fisk-acct",
            json!({"type": "account", "version": 2, "limits": unlimited}),
        );
        // JetStream (which every test server runs) needs a system account in operator mode.
        let system = nkeys::KeyPair::new_account();
        let system_jwt =
            jwt(&operator, &system.public_key(), "SYS", json!({"type": "account", "version": 2, "limits": unlimited}));
        let dir = tempfile::tempdir().unwrap();
        let operator_file = dir.path().join("operator.jwt");
        std::fs::write(&operator_file, &operator_jwt).unwrap();
        let conf = format!(
            "operator: {:?}\nsystem_account: {}\nresolver: MEMORY\nresolver_preload: {{ {}: {:?}, {}: {:?} }}\n",
            operator_file.display().to_string(),
            system.public_key(),
            account.public_key(),
            account_jwt,
            system.public_key(),
            system_jwt
        );
        Operator { conf, account, _dir: dir }
    }

    /// A user of the account: its JWT and its seed.
    fn user(&self, name: &str) -> (String, String) {
        let user = nkeys::KeyPair::new_user();
        let claims = json!({"type": "user", "version": 2, "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1});
        (jwt(&self.account, &user.public_key(), name, claims), user.seed().unwrap())
    }
}

/// The decorated creds file `nsc` writes.
fn creds_file(path: &Path, jwt: &str, seed: &str) {
    std::fs::write(
        path,
        format!(
            "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n************************* IMPORTANT \
             *************************\nNKEY Seed printed below can be used to sign and prove identity.\n\n\
             -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n\n\
             *************************************************************\n"
        ),
    )
    .unwrap();
}

/// A2A-13: a creds file (operator mode, JWTs minted here), and the same user as `user_jwt` + `user_seed`.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_a_creds_file_and_a_jwt_with_its_seed_connect() {
    let op = Operator::new();
    let server = NatsServer::start_with(&op.conf);
    let (user_jwt, seed) = op.user("fisk-user");
    let creds = server.dir().join("user.creds");
    creds_file(&creds, &user_jwt, &seed);

    let dir = server.context_dir("creds", json!({"url": server.url(), "creds": creds}), false);
    connect(dir.path(), "creds").await.unwrap();
    // Precedence: creds before nkey and jwt+seed.
    let dir = server.context_dir(
        "creds-first",
        json!({"url": server.url(), "creds": creds, "nkey": "/nope/u.nk", "user_jwt": "x", "user_seed": "y"}),
        false,
    );
    connect(dir.path(), "creds-first").await.unwrap();
    let dir = server.context_dir("jwt", json!({"url": server.url(), "user_jwt": user_jwt, "user_seed": seed}), false);
    connect(dir.path(), "jwt").await.unwrap();

    // A user signed by an account the operator never signed.
    let stranger = Operator::new();
    let (jwt2, seed2) = stranger.user("stranger");
    let other = server.dir().join("stranger.creds");
    creds_file(&other, &jwt2, &seed2);
    let dir = server.context_dir("creds-bad", json!({"url": server.url(), "creds": other}), false);
    refused(dir.path(), "creds-bad", "authorization violation").await;
    // The right JWT with another user's seed cannot sign the nonce.
    let (_, wrong_seed) = op.user("other");
    let dir = server.context_dir(
        "jwt-bad",
        json!({"url": server.url(), "user_jwt": user_jwt, "user_seed": wrong_seed}),
        false,
    );
    refused(dir.path(), "jwt-bad", "authorization violation").await;
}

/// A throwaway CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files in `dir`.
struct Pki {
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn make_pki(dir: &Path, label: &str) -> Pki {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, format!("fisk-ai test CA {label}"));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

    let write = |name: &str, text: String| {
        let path = dir.join(format!("{label}-{name}"));
        std::fs::write(&path, text).unwrap();
        path
    };
    let leaf = |sans: Vec<String>, eku: ExtendedKeyUsagePurpose, cn: &str| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![eku];
        let cert = params.signed_by(&key, &ca).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_pem, server_key) =
        leaf(vec!["127.0.0.1".into(), "localhost".into()], ExtendedKeyUsagePurpose::ServerAuth, "nats-server");
    let (client_pem, client_key) = leaf(vec!["fisk-ai-client".into()], ExtendedKeyUsagePurpose::ClientAuth, "fisk-ai");
    Pki {
        ca: write("ca.pem", ca.pem()),
        server_cert: write("server.pem", server_pem),
        server_key: write("server-key.pem", server_key),
        client_cert: write("client.pem", client_pem),
        client_key: write("client-key.pem", client_key),
    }
}

/// A2A-13: TLS with the server's CA from the context's `ca`; without it the self-signed chain is not trusted.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_tls_with_the_context_ca_connects() {
    let scratch = tempfile::tempdir().unwrap();
    let pki = make_pki(scratch.path(), "a");
    let server = NatsServer::start_with(&format!(
        "tls {{ cert_file: {:?}, key_file: {:?} }}",
        pki.server_cert.display().to_string(),
        pki.server_key.display().to_string()
    ));
    let dir = server.context_dir("tls", json!({"url": server.url(), "ca": pki.ca}), false);
    connect(dir.path(), "tls").await.unwrap();

    let dir = server.context_dir("tls-no-ca", json!({"url": server.url()}), false);
    refused(dir.path(), "tls-no-ca", "UnknownIssuer").await;
    let other = make_pki(scratch.path(), "b");
    let dir = server.context_dir("tls-wrong-ca", json!({"url": server.url(), "ca": other.ca}), false);
    refused(dir.path(), "tls-wrong-ca", "UnknownIssuer").await;
}

/// A2A-13: a server that verifies client certificates accepts the context's `cert` and `key`, and refuses a
/// context without them.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_tls_with_a_client_certificate_connects() {
    let scratch = tempfile::tempdir().unwrap();
    let pki = make_pki(scratch.path(), "m");
    let server = NatsServer::start_with(&format!(
        "tls {{ cert_file: {:?}, key_file: {:?}, ca_file: {:?}, verify: true }}",
        pki.server_cert.display().to_string(),
        pki.server_key.display().to_string(),
        pki.ca.display().to_string()
    ));
    let dir = server.context_dir(
        "mtls",
        json!({"url": server.url(), "ca": pki.ca, "cert": pki.client_cert, "key": pki.client_key}),
        false,
    );
    connect(dir.path(), "mtls").await.unwrap();

    let dir = server.context_dir("mtls-anon", json!({"url": server.url(), "ca": pki.ca}), false);
    refused(dir.path(), "mtls-anon", "received fatal alert").await;
}

/// A plain HTTP GET of the monitoring endpoint, retried until the listener is up.
fn http_get_json(port: u16, path: &str) -> Value {
    let deadline = std::time::Instant::now() + GUARD;
    loop {
        let attempt = (|| -> std::io::Result<String> {
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
            stream.set_read_timeout(Some(GUARD))?;
            write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
            let mut text = String::new();
            stream.read_to_string(&mut text)?;
            Ok(text)
        })();
        match attempt {
            Ok(text) => {
                let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
                return serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
            }
            Err(e) => {
                assert!(std::time::Instant::now() < deadline, "monitoring port {port}: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// A2A-13: the connection names itself `fisk-ai <identity>`, as the server's `/connz` shows.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_the_connection_is_named_fisk_ai_identity() {
    let monitor = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = NatsServer::start_with(&format!("http: \"127.0.0.1:{monitor}\""));
    let dir = server.context_dir("named", json!({"url": server.url()}), false);
    let ctx = load(dir.path(), Some("named")).unwrap();
    let nats = NatsConnection::connect(&ctx, "ops-7").await.unwrap();
    nats.client().flush().await.unwrap();

    let connz = tokio::task::spawn_blocking(move || http_get_json(monitor, "/connz")).await.unwrap();
    let names: Vec<&str> = connz["connections"].as_array().unwrap().iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["fisk-ai ops-7"], "{connz}");
    assert_eq!(nats.context(), "named");
    assert!(nats.is_owned());
}

/// A2A-13: a server restart is reported on `events()` as Disconnected, then Connected once the client has
/// reconnected with its default behaviour; the connection then works again.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_a_server_restart_reports_disconnected_then_connected() {
    let mut server = NatsServer::start();
    let dir = server.context_dir("events", json!({"url": server.url()}), false);
    let nats = connect(dir.path(), "events").await.unwrap();
    let mut events = nats.events();

    server.restart();
    // The first connect's own Connected may reach this receiver late (the callback runs on a task), so what counts
    // is a Disconnected and a Connected after it.
    let mut seen = Vec::new();
    let mut disconnected = false;
    loop {
        let event = tokio::time::timeout(GUARD, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no disconnect and reconnect reported; events so far {seen:?}"))
            .unwrap();
        seen.push(event.clone());
        match event {
            ConnectionEvent::Disconnected => disconnected = true,
            ConnectionEvent::Connected if disconnected => break,
            _ => {}
        }
    }
    tokio::time::timeout(GUARD, nats.client().flush()).await.unwrap().unwrap();
}

/// A2A-13: `url` is a comma-separated list, all of it used: with the first server down, the connection reaches the
/// second (in whichever order the client tries them).
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_the_url_list_is_tried_in_turn() {
    let server = NatsServer::start();
    let down = common::net::RefusedPort::new();
    let urls = format!("nats://127.0.0.1:{}, {}", down.port(), server.url());
    let dir = server.context_dir("list", json!({"url": urls}), false);
    assert_eq!(load(dir.path(), Some("list")).unwrap().servers().len(), 2);
    connect(dir.path(), "list").await.unwrap();
}

/// A2A-13: a context's `inbox_prefix` is where the connection's replies come back.
#[tokio::test]
#[ignore = "needs nats-server; .ci/run installs it"]
async fn a2a_13_the_inbox_prefix_is_applied() {
    use futures::StreamExt;
    let server = NatsServer::start();
    let dir = server.context_dir("inbox", json!({"url": server.url(), "inbox_prefix": "_INBOX_fisk"}), false);
    let nats = connect(dir.path(), "inbox").await.unwrap();
    let mut requests = nats.client().subscribe("ctx.echo").await.unwrap();
    let responder = nats.client().clone();
    let echo = tokio::spawn(async move {
        let request = requests.next().await.expect("a request");
        let reply = request.reply.clone().expect("a reply subject");
        responder.publish(reply.clone(), reply.as_str().to_owned().into()).await.unwrap();
        responder.flush().await.unwrap();
    });
    let answer = tokio::time::timeout(GUARD, nats.client().request("ctx.echo", "hi".into())).await.unwrap().unwrap();
    let reply_subject = String::from_utf8(answer.payload.to_vec()).unwrap();
    assert!(reply_subject.starts_with("_INBOX_fisk."), "{reply_subject}");
    echo.await.unwrap();
}

/// A context's secrets never show in `{:?}` (a host's log, a failing test's output), and a URL's user
/// information never shows in a connection error.
#[tokio::test]
async fn a2a_13_secrets_stay_out_of_debug_output_and_errors() {
    let dir = common::nats::context_dir(
        "s",
        serde_json::json!({"url": "nats://someone:hunter2-url@127.0.0.1:1", "user": "u", "password": "hunter2-pw",
                           "token": "hunter2-token", "user_seed": "SUhunter2seed", "user_jwt": "hunter2.jwt"}),
        false,
    );
    let ctx = fisk_ai::nats::NatsContext::load_from(dir.path(), Some("s")).unwrap();
    let debug = format!("{ctx:?}");
    assert!(debug.contains("\"s\"") && !debug.contains("hunter2"), "{debug}");
    let err = fisk_ai::nats::NatsConnection::connect(&ctx, "x").await.unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("nats://***@127.0.0.1:1") && !text.contains("hunter2"), "{text}");
}
