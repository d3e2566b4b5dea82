//! Sending a prepared request to the provider: the client's credentials and
//! provider headers pass through, hop-by-hop headers and condense's own do not.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName};

use super::{Prepared, Provider, Proxy, ProxyError, Report};

/// The provider's answer, not yet read (a stream is relayed as it comes),
/// and what condense did to the request.
pub struct Forwarded {
    pub response: reqwest::Response,
    pub report: Report,
}

/// Headers that describe one connection, not the message: never relayed
/// (RFC 9110 §7.6.1), in either direction.
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

/// Request headers that are not forwarded: hop-by-hop ones, the ones the
/// forwarding client sets itself, and condense's own (`x-condense-api-key`
/// among them: a condense key never reaches a provider).
fn dropped(name: &HeaderName) -> bool {
    hop_by_hop(name)
        || matches!(name.as_str(), "host" | "content-length")
        || name.as_str().starts_with("x-condense-")
}

/// Adds `beta` to the request's `anthropic-beta` list (one header,
/// comma-separated, as the SDKs send it), unless it is already there.
fn add_beta(headers: &mut HeaderMap, beta: &str) {
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

impl Proxy {
    /// Sends a prepared request: the caller's headers (less those of one
    /// hop and condense's own), the operator's key when it brings none.
    pub async fn send(
        &self,
        provider: Provider,
        headers: &HeaderMap,
        prepared: Prepared,
    ) -> Result<Forwarded, ProxyError> {
        let base = self.target(provider)?;
        let url = match provider {
            Provider::OpenAi => format!("{base}/chat/completions"),
            Provider::Responses => format!("{base}/responses"),
            Provider::Anthropic => format!("{base}/v1/messages"),
        };
        let Prepared { body, beta, report } = prepared;
        let mut out = HeaderMap::new();
        for (name, value) in headers {
            if !dropped(name) {
                out.append(name.clone(), value.clone());
            }
        }
        if let Some(beta) = beta {
            add_beta(&mut out, beta);
        }
        self.inject_key(provider, &mut out);
        let response = self
            .http
            .post(url)
            .headers(out)
            .body(body)
            .send()
            .await
            .map_err(|e| {
                let what = if e.is_timeout() {
                    "timed out"
                } else {
                    "connection failed"
                };
                tracing::warn!(error = %e.without_url(), "the provider could not be reached");
                ProxyError::Unreachable(what)
            })?;
        self.compressor
            .metrics()
            .proxy_forwarded(provider.as_str(), response.status().as_u16());
        Ok(Forwarded { response, report })
    }

    /// The operator's key, for requests that bring no credentials.
    fn inject_key(&self, provider: Provider, headers: &mut HeaderMap) {
        let key = &self.config.api_key;
        if key.is_empty() {
            return;
        }
        let (name, value) = match provider {
            Provider::OpenAi | Provider::Responses => {
                (AUTHORIZATION, format!("Bearer {}", key.expose()))
            }
            Provider::Anthropic => (
                HeaderName::from_static("x-api-key"),
                key.expose().to_string(),
            ),
        };
        if headers.contains_key(&name) || headers.contains_key(AUTHORIZATION) {
            return;
        }
        if let Ok(mut v) = value.parse::<reqwest::header::HeaderValue>() {
            v.set_sensitive(true);
            headers.insert(name, v);
        }
    }
}
