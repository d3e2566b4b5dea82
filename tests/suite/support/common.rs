//! Helpers shared by the API tests: the same `Router` the binary serves,
//! driven in-process.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use condense::cache::{Cache, CacheOptions};
use condense::{AppState, Config};

pub fn app() -> Router {
    app_with(Config::default())
}

pub fn app_with(config: Config) -> Router {
    condense::http::router(AppState::new(config).expect("state builds"))
}

/// The router with the real local model as its upstream: its trained
/// window (the summarizer must chunk to fit it), and time limits that judge
/// nothing: the model is shared with the other tests of the suite, and on a
/// loaded 2-core machine one of its calls has taken over five minutes
/// (llama.cpp's two threads on one free core). A call may take 30 minutes,
/// a request an hour; a healthy run takes seconds per call.
pub fn app_with_local_llm(url: String) -> Router {
    app_with(Config {
        limits: condense::config::LimitSettings {
            request_timeout: std::time::Duration::from_secs(3600),
            ..Default::default()
        },
        upstream: condense::config::UpstreamSettings {
            url: Some(url),
            model: "SmolLM2-135M-Instruct".into(),
            context_window: 8192,
            timeout: std::time::Duration::from_secs(1800),
            retry_budget: std::time::Duration::from_secs(3600),
            ..Default::default()
        },
        ..Default::default()
    })
}

/// condense proxying Anthropic's API to `provider`, with the cache at
/// `cache_url` and the profiles file `profiles` (TOML, read once as the
/// state is built).
pub async fn anthropic_proxy(provider: &str, cache_url: &str, profiles: &str) -> Router {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profiles.toml");
    std::fs::write(&file, profiles).unwrap();
    let mut config = Config {
        proxy: condense::config::ProxySettings {
            anthropic_url: Some(provider.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    config.models.profiles_file = Some(file);
    let cache = Cache::connect(cache_url, CacheOptions::default())
        .await
        .expect("the cache opens");
    condense::http::router(AppState::with_cache(config, cache).expect("state builds"))
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub bytes: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.bytes)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.bytes.to_vec()).expect("utf-8 body")
    }

    pub fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// Asserts a problem+json answer with `status` and returns its body.
    pub fn problem(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "body: {}",
            String::from_utf8_lossy(&self.bytes)
        );
        assert_eq!(self.content_type(), "application/problem+json");
        let p = self.json();
        assert_eq!(p["status"], status);
        for key in ["type", "title", "detail"] {
            assert!(p[key].is_string(), "problem has no {key}: {p}");
        }
        p
    }

    /// The pointers of a 422's `errors`.
    pub fn pointers(&self) -> Vec<String> {
        let p = self.problem(422);
        p["errors"]
            .as_array()
            .expect("errors array")
            .iter()
            .map(|e| e["pointer"].as_str().unwrap().to_string())
            .collect()
    }
}

pub async fn send(app: &Router, req: Request<Body>) -> Reply {
    let res = app.clone().oneshot(req).await.expect("infallible router");
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.expect("body").to_bytes();
    Reply {
        status,
        headers,
        bytes,
    }
}

pub async fn post(app: &Router, path: &str, body: &Value) -> Reply {
    post_raw(
        app,
        path,
        "application/json",
        serde_json::to_vec(body).unwrap(),
    )
    .await
}

pub async fn post_raw(
    app: &Router,
    path: &str,
    content_type: &str,
    body: impl Into<Body>,
) -> Reply {
    let req = Request::post(path)
        .header(header::CONTENT_TYPE, content_type)
        .body(body.into())
        .unwrap();
    send(app, req).await
}

pub async fn get(app: &Router, path: &str) -> Reply {
    send(app, Request::get(path).body(Body::empty()).unwrap()).await
}

pub fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The example threads of `data/threads`, smallest first, in both formats.
pub const EXAMPLES: [&str; 10] = [
    "small-00.openai",
    "small-00.anthropic",
    "small-01.openai",
    "small-01.anthropic",
    "medium-02.openai",
    "medium-02.anthropic",
    "medium-03.openai",
    "medium-03.anthropic",
    "large-04.openai",
    "large-04.anthropic",
];

/// A file of the product's `data/` (the example threads) as JSON.
pub fn data(name: &str) -> Value {
    let path = format!("{}/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// An example thread as a request body (its `model`, `system`, `messages`, `tools`).
pub fn thread(name: &str) -> Value {
    data(&format!("threads/{name}.json"))
}

/// `n` short alternating user/assistant messages.
pub fn chat(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": format!("message number {i}")})
        })
        .collect()
}
