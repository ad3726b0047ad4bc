use super::resource::Resource;
use super::token::{Failure, head};
use super::*;
use base64::Engine;

fn b64(s: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

fn token_with_header(header: &str) -> String {
    format!("{}.{}.c2ln", b64(header), b64("{}"))
}

#[test]
fn auth_2_a_header_naming_none_hmac_or_crit_is_refused_before_any_key_is_tried() {
    for (header, needle) in [
        (r#"{"alg":"none"}"#, "alg \"none\" is not accepted"),
        (r#"{"alg":"HS256","kid":"k"}"#, "alg \"HS256\" is not accepted"),
        (r#"{"alg":"RS256","crit":["exp"]}"#, "critical extensions"),
        (r#"{"kid":"k"}"#, "not a JWS header"),
    ] {
        let why = head(&token_with_header(header)).unwrap_err().to_string();
        assert!(why.contains(needle), "{header}: {why}");
    }
    assert!(matches!(head("a.b"), Err(Failure::Malformed(_))));
    assert!(matches!(head("a.b.c.d"), Err(Failure::Malformed(_))));
    assert!(matches!(head("!!.b.c"), Err(Failure::Malformed(_))));
    let ok = head(&token_with_header(r#"{"alg":"ES256","kid":"k1"}"#)).unwrap();
    assert_eq!((ok.alg, ok.kid.as_deref()), (jsonwebtoken::Algorithm::ES256, Some("k1")));
}

#[test]
fn auth_1_a_jwks_keeps_only_asymmetric_signature_keys() {
    let why = keys::parse(br#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#).err().unwrap();
    assert!(why.contains("shared-secret"), "{why}");
    let why = keys::parse(br#"{"keys":[]}"#).err().unwrap();
    assert!(why.contains("it is empty"), "{why}");
    assert!(keys::parse(b"[]").err().unwrap().contains("not a JWKS document"));
    // An EC key pinned to an RSA algorithm does not fit.
    let ec = r#"{"kty":"EC","crv":"P-256","alg":"RS256",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#;
    let why = keys::parse(format!(r#"{{"keys":[{ec}]}}"#).as_bytes()).err().unwrap();
    assert!(why.contains("does not fit"), "{why}");
    let keys = keys::parse(format!(r#"{{"keys":[{}]}}"#, ec.replace(r#""alg":"RS256","#, "")).as_bytes()).unwrap();
    assert_eq!(keys.len(), 1);
    assert!(keys[0].family.accepts(jsonwebtoken::Algorithm::ES256));
    assert!(!keys[0].family.accepts(jsonwebtoken::Algorithm::HS256));
}

#[test]
fn auth_3_the_metadata_url_puts_the_well_known_segment_before_the_resource_path() {
    let challenge = |r: &Resource| {
        let response = r.challenge(&Rejection::Missing);
        response.headers()["www-authenticate"].to_str().unwrap().to_owned()
    };
    let r = Resource::new("https://i.example", "https://m.example/mcp/", "srv", &[]);
    assert!(r.serves("/.well-known/oauth-protected-resource/mcp"));
    assert!(r.serves("/.well-known/oauth-protected-resource"));
    assert!(!r.serves("/mcp"));
    assert_eq!(
        challenge(&r),
        r#"Bearer resource_metadata="https://m.example/.well-known/oauth-protected-resource/mcp""#
    );
    let r = Resource::new("https://i.example", "https://m.example:8443", "srv", &[]).with_required(&["a".into()]);
    assert_eq!(
        challenge(&r),
        r#"Bearer resource_metadata="https://m.example:8443/.well-known/oauth-protected-resource", scope="a""#
    );
    // A reason with quotes or control characters cannot break out of the quoted string.
    let response = r.challenge(&Rejection::Invalid("bad \"x\"\n\\".to_owned()));
    let header = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(header.contains(r#"error_description="bad ?x???""#), "{header}");
}

#[test]
fn auth_8_the_caller_is_shown_sanitized_and_sessions_key_on_subject_and_client() {
    let c = Caller::new(Some("al\u{1b}[31mice"), Some("app"), ["s"]);
    assert!(!c.to_string().contains('\u{1b}'), "{c}");
    assert_ne!(session_key(&c), session_key(&Caller::new(Some("al\u{1b}[31mice"), Some("other"), ["s"])));
    assert_eq!(Caller::new(None, Some("svc"), Vec::<String>::new()).to_string(), "client svc");
    assert_eq!(Caller::new(Some("svc"), Some("svc"), Vec::<String>::new()).to_string(), "svc");
}

#[test]
fn auth_4_only_one_well_formed_bearer_header_is_a_token() {
    use axum::http::{HeaderMap, HeaderValue};
    let headers = |values: &[&str]| {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    };
    assert_eq!(bearer(&headers(&[])), Err(Rejection::Missing));
    assert_eq!(bearer(&headers(&["bearer abc.def.ghi"])), Ok("abc.def.ghi"));
    for bad in [&["Basic abc"][..], &["Bearer"], &["Bearer a b"], &["Bearer a,b"], &["Bearer x", "Bearer x"]] {
        assert!(matches!(bearer(&headers(bad)), Err(Rejection::Invalid(_))), "{bad:?}");
    }
}

/// AUTH-6: verified tokens are remembered within [`VERIFIED_MAX`] however many distinct ones arrive, the newest
/// among them; and no token, valid or refused, reaches the logs.
#[tokio::test]
async fn auth_6_verified_tokens_stay_within_their_bound_and_no_token_is_logged() {
    use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jwt");
    let key = EncodingKey::from_ed_pem(&std::fs::read(fixtures.join("ed.pem")).unwrap()).unwrap();
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::EdDSA).unwrap();
    jwk.common.key_id = Some("ed-1".to_owned());
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, serde_json::json!({"keys": [jwk]}).to_string()).unwrap();
    let config = crate::config::McpAuth {
        issuer: Some("https://issuer.example".to_owned()),
        audience: Some("https://mcp.example/".to_owned()),
        jwks_file: Some(jwks),
        ..Default::default()
    };
    let auth = Auth::new(&config, "t", &ToolScopes::default(), Duration::from_secs(3600)).await.unwrap();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("ed-1".to_owned());
    let exp = now() as u64 + 3600;
    let token = |sub: String| {
        let claims = serde_json::json!({"iss": "https://issuer.example", "aud": "https://mcp.example/",
            "sub": sub, "exp": exp});
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    };

    let logs = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = {
        let logs = logs.clone();
        move || Capture(logs.clone())
    };
    let subscriber = tracing_subscriber::fmt().with_max_level(tracing::Level::TRACE).with_writer(writer).finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    tracing::debug!("the capture works");
    let mut sent = Vec::new();
    for n in 0..VERIFIED_MAX + 100 {
        let t = token(format!("user-{n}"));
        auth.verify(&t).await.unwrap();
        assert!(auth.lock().len() <= VERIFIED_MAX, "{} remembered after {n}", auth.lock().len());
        if n % 97 == 0 {
            sent.push(t);
        }
    }
    let last = token(format!("user-{}", VERIFIED_MAX + 99));
    let digest: [u8; 32] = Sha256::digest(last.as_bytes()).into();
    assert!(auth.lock().contains_key(&digest), "the newest verified token is remembered");
    // Refused ones too: a tampered signature, and a token for another audience.
    let tampered = format!("{}x", &sent[0][..sent[0].len() - 1]);
    assert!(auth.verify(&tampered).await.is_err());
    sent.push(tampered);
    drop(_logging);
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logged.contains("the capture works"), "{logged}");
    for t in &sent {
        let signature = t.rsplit('.').next().unwrap();
        assert!(!logged.contains(signature), "a token's signature was logged:\n{logged}");
    }
}

/// A log writer into shared memory.
struct Capture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
