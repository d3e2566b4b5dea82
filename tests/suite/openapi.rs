//! Keeps `openapi.yaml` and the server in step.
//!
//! The router is driven in-process. Every exchange is checked against what the
//! spec declares for its path, method, status and content type: the body
//! against the schema (JSON Schema 2020-12, as OpenAPI 3.1 schemas are), the
//! declared headers for presence and shape, and, for requests, whether the spec
//! accepts the body the server accepted or rejected. A path or method the spec
//! does not list must answer the generic 404/405 of `components/responses`.

use crate::support::server;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use condense::{AppState, Config};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

// ------------------------------------------------------------------ routes

/// Every route the server serves, as `(METHOD, path)`: the route table
/// of `src/http/routes.rs`, from which the router itself is built. The spec
/// must list exactly these operations.
fn served() -> Vec<(String, &'static str)> {
    condense::http::routes()
        .map(|r| (r.http_method(), r.path))
        .collect()
}

/// Methods probed on every served path (HEAD follows GET in axum).
const PROBED_METHODS: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE",
];

/// Paths that must not be served (each answers the generic 404).
const UNSERVED_PATHS: [&str; 7] = [
    "/nope",
    "/playground/",
    "/playground/examples/",
    "/v1",
    "/healthz/",
    "/v1/tokens/extra",
    "/openapi.yaml",
];

const SPEC_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

fn expected_routes() -> BTreeSet<(String, String)> {
    served()
        .into_iter()
        .map(|(m, p)| (m, p.to_string()))
        .collect()
}

/// The `(METHOD, path)` pairs of the spec's operations.
fn spec_routes(spec: &Value) -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().expect("spec has paths") {
        for method in SPEC_METHODS {
            if item.get(method).is_some() {
                routes.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    routes
}

/// The source files under `src/http/` that call `.route(` themselves: a
/// route must be declared with `routes!` (its row in the table), never
/// added to a router by hand.
fn hand_routed() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/http exists") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("access.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        if [".route(", ".nest(", ".route_service(", ".nest_service("]
            .iter()
            .any(|call| text.contains(call))
        {
            out.push(path.display().to_string());
        }
    }
    out
}

// ------------------------------------------------------------- the server

fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.yaml");
        let text = std::fs::read_to_string(&file).expect("openapi.yaml exists at the repo root");
        serde_norway::from_str(&text).expect("openapi.yaml is valid YAML")
    })
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
    let served = send(app(), request("GET", "/openapi.json")).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(
        &served.json(),
        spec(),
        "GET /openapi.json serves openapi.yaml"
    );
}

/// The app with the default configuration (state built once).
fn app() -> Router {
    static STATE: OnceLock<AppState> = OnceLock::new();
    let state = STATE.get_or_init(|| AppState::new(Config::default()).expect("app state"));
    condense::http::router(state.clone())
}

fn app_with(config: Config) -> Router {
    condense::http::router(AppState::new(config).expect("app state"))
}

/// One request and its response.
struct Exchange {
    method: Method,
    path: String,
    request_body: Bytes,
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Exchange {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{} {} answered a body that is not JSON ({e}): {}",
                self.method,
                self.path,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    fn describe(&self) -> String {
        let body = String::from_utf8_lossy(&self.body);
        format!(
            "{} {} -> {}: {}",
            self.method,
            self.path,
            self.status,
            truncate(&body, 600)
        )
    }
}

async fn send(app: Router, req: Request<Body>) -> Exchange {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let (parts, body) = req.into_parts();
    let request_body = body.collect().await.expect("request body").to_bytes();
    let req = Request::from_parts(parts, Body::from(request_body.clone()));
    let res = app.oneshot(req).await.expect("the router is infallible");
    let status = res.status();
    let headers = res.headers().clone();
    let body = res
        .into_body()
        .collect()
        .await
        .expect("response body")
        .to_bytes();
    Exchange {
        method,
        path,
        request_body,
        status,
        headers,
        body,
    }
}

fn request(method: &str, path: &str) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .expect("a valid request")
}

fn post_json(path: &str, body: &Value) -> Request<Body> {
    post_raw(path, Some("application/json"), body.to_string())
}

fn post_raw(path: &str, content_type: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut req = Request::builder().method("POST").uri(path);
    if let Some(ct) = content_type {
        req = req.header(header::CONTENT_TYPE, ct);
    }
    req.body(body.into()).expect("a valid request")
}

fn with_header(mut req: Request<Body>, name: &'static str, value: &str) -> Request<Body> {
    req.headers_mut()
        .insert(name, value.parse().expect("a valid header value"));
    req
}

fn fixture(name: &str) -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/threads")
        .join(name);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    serde_json::from_str(&text).expect("a JSON fixture")
}

/// The thread fixtures, as `(name, format, request body)` (large-04 only
/// feeds the time-limit test: it adds time, not coverage).
fn fixture_threads() -> Vec<(String, &'static str, Value)> {
    let mut out = Vec::new();
    for stem in ["small-00", "small-01", "medium-02", "medium-03"] {
        for format in ["openai", "anthropic"] {
            let name = format!("{stem}.{format}.json");
            out.push((name.clone(), format, fixture(&name)));
        }
    }
    out
}

// --------------------------------------------------------- the spec checker

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(max).collect::<String>())
    }
}

/// Follows a local `$ref` (`#/components/...`) to what it names.
fn resolve<'a>(spec: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let pointer = r
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("only local refs are supported, got {r}"));
            let target = spec
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{r} does not resolve"));
            resolve(spec, target)
        }
        None => value,
    }
}

/// What `instance` violates of `schema`, a schema of the spec whose `$ref`s
/// point into the spec's components.
fn schema_violations(spec: &Value, schema: &Value, instance: &Value) -> Vec<String> {
    let root = json!({ "allOf": [schema], "components": spec["components"] });
    // Compiling is the slow part; the same schemas come back for every exchange.
    static COMPILED: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let validator =
        COMPILED
            .get_or_init(Default::default)
            .lock()
            .expect("the validator cache")
            .entry(root.to_string())
            .or_insert_with(|| {
                Arc::new(jsonschema::draft202012::new(&root).unwrap_or_else(|e| {
                    panic!("a schema of the spec does not compile: {e}\n{schema}")
                }))
            })
            .clone();
    validator
        .iter_errors(instance)
        .map(|e| {
            format!(
                "at `{}`: {}",
                e.instance_path(),
                truncate(&e.to_string(), 300)
            )
        })
        .collect()
}

/// Whether `pointer` names a value of `body`, or a missing member of one
/// (a required field that is absent).
fn points_into(body: &Value, pointer: &str) -> bool {
    if pointer.is_empty() || body.pointer(pointer).is_some() {
        return true;
    }
    pointer
        .rsplit_once('/')
        .is_some_and(|(parent, _)| body.pointer(parent).is_some_and(Value::is_object))
}

fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The spec's path template that `path` is an instance of (`{param}`
/// matches one segment).
fn spec_path<'a>(spec: &'a Value, path: &str) -> Option<&'a str> {
    let segments: Vec<&str> = path.split('/').collect();
    let paths = spec["paths"].as_object()?;
    if let Some((literal, _)) = paths.get_key_value(path) {
        return Some(literal.as_str());
    }
    paths.keys().map(String::as_str).find(|template| {
        let parts: Vec<&str> = template.split('/').collect();
        parts.len() == segments.len()
            && parts
                .iter()
                .zip(&segments)
                .all(|(t, s)| (t.starts_with('{') && t.ends_with('}') && !s.is_empty()) || t == s)
    })
}

/// `template` with each `{param}` replaced by the `example` its spec
/// parameter gives, so it can be requested.
fn concrete(spec: &Value, template: &str) -> String {
    let mut path = template.to_string();
    let params = spec["paths"][template]["get"]["parameters"].as_array();
    for param in params.into_iter().flatten() {
        let param = resolve(spec, param);
        if param["in"] == "path" {
            let name = param["name"].as_str().expect("a named path parameter");
            let example = param["example"]
                .as_str()
                .unwrap_or_else(|| panic!("path parameter {name} of {template} has no example"));
            path = path.replace(&format!("{{{name}}}"), example);
        }
    }
    assert!(
        !path.contains('{'),
        "{template} has a parameter the spec does not describe"
    );
    path
}

/// The response object the spec declares for this exchange (`$ref` followed).
fn documented_response<'a>(spec: &'a Value, x: &Exchange) -> Result<&'a Value, String> {
    let method = if x.method == Method::HEAD {
        "get".to_string()
    } else {
        x.method.as_str().to_ascii_lowercase()
    };
    let item = spec_path(spec, &x.path).map(|p| &spec["paths"][p]);
    let response = match item.and_then(|item| item.get(&method)) {
        Some(op) => op["responses"]
            .get(x.status.as_str())
            .ok_or_else(|| format!("status {} is not documented", x.status))?,
        None => {
            let (expected, generic) = if item.is_some() {
                (StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed")
            } else {
                (StatusCode::NOT_FOUND, "NotFound")
            };
            if x.status != expected {
                return Err(format!(
                    "the spec has no such operation, so the server should answer {expected}"
                ));
            }
            &spec["components"]["responses"][generic]
        }
    };
    Ok(resolve(spec, response))
}

