//! Which headers cross the proxy, each way. The client's credentials and
//! provider headers pass; what describes one connection (RFC 9110 §7.6.1:
//! the hop-by-hop names, and any name a `Connection` header lists) does
//! not, nor condense's own headers, nor what would tell a provider more
//! about the client than the request needs (cookies, forwarding chains).
//! On the way back the provider's `x-request-id` is kept under another name,
//! so the one in the answer is condense's, the id its logs carry.

use reqwest::header::{HeaderMap, HeaderName};

/// Headers that describe one connection, not the message: never relayed,
/// in either direction.
pub fn hop_by_hop(name: &HeaderName) -> bool {
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

/// The names a `Connection` header lists: hop-by-hop for this message.
fn connection_named(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all("connection")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Request headers that are not forwarded: hop-by-hop ones, the ones the
/// forwarding client sets itself, condense's own (`x-condense-api-key`
/// among them: a condense key never reaches a provider), and the client's
/// cookies and forwarding chain.
fn dropped(name: &HeaderName) -> bool {
    let n = name.as_str();
    hop_by_hop(name)
        || matches!(
            n,
            "host" | "content-length" | "cookie" | "forwarded" | "x-real-ip"
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

/// The provider's headers as the client gets them (condense adds its own
/// after): no hop-by-hop header, no `x-condense-*` a provider made up, its
/// `x-request-id` as [`PROVIDER_REQUEST_ID`].
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

/// condense's own headers on the proxy routes, each name written once.
pub mod names {
    /// Request: names the profile for this request (default: `default`).
    pub const PROFILE: &str = "x-condense-profile";
    /// Request: `true` forwards unchanged and reports what compression
    /// would have done; the answer carries it back.
    pub const SHADOW: &str = "x-condense-shadow";
    pub const COMPRESSED: &str = "x-condense-compressed";
    pub const WOULD_COMPRESS: &str = "x-condense-would-compress";
    pub const TOKENS_BEFORE: &str = "x-condense-tokens-before";
    pub const TOKENS_AFTER: &str = "x-condense-tokens-after";
    pub const TOKENS_REMOVED: &str = "x-condense-tokens-removed";
    pub const SUMMARY_CACHED: &str = "x-condense-summary-cached";
    pub const SUMMARY_CALL_TOKENS: &str = "x-condense-summary-call-tokens";
    pub const PREFIX_REUSED: &str = "x-condense-prefix-reused";
    pub const PRECOMPUTE: &str = "x-condense-precompute";
    pub const FIDELITY: &str = "x-condense-fidelity";
    pub const THINKING: &str = "x-condense-thinking";
    pub const NOTE: &str = "x-condense-note";

    /// Every header an answer may carry to say what condense did: the
    /// CORS layer exposes them, the README's proxy section explains them.
    pub const REPORT: [&str; 13] = [
        COMPRESSED,
        SHADOW,
        WOULD_COMPRESS,
        TOKENS_BEFORE,
        TOKENS_AFTER,
        TOKENS_REMOVED,
        SUMMARY_CACHED,
        SUMMARY_CALL_TOKENS,
        PREFIX_REUSED,
        PRECOMPUTE,
        FIDELITY,
        THINKING,
        NOTE,
    ];
}

/// Adds `beta` to the request's `anthropic-beta` list (one header,
/// comma-separated, as the SDKs send it), unless it is already there.
pub fn add_beta(headers: &mut HeaderMap, beta: &str) {
    let name = HeaderName::from_static("anthropic-beta");
    let present: Vec<String> = headers
        .get_all(&name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty())
        .collect();
    if present.iter().any(|b| b == beta) {
        return;
    }
    let joined = present
        .into_iter()
        .chain([beta.to_string()])
        .collect::<Vec<_>>()
        .join(",");
    if let Ok(v) = joined.parse() {
        headers.insert(name, v);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::names::REPORT;

    /// The README's table of the headers the proxy adds names each report
    /// header, and no other.
    #[test]
    fn the_readme_lists_every_report_header() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        let listed: BTreeSet<&str> = readme
            .lines()
            .filter(|l| l.starts_with("| `x-condense-"))
            .flat_map(|l| l.split('|').nth(1).unwrap().split('`'))
            .filter(|n| n.starts_with("x-condense-"))
            .collect();
        assert_eq!(listed, BTreeSet::from(REPORT));
    }
}
