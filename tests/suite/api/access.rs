//! Access control through the router: one 401 whatever was wrong, the open
//! paths, the proxy's own key header, and the `llm` and `provider`
//! permissions.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use serde_json::{Value, json};

use condense::http::Access;

use crate::support::common::{Reply, app_with, chat, send, thread};
use crate::support::stub::{self, Fault};

/// A key without permissions, one with `llm`, one with `provider`.
const PLAIN: &str = "plain-key-0123456789abcdef";
const LLM: &str = "llm-key-0123456789abcdef";
const PROVIDER: &str = "provider-key-0123456789abcdef";

fn keyed(config: condense::Config) -> condense::Config {
    condense::Config {
        access: condense::config::AccessSettings {
            api_keys: vec![
                condense::upstream::Secret::new(PLAIN),
                condense::upstream::Secret::new(format!("{LLM} llm")),
                condense::upstream::Secret::new(format!("{PROVIDER} provider")),
            ],
            ..config.access
        },
        ..config
    }
}

fn app() -> Router {
    app_with(keyed(condense::Config::default()))
}

fn request(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Request<Body> {
    let mut req = Request::builder().method(method).uri(path);
    if body.is_some() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = body.map_or(Body::empty(), |b| {
        Body::from(serde_json::to_vec(b).unwrap())
    });
    req.body(body).unwrap()
}

async fn tokens(app: &Router, headers: &[(&str, &str)]) -> Reply {
    send(
        app,
        request(
            "POST",
            "/v1/tokens",
            headers,
            Some(&json!({"text": "hello"})),
        ),
    )
    .await
}

fn assert_unauthorized(r: &Reply) {
    let p = r.problem(401);
    assert_eq!(p["type"], "urn:condense:problem:unauthorized");
    assert_eq!(
        r.headers[header::WWW_AUTHENTICATE],
        r#"Bearer realm="condense""#
    );
}

#[tokio::test]
async fn every_wrong_credential_gets_the_same_answer() {
    let app = app();
    let wrong: [&[(&str, &str)]; 7] = [
        &[],
        &[("authorization", "")],
        &[(
            "authorization",
            "Basic cGxhaW4ta2V5LTAxMjM0NTY3ODlhYmNkZWY=",
        )],
        &[("authorization", PLAIN)],
        &[("authorization", "Bearer plain-key-0123456789abcdeX")],
        &[("authorization", "Bearer plain-key-0123456789abcde")],
        // The proxy's header is not the API's.
        &[("x-condense-api-key", PLAIN)],
    ];
    let mut bodies = Vec::new();
    for headers in wrong {
        let r = tokens(&app, headers).await;
        assert_unauthorized(&r);
        assert!(!r.text().contains(PLAIN), "{}", r.text());
        bodies.push(r.bytes.clone());
    }
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "the answers differ: {bodies:?}"
    );
    for auth in [format!("Bearer {PLAIN}"), format!("bearer  {LLM} ")] {
        let r = tokens(&app, &[("authorization", &auth)]).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
}

/// One request per row of the route table, with a thread where a body is
/// needed, and who may call it.
pub(super) fn every_route() -> impl Iterator<Item = (Access, Request<Body>)> {
    condense::http::routes().map(|r| {
        let path = r.path.replace("{name}", "small-00.openai");
        let body = match (r.method, r.access) {
            ("post", Access::Proxy) => Some(json!({"model": "gpt-4o", "messages": chat(1)})),
            ("post", _) => Some(json!({"messages": chat(1)})),
            _ => None,
        };
        let req = request(&r.http_method(), &path, &[], body.as_ref());
        (r.access, req)
    })
}

#[tokio::test]
async fn probes_and_the_playground_stay_open_and_the_rest_is_closed() {
    let app = app();
    // Every route asks for a key but these: the probes, `/metrics` (by
    // default), the contract and the playground (`/` redirects to it).
    let open = [
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/playground",
        "/playground/app.js",
        "/playground/style.css",
        "/playground/examples",
        "/playground/examples/small-00.openai",
    ];
    for (_, req) in every_route() {
        let path = req.uri().path().to_string();
        let r = send(&app, req).await;
        match path.as_str() {
            "/" => assert_eq!(r.status, 307),
            p if open.contains(&p) => assert_eq!(r.status, 200, "{path}: {}", r.text()),
            _ => assert_unauthorized(&r),
        }
    }
    // Unknown paths too: a caller without a key learns nothing of the routes.
    for path in ["/nope", "/v1/tokens/extra"] {
        assert_unauthorized(&send(&app, request("GET", path, &[], None)).await);
    }
    let bearer = format!("Bearer {PLAIN}");
    let r = send(
        &app,
        request("GET", "/v1/models", &[("authorization", &bearer)], None),
    )
    .await;
    assert_eq!(r.status, 200);
    let r = send(
        &app,
        request("GET", "/nope", &[("authorization", &bearer)], None),
    )
    .await;
    r.problem(404);
}

#[tokio::test]
async fn without_keys_nothing_changes() {
    let app = app_with(condense::Config::default());
    let r = tokens(&app, &[]).await;
    assert_eq!(r.status, 200);
    // A key sent to a server that has none is ignored, not refused.
    let r = tokens(&app, &[("authorization", "Bearer whatever-0123456789")]).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn a_keys_file_adds_to_the_environment_keys() {
    let dir = std::env::temp_dir().join(format!("condense-keys-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keys");
    std::fs::write(&file, "# the file's key\nfile-key-0123456789abcdef llm\n").unwrap();
    let app = app_with(keyed(condense::Config {
        access: condense::config::AccessSettings {
            api_keys_file: Some(file),
            ..Default::default()
        },
        ..Default::default()
    }));
    for key in ["file-key-0123456789abcdef", PLAIN] {
        let auth = format!("Bearer {key}");
        assert_eq!(tokens(&app, &[("authorization", &auth)]).await.status, 200);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn the_proxy_takes_its_key_in_its_own_header_and_never_forwards_it() {
    let s = stub::start(Fault::Ok, false).await;
    let app = app_with(keyed(condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(s.url.clone()),
            ..Default::default()
        },
        ..Default::default()
    }));
    let body = json!({"model": "gpt-4o", "messages": chat(2)});
    let provider_key = "Bearer sk-provider-key";
    // The condense key as the provider's Authorization is not a condense key here.
    let wrong: [&[(&str, &str)]; 3] = [
        &[("authorization", provider_key)],
        &[("authorization", &format!("Bearer {PLAIN}"))],
        &[("x-condense-api-key", "not-a-key-0123456789")],
    ];
    for headers in wrong {
        let r = send(
            &app,
            request("POST", "/v1/chat/completions", headers, Some(&body)),
        )
        .await;
        assert_unauthorized(&r);
        assert!(
            r.json()["detail"]
                .as_str()
                .unwrap()
                .contains("x-condense-api-key")
        );
    }
    assert_eq!(s.calls(), 0, "nothing reached the provider");
    let r = send(
        &app,
        request(
            "POST",
            "/v1/chat/completions",
            &[
                ("authorization", provider_key),
                ("x-condense-api-key", PLAIN),
            ],
            Some(&body),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = &s.headers.lock().unwrap()[0];
    assert_eq!(seen["authorization"], provider_key);
    assert!(seen.get("x-condense-api-key").is_none(), "{seen:?}");
    assert!(
        !seen.values().any(|v| v
            .as_bytes()
            .windows(PLAIN.len())
            .any(|w| w == PLAIN.as_bytes())),
        "the condense key reached the provider: {seen:?}"
    );
}

/// A compression that `auto` would give the LLM (its thresholds at 0).
fn compression(strategy: &str) -> Value {
    let t = thread("small-00.openai");
    json!({"messages": t["messages"], "tools": t["tools"], "force": true,
           "config": {"llm_min_tokens": 0, "llm_min_total_tokens": 0},
           "summarizer": {"strategy": strategy}})
}

#[tokio::test]
async fn only_keys_marked_llm_have_the_upstream_write() {
    let s = stub::start(Fault::Ok, false).await;
    let app = app_with(keyed(condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(s.url.clone()),
            model: "stub-model".into(),
            timeout: std::time::Duration::from_secs(30),
            max_retries: 0,
            ..Default::default()
        },
        ..Default::default()
    }));
    let as_key = |key: &str| format!("Bearer {key}");
    let compress = |key: String, strategy: &'static str| {
        let app = app.clone();
        async move {
            send(
                &app,
                request(
                    "POST",
                    "/v1/compress",
                    &[("authorization", &key)],
                    Some(&compression(strategy)),
                ),
            )
            .await
        }
    };
    for strategy in ["llm", "hybrid"] {
        let r = compress(as_key(PLAIN), strategy).await;
        let p = r.problem(403);
        assert_eq!(p["type"], "urn:condense:problem:forbidden");
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("`{strategy}`")), "{detail}");
        assert!(!detail.contains(PLAIN));
    }
    // `auto` falls back to the heuristic, and says why.
    let r = compress(as_key(PLAIN), "auto").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["summary"]["strategy"], "heuristic");
    let warnings = body["warnings"].to_string();
    assert!(warnings.contains("not marked `llm`"), "{warnings}");
    for strategy in ["heuristic", "truncate"] {
        assert_eq!(compress(as_key(PLAIN), strategy).await.status, 200);
    }
    assert_eq!(
        s.calls(),
        0,
        "a key without `llm` never reached the upstream"
    );

    let r = compress(as_key(LLM), "auto").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["summary"]["strategy"], "llm");
    assert_eq!(compress(as_key(LLM), "llm").await.status, 200);
    assert!(s.calls() >= 1);
}