/// Everything about the response of `x` that `spec` contradicts (empty when it conforms).
fn response_violations(spec: &Value, x: &Exchange) -> Vec<String> {
    let response = match documented_response(spec, x) {
        Ok(r) => r,
        Err(e) => return vec![e],
    };
    let mut out = Vec::new();
    if let Some(headers) = response.get("headers").and_then(Value::as_object) {
        for (name, declared) in headers {
            let declared = resolve(spec, declared);
            match x.headers.get(name.as_str()) {
                None if declared["required"] == true => {
                    out.push(format!("the required header `{name}` is missing"));
                }
                None => {}
                Some(value) => {
                    let value = Value::String(value.to_str().unwrap_or_default().to_string());
                    out.extend(
                        schema_violations(spec, &declared["schema"], &value)
                            .into_iter()
                            .map(|e| format!("header `{name}` {e}")),
                    );
                }
            }
        }
    }
    if x.method == Method::HEAD {
        if !x.body.is_empty() {
            out.push("a HEAD response has a body".into());
        }
        return out;
    }
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        if !x.body.is_empty() {
            out.push("the spec declares no body, but there is one".into());
        }
        return out;
    };
    let Some(content_type) = x.headers.get(header::CONTENT_TYPE) else {
        out.push("the response has no Content-Type".into());
        return out;
    };
    let content_type = essence(content_type.to_str().unwrap_or_default());
    let Some(media) = content.get(&content_type) else {
        let documented: Vec<&String> = content.keys().collect();
        out.push(format!(
            "Content-Type `{content_type}` is not documented (documented: {documented:?})"
        ));
        return out;
    };
    let instance = if content_type.ends_with("json") {
        match serde_json::from_slice(&x.body) {
            Ok(v) => v,
            Err(e) => {
                out.push(format!("the body is not JSON: {e}"));
                return out;
            }
        }
    } else {
        match String::from_utf8(x.body.to_vec()) {
            Ok(text) => Value::String(text),
            Err(e) => {
                out.push(format!("the body is not UTF-8: {e}"));
                return out;
            }
        }
    };
    out.extend(schema_violations(spec, &media["schema"], &instance));
    out
}

/// What a JSON request body violates of the operation's request schema.
fn request_violations(spec: &Value, method: &Method, path: &str, body: &Value) -> Vec<String> {
    let op = &spec["paths"][path][method.as_str().to_ascii_lowercase()];
    let body_spec = resolve(spec, &op["requestBody"]);
    let schema = &body_spec["content"]["application/json"]["schema"];
    assert!(
        !schema.is_null(),
        "{method} {path} declares no application/json request body"
    );
    schema_violations(spec, schema, body)
}

/// Panics unless the response of `x` conforms to the spec.
fn assert_conforms(x: &Exchange) {
    let violations = response_violations(spec(), x);
    assert!(
        violations.is_empty(),
        "{}\ncontradicts openapi.yaml:\n  {}",
        x.describe(),
        violations.join("\n  ")
    );
}

// ------------------------------------------------------------------- tests

#[tokio::test]
async fn spec_lists_exactly_the_served_routes() {
    let expected = expected_routes();
    assert!(
        hand_routed().is_empty(),
        "routes added outside the route table: {:?}",
        hand_routed()
    );
    let in_spec = spec_routes(spec());
    let missing: Vec<_> = expected.difference(&in_spec).collect();
    let extra: Vec<_> = in_spec.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "openapi.yaml misses {missing:?} and has extra {extra:?}"
    );

    // Every operation of the spec is answered (not 404/405) by the server.
    for (method, template) in &in_spec {
        let path = &concrete(spec(), template);
        let req = if method == "POST" {
            post_json(path, &json!({}))
        } else {
            request(method, path)
        };
        let x = send(app(), req).await;
        assert!(
            x.status != StatusCode::NOT_FOUND && x.status != StatusCode::METHOD_NOT_ALLOWED,
            "the spec's {method} {path} is not served: {}",
            x.describe()
        );
        assert_conforms(&x);
    }

    // Every other method of a served path is 405, as documented generally.
    let routes = served();
    let has = |m: &str, p: &str| routes.iter().any(|(rm, rp)| rm == m && *rp == p);
    let served_paths: BTreeSet<&str> = routes.iter().map(|(_, p)| *p).collect();
    for path in &served_paths {
        for method in PROBED_METHODS {
            let routed = has(method, path) || (method == "HEAD" && has("GET", path));
            let x = send(app(), request(method, &concrete(spec(), path))).await;
            if routed {
                assert!(
                    x.status != StatusCode::METHOD_NOT_ALLOWED,
                    "{}",
                    x.describe()
                );
            } else {
                assert_eq!(
                    x.status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} is served but not in the route table: {}",
                    x.describe()
                );
                let allow = x.headers[header::ALLOW].to_str().expect("ASCII Allow");
                for (m, p) in &routes {
                    assert!(
                        p != path || allow.split(',').any(|a| a.trim() == m),
                        "Allow `{allow}` of {path} does not list {m}"
                    );
                }
            }
            assert_conforms(&x);
        }
    }

    // Paths that are not served answer the generic 404.
    for path in UNSERVED_PATHS {
        for method in ["GET", "POST"] {
            let x = send(app(), request(method, path)).await;
            assert_eq!(
                x.status,
                StatusCode::NOT_FOUND,
                "{path} is served but not in the route table"
            );
            assert_conforms(&x);
        }
    }
}

/// A request the server accepts, and the status and format it answers with.
struct Valid {
    name: String,
    req: Request<Body>,
    status: StatusCode,
    content_type: &'static str,
}

fn valid(name: &str, req: Request<Body>) -> Valid {
    Valid {
        name: name.to_string(),
        req,
        status: StatusCode::OK,
        content_type: "application/json",
    }
}

fn as_text(mut v: Valid, accept: &str) -> Valid {
    v.req = with_header(v.req, "accept", accept);
    v.content_type = "text/plain";
    v.name = format!("{} (Accept: {accept})", v.name);
    v
}

/// An OpenAI thread with every kind of message and part.
fn openai_everything() -> Value {
    json!({
        "model": "gpt-4o-mini",
        "format": "openai",
        "messages": [
            {"role": "system", "content": "Be brief.", "metadata": {"iteration": 0}},
            {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
            {"role": "user", "name": "ana", "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-1"}}
            ], "metadata": {"iteration": 1, "source": "cli"}, "x_custom": {"kept": true}},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
                {"id": "call_2", "function": {"name": "read", "arguments": "{}"}}
            ], "metadata": {"iteration": 1}},
            {"role": "tool", "tool_call_id": "call_1", "content": "file a"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "file b"}]},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]},
            {"role": "assistant", "function_call": {"name": "legacy", "arguments": "{}"}},
            {"role": "function", "name": "legacy", "content": "ok"},
            {"role": "assistant", "content": "Done.", "metadata": {"iteration": null}},
            {"role": "user", "content": "Thanks.", "metadata": "not an object"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_4", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch"}}
            ]},
            {"role": "tool", "tool_call_id": "call_4", "content": "patched"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "run", "arguments": "{}"}}
            ]}
        ],
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
    })
}

/// An Anthropic thread with every kind of block.
fn anthropic_everything() -> Value {
    json!({
        "model": "claude-opus-4-1",
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "a doc"}}
            ], "metadata": {"iteration": 0}},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Read it.", "signature": "sig"},
                {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    {"type": "text", "text": "file a"},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
                ], "is_error": false}
            ]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "oops", "is_error": true}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3", "name": "run", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_3"}], "metadata": {"iteration": 2}},
            {"role": "assistant", "content": "Done.", "cache_control": {"type": "ephemeral"}},
            {"role": "user", "content": [
                {"type": "text", "text": "Search it."},
                {"type": "search_result", "source": "https://docs.rs", "title": "docs", "content": [{"type": "text", "text": "x"}]}
            ]},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                {"type": "text", "text": "Found it."}
            ]}
        ],
        "tools": [{"name": "read", "input_schema": {"type": "object"}}]
    })
}

/// A Responses API thread with every kind of item.
fn responses_everything() -> Value {
    json!({
        "model": "gpt-4o",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "Look at a.", "metadata": {"iteration": 0}},
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Use tools."}]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "And this:"},
                {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
                {"type": "input_file", "file_id": "file-1"}
            ]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Read a."}], "encrypted_content": "gAAAA"},
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_2", "output": "file b"},
            {"type": "function_call_output", "call_id": "call_1", "output": [{"type": "input_text", "text": "file a"}]},
            {"type": "custom_tool_call", "call_id": "call_3", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "custom_tool_call_output", "call_id": "call_3", "output": "patched"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done.", "annotations": []}], "x_custom": 1},
            {"type": "function_call", "call_id": "call_4", "name": "run", "arguments": "{}"}
        ],
        "tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}}]
    })
}

fn merged(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    for (k, v) in extra.as_object().expect("an object") {
        out[k] = v.clone();
    }
    out
}

