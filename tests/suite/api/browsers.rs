//! What a web page can make its visitor's browser send to a condense
//! without API keys, and what condense does with it (`http::screen`): a
//! `Host` that is a DNS name (DNS rebinding) or a foreign `Origin` is
//! refused on every route but the probes, and a body a page can send without a preflight (`text/plain`, a
//! form) is refused on the proxy routes as on the API, before anything is
//! forwarded with the operator's key.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use serde_json::{Value, json};

use crate::support::common::{Reply, app_with, chat, send};
use crate::support::stub::{self, Fault};

fn request(
    path: &str,
    headers: &[(header::HeaderName, &str)],
    body: Option<(&str, Vec<u8>)>,
) -> Request<Body> {
    let method = if body.is_some() { "POST" } else { "GET" };
    let mut req = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(k, *v);
    }
    match body {
        Some((ct, bytes)) => req.header(header::CONTENT_TYPE, ct).body(Body::from(bytes)),
        None => req.body(Body::empty()),
    }
    .unwrap()
}

fn json_body(v: &Value) -> Option<(&'static str, Vec<u8>)> {
    Some(("application/json", serde_json::to_vec(v).unwrap()))
}

/// condense without API keys in front of a stub provider, with an
/// operator key to spend: what an attacker wants.
async fn laptop(config: condense::Config) -> (Router, stub::Stub) {
    let provider = stub::start(Fault::Ok, false).await;
    let app = app_with(condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(provider.url.clone()),
            api_key: condense::upstream::Secret::new("sk-operator"),
            ..config.proxy
        },
        ..config
    });
    (app, provider)
}

fn tokens() -> Option<(&'static str, Vec<u8>)> {
    json_body(&json!({"text": "hello"}))
}

fn completion() -> Option<(&'static str, Vec<u8>)> {
    json_body(&json!({"model": "gpt-4o", "messages": chat(2)}))
}

fn assert_refused(r: &Reply, what: &str) {
    let p = r.problem(403);
    assert_eq!(p["type"], "urn:condense:problem:forbidden");
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains(what), "{detail}");
}