#[tokio::test]
async fn the_proxy_of_a_key_without_llm_writes_heuristic_summaries() {
    let llm = stub::start(Fault::Ok, false).await;
    let provider = stub::start(Fault::Ok, false).await;
    let app = app_with(keyed(condense::Config {
        models: condense::config::ModelSettings {
            profiles_file: None,
            ..Default::default()
        },
        upstream: condense::config::UpstreamSettings {
            url: Some(llm.url.clone()),
            model: "stub-model".into(),
            max_retries: 0,
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            openai_url: Some(provider.url.clone()),
            ..Default::default()
        },
        ..Default::default()
    }));
    // Over gpt-4o's window: a summary is due.
    let t = thread("large-04.openai");
    let body = json!({"model": "gpt-4o", "messages": t["messages"], "tools": t["tools"]});
    let r = send(
        &app,
        request(
            "POST",
            "/v1/chat/completions",
            &[("x-condense-api-key", PLAIN)],
            Some(&body),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.headers["x-condense-compressed"], "true",
        "{:?}",
        r.headers
    );
    assert_eq!(llm.calls(), 0, "the summary was not the upstream's");
    assert_eq!(provider.calls(), 1);
}

/// The operator's provider key is spent only for keys marked `provider`:
/// put into a proxied request that brings no key of its own, or used for
/// a provider count. Anyone may use the proxy with their own provider key.
#[tokio::test]
async fn only_keys_marked_provider_spend_the_operators_provider_key() {
    let openai = stub::start(Fault::Ok, false).await;
    let anthropic = stub::start(Fault::Ok, true).await;
    let counts = stub::start_on(Fault::Ok, true, "/v1/messages/count_tokens").await;
    let app = app_with(keyed(condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(openai.url.clone()),
            anthropic_url: Some(anthropic.url.clone()),
            api_key: condense::upstream::Secret::new("sk-operator"),
            ..Default::default()
        },
        count: condense::config::CountSettings {
            anthropic_url: Some(counts.url.clone()),
            api_key: condense::upstream::Secret::new("sk-counting"),
            ..Default::default()
        },
        ..Default::default()
    }));
    let chat_body = json!({"model": "gpt-4o", "messages": chat(2)});
    let messages_body = json!({"model": "claude-sonnet-4-5", "max_tokens": 16,
                               "messages": [{"role": "user", "content": "hi"}]});
    let proxied =
        |path: &'static str, key: &'static str, own: Option<(&'static str, &'static str)>| {
            let app = app.clone();
            let body = if path == "/v1/messages" {
                messages_body.clone()
            } else {
                chat_body.clone()
            };
            async move {
                let mut headers = vec![("x-condense-api-key", key)];
                headers.extend(own);
                send(&app, request("POST", path, &headers, Some(&body))).await
            }
        };
    for key in [PLAIN, LLM] {
        for path in ["/v1/chat/completions", "/v1/messages"] {
            let r = proxied(path, key, None).await;
            let p = r.problem(403);
            assert_eq!(p["type"], "urn:condense:problem:forbidden");
            let detail = p["detail"].as_str().unwrap();
            assert!(detail.contains("`provider` permission"), "{detail}");
            assert!(!detail.contains("sk-operator") && !detail.contains(key));
        }
    }
    // A credential the `Connection` header names is not forwarded: it does
    // not count as the caller's own.
    for (path, own) in [
        ("/v1/chat/completions", ("authorization", "Bearer x")),
        ("/v1/messages", ("x-api-key", "x")),
    ] {
        let app = app.clone();
        let body = if path == "/v1/messages" {
            messages_body.clone()
        } else {
            chat_body.clone()
        };
        let headers = [("x-condense-api-key", PLAIN), own, ("connection", own.0)];
        let r = send(&app, request("POST", path, &headers, Some(&body))).await;
        r.problem(403);
    }
    assert_eq!(
        openai.calls() + anthropic.calls(),
        0,
        "nothing was sent with or without the operator's key"
    );
    // Their own provider key: forwarded as it came.
    let r = proxied(
        "/v1/chat/completions",
        PLAIN,
        Some(("authorization", "Bearer sk-own")),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        openai.headers.lock().unwrap()[0]["authorization"],
        "Bearer sk-own"
    );
    let r = proxied("/v1/messages", PLAIN, Some(("x-api-key", "sk-own"))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(anthropic.headers.lock().unwrap()[0]["x-api-key"], "sk-own");
    // Azure OpenAI's own key header is the caller's credential too.
    let r = proxied(
        "/v1/chat/completions",
        PLAIN,
        Some(("api-key", "azure-own")),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = openai.headers.lock().unwrap()[1].clone();
    assert_eq!(seen["api-key"], "azure-own");
    assert!(
        seen.get("authorization").is_none(),
        "no operator key beside it"
    );
    // A key marked `provider`: the operator's key fills in.
    let r = proxied("/v1/chat/completions", PROVIDER, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        openai.headers.lock().unwrap()[2]["authorization"],
        "Bearer sk-operator"
    );
    let r = proxied("/v1/messages", PROVIDER, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        anthropic.headers.lock().unwrap()[1]["x-api-key"],
        "sk-operator"
    );

    // Provider counts: refused when the request asks, the local estimate
    // with a warning when the profile does.
    let thread = json!({"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]});
    let counted = |path: &'static str, key: &'static str, extra: Value| {
        let app = app.clone();
        let mut body = thread.clone();
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        async move {
            let auth = format!("Bearer {key}");
            send(
                &app,
                request("POST", path, &[("authorization", &auth)], Some(&body)),
            )
            .await
        }
    };
    for (path, extra) in [
        ("/v1/tokens", json!({"count": "provider"})),
        ("/v1/verdict", json!({"count": "provider"})),
        ("/v1/verdict", json!({"config": {"count": "provider"}})),
    ] {
        for key in [PLAIN, LLM] {
            let r = counted(path, key, extra.clone()).await;
            let detail = r.problem(403)["detail"].as_str().unwrap().to_string();
            assert!(
                detail.contains("`provider` permission"),
                "{path} {extra}: {detail}"
            );
        }
    }
    assert_eq!(
        counts.calls(),
        0,
        "no count was asked for a key without `provider`"
    );
    let r = counted("/v1/tokens", PROVIDER, json!({"count": "provider"})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(counts.calls(), 1, "the provider was asked");
    assert_eq!(
        counts.headers.lock().unwrap()[0]["x-api-key"],
        "sk-counting"
    );
}

/// A profile that counts with the provider does not refuse a caller
/// without the permission: its verdict stands on the local count and says why.
#[tokio::test]
async fn a_profile_count_without_the_permission_is_the_local_estimate() {
    let counts = stub::start_on(Fault::Ok, true, "/v1/messages/count_tokens").await;
    let dir = std::env::temp_dir().join(format!(
        "condense-profiles-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("profiles.toml");
    std::fs::write(&file, "[profiles.exact]\ncount = \"provider\"\n").unwrap();
    let app = app_with(keyed(condense::Config {
        models: condense::config::ModelSettings {
            profiles_file: Some(file),
            ..Default::default()
        },
        count: condense::config::CountSettings {
            anthropic_url: Some(counts.url.clone()),
            ..Default::default()
        },
        ..Default::default()
    }));
    let body = json!({"profile": "exact", "system": "Be brief.",
                      "messages": [{"role": "user", "content": "hi"}]});
    let auth = format!("Bearer {PLAIN}");
    let r = send(
        &app,
        request(
            "POST",
            "/v1/verdict",
            &[("authorization", &auth)],
            Some(&body),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["source"], "local");
    assert!(
        v["warnings"].to_string().contains("`provider` permission"),
        "{v}"
    );
    assert_eq!(counts.calls(), 0);
    std::fs::remove_dir_all(dir).unwrap();
}