fn valid_requests() -> Vec<Valid> {
    let mut cases = vec![
        valid("healthz", request("GET", "/healthz")),
        valid("readyz", request("GET", "/readyz")),
        Valid {
            content_type: "text/plain",
            ..valid("metrics", request("GET", "/metrics"))
        },
        Valid {
            content_type: "application/openmetrics-text",
            ..valid(
                "metrics, OpenMetrics",
                with_header(
                    request("GET", "/metrics"),
                    "accept",
                    "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
                ),
            )
        },
        valid("models", request("GET", "/v1/models")),
        valid("profiles", request("GET", "/v1/profiles")),
        Valid {
            content_type: "text/html",
            ..valid("playground", request("GET", "/playground"))
        },
        Valid {
            content_type: "text/javascript",
            ..valid("playground script", request("GET", "/playground/app.js"))
        },
        Valid {
            content_type: "text/css",
            ..valid("playground style", request("GET", "/playground/style.css"))
        },
        valid("examples", request("GET", "/playground/examples")),
        valid(
            "an example",
            request("GET", "/playground/examples/large-04.anthropic"),
        ),
        valid(
            "text",
            post_json("/v1/tokens", &json!({"text": "Hello, world!"})),
        ),
        valid(
            "text, chars",
            post_json("/v1/tokens", &json!({"text": "Hello", "method": "chars"})),
        ),
        valid(
            "text, chars_per_token alone",
            post_json(
                "/v1/tokens",
                &json!({"text": "Hello", "chars_per_token": 3.5}),
            ),
        ),
        valid(
            "text, unknown model and encoding override",
            post_json(
                "/v1/tokens",
                &json!({"text": "Hello", "model": "my-own-model", "encoding": "cl100k_base", "method": "bpe"}),
            ),
        ),
        valid(
            "text, every other field null",
            post_json(
                "/v1/tokens",
                &json!({"text": "", "model": null, "encoding": null, "method": null,
                        "chars_per_token": null, "messages": null, "system": null,
                        "tools": null, "format": null}),
            ),
        ),
        valid(
            "empty thread",
            post_json("/v1/tokens", &json!({"messages": [], "text": null})),
        ),
        valid(
            "+json media type",
            post_raw(
                "/v1/tokens",
                Some("application/merge-patch+json; charset=utf-8"),
                json!({"text": "hi"}).to_string(),
            ),
        ),
        valid(
            "openai, every part",
            post_json("/v1/tokens", &openai_everything()),
        ),
        valid(
            "anthropic, every block",
            post_json("/v1/tokens", &anthropic_everything()),
        ),
        valid(
            "responses, every item",
            post_json("/v1/tokens", &responses_everything()),
        ),
        valid(
            "responses, a string input",
            post_json(
                "/v1/tokens",
                &json!({"input": "hi", "instructions": null, "format": "responses"}),
            ),
        ),
        valid(
            "verdict, responses",
            post_json("/v1/verdict", &responses_everything()),
        ),
        valid(
            "anthropic, counted by chars",
            post_json(
                "/v1/tokens",
                &merged(
                    &anthropic_everything(),
                    json!({"method": "chars", "format": "anthropic"}),
                ),
            ),
        ),
        valid(
            "a provider count without a provider URL (local, with a warning)",
            post_json(
                "/v1/tokens",
                &merged(&anthropic_everything(), json!({"count": "provider"})),
            ),
        ),
        valid(
            "verdict, a provider count by the profile override",
            post_json(
                "/v1/verdict",
                &merged(
                    &openai_everything(),
                    json!({"config": {"count": "provider"}}),
                ),
            ),
        ),
        valid(
            "verdict, openai, every part",
            post_json("/v1/verdict", &openai_everything()),
        ),
        valid(
            "verdict, anthropic, overrides and summary",
            post_json(
                "/v1/verdict",
                &merged(
                    &anthropic_everything(),
                    json!({
                        "profile": "default",
                        "encoding": "o200k_base",
                        "config": {"max_messages_before_summary": 1, "min_recent_messages": 0,
                                   "response_reserve": null, "context_window": 256,
                                   "summary_role": "system", "llm_min_tokens": 0},
                        "summary": {"last_message_idx": 2, "token_count": 40, "id": "sum_1", "kept": [1, 2]}
                    }),
                ),
            ),
        ),
        valid(
            "verdict, chars estimate, iteration rule, a summary with its date",
            post_json(
                "/v1/verdict",
                &json!({
                    "messages": [
                        {"role": "user", "content": "one", "metadata": {"iteration": 1}},
                        {"role": "assistant", "content": "two", "metadata": {"iteration": 1}},
                        {"role": "user", "content": "three", "metadata": {"iteration": 2}}
                    ],
                    "method": "chars", "chars_per_token": 3.5,
                    "config": {"max_iterations_before_summary": 1, "min_recent_messages": 0,
                               "llm_min_total_tokens": 10, "truncate_keep": "head",
                               "max_tool_result_chars": 64, "max_user_message_chars": 64,
                               "max_assistant_message_chars": 64,
                               "chars_per_token": 4},
                    "summary": {"last_message_idx": 0, "content": "x", "created_at": "2026-11-23T10:00:00Z"}
                }),
            ),
        ),
        valid(
            "verdict, all optional fields null",
            post_json(
                "/v1/verdict",
                &json!({"messages": [{"role": "user", "content": "hi"}], "system": null,
                        "tools": null, "format": null, "model": null, "encoding": null,
                        "profile": null, "config": null, "summary": null}),
            ),
        ),
        as_text(
            valid(
                "verdict text, not due",
                post_json(
                    "/v1/verdict",
                    &json!({"messages": [{"role": "user", "content": "hi"}]}),
                ),
            ),
            "text/plain",
        ),
        valid(
            "verdict, Accept text/plain and application/json",
            with_header(
                post_json("/v1/verdict", &json!({"messages": []})),
                "accept",
                "text/plain, application/json",
            ),
        ),
        valid(
            "verdict, Accept */*",
            with_header(
                post_json("/v1/verdict", &json!({"messages": []})),
                "accept",
                "*/*",
            ),
        ),
    ];
    // Each trigger, as JSON and as text.
    let triggers = [
        (
            "messages",
            json!({"max_messages_before_summary": 1, "min_recent_messages": 0}),
        ),
        (
            "tokens",
            json!({"max_tokens_before_summary": 1, "min_recent_messages": 0}),
        ),
        (
            "context_window",
            json!({"context_window": 256, "response_reserve": 0}),
        ),
    ];
    for (trigger, config) in triggers {
        let body = merged(&fixture("small-00.openai.json"), json!({"config": config}));
        cases.push(valid(
            &format!("verdict, trigger {trigger}"),
            post_json("/v1/verdict", &body),
        ));
        cases.push(as_text(
            valid(
                &format!("verdict text, trigger {trigger}"),
                post_json("/v1/verdict", &body),
            ),
            "text/plain; charset=utf-8",
        ));
    }
    // Every fixture thread as sent (the small ones also with their format named).
    for (name, format, body) in fixture_threads() {
        cases.push(valid(
            &format!("tokens {name}"),
            post_json("/v1/tokens", &body),
        ));
        if name.starts_with("small") {
            cases.push(valid(
                &format!("tokens {name}, format given"),
                post_json("/v1/tokens", &merged(&body, json!({"format": format}))),
            ));
        }
        cases.push(valid(
            &format!("verdict {name}"),
            post_json(
                "/v1/verdict",
                &merged(
                    &body,
                    json!({"summary": {"last_message_idx": 3, "content": "So far: setup."}}),
                ),
            ),
        ));
        if name.starts_with("small") {
            cases.push(as_text(
                valid(&format!("verdict {name}"), post_json("/v1/verdict", &body)),
                "text/plain",
            ));
        }
        cases.push(valid(
            &format!("compress {name}, forced"),
            post_json("/v1/compress", &merged(&body, json!({"force": true}))),
        ));
    }
    cases.extend(compress_requests());
    cases
}

