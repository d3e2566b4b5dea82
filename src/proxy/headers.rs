//! Which headers cross the proxy, each way: not those of one connection
//! (RFC 9110 §7.6.1), nor condense's own, nor cookies and forwarding chains.
//! The provider's `x-request-id` comes back renamed: the answer's is condense's.

use reqwest::header::{HeaderMap, HeaderName};

/// Headers of one connection: never relayed.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// The items of a comma-separated header, in all its occurrences.
fn items<'a>(headers: &'a HeaderMap, name: &str) -> impl Iterator<Item = &'a str> {
    let values = headers.get_all(name).iter().filter_map(|v| v.to_str().ok());
    values
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
}

/// The names a `Connection` header lists: hop-by-hop for this message.
fn connection_named(headers: &HeaderMap) -> Vec<String> {
    let names = items(headers, "connection");
    names.map(str::to_ascii_lowercase).collect()
}

/// Request headers not forwarded (`x-condense-api-key` among them).
fn dropped(name: &HeaderName) -> bool {
    let n = name.as_str();
    hop_by_hop(name)
        || matches!(
            n,
            "host" | "content-length" | "cookie" | "forwarded" | "x-real-ip"
            // The answer comes back as it is sent, so its bill can be read
            // on the way (`proxy::bill`); the client is sent the same bytes
            // it would have decoded.
                | "accept-encoding"
        )
        || n.starts_with("x-forwarded-")
        || n.starts_with("x-condense-")
}

/// The client's headers as the provider gets them.
pub fn to_provider(client: &HeaderMap) -> HeaderMap {
    let listed = connection_named(client);
    let mut out = HeaderMap::new();
    for (name, value) in client {
        if !dropped(name) && !listed.iter().any(|l| l == name.as_str()) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// The name the provider's own `x-request-id` goes back under.
pub const PROVIDER_REQUEST_ID: &str = "x-provider-request-id";

/// The provider's headers as the client gets them (condense adds its own after).
pub fn to_client(provider: &HeaderMap) -> HeaderMap {
    let listed = connection_named(provider);
    let mut out = HeaderMap::new();
    for (name, value) in provider {
        let n = name.as_str();
        if hop_by_hop(name) || n.starts_with("x-condense-") || listed.iter().any(|l| l == n) {
            continue;
        }
        match n {
            "x-request-id" => {
                out.append(HeaderName::from_static(PROVIDER_REQUEST_ID), value.clone())
            }
            _ => out.append(name.clone(), value.clone()),
        };
    }
    out
}

/// Adds `beta` to the request's `anthropic-beta` list unless it is there.
pub fn add_beta(headers: &mut HeaderMap, beta: &str) {
    let present: Vec<&str> = items(headers, "anthropic-beta").collect();
    if !present.contains(&beta) {
        let joined = present.into_iter().chain([beta]).collect::<Vec<_>>();
        if let Ok(v) = joined.join(",").parse() {
            headers.insert("anthropic-beta", v);
        }
    }
}
