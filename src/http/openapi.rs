//! The API contract: the document `GET /openapi.json` serves and
//! `condense openapi` prints (the repository's `openapi.yaml`, which a test
//! keeps equal to it). What no type can say is written once in
//! `openapi/written.yaml`: the conventions, the examples, the proxy's
//! pass-through bodies.

use std::sync::LazyLock;

use axum::Json;
use serde_json::Value;

use super::access::Access;

// Public, as the playground is: no key.
super::access::routes! {
    Access::Page;
    get "/openapi.json" => served,
}

async fn served() -> Json<&'static Value> {
    Json(document())
}

/// The document, built once.
pub fn document() -> &'static Value {
    static DOCUMENT: LazyLock<Value> = LazyLock::new(|| {
        serde_norway::from_str(include_str!("openapi/written.yaml"))
            .expect("openapi/written.yaml is valid YAML")
    });
    &DOCUMENT
}

/// The document as YAML, as `openapi.yaml` holds it.
pub fn yaml() -> String {
    serde_norway::to_string(document()).expect("a JSON value is YAML")
}