/// `/v1/compress` in each of its modes.
fn compress_requests() -> Vec<Valid> {
    let small = fixture("small-01.openai.json");
    let medium = fixture("medium-02.anthropic.json");
    let mut iterations = vec![json!({"role": "system", "content": "agent"})];
    for it in 1..=6 {
        iterations.push(json!({"role": "user", "content": format!("step {it}: edit src/mod{it}.rs"), "metadata": {"iteration": it}}));
        iterations.push(json!({"role": "assistant", "content": format!("done with step {it}")}));
    }
    let call =
        json!({"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}});
    let long_log = json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "look at the log"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "start ".to_string() + &"log line\n".repeat(6000) + " end"},
        {"role": "assistant", "content": "It is long."}
    ]);
    vec![
        valid(
            "compress, nothing due",
            post_json(
                "/v1/compress",
                &json!({"messages": [{"role": "user", "content": "hi"}]}),
            ),
        ),
        valid(
            "compress, every field null or default",
            post_json(
                "/v1/compress",
                &json!({"messages": [{"role": "user", "content": "hi"}], "system": null,
                        "tools": null, "format": null, "model": null, "encoding": null,
                        "profile": null, "config": null, "summary": null, "summarizer": null,
                        "force": false, "group_by": null, "keep_recent_iterations": null}),
            ),
        ),
        valid(
            "compress, openai every part",
            post_json(
                "/v1/compress",
                &merged(&openai_everything(), json!({"force": true})),
            ),
        ),
        valid(
            "compress, responses every item",
            post_json(
                "/v1/compress",
                &merged(
                    &responses_everything(),
                    json!({"force": true, "config": {"min_recent_messages": 1}}),
                ),
            ),
        ),
        valid(
            "compress, responses, nothing due",
            post_json("/v1/compress", &responses_everything()),
        ),
        valid(
            "compress, anthropic every block",
            post_json(
                "/v1/compress",
                &merged(
                    &anthropic_everything(),
                    json!({"force": true, "config": {"min_recent_messages": 1}}),
                ),
            ),
        ),
        valid(
            "compress, due by messages, summary_role system",
            post_json(
                "/v1/compress",
                &merged(
                    &small,
                    json!({"config": {"max_messages_before_summary": 10, "summary_role": "system"}}),
                ),
            ),
        ),
        valid(
            "compress, truncate",
            post_json(
                "/v1/compress",
                &merged(
                    &small,
                    json!({"force": true, "summarizer": {"strategy": "truncate"}}),
                ),
            ),
        ),
        valid(
            "compress, heuristic with instructions",
            post_json(
                "/v1/compress",
                &merged(
                    &medium,
                    json!({"force": true, "model": "claude-sonnet-4-5",
                    "summarizer": {"strategy": "heuristic", "model": null, "instructions": "Keep file paths."}}),
                ),
            ),
        ),
        valid(
            "compress, summarizer.model without an upstream (a warning)",
            post_json(
                "/v1/compress",
                &merged(
                    &small,
                    json!({"force": true, "config": {"on_upstream_error": "fail", "llm_min_tokens": 10},
                    "summarizer": {"strategy": "auto", "model": "gpt-4o-mini"}}),
                ),
            ),
        ),
        valid(
            "compress, auto",
            post_json(
                "/v1/compress",
                &merged(
                    &medium,
                    json!({"force": true, "summarizer": {"strategy": "auto"}}),
                ),
            ),
        ),
        valid(
            "compress, only the truncation rules cut",
            post_json(
                "/v1/compress",
                &json!({"messages": [{"role": "user", "content": "long ".repeat(100)}],
                        "config": {"max_user_message_chars": 100, "truncate_keep": "tail"}}),
            ),
        ),
        valid(
            "compress, clear_tool_results alone, every clear field",
            post_json(
                "/v1/compress",
                &merged(
                    &anthropic_everything(),
                    json!({"summarizer": {"strategy": "clear_tool_results"},
                        "config": {"clear": {"keep": 0, "trigger": {"tool_uses": 1, "input_tokens": null},
                            "clear_at_least": 1, "exclude_tools": ["run"], "clear_tool_inputs": true,
                            "placeholder": "[{tool}: {chars} characters cleared]", "keep_thinking_turns": 0}}}),
                ),
            ),
        ),
        valid(
            "compress, cleared then summarized",
            post_json(
                "/v1/compress",
                &merged(
                    &openai_everything(),
                    json!({"force": true, "summarizer": {"strategy": "heuristic"},
                        "config": {"clear": {"keep": 1, "clear_tool_inputs": null}}}),
                ),
            ),
        ),
        valid(
            "compress, group_by iteration",
            post_json(
                "/v1/compress",
                &json!({"messages": iterations, "force": true, "group_by": "iteration", "keep_recent_iterations": 2}),
            ),
        ),
        valid(
            "compress, group_by iteration, default keep",
            post_json(
                "/v1/compress",
                &json!({"messages": iterations, "force": true, "group_by": "iteration"}),
            ),
        ),
        valid(
            "compress, long tool result cut to fit",
            post_json(
                "/v1/compress",
                &json!({"messages": long_log, "config": {"context_window": 8000, "response_reserve": 1000}}),
            ),
        ),
    ]
}

/// Sends the valid requests whose path `pick` selects (split so the test
/// harness runs them in parallel).
async fn check_valid_requests(pick: impl Fn(&str) -> bool) {
    let spec = spec();
    let cases: Vec<Valid> = valid_requests()
        .into_iter()
        .filter(|c| pick(c.req.uri().path()))
        .collect();
    assert!(!cases.is_empty());
    for case in cases {
        let x = send(app(), case.req).await;
        let name = &case.name;
        if !x.request_body.is_empty() {
            let body: Value = serde_json::from_slice(&x.request_body).expect("a JSON request");
            let v = request_violations(spec, &x.method, &x.path, &body);
            assert!(
                v.is_empty(),
                "{name}: the server accepts this request but the spec rejects it:\n  {}",
                v.join("\n  ")
            );
        }
        assert_eq!(x.status, case.status, "{name}: {}", x.describe());
        let ct = essence(x.headers[header::CONTENT_TYPE].to_str().unwrap());
        assert_eq!(ct, case.content_type, "{name}: {}", x.describe());
        assert_conforms(&x);
    }
}

#[tokio::test]
async fn valid_reads_and_counts_answer_what_the_spec_declares() {
    check_valid_requests(|p| p != "/v1/verdict" && p != "/v1/compress").await;
}

#[tokio::test]
async fn valid_verdicts_answer_what_the_spec_declares() {
    check_valid_requests(|p| p == "/v1/verdict").await;
}

#[tokio::test]
async fn valid_compressions_answer_what_the_spec_declares() {
    check_valid_requests(|p| p == "/v1/compress").await;
}

#[tokio::test]
async fn responses_say_what_was_counted() {
    // The format answered is the one of the fixture, detected or given.
    for (name, format, body) in fixture_threads().into_iter().take(4) {
        for path in ["/v1/tokens", "/v1/verdict"] {
            let x = send(app(), post_json(path, &body)).await;
            assert_eq!(x.status, StatusCode::OK, "{name}: {}", x.describe());
            assert_eq!(x.json()["format"], format, "{name} {path}");
        }
    }
    // total = messages + tools + priming, as the spec's description says.
    let x = send(app(), post_json("/v1/tokens", &anthropic_everything())).await;
    let r = x.json();
    let per: u64 = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(
        r["total_tokens"].as_u64().unwrap(),
        per + r["tools_tokens"].as_u64().unwrap() + r["reply_priming_tokens"].as_u64().unwrap()
    );
    assert_eq!(r["messages"][0]["index"], Value::Null);
    assert_eq!(r["messages"][0]["role"], "system");
}

/// A compressed thread goes back in both client styles: the thread with its
/// summary message, or the full history with the summary object.
#[tokio::test]
async fn compress_round_trips_conform() {
    let spec = spec();
    let input = fixture("small-00.openai.json");
    let first = send(
        app(),
        post_json("/v1/compress", &merged(&input, json!({"force": true}))),
    )
    .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.describe());
    assert_conforms(&first);
    let out = first.json();
    assert_eq!(out["compressed"], true);

    // The fixture ends mid-loop (a call without its result), so nothing is appended.
    let thread_style = json!({"messages": out["messages"], "tools": input["tools"], "force": true});
    let object_style = json!({"messages": input["messages"], "tools": input["tools"], "summary": out["summary"], "force": true});
    let mut verdict = object_style.clone();
    verdict.as_object_mut().unwrap().remove("force");
    let counted =
        json!({"messages": out["messages"], "tools": input["tools"], "model": input["model"]});
    for (path, body) in [
        ("/v1/compress", &thread_style),
        ("/v1/compress", &object_style),
        ("/v1/verdict", &verdict),
        ("/v1/verdict", &counted),
        ("/v1/tokens", &counted),
    ] {
        let x = send(app(), post_json(path, body)).await;
        let v = request_violations(spec, &x.method, path, body);
        assert!(v.is_empty(), "{path}: {v:?}");
        assert_eq!(x.status, StatusCode::OK, "{}", x.describe());
        assert_conforms(&x);
    }
}

/// A fake OpenAI-compatible upstream: `/ok` writes summaries, `/bad` refuses
/// every request (400, not retried). Returns its base address.
async fn fake_upstream() -> String {
    let completion = || async {
        axum::Json(json!({
            "choices": [{"message": {"role": "assistant", "content": "The user asked to fix a failing test; the agent read files and ran the suite."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 20}
        }))
    };
    let refuse = || async { (StatusCode::BAD_REQUEST, "no such model") };
    let upstream = Router::new()
        .route("/ok/chat/completions", axum::routing::post(completion))
        .route("/bad/chat/completions", axum::routing::post(refuse));
    server::serve_router(upstream).await
}

fn app_with_upstream(url: String) -> Router {
    app_with(Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(url),
            max_retries: 0,
            allowed_models: vec!["small-summarizer".into()],
            ..Default::default()
        },
        ..Config::default()
    })
}

/// With an upstream LLM: `llm`/`hybrid` summaries with `usage`, the
/// fallback (`degraded`) and the 502 of `on_upstream_error: fail`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_summaries_conform() {
    let base = fake_upstream().await;
    let ok = app_with_upstream(format!("{base}/ok"));
    let bad = app_with_upstream(format!("{base}/bad"));
    let thread = fixture("small-00.openai.json");
    let forced = |extra: Value| merged(&merged(&thread, json!({"force": true})), extra);
    let cases = [
        (
            &ok,
            forced(json!({"summarizer": {"strategy": "llm"}})),
            StatusCode::OK,
        ),
        (
            &ok,
            forced(json!({"summarizer": {"strategy": "hybrid", "model": "small-summarizer"}})),
            StatusCode::OK,
        ),
        (
            &ok,
            forced(json!({"summarizer": {"strategy": "auto"}, "config": {"llm_min_tokens": 0}})),
            StatusCode::OK,
        ),
        (
            &ok,
            forced(json!({"summarizer": {"strategy": "llm", "model": "not-allowed"}})),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            &bad,
            forced(json!({"summarizer": {"strategy": "llm"}})),
            StatusCode::OK,
        ),
        (
            &bad,
            forced(
                json!({"summarizer": {"strategy": "llm"}, "config": {"on_upstream_error": "fail"}}),
            ),
            StatusCode::BAD_GATEWAY,
        ),
    ];
    let mut seen = Vec::new();
    for (app, body, status) in cases {
        let v = request_violations(spec(), &Method::POST, "/v1/compress", &body);
        assert!(v.is_empty(), "{v:?}");
        let x = send(app.clone(), post_json("/v1/compress", &body)).await;
        assert_eq!(x.status, status, "{}", x.describe());
        assert_conforms(&x);
        if status == StatusCode::OK {
            let r = x.json();
            seen.push((
                r["summary"]["strategy"].clone(),
                r["degraded"].clone(),
                r["usage"].is_null(),
            ));
        }
    }
    assert_eq!(
        seen,
        [
            (json!("llm"), json!(false), false),
            (json!("hybrid"), json!(false), false),
            (json!("llm"), json!(false), false),
            (json!("heuristic"), json!(true), true),
        ]
    );
}

