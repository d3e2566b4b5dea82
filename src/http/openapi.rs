//! The API contract: the document `GET /openapi.json` serves and
//! `condense openapi` prints (the repository's `openapi.yaml`, which a test
//! keeps equal to it). The schemas come from the types the server parses and
//! answers with ([`Derived`]); what no type can say is written once in
//! `openapi/written.yaml`: the conventions, the examples, the proxy's
//! pass-through bodies, and the rules across a derived schema's fields
//! (under the schema's name); the wire formats are written beside their
//! parsers (`thread/schemas.yaml`).

use std::sync::LazyLock;

use axum::Json;
use serde_json::{Map, Value};
use utoipa::OpenApi;

use super::access::Access;

mod gates;
mod responses;

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
    // The probes, the catalog, the problems and the profiles.
    crate::error::Problem,
    crate::http::catalog::ModelsResponse,
    crate::http::catalog::ProfilesResponse,
    crate::http::health::Health,
    crate::http::health::Readiness,
    crate::http::playground::ExamplesResponse,
    crate::policy::ClearOverrides,
    crate::policy::ClearSettings,
    crate::policy::ClearTrigger,
    crate::policy::OnUpstreamError,
    crate::policy::Profile,
    crate::policy::ProfileOverrides,
    crate::policy::SummaryRole,
    crate::policy::TruncateKeep,
    crate::thread::FieldError,
    crate::tokens::ModelSpec,
    // The answers of the counts, the verdict and the compression (t33-d2).
    super::compress::CompressResponse,
    crate::compress::AppliedEdit,
    crate::upstream::CountSource,
    crate::summarize::Fidelity,
    crate::summarize::IterationSummary,
    crate::policy::LastSummary,
    super::tokens::MessageTokens,
    crate::compress::SummaryObject,
    super::tokens::TokensResponse,
    crate::summarize::Usage,
    super::verdict::VerdictResponse,
    // The proxy's ledger (issue 34).
    crate::cache::Bill,
    crate::proxy::Difference,
    crate::proxy::Ledger,
    crate::proxy::LedgerTotals,
    crate::proxy::LedgerTurn,
    // The requests of the counts, the verdict and the compression (t33-d3).
    super::compress::CompressRequest,
    super::compress::SummarizerInput,
    super::input::SummaryInput,
    super::tokens::TokensRequest,
    super::verdict::VerdictRequest,
)))]
struct Derived;

/// What a type cannot say about its fields together (no messages when
/// `format` is null; no model for a heuristic summary; a thread or a text):
/// JSON Schema's conditionals and alternatives, and `unevaluatedProperties`
/// (a tagged enum's variants closed: utoipa drops serde's
/// `deny_unknown_fields` on them). The written part may say these, and only
/// these, under a derived schema's name; they are added to what the type says.
const RULES: [&str; 7] = [
    "if",
    "then",
    "else",
    "allOf",
    "not",
    "anyOf",
    "unevaluatedProperties",
];

/// The document, built once: the written part with the derived schemas
/// (and their [`RULES`]), all in name order, and what each route's gates answer.
pub fn document() -> &'static Value {
    static DOCUMENT: LazyLock<Value> = LazyLock::new(|| {
        let mut doc = written();
        let derived = derived_schemas();
        let schemas = doc["components"]["schemas"]
            .as_object_mut()
            .expect("the written part has schemas");
        for (name, mut schema) in derived {
            if let Some(Value::Object(written)) = schemas.remove(&name) {
                let rules = written.into_iter().filter(|(k, _)| RULES.contains(&&**k));
                schema.as_object_mut().expect("a schema").extend(rules);
            }
            schemas.insert(name, schema);
        }
        schemas.sort_keys();
        gates::add(
            doc["paths"]
                .as_object_mut()
                .expect("the written part has paths"),
        );
        responses::complete(&mut doc);
        doc
    });
    &DOCUMENT
}