#[tokio::test]
async fn without_keys_only_addresses_and_localhost_are_answered() {
    // Listening on every address, as `docker run -p 8080:8080` does.
    let (app, provider) = laptop(condense::Config {
        server: condense::config::ServerSettings {
            listen: "0.0.0.0:8080".parse().unwrap(),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    for host in [
        "127.0.0.1:8080",
        "localhost:8080",
        "[::1]:8080",
        "192.168.1.20:8080",
    ] {
        let r = send(
            &app,
            request("/v1/tokens", &[(header::HOST, host)], tokens()),
        )
        .await;
        assert_eq!(r.status, 200, "{host}: {}", r.text());
    }
    // A rebound name: the browser's idea of the origin, condense's address.
    let rebound = "attacker.example:8080";
    let r = send(
        &app,
        request("/v1/tokens", &[(header::HOST, rebound)], tokens()),
    )
    .await;
    assert_refused(&r, "CONDENSE_ALLOWED_HOSTS");
    assert!(!r.text().contains("sk-operator"));
    let r = send(
        &app,
        request(
            "/v1/chat/completions",
            &[(header::HOST, rebound)],
            completion(),
        ),
    )
    .await;
    assert_refused(&r, "CONDENSE_ALLOWED_HOSTS");
    for page in ["/", "/playground", "/metrics", "/v1/models"] {
        let r = send(&app, request(page, &[(header::HOST, rebound)], None)).await;
        assert_eq!(r.status, 403, "{page}");
    }
    // The target names the host when it is absolute (RFC 9112); two `Host`
    // headers, or a port no TCP has, name none.
    let absolute = request(
        "http://attacker.example:8080/v1/tokens",
        &[(header::HOST, "127.0.0.1:8080")],
        tokens(),
    );
    assert_refused(&send(&app, absolute).await, "CONDENSE_ALLOWED_HOSTS");
    let two = [(header::HOST, "127.0.0.1:8080"), (header::HOST, rebound)];
    assert_refused(
        &send(&app, request("/v1/tokens", &two, tokens())).await,
        "more than one",
    );
    let no_port = [(header::HOST, "localhost:99999")];
    assert_refused(
        &send(&app, request("/v1/tokens", &no_port, tokens())).await,
        "CONDENSE_ALLOWED_HOSTS",
    );
    assert_eq!(provider.calls(), 0, "nothing reached the provider");
    // The probes answer whatever the name: an orchestrator uses an address.
    for probe in ["/healthz", "/readyz"] {
        let r = send(&app, request(probe, &[(header::HOST, rebound)], None)).await;
        assert_eq!(r.status, 200, "{probe}");
    }
}

#[tokio::test]
async fn listed_names_replace_the_default_and_with_keys_any_name_is_answered() {
    let (app, _p) = laptop(condense::Config {
        access: condense::config::AccessSettings {
            allowed_hosts: vec!["condense.internal".into()],
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let r = send(
        &app,
        request(
            "/v1/tokens",
            &[(header::HOST, "condense.internal:8080")],
            tokens(),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = send(
        &app,
        request("/v1/tokens", &[(header::HOST, "127.0.0.1:8080")], tokens()),
    )
    .await;
    assert_refused(&r, "`127.0.0.1:8080`");

    // With API keys a rebound page gets no further than a 401, so any
    // name is answered (a Service's, an ingress's).
    const KEY: &str = "key-0123456789abcdef";
    let (app, _p) = laptop(condense::Config {
        access: condense::config::AccessSettings {
            api_keys: vec![condense::upstream::Secret::new(KEY)],
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let auth = format!("Bearer {KEY}");
    let headers = [
        (header::HOST, "condense.prod.svc.cluster.local"),
        (header::AUTHORIZATION, auth.as_str()),
    ];
    let r = send(&app, request("/v1/tokens", &headers, tokens())).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn a_foreign_origin_is_refused_and_the_own_one_served() {
    let (app, provider) = laptop(condense::Config::default()).await;
    let host = (header::HOST, "127.0.0.1:8080");
    let own = [host.clone(), (header::ORIGIN, "http://127.0.0.1:8080")];
    let r = send(&app, request("/v1/tokens", &own, tokens())).await;
    assert_eq!(r.status, 200, "{}", r.text());
    for origin in ["https://attacker.example", "http://127.0.0.1:9999", "null"] {
        let foreign = [host.clone(), (header::ORIGIN, origin)];
        let r = send(&app, request("/v1/tokens", &foreign, tokens())).await;
        assert_refused(&r, "CONDENSE_CORS_ORIGINS");
        let r = send(
            &app,
            request("/v1/chat/completions", &foreign, completion()),
        )
        .await;
        assert_refused(&r, "CONDENSE_CORS_ORIGINS");
    }
    assert_eq!(provider.calls(), 0, "nothing reached the provider");

    // A listed origin may call; another still may not.
    let (app, _p) = laptop(condense::Config {
        access: condense::config::AccessSettings {
            cors_origins: vec!["https://app.example.com".into()],
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let listed = [host.clone(), (header::ORIGIN, "https://app.example.com")];
    assert_eq!(
        send(&app, request("/v1/tokens", &listed, tokens()))
            .await
            .status,
        200
    );
    let other = [host, (header::ORIGIN, "https://attacker.example")];
    assert_eq!(
        send(&app, request("/v1/tokens", &other, tokens()))
            .await
            .status,
        403
    );
}

/// The bodies a page sends without a preflight: the proxy refuses them
/// before reading, as the API does, and never adds the operator's key.
#[tokio::test]
async fn the_proxy_reads_only_json_bodies() {
    let (app, provider) = laptop(condense::Config::default()).await;
    let raw = serde_json::to_vec(&json!({"model": "gpt-4o", "messages": chat(2)})).unwrap();
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        for path in [
            "/v1/chat/completions",
            "/v1/responses",
            "/v1/messages",
            "/v1/messages/count_tokens",
        ] {
            let r = send(&app, request(path, &[], Some((ct, raw.clone())))).await;
            let p = r.problem(415);
            assert!(
                p["detail"].as_str().unwrap().contains("application/json"),
                "{path} {ct}: {p}"
            );
        }
    }
    let mut no_type = request(
        "/v1/chat/completions",
        &[],
        Some(("application/json", raw.clone())),
    );
    no_type.headers_mut().remove(header::CONTENT_TYPE);
    send(&app, no_type).await.problem(415);
    assert_eq!(provider.calls(), 0, "nothing reached the provider");
    // The SDKs' own type passes, parameters and all.
    let r = send(
        &app,
        request(
            "/v1/chat/completions",
            &[],
            Some(("application/json; charset=utf-8", raw)),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        provider.headers.lock().unwrap()[0]["authorization"],
        "Bearer sk-operator"
    );
}