/// What the spec says of a request the server rejects.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SpecSays {
    /// The request schema rejects it too.
    Rejects,
    /// The schema accepts it: the rule is only in a description (tool call
    /// pairing, index bounds, profile names, integers written as `5.0`).
    AcceptsRuleInProse,
    /// The body is not JSON, or not sent as JSON.
    NotApplicable,
}

struct Invalid {
    name: &'static str,
    path: &'static str,
    content_type: Option<&'static str>,
    body: String,
    status: StatusCode,
    spec: SpecSays,
}

fn bad(name: &'static str, path: &'static str, body: Value, spec: SpecSays) -> Invalid {
    Invalid {
        name,
        path,
        content_type: Some("application/json"),
        body: body.to_string(),
        status: StatusCode::UNPROCESSABLE_ENTITY,
        spec,
    }
}

fn bad_raw(
    name: &'static str,
    content_type: Option<&'static str>,
    body: &str,
    status: StatusCode,
) -> Invalid {
    Invalid {
        name,
        path: "/v1/tokens",
        content_type,
        body: body.to_string(),
        status,
        spec: SpecSays::NotApplicable,
    }
}

fn invalid_requests() -> Vec<Invalid> {
    use SpecSays::*;
    let user = json!({"role": "user", "content": "hi"});
    let call =
        json!({"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}});
    vec![
        bad_raw(
            "malformed JSON",
            Some("application/json"),
            r#"{"messages":"#,
            StatusCode::BAD_REQUEST,
        ),
        bad_raw(
            "empty body",
            Some("application/json"),
            "",
            StatusCode::BAD_REQUEST,
        ),
        bad_raw(
            "trailing garbage",
            Some("application/json"),
            r#"{"text":"a"} x"#,
            StatusCode::BAD_REQUEST,
        ),
        bad_raw(
            "text/plain body",
            Some("text/plain"),
            r#"{"text":"a"}"#,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        bad_raw(
            "no Content-Type",
            None,
            r#"{"text":"a"}"#,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        bad_raw(
            "text/json",
            Some("text/json"),
            r#"{"text":"a"}"#,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        bad(
            "unknown top-level field",
            "/v1/tokens",
            json!({"text": "a", "txt": "b"}),
            Rejects,
        ),
        bad(
            "a provider count of a text",
            "/v1/tokens",
            json!({"text": "a", "count": "provider"}),
            Rejects,
        ),
        bad(
            "an unknown count source",
            "/v1/verdict",
            json!({"messages": [user], "count": "exact"}),
            Rejects,
        ),
        bad(
            "unknown verdict field",
            "/v1/verdict",
            json!({"messages": [user], "methd": "chars"}),
            Rejects,
        ),
        bad(
            "verdict chars_per_token with method bpe",
            "/v1/verdict",
            json!({"messages": [user], "method": "bpe", "chars_per_token": 4}),
            Rejects,
        ),
        bad(
            "compress chars_per_token out of range",
            "/v1/compress",
            json!({"messages": [user], "chars_per_token": 0.1}),
            Rejects,
        ),
        bad(
            "a truncation rule shorter than its marker",
            "/v1/compress",
            json!({"messages": [user], "config": {"max_tool_result_chars": 10}}),
            Rejects,
        ),
        bad("body is an array", "/v1/tokens", json!([]), Rejects),
        bad(
            "messages and input together",
            "/v1/tokens",
            json!({"messages": [user], "input": "hi"}),
            Rejects,
        ),
        bad(
            "instructions with a chat thread",
            "/v1/verdict",
            json!({"messages": [user], "instructions": "x"}),
            Rejects,
        ),
        bad(
            "a system with a responses thread",
            "/v1/compress",
            json!({"input": "hi", "system": "x"}),
            Rejects,
        ),
        bad(
            "input with the anthropic format",
            "/v1/tokens",
            json!({"input": "hi", "format": "anthropic"}),
            Rejects,
        ),
        bad(
            "input that is a number",
            "/v1/tokens",
            json!({"input": 42}),
            Rejects,
        ),
        bad(
            "a function_call item without call_id",
            "/v1/tokens",
            json!({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
            Rejects,
        ),
        bad(
            "a responses message with an unknown role",
            "/v1/tokens",
            json!({"input": [{"role": "robot", "content": "x"}]}),
            Rejects,
        ),
        bad(
            "an orphaned function_call_output",
            "/v1/tokens",
            json!({"input": [user, {"type": "function_call_output", "call_id": "nope", "output": "x"}]}),
            AcceptsRuleInProse,
        ),
        bad(
            "a custom tool call without custom",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "custom"}]}]}),
            Rejects,
        ),
        bad(
            "wrong field type",
            "/v1/tokens",
            json!({"text": 5}),
            Rejects,
        ),
        bad(
            "unknown encoding",
            "/v1/tokens",
            json!({"text": "a", "encoding": "gpt2"}),
            Rejects,
        ),
        bad(
            "unknown method",
            "/v1/tokens",
            json!({"text": "a", "method": "words"}),
            Rejects,
        ),
        bad(
            "text and messages",
            "/v1/tokens",
            json!({"text": "a", "messages": [user]}),
            Rejects,
        ),
        bad(
            "neither text nor messages",
            "/v1/tokens",
            json!({"model": "gpt-4o"}),
            Rejects,
        ),
        bad(
            "text with tools",
            "/v1/tokens",
            json!({"text": "a", "tools": []}),
            Rejects,
        ),
        bad(
            "text with format",
            "/v1/tokens",
            json!({"text": "a", "format": "openai"}),
            Rejects,
        ),
        bad(
            "bpe with chars_per_token",
            "/v1/tokens",
            json!({"text": "a", "method": "bpe", "chars_per_token": 4}),
            Rejects,
        ),
        bad(
            "chars_per_token too large",
            "/v1/tokens",
            json!({"text": "a", "chars_per_token": 30}),
            Rejects,
        ),
        bad(
            "chars_per_token too small",
            "/v1/tokens",
            json!({"text": "a", "method": "chars", "chars_per_token": 0.1}),
            Rejects,
        ),
        bad(
            "unknown format",
            "/v1/tokens",
            json!({"messages": [user], "format": "gemini"}),
            Rejects,
        ),
        bad(
            "tools not an array",
            "/v1/tokens",
            json!({"messages": [user], "tools": {}}),
            Rejects,
        ),
        bad(
            "system in openai format",
            "/v1/tokens",
            json!({"messages": [user], "system": "s", "format": "openai"}),
            Rejects,
        ),
        bad(
            "system not a string or blocks",
            "/v1/tokens",
            json!({"messages": [user], "system": 5}),
            Rejects,
        ),
        bad(
            "system block not text",
            "/v1/tokens",
            json!({"messages": [user], "system": [{"type": "image", "source": {}}]}),
            Rejects,
        ),
        bad(
            "message not an object",
            "/v1/tokens",
            json!({"messages": ["hi"]}),
            Rejects,
        ),
        bad(
            "invalid openai role",
            "/v1/tokens",
            json!({"messages": [{"role": "usr", "content": "hi"}]}),
            Rejects,
        ),
        bad(
            "missing role",
            "/v1/tokens",
            json!({"messages": [{"content": "hi"}]}),
            Rejects,
        ),
        bad(
            "user without content",
            "/v1/tokens",
            json!({"messages": [{"role": "user"}]}),
            Rejects,
        ),
        bad(
            "user with null content",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": null}]}),
            Rejects,
        ),
        bad(
            "content a number",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": 5}]}),
            Rejects,
        ),
        bad(
            "name a number",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": "hi", "name": 5}]}),
            Rejects,
        ),
        bad(
            "unknown part type",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": [{"type": "video"}]}]}),
            Rejects,
        ),
        bad(
            "text part without text",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": [{"type": "text"}]}]}),
            Rejects,
        ),
        bad(
            "image_url without url",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}),
            Rejects,
        ),
        bad(
            "tool_calls on a user message",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": "hi", "tool_calls": [call]}]}),
            Rejects,
        ),
        bad(
            "tool call without function",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "c1"}]}]}),
            Rejects,
        ),
        bad(
            "tool call of unknown type",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "web", "function": {"name": "f", "arguments": "{}"}}]}]}),
            Rejects,
        ),
        bad(
            "tool message without tool_call_id",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "tool_calls": [call]}, {"role": "tool", "content": "x"}]}),
            Rejects,
        ),
        bad(
            "function_call without arguments",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "function_call": {"name": "f"}}]}),
            Rejects,
        ),
        bad(
            "negative iteration",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": "hi", "metadata": {"iteration": -1}}]}),
            Rejects,
        ),
        bad(
            "iteration a string",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": "hi", "metadata": {"iteration": "1"}}]}),
            Rejects,
        ),
        bad(
            "anthropic system message with an image",
            "/v1/tokens",
            json!({"system": "s", "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}]}),
            Rejects,
        ),
        bad(
            "anthropic tool role",
            "/v1/tokens",
            json!({"format": "anthropic", "messages": [{"role": "tool", "content": "hi"}]}),
            Rejects,
        ),
        bad(
            "anthropic without content",
            "/v1/tokens",
            json!({"format": "anthropic", "messages": [{"role": "assistant"}]}),
            Rejects,
        ),
        bad(
            "anthropic unknown block",
            "/v1/tokens",
            json!({"system": "s", "messages": [{"role": "user", "content": [{"type": "video"}]}]}),
            Rejects,
        ),
        bad(
            "anthropic image without source",
            "/v1/tokens",
            json!({"system": "s", "messages": [{"role": "user", "content": [{"type": "image"}]}]}),
            Rejects,
        ),
        bad(
            "anthropic tool_use in a user message",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]}),
            Rejects,
        ),
        bad(
            "anthropic tool_result in an assistant message",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]}),
            Rejects,
        ),
        bad(
            "anthropic tool_use without input",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}]}),
            Rejects,
        ),
        bad(
            "anthropic tool_use nested in a tool_result",
            "/v1/tokens",
            json!({"messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_use", "id": "u", "name": "f", "input": {}}]}]}
            ]}),
            Rejects,
        ),
        bad(
            "anthropic is_error not a boolean",
            "/v1/tokens",
            json!({"messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}]}
            ]}),
            Rejects,
        ),
        bad(
            "verdict without messages",
            "/v1/verdict",
            json!({}),
            Rejects,
        ),
        bad(
            "verdict with null messages",
            "/v1/verdict",
            json!({"messages": null}),
            Rejects,
        ),
        bad(
            "unknown config field",
            "/v1/verdict",
            json!({"messages": [user], "config": {"max_mesages_before_summary": 3}}),
            Rejects,
        ),
        bad(
            "config below its bound",
            "/v1/verdict",
            json!({"messages": [user], "config": {"max_summary_tokens": 1}}),
            Rejects,
        ),
        bad(
            "config above its bound",
            "/v1/verdict",
            json!({"messages": [user], "config": {"min_recent_messages": 10001}}),
            Rejects,
        ),
        bad(
            "config negative",
            "/v1/verdict",
            json!({"messages": [user], "config": {"response_reserve": -1}}),
            Rejects,
        ),
        bad(
            "config unknown summary_role",
            "/v1/verdict",
            json!({"messages": [user], "config": {"summary_role": "assistant"}}),
            Rejects,
        ),
        bad(
            "compress without messages",
            "/v1/compress",
            json!({"force": true}),
            Rejects,
        ),
        bad(
            "compress, unknown field",
            "/v1/compress",
            json!({"messages": [user], "strategy": "heuristic"}),
            Rejects,
        ),
        bad(
            "compress, force null",
            "/v1/compress",
            json!({"messages": [user], "force": null}),
            Rejects,
        ),
        bad(
            "compress, unknown summarizer field",
            "/v1/compress",
            json!({"messages": [user], "summarizer": {"strategy": "heuristic", "style": "terse"}}),
            Rejects,
        ),
        bad(
            "compress, unknown strategy",
            "/v1/compress",
            json!({"messages": [user], "summarizer": {"strategy": "magic"}}),
            Rejects,
        ),
        bad(
            "compress, strategy null",
            "/v1/compress",
            json!({"messages": [user], "summarizer": {"strategy": null}}),
            Rejects,
        ),
        bad(
            "compress, instructions too long",
            "/v1/compress",
            json!({"messages": [user], "summarizer": {"instructions": "é".repeat(4001)}}),
            Rejects,
        ),
        bad(
            "compress, keep_recent_iterations without group_by",
            "/v1/compress",
            json!({"messages": [user], "keep_recent_iterations": 2}),
            Rejects,
        ),
        bad(
            "compress, keep_recent_iterations 0",
            "/v1/compress",
            json!({"messages": [user], "group_by": "iteration", "keep_recent_iterations": 0}),
            Rejects,
        ),
        bad(
            "compress, unknown group_by",
            "/v1/compress",
            json!({"messages": [user], "group_by": "turn"}),
            Rejects,
        ),
        bad(
            "compress, llm strategy",
            "/v1/compress",
            json!({"messages": [user, {"role": "assistant", "content": "a"}, user], "force": true, "config": {"min_recent_messages": 1}, "summarizer": {"strategy": "llm"}}),
            AcceptsRuleInProse,
        ),
        bad(
            "compress, hybrid strategy",
            "/v1/compress",
            json!({"messages": [user, {"role": "assistant", "content": "a"}, user], "force": true, "config": {"min_recent_messages": 1}, "summarizer": {"strategy": "hybrid"}}),
            AcceptsRuleInProse,
        ),
        bad(
            "compress, unknown on_upstream_error",
            "/v1/compress",
            json!({"messages": [user], "config": {"on_upstream_error": "retry"}}),
            Rejects,
        ),
        bad(
            "compress, pinned prefix does not fit",
            "/v1/compress",
            json!({"messages": [{"role": "system", "content": "rule ".repeat(400)}, user], "force": true,
                   "config": {"context_window": 256, "response_reserve": 0}}),
            AcceptsRuleInProse,
        ),
        bad(
            "compress, min_recent_messages above the thread",
            "/v1/compress",
            json!({"messages": [user], "config": {"min_recent_messages": 5}}),
            AcceptsRuleInProse,
        ),
        bad(
            "compress, summary without content",
            "/v1/compress",
            json!({"messages": [user, {"role": "assistant", "content": "a"}], "summary": {"last_message_idx": 0}}),
            AcceptsRuleInProse,
        ),
        bad(
            "summary without last_message_idx",
            "/v1/verdict",
            json!({"messages": [user], "summary": {"content": "x"}}),
            Rejects,
        ),
        bad(
            "orphan tool result",
            "/v1/tokens",
            json!({"messages": [user, {"role": "tool", "tool_call_id": "nope", "content": "x"}]}),
            AcceptsRuleInProse,
        ),
        bad(
            "unanswered tool call",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "tool_calls": [call]}, user]}),
            AcceptsRuleInProse,
        ),
        bad(
            "duplicate tool call id",
            "/v1/verdict",
            json!({"messages": [
                {"role": "assistant", "tool_calls": [call]}, {"role": "tool", "tool_call_id": "c1", "content": "x"},
                {"role": "assistant", "tool_calls": [call]}
            ]}),
            AcceptsRuleInProse,
        ),
        bad(
            "unknown profile",
            "/v1/verdict",
            json!({"messages": [user], "profile": "nope"}),
            AcceptsRuleInProse,
        ),
        bad(
            "summary past the end",
            "/v1/verdict",
            json!({"messages": [user], "summary": {"last_message_idx": 1}}),
            AcceptsRuleInProse,
        ),
        bad(
            "config integer written 5.0",
            "/v1/verdict",
            json!({"messages": [user], "config": {"max_messages_before_summary": 5.0}}),
            AcceptsRuleInProse,
        ),
    ]
}

