//! What every answer carries, said once: the request id (the middleware
//! sets it on every answer) and, for a problem, the type, title and status
//! its [`ProblemKind`] fixes. The written part names only the kinds a
//! problem answer may be (`x-problems`) and what it says in prose.

use serde_json::{Map, Value, json};

use crate::error::ProblemKind;

/// Completes every response object of the document: the components' and
/// those written inline under the paths.
pub(super) fn complete(doc: &mut Value) {
    let components = doc["components"]["responses"].as_object_mut();
    components
        .into_iter()
        .flat_map(|r| r.values_mut())
        .for_each(one);
    let paths = doc["paths"]
        .as_object_mut()
        .expect("the document has paths");
    for op in paths
        .values_mut()
        .flat_map(|p| p.as_object_mut())
        .flat_map(|p| p.values_mut())
    {
        let responses = op["responses"].as_object_mut();
        responses
            .into_iter()
            .flat_map(|r| r.values_mut())
            .for_each(one);
    }
}

fn one(response: &mut Value) {
    let Some(response) = response.as_object_mut() else {
        return;
    };
    if response.contains_key("$ref") {
        return;
    }
    let headers = response.entry("headers").or_insert_with(|| json!({}));
    let mut all = Map::new();
    all.insert(
        "x-request-id".into(),
        json!({"$ref": "#/components/headers/XRequestId"}),
    );
    all.extend(
        headers
            .as_object_mut()
            .map(std::mem::take)
            .unwrap_or_default(),
    );
    *headers = all.into();
    if let Some(Value::Array(slugs)) = response.remove("x-problems") {
        let kinds = slugs.iter().map(|slug| {
            let slug = slug.as_str().unwrap_or_default();
            ProblemKind::from_slug(slug).unwrap_or_else(|| panic!("no problem kind `{slug}`"))
        });
        let schema = problem(kinds.collect());
        response.insert(
            "content".into(),
            json!({"application/problem+json": {"schema": schema}}),
        );
    }
}

/// A `Problem` of one of `kinds`: its type, title and status are the
/// kind's, and only a `validation` problem lists `errors`.
fn problem(kinds: Vec<ProblemKind>) -> Value {
    let mut each: Vec<Value> = kinds
        .into_iter()
        .map(|kind| {
            let mut rule = json!({"properties": {
                "type": {"const": kind},
                "title": {"const": kind.title()},
                "status": {"const": kind.status().as_u16()},
            }});
            match kind {
                ProblemKind::Validation => rule["required"] = json!(["errors"]),
                _ => rule["not"] = json!({"required": ["errors"]}),
            }
            rule
        })
        .collect();
    let rule = match each.len() {
        1 => each.remove(0),
        _ => json!({"anyOf": each}),
    };
    json!({"allOf": [{"$ref": "#/components/schemas/Problem"}, rule]})
}
