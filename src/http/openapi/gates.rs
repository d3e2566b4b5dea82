//! What a route's gates answer, said once from its [`Access`] (the order of
//! `guard.rs`) instead of on every path of the written part: the key it takes,
//! the request id, and the problems answered before any handler runs.

use serde_json::{Map, Value, json};

use crate::http::access::Access;

/// Adds to every served operation of `paths` what its route's gates say;
/// a response the written operation gives itself (compress's own 422) stays.
pub(super) fn add(paths: &mut Map<String, Value>) {
    for route in crate::http::routes() {
        let op = paths
            .get_mut(route.path)
            .and_then(|p| p.get_mut(route.method))
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("openapi/written.yaml has no {route:?}"));
        let body = op.contains_key("requestBody");
        op.insert("security".into(), security(route.access));
        let mut parameters: Vec<Value> = parameters(route.access).map(reference).collect();
        if let Some(Value::Array(own)) = op.remove("parameters") {
            parameters.extend(own);
        }
        op.insert("parameters".into(), parameters.into());
        let responses = op.entry("responses").or_insert(Value::Null);
        if responses.is_null() {
            *responses = json!({});
        }
        let responses = responses.as_object_mut().expect("responses is a map");
        for (code, name) in answers(route.access, body) {
            responses
                .entry(code)
                .or_insert_with(|| json!({"$ref": format!("#/components/responses/{name}")}));
        }
        responses.sort_keys();
    }
}

/// Keys are off unless configured, so each keyed route also takes none.
fn security(access: Access) -> Value {
    match access {
        Access::Api => json!([{"apiKey": []}, {}]),
        Access::Proxy => json!([{"proxyKey": []}, {}]),
        Access::Probe | Access::Metrics | Access::Page => json!([]),
    }
}

fn parameters(access: Access) -> impl Iterator<Item = &'static str> {
    let proxy: &[&str] = match access {
        Access::Proxy => &["XCondenseProfile", "XCondenseShadow", "ForwardedQuery"],
        _ => &[],
    };
    std::iter::once("XRequestId").chain(proxy.iter().copied())
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/parameters/{name}")})
}

/// `(status, response)` for what the gates of `access` answer; `body`: the
/// route reads one (the screen's 413 and 415; the API's 400 and 422 too).
fn answers(access: Access, body: bool) -> Vec<(&'static str, &'static str)> {
    let mut out = vec![("500", "Internal")];
    let keyed = matches!(access, Access::Api | Access::Proxy | Access::Metrics);
    if keyed {
        out.push(("401", "Unauthorized"));
    }
    if access != Access::Probe {
        out.push(("403", "Forbidden"));
    }
    if access.limited() {
        out.push(("429", "RateLimited"));
    }
    if access.shed() {
        out.push(("503", "Unavailable"));
    }
    if body {
        out.extend([("413", "PayloadTooLarge"), ("415", "UnsupportedMediaType")]);
    }
    if body && access == Access::Api {
        out.extend([("400", "MalformedJson"), ("422", "Invalid")]);
    }
    if access == Access::Proxy {
        out.extend([
            ("200", "Relayed"),
            ("501", "ProxyDisabled"),
            ("502", "ProviderUnreachable"),
            ("503", "BodyTimeout"),
        ]);
    }
    out
}