#[tokio::test]
async fn invalid_requests_answer_the_documented_problems() {
    let spec = spec();
    for case in invalid_requests() {
        let name = case.name;
        let x = send(
            app(),
            post_raw(case.path, case.content_type, case.body.clone()),
        )
        .await;
        assert_eq!(x.status, case.status, "{name}: {}", x.describe());
        assert_conforms(&x);
        if case.spec != SpecSays::NotApplicable {
            let body: Value = serde_json::from_str(&case.body).expect("a JSON case");
            let v = request_violations(spec, &x.method, case.path, &body);
            match case.spec {
                SpecSays::Rejects => assert!(
                    !v.is_empty(),
                    "{name}: the server rejects this request ({}) but the spec accepts it",
                    x.describe()
                ),
                _ => assert!(
                    v.is_empty(),
                    "{name}: the spec now rejects this request; mark it `Rejects`:\n  {}",
                    v.join("\n  ")
                ),
            }
        }
        if case.status == StatusCode::UNPROCESSABLE_ENTITY {
            let body: Value = serde_json::from_str(&case.body).expect("a JSON case");
            let problem = x.json();
            let errors = problem["errors"].as_array();
            let validation = problem["type"] == "urn:condense:problem:validation";
            assert_eq!(
                errors.is_some(),
                validation,
                "{name}: only a validation 422 lists errors"
            );
            for error in errors.into_iter().flatten() {
                let pointer = error["pointer"].as_str().expect("a string pointer");
                assert!(
                    points_into(&body, pointer),
                    "{name}: `{pointer}` is not a pointer into the request: {}",
                    x.describe()
                );
            }
        }
    }
}

