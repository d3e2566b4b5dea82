//! The API contract: the document `GET /openapi.json` serves and
//! `condense openapi` prints (the repository's `openapi.yaml`, which a test
//! keeps equal to it). The schemas come from the types the server parses and
//! answers with ([`Derived`]); what no type can say is written once in
//! `openapi/written.yaml`: the conventions, the examples, the proxy's
//! pass-through bodies.

use std::sync::LazyLock;

use axum::Json;
use serde_json::{Map, Value};
use utoipa::OpenApi;

use super::access::Access;

// Public, as the playground is: no key.
super::access::routes! {
    Access::Page;
    get "/openapi.json" => served,
}

async fn served() -> Json<&'static Value> {
    Json(document())
}

/// The schemas the types say.
#[derive(OpenApi)]
#[openapi(components(schemas(
    crate::tokens::Encoding,
    // t33-d2: the counts, the verdict and the compression's answers.
    super::tokens::MessageTokens,
    crate::policy::LastSummary,
    crate::summarize::Fidelity,
    crate::summarize::Usage,
    crate::summarize::IterationSummary,
    crate::upstream::CountSource,
)))]
struct Derived;

/// The document, built once: the written part with the derived schemas,
/// all in name order.
pub fn document() -> &'static Value {
    static DOCUMENT: LazyLock<Value> = LazyLock::new(|| {
        let mut doc = written();
        let derived = derived_schemas();
        let schemas = doc["components"]["schemas"]
            .as_object_mut()
            .expect("the written part has schemas");
        schemas.extend(derived);
        schemas.sort_keys();
        doc
    });
    &DOCUMENT
}

fn written() -> Value {
    serde_norway::from_str(include_str!("openapi/written.yaml"))
        .expect("openapi/written.yaml is valid YAML")
}

fn derived_schemas() -> Map<String, Value> {
    let doc = serde_json::to_value(Derived::openapi()).expect("the derived part is JSON");
    match &doc["components"]["schemas"] {
        Value::Object(schemas) => schemas.clone(),
        _ => Map::new(),
    }
}

/// The document as YAML, as `openapi.yaml` holds it.
pub fn yaml() -> String {
    serde_norway::to_string(document()).expect("a JSON value is YAML")
}

#[cfg(test)]
mod tests {
    /// Each schema is said once: by its type, or in the written part.
    #[test]
    fn no_schema_is_both_derived_and_written() {
        let written = super::written();
        for name in super::derived_schemas().keys() {
            assert!(
                written["components"]["schemas"].get(name).is_none(),
                "{name} is derived: delete it from openapi/written.yaml"
            );
        }
    }
}
