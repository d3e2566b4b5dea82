//! Keeps the contract, the route table and the committed `openapi.yaml` in
//! step. The document is derived from the types (`src/http/openapi.rs`);
//! whether every answer is what it says is schemathesis' job
//! (`tests/suite/schemathesis.rs`: the live server, every check, the
//! document's examples first). What needs no live part is checked here: the
//! committed file, the routes, and that each example the document gives is
//! valid and answered.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use condense::{AppState, Config};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// The app with the default configuration (state built once).
fn app() -> Router {
    static STATE: OnceLock<AppState> = OnceLock::new();
    let state = STATE.get_or_init(|| AppState::new(Config::default()).expect("app state"));
    condense::http::router(state.clone())
}

/// The status, headers and body `method path` is answered with.
async fn send(
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (StatusCode, header::HeaderMap, String) {
    let mut req = Request::builder().method(method).uri(path);
    if body.is_some() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let body = body.map_or(Body::empty(), |b| Body::from(b.to_string()));
    let res = app()
        .oneshot(req.body(body).expect("a request"))
        .await
        .expect("the router is infallible");
    let (parts, body) = res.into_parts();
    let body = body.collect().await.expect("a body").to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&body).into(),
    )
}

fn document() -> &'static Value {
    condense::http::openapi::document()
}

/// `openapi.yaml` is the document the service serves: `condense openapi`
/// writes it, so a change to the contract cannot miss the file.
#[tokio::test]
async fn the_committed_document_is_the_served_one() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.yaml");
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        committed == condense::http::openapi::yaml(),
        "openapi.yaml differs from the document the service serves: \
         write it with `cargo run -- openapi > openapi.yaml`"
    );
    let (status, _, body) = send("GET", "/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    let served: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(&served, document(), "GET /openapi.json serves the document");
}

/// `template` with each `{param}` replaced by its parameter's `example`.
fn concrete(template: &str) -> String {
    let params = document()["paths"][template]["get"]["parameters"].as_array();
    let mut path = template.to_string();
    for param in params.into_iter().flatten().filter(|p| p["in"] == "path") {
        let name = param["name"].as_str().expect("a name");
        let example = param["example"]
            .as_str()
            .expect("a path parameter's example");
        path = path.replace(&format!("{{{name}}}"), example);
    }
    path
}

/// The source files under `src/http/` that add routes by hand: a route
/// is declared with `routes!` (its row in the table, which the document's
/// gates are derived from), never added to a router directly.
fn hand_routed() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    let calls = [".route(", ".nest(", ".route_service(", ".nest_service("];
    std::fs::read_dir(&dir)
        .expect("src/http exists")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && !p.ends_with("access.rs"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("a source file");
            calls.iter().any(|call| text.contains(call))
        })
        .map(|p| p.display().to_string())
        .collect()
}

/// The document lists exactly the route table, and the server serves
/// exactly that: every operation answered, every other method of a served
/// path a 405 whose `Allow` names the path's methods, other paths a 404.
#[tokio::test]
async fn the_document_and_the_server_have_exactly_the_route_table() {
    assert_eq!(
        hand_routed(),
        Vec::<String>::new(),
        "routes outside the table"
    );
    let routes: BTreeSet<(String, &str)> = condense::http::routes()
        .map(|r| (r.http_method(), r.path))
        .collect();
    let mut documented = BTreeSet::new();
    for (path, item) in document()["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("a path item").keys() {
            documented.insert((method.to_uppercase(), path.as_str()));
        }
    }
    assert_eq!(
        documented, routes,
        "the document's operations are the routes"
    );

    let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
    let paths: BTreeSet<&str> = routes.iter().map(|(_, p)| *p).collect();
    for template in paths {
        let path = concrete(template);
        let has = |m: &str| routes.contains(&(m.to_string(), template));
        for method in methods {
            let (status, headers, body) = send(method, &path, None).await;
            if has(method) || (method == "HEAD" && has("GET")) {
                assert!(
                    ![StatusCode::NOT_FOUND, StatusCode::METHOD_NOT_ALLOWED].contains(&status),
                    "{method} {path} is not served: {status} {body:.600}"
                );
                continue;
            }
            assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            let allow = headers[header::ALLOW].to_str().expect("an ASCII Allow");
            let allowed: BTreeSet<&str> = allow.split(',').map(str::trim).collect();
            let expected: BTreeSet<&str> = routes
                .iter()
                .filter(|(_, p)| *p == template)
                .map(|(m, _)| m.as_str())
                .chain(has("GET").then_some("HEAD"))
                .collect();
            assert_eq!(allowed, expected, "Allow of {path} (RFC 9110)");
        }
    }
    for path in [
        "/nope",
        "/playground/",
        "/v1",
        "/healthz/",
        "/v1/tokens/extra",
        "/openapi.yaml",
    ] {
        for method in ["GET", "POST"] {
            let (status, _, body) = send(method, path, None).await;
            assert_eq!(
                status,
                StatusCode::NOT_FOUND,
                "{method} {path}: {body:.600}"
            );
            assert!(body.contains("\"no route for /"), "{body:.600}");
        }
    }
}

/// Every request example of the document follows the schema it illustrates
/// and is answered 200 (schemathesis sends them too, and checks the answers):
/// the "every kind" threads pin the written wire-format schemas to what the
/// parser accepts.
#[tokio::test]
async fn every_request_example_is_valid_and_answered() {
    let components = &document()["components"];
    let mut seen = 0;
    for (path, item) in document()["paths"].as_object().expect("paths") {
        let media = &item["post"]["requestBody"]["content"]["application/json"];
        let Some(examples) = media["examples"].as_object() else {
            continue;
        };
        let root = json!({"allOf": [media["schema"]], "components": components});
        let schema = jsonschema::draft202012::new(&root).expect("the schema compiles");
        for (name, example) in examples {
            let value = &example["value"];
            let errors: Vec<String> = schema.iter_errors(value).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{path} example {name}: {errors:?}");
            let (status, _, body) = send("POST", path, Some(value)).await;
            assert_eq!(status, StatusCode::OK, "{path} example {name}: {body:.600}");
            seen += 1;
        }
    }
    assert!(seen >= 10, "only {seen} request examples");
}