#[tokio::test]
async fn limits_answer_413_and_503() {
    let small = app_with(Config {
        limits: condense::config::LimitSettings {
            body_limit: 64,
            ..Default::default()
        },
        ..Config::default()
    });
    let body = json!({"text": "x".repeat(200)});
    for path in ["/v1/tokens", "/v1/verdict"] {
        let x = send(small.clone(), post_json(path, &body)).await;
        assert_eq!(x.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", x.describe());
        assert_conforms(&x);
    }

    // A zero time limit lets only handlers that never wait finish in time.
    let hurried = app_with(Config {
        limits: condense::config::LimitSettings {
            request_timeout: std::time::Duration::from_secs(0),
            ..Default::default()
        },
        ..Config::default()
    });
    let thread = fixture("large-04.openai.json");
    for path in ["/v1/tokens", "/v1/verdict"] {
        let x = send(hurried.clone(), post_json(path, &thread)).await;
        assert_eq!(
            x.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            x.describe()
        );
        assert_conforms(&x);
    }
}

#[tokio::test]
async fn request_id_is_honoured_and_always_returned() {
    let requests = || {
        vec![
            request("GET", "/healthz"),
            request("GET", "/nope"),
            request("DELETE", "/v1/tokens"),
            post_json("/v1/tokens", &json!({"text": "a"})),
            post_json("/v1/verdict", &json!({"bogus": 1})),
            post_raw("/v1/verdict", None, "x"),
        ]
    };
    for req in requests() {
        let x = send(app(), with_header(req, "x-request-id", "client-id-42")).await;
        assert_eq!(
            x.headers.get("x-request-id").map(|v| v.to_str().unwrap()),
            Some("client-id-42"),
            "{}",
            x.describe()
        );
        assert_conforms(&x);
    }
    for req in requests() {
        let x = send(app(), req).await;
        let id = x.headers["x-request-id"].to_str().unwrap();
        assert!(
            id.len() == 36 && id.chars().filter(|&c| c == '-').count() == 4,
            "a generated id is a UUID, got {id}"
        );
        assert_conforms(&x);
    }
}

/// Every `$ref` string anywhere in `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// Object schemas reachable from `schema` that do not say what else may appear.
fn open_objects(
    spec: &Value,
    schema: &Value,
    at: &str,
    seen: &mut BTreeSet<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    match schema {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                if seen.insert(r.to_string()) {
                    out.extend(open_objects(spec, resolve(spec, schema), r, seen));
                }
                return out;
            }
            let is_object = map.get("type") == Some(&json!("object"));
            if is_object
                && map.contains_key("properties")
                && !map.contains_key("additionalProperties")
            {
                out.push(at.to_string());
            }
            for (k, v) in map {
                if matches!(
                    k.as_str(),
                    "examples"
                        | "example"
                        | "description"
                        | "enum"
                        | "const"
                        | "not"
                        | "if"
                        | "contains"
                ) {
                    continue;
                }
                out.extend(open_objects(spec, v, &format!("{at}/{k}"), seen));
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                out.extend(open_objects(spec, v, &format!("{at}/{i}"), seen));
            }
        }
        _ => {}
    }
    out
}