/// The written part: this folder's, and the wire formats' beside their parsers.
fn written() -> Value {
    let mut doc: Value = serde_norway::from_str(include_str!("openapi/written.yaml"))
        .expect("openapi/written.yaml is valid YAML");
    let wire: Map<String, Value> =
        serde_norway::from_str(crate::thread::SCHEMAS).expect("thread/schemas.yaml is valid YAML");
    let schemas = doc["components"]["schemas"].as_object_mut();
    schemas.expect("the written part has schemas").extend(wire);
    doc
}

fn derived_schemas() -> Map<String, Value> {
    let mut doc = serde_json::to_value(Derived::openapi()).expect("the derived part is JSON");
    match doc["components"]["schemas"].take() {
        Value::Object(mut schemas) => {
            schemas.values_mut().for_each(flatten);
            schemas
        }
        _ => Map::new(),
    }
}

/// serde's `flatten`, as JSON Schema can say it: one object with the fields
/// of every part, closed when the flattened parts are (`deny_unknown_fields`;
/// utoipa drops it on the type that flattens them). utoipa writes an `allOf`
/// of the parts instead, which cannot be closed (each part would refuse the
/// fields of the others); the flattened fields are `#[schema(inline)]`, so
/// every part is an object here (alone in a `oneOf` when the field has a
/// doc comment).
fn flatten(schema: &mut Value) {
    let Some(Value::Array(parts)) = schema.get("allOf") else {
        return;
    };
    let parts: Vec<&Value> = parts
        .iter()
        .map(|p| match p["oneOf"].as_array().map(Vec::as_slice) {
            Some([only]) => only,
            _ => p,
        })
        .collect();
    if !parts.iter().all(|p| p["type"] == "object") {
        return;
    }
    let (mut properties, mut required) = (Map::new(), Vec::new());
    for part in &parts {
        properties.extend(part["properties"].as_object().cloned().unwrap_or_default());
        required.extend(part["required"].as_array().cloned().unwrap_or_default());
    }
    let said: Vec<&Value> = parts
        .iter()
        .filter_map(|p| p.get("additionalProperties"))
        .collect();
    let closed = !said.is_empty() && said.iter().all(|&a| *a == false);
    let mut object = Map::new();
    object.insert("type".into(), "object".into());
    if let Some(description) = schema.get("description") {
        object.insert("description".into(), description.clone());
    }
    object.insert("required".into(), required.into());
    object.insert("properties".into(), properties.into());
    if closed {
        object.insert("additionalProperties".into(), false.into());
    }
    *schema = object.into();
}

/// The document as YAML, as `openapi.yaml` holds it.
pub fn yaml() -> String {
    serde_norway::to_string(&Yaml(document())).expect("a JSON value is YAML")
}

/// A JSON value for a serializer other than serde_json's: with
/// `arbitrary_precision` (numbers kept as written, `thread::compact`) a
/// `Number` serializes as a private one-field struct that only serde_json
/// reads back; here it goes as the integer or float it is.
struct Yaml<'a>(&'a Value);

impl serde::Serialize for Yaml<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap, SerializeSeq};
        match self.0 {
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => s.serialize_u64(u),
                (_, Some(i), _) => s.serialize_i64(i),
                (_, _, Some(f)) => s.serialize_f64(f),
                _ => Err(S::Error::custom(format!("{n} is past f64"))),
            },
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                items
                    .iter()
                    .try_for_each(|v| seq.serialize_element(&Yaml(v)))?;
                seq.end()
            }
            Value::Object(map) => {
                let mut out = s.serialize_map(Some(map.len()))?;
                map.iter()
                    .try_for_each(|(k, v)| out.serialize_entry(k, &Yaml(v)))?;
                out.end()
            }
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Each schema is said once: by its type, or in the written part. Under
    /// a derived schema's name, the written part holds only the rules across
    /// its fields, which the type does not say.
    #[test]
    fn no_schema_is_both_derived_and_written() {
        let written = super::written();
        for (name, derived) in super::derived_schemas() {
            let Some(written) = written["components"]["schemas"].get(&name) else {
                continue;
            };
            for key in written.as_object().expect("a schema").keys() {
                assert!(
                    super::RULES.contains(&key.as_str()) && derived.get(key).is_none(),
                    "{name} is derived: delete `{key}` from openapi/written.yaml"
                );
            }
        }
    }
}