#[test]
fn spec_is_well_formed() {
    let spec = spec();
    assert_eq!(spec["openapi"].as_str().map(|v| &v[..4]), Some("3.1."));

    let mut all = Vec::new();
    refs(spec, &mut all);
    for r in &all {
        let pointer = r.strip_prefix('#').expect("local refs only");
        assert!(spec.pointer(pointer).is_some(), "{r} does not resolve");
    }

    // Every schema compiles, and every example validates.
    for (name, schema) in spec["components"]["schemas"].as_object().unwrap() {
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        if let Some(examples) = schema.get("examples").and_then(Value::as_array) {
            for example in examples {
                let v = schema_violations(spec, &reference, example);
                assert!(v.is_empty(), "an example of {name}: {v:?}");
            }
        } else {
            schema_violations(spec, &reference, &Value::Null);
        }
    }

    let mut ids = BTreeSet::new();
    for (method, path) in spec_routes(spec) {
        let op = &spec["paths"][&path][method.to_lowercase()];
        let id = op["operationId"].as_str().expect("an operationId");
        assert!(ids.insert(id.to_string()), "operationId {id} repeats");
        let params = op["parameters"].as_array().expect("parameters");
        assert!(
            params.contains(&json!({"$ref": "#/components/parameters/XRequestId"})),
            "{method} {path} documents x-request-id"
        );
        let responses = op["responses"].as_object().expect("responses");
        assert!(
            (responses.contains_key("200") || responses.contains_key("307"))
                && responses.contains_key("500"),
            "{method} {path} documents its success and 500"
        );
        // The gates: every operation but the probes may be rate limited;
        // those that need a key say which and document the 401.
        let tags = &op["tags"];
        if *tags == json!(["probes"]) {
            assert_eq!(
                op["security"],
                json!([]),
                "{method} {path}: probes are open"
            );
        } else {
            assert!(
                responses.contains_key("429"),
                "{method} {path} documents 429"
            );
            let security = op["security"].as_array().expect("security");
            let keyed = security
                .iter()
                .any(|s| s.as_object().is_some_and(|o| !o.is_empty()));
            assert_eq!(
                keyed,
                responses.contains_key("401"),
                "{method} {path}: a key and a 401 go together"
            );
            if keyed {
                assert!(
                    security.contains(&json!({})),
                    "{method} {path}: keys are optional (off unless configured)"
                );
            }
            assert_eq!(
                keyed,
                *tags != json!(["playground"]) && path != "/openapi.json",
                "{method} {path}: only the playground's files and the contract are open"
            );
        }
        // The proxy relays the provider's answers and bodies as they are:
        // no JSON parsing, validation or time limit of condense's own.
        let proxied = op["tags"] == json!(["proxy"]);
        if proxied {
            for status in ["401", "413", "429", "501", "502"] {
                assert!(
                    responses.contains_key(status),
                    "{method} {path} documents {status}"
                );
            }
        } else if method == "POST" {
            for status in ["400", "401", "413", "415", "422", "429", "503"] {
                assert!(
                    responses.contains_key(status),
                    "{method} {path} documents {status}"
                );
            }
            let body = &op["requestBody"];
            assert_eq!(body["required"], true);
            // The examples of a request body follow its schema.
            let media = &body["content"]["application/json"];
            for (ex, example) in media["examples"].as_object().expect("request examples") {
                let v = schema_violations(spec, &media["schema"], &example["value"]);
                assert!(v.is_empty(), "{method} {path} example {ex}: {v:?}");
            }
        }
        // Every response returns x-request-id, and its objects are closed.
        let generic = &spec["components"]["responses"];
        let all_responses = responses
            .values()
            .chain([&generic["NotFound"], &generic["MethodNotAllowed"]]);
        for response in all_responses {
            let response = resolve(spec, response);
            let header = resolve(spec, &response["headers"]["x-request-id"]);
            assert_eq!(header["required"], true, "{method} {path}: {response}");
            // A redirect has no body; every other response has one.
            let content = response["content"].as_object();
            assert!(
                content.is_some() || response["headers"]["location"].is_object(),
                "{method} {path}: a response without content"
            );
            for (ct, media) in content.into_iter().flatten() {
                if proxied && media["schema"] == json!({"$ref": "#/components/schemas/PassThrough"})
                {
                    continue;
                }
                let open = open_objects(spec, &media["schema"], ct, &mut BTreeSet::new());
                assert!(
                    open.is_empty(),
                    "{method} {path}: response objects without additionalProperties: {open:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn request_examples_are_accepted() {
    let spec = spec();
    for (method, path) in spec_routes(spec) {
        let op = &spec["paths"][&path][method.to_lowercase()];
        let Some(examples) =
            op["requestBody"]["content"]["application/json"]["examples"].as_object()
        else {
            continue;
        };
        for (name, example) in examples {
            let x = send(app(), post_json(&path, &example["value"])).await;
            assert_eq!(x.status, StatusCode::OK, "example {name}: {}", x.describe());
            assert_conforms(&x);
        }
    }
}

/// `spec` with `edit` applied to the value at `pointer`.
fn mutated(pointer: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut spec = spec().clone();
    edit(
        spec.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer} is in the spec")),
    );
    spec
}

fn rename_property(schema: &mut Value, from: &str, to: &str) {
    let props = schema["properties"].as_object_mut().unwrap();
    let v = props.remove(from).unwrap();
    props.insert(to.into(), v);
    for r in schema["required"].as_array_mut().unwrap() {
        if r == from {
            *r = json!(to);
        }
    }
}

fn remove_property(schema: &mut Value, name: &str) {
    schema["properties"].as_object_mut().unwrap().remove(name);
    schema["required"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r != name);
}

/// The checker itself: drift between spec and server must be caught.
#[tokio::test]
async fn checker_catches_drift() {
    let tokens = send(app(), post_json("/v1/tokens", &json!({"text": "a"}))).await;
    let verdict = send(app(), post_json("/v1/verdict", &json!({"messages": []}))).await;
    let text = send(
        app(),
        with_header(
            post_json("/v1/verdict", &json!({"messages": []})),
            "accept",
            "text/plain",
        ),
    )
    .await;
    let health = send(app(), request("GET", "/healthz")).await;
    let compressed = send(
        app(),
        post_json(
            "/v1/compress",
            &merged(&fixture("small-00.anthropic.json"), json!({"force": true})),
        ),
    )
    .await;
    let invalid = send(app(), post_json("/v1/tokens", &json!({"bogus": 1}))).await;
    let not_found = send(app(), request("GET", "/nope")).await;
    for x in [
        &tokens,
        &verdict,
        &text,
        &health,
        &invalid,
        &not_found,
        &compressed,
    ] {
        assert_conforms(x);
    }

    let schemas = "/components/schemas";
    let cases: Vec<(&str, Value, &Exchange)> = vec![
        (
            "a renamed response field",
            mutated(&format!("{schemas}/TokensResponse"), |s| {
                rename_property(s, "total_tokens", "total")
            }),
            &tokens,
        ),
        (
            "a response field missing from the spec",
            mutated(&format!("{schemas}/VerdictResponse"), |s| {
                remove_property(s, "warnings")
            }),
            &verdict,
        ),
        (
            "a compress field missing from the spec",
            mutated(&format!("{schemas}/CompressResponse"), |s| {
                remove_property(s, "degraded")
            }),
            &compressed,
        ),
        (
            "a changed summary object",
            mutated(
                &format!("{schemas}/SummaryObject/properties/content_hash"),
                |s| s["pattern"] = json!("^sha256:"),
            ),
            &compressed,
        ),
        (
            "output messages in the wrong format",
            mutated(&format!("{schemas}/CompressResponse/allOf/1"), |s| {
                s["else"]["properties"]["messages"]["items"]["$ref"] =
                    json!("#/components/schemas/OpenAIMessage")
            }),
            &compressed,
        ),
        (
            "a different constant",
            mutated(&format!("{schemas}/Health/properties/status"), |s| {
                *s = json!({"const": "healthy"})
            }),
            &health,
        ),
        (
            "a problem field missing from the spec",
            mutated(&format!("{schemas}/Problem"), |s| {
                remove_property(s, "errors")
            }),
            &invalid,
        ),
        (
            "an undocumented status",
            mutated("/paths/~1v1~1tokens/post/responses", |r| {
                r.as_object_mut().unwrap().remove("422");
            }),
            &invalid,
        ),
        (
            "an undocumented content type",
            mutated("/paths/~1v1~1verdict/post/responses/200/content", |c| {
                let c = c.as_object_mut().unwrap();
                let v = c.remove("text/plain").unwrap();
                c.insert("text/markdown".into(), v);
            }),
            &text,
        ),
        (
            "a changed text format",
            mutated(&format!("{schemas}/VerdictText"), |s| {
                s["pattern"] = json!("^Summarization")
            }),
            &text,
        ),
        (
            "an undeclared required header",
            mutated("/components/headers/XRequestId", |h| {
                h["schema"] = json!({"type": "string", "maxLength": 3})
            }),
            &health,
        ),
        (
            "a changed 404 detail",
            mutated("/components/responses/NotFound", |r| {
                r["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]["detail"] =
                    json!({"pattern": "^not found"})
            }),
            &not_found,
        ),
    ];
    for (what, spec, x) in &cases {
        assert!(
            !response_violations(spec, x).is_empty(),
            "the checker misses {what}"
        );
    }

    let extra = mutated("/paths", |p| {
        p["/v1/extra"] = json!({"post": {"responses": {}}})
    });
    assert_ne!(spec_routes(&extra), expected_routes());
    let missing = mutated("/paths", |p| {
        p.as_object_mut().unwrap().remove("/readyz");
    });
    assert_ne!(spec_routes(&missing), expected_routes());

    // Request schemas catch drift too: a field the server accepts but the spec dropped.
    let dropped = mutated(&format!("{schemas}/TokensRequest/properties"), |p| {
        p.as_object_mut().unwrap().remove("encoding");
    });
    let body = json!({"text": "a", "encoding": "o200k_base"});
    assert!(!request_violations(&dropped, &Method::POST, "/v1/tokens", &body).is_empty());
    assert!(request_violations(spec(), &Method::POST, "/v1/tokens", &body).is_empty());
}

// ------------------------------------------------- known server deviations

/// RFC 9110: `Allow` lists the methods of the target resource.
#[tokio::test]
async fn allow_lists_the_methods_of_the_path() {
    let x = send(app(), request("POST", "/healthz")).await;
    assert!(!x.headers[header::ALLOW].to_str().unwrap().contains("POST"));
    let x = send(app(), request("GET", "/v1/tokens")).await;
    assert!(!x.headers[header::ALLOW].to_str().unwrap().contains("GET"));
}

// ------------------------------------------------------------ the gates

/// One request per served route (a valid body where one is needed).
fn every_route() -> Vec<Request<Body>> {
    served()
        .into_iter()
        .map(|(method, template)| {
            let path = concrete(spec(), template);
            match method.as_str() {
                "POST" if PROXIED.contains(&path.as_str()) => post_json(
                    &path,
                    &json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}),
                ),
                "POST" => post_json(
                    &path,
                    &json!({"messages": [{"role": "user", "content": "hi"}]}),
                ),
                _ => request(&method, &path),
            }
        })
        .collect()
}

/// The proxy's routes.
const PROXIED: [&str; 5] = [
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/responses/input_tokens",
    "/v1/messages",
    "/v1/messages/count_tokens",
];

fn is_probe(req: &Request<Body>) -> bool {
    // /metrics is open by default (CONDENSE_METRICS_REQUIRE_KEY), never limited.
    matches!(req.uri().path(), "/healthz" | "/readyz" | "/metrics")
}

const KEY: &str = "openapi-key-0123456789abcdef";

/// With keys: the probes and the playground's files open, every other
/// route a 401 as documented, and a key without `llm` a 403 for `llm`.
#[tokio::test]
async fn unauthorized_and_forbidden_answers_conform() {
    let base = fake_upstream().await;
    let keyed = app_with(Config {
        access: condense::config::AccessSettings {
            api_keys: vec![condense::upstream::Secret::new(KEY)],
            ..Default::default()
        },
        upstream: condense::config::UpstreamSettings {
            url: Some(format!("{base}/ok")),
            ..Default::default()
        },
        ..Config::default()
    });
    let mut refused = 0;
    for req in every_route() {
        let open = is_probe(&req)
            || ["/", "/openapi.json"].contains(&req.uri().path())
            || req.uri().path().starts_with("/playground");
        let x = send(keyed.clone(), req).await;
        assert_conforms(&x);
        if open {
            assert!(
                x.status.is_success() || x.status.is_redirection(),
                "{}",
                x.describe()
            );
        } else {
            assert_eq!(x.status, StatusCode::UNAUTHORIZED, "{}", x.describe());
            refused += 1;
        }
    }
    assert_eq!(refused, 10);
    let x = send(
        keyed.clone(),
        with_header(
            post_json("/v1/compress", &json!({"messages": fixture("small-00.openai.json")["messages"], "force": true, "summarizer": {"strategy": "hybrid"}})),
            "authorization",
            &format!("Bearer {KEY}"),
        ),
    )
    .await;
    assert_eq!(x.status, StatusCode::FORBIDDEN, "{}", x.describe());
    assert_conforms(&x);
}

/// Past the rate limit every route but the probes is a documented 429.
#[tokio::test]
async fn rate_limited_answers_conform() {
    let limited = app_with(Config {
        access: condense::config::AccessSettings {
            rate_limit_per_sec: 0.001,
            rate_limit_burst: 1,
            ..Default::default()
        },
        ..Config::default()
    });
    // In-process every request shares one bucket: this one empties it.
    let first = send(limited.clone(), request("GET", "/v1/models")).await;
    assert_eq!(first.status, StatusCode::OK);
    for req in every_route() {
        let probe = is_probe(&req);
        let x = send(limited.clone(), req).await;
        assert_conforms(&x);
        let expected = if probe {
            StatusCode::OK
        } else {
            StatusCode::TOO_MANY_REQUESTS
        };
        assert_eq!(x.status, expected, "{}", x.describe());
    }
}

/// With the memory budget all taken, every route but the probes (the
/// proxy's too) is a documented 503 `overloaded`.
#[tokio::test]
async fn over_the_memory_budget_answers_conform() {
    let state = AppState::new(Config {
        limits: condense::config::LimitSettings {
            memory_budget_bytes: 1024 * 1024,
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            openai_url: Some("http://127.0.0.1:9".into()),
            anthropic_url: Some("http://127.0.0.1:9".into()),
            ..Default::default()
        },
        ..Config::default()
    })
    .expect("app state");
    let full = condense::http::router(state.clone());
    let all = state
        .memory
        .try_reserve(u64::MAX)
        .expect("the whole budget");
    for req in every_route() {
        let probe = is_probe(&req);
        let x = send(full.clone(), req).await;
        assert_conforms(&x);
        if !probe {
            assert_eq!(
                x.status,
                StatusCode::SERVICE_UNAVAILABLE,
                "{}",
                x.describe()
            );
        }
    }
    drop(all);
}

/// With every place taken, every route but the probes and the proxy is a
/// documented 503 `overloaded`; a thread over a limit is a documented 413.
#[tokio::test]
async fn overloaded_and_over_limit_answers_conform() {
    let state = AppState::new(Config {
        limits: condense::config::LimitSettings {
            max_concurrency: 1,
            max_messages: 1,
            ..Default::default()
        },
        ..Config::default()
    })
    .expect("app state");
    let full = condense::http::router(state.clone());
    let place = state.overload.try_enter().expect("the one place");
    for req in every_route() {
        let spared = is_probe(&req) || PROXIED.contains(&req.uri().path());
        let x = send(full.clone(), req).await;
        assert_conforms(&x);
        if !spared {
            assert_eq!(
                x.status,
                StatusCode::SERVICE_UNAVAILABLE,
                "{}",
                x.describe()
            );
        }
    }
    drop(place);
    let two = json!({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]});
    for path in ["/v1/tokens", "/v1/verdict", "/v1/compress"] {
        let x = send(full.clone(), post_json(path, &two)).await;
        assert_eq!(x.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", x.describe());
        assert_conforms(&x);
    }
    let proxied = app_with(Config {
        limits: condense::config::LimitSettings {
            max_messages: 1,
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            anthropic_url: Some("http://127.0.0.1:9".into()),
            ..Default::default()
        },
        ..Config::default()
    });
    let x = send(
        proxied,
        post_json(
            "/v1/messages",
            &merged(
                &two,
                json!({"model": "claude-sonnet-4-5", "max_tokens": 10}),
            ),
        ),
    )
    .await;
    assert_eq!(x.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", x.describe());
    assert_conforms(&x);
}
