//! Sending a prepared request to the provider: the client's credentials and
//! provider headers pass through, hop-by-hop headers and condense's own do not.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName};

use super::bill::{Bill, Entry};
use super::thinking::DROP_BLOCK_BETA;
use super::{Endpoint, Prepared, Proxy, ProxyError, Report, headers};
use crate::cache::Turn;
use crate::thread::WireFormat;
use crate::upstream::Secret;

/// One request on its way to the provider, as the handler read it.
#[derive(Debug, Clone)]
pub struct Call {
    pub endpoint: Endpoint,
    /// Forwarded as it came (`?beta=true`, `?api-version=`).
    pub query: Option<String>,
    pub request_id: Option<String>,
    /// The caller may spend the operator's provider key.
    pub may_spend: bool,
}

/// The provider's answer, not yet read, and what condense did.
pub struct Forwarded {
    pub response: reqwest::Response,
    pub report: Report,
}

impl Proxy {
    /// Sends a prepared request; logs and counts it here if it goes unchanged.
    pub async fn send(
        &self,
        call: &Call,
        headers: &HeaderMap,
        prepared: Prepared,
    ) -> Result<Forwarded, ProxyError> {
        let format = call.endpoint.format();
        let url = url(self.target(format)?, call);
        let Prepared { body, report } = prepared;
        if let Some(why) = report.unchanged {
            why.record(self.compressor.metrics(), call, report.note.as_deref());
        }
        let mut out = headers::to_provider(headers);
        if report.drop_block {
            headers::add_beta(&mut out, DROP_BLOCK_BETA);
        }
        self.inject_key(format, &mut out, call.may_spend)?;
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
            .proxy_forwarded(format.as_str(), response.status().as_u16());
        Ok(Forwarded { response, report })
    }

    /// The answer's bytes for the client, as they come; its bill is read
    /// on the way (`bill`), never holding a byte back, and written to the
    /// conversation's ledger once the answer is over.
    pub fn relay(
        &self,
        call: &Call,
        report: &Report,
        response: reqwest::Response,
    ) -> impl futures_util::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send + 'static {
        let format = call.endpoint.format();
        let entry =
            route(call.endpoint)
                .zip(report.conversation.clone())
                .map(|(route, conversation)| Entry {
                    cache: self.compressor.summarizer().cache().clone(),
                    turn: Turn {
                        conversation,
                        route,
                        provider: format.as_str(),
                        model: None,
                        sent_tokens: report.tokens_before.map(|n| n as u64),
                        // Shadow mode counts what it would have sent, and sends the thread.
                        forwarded_tokens: match report.compressed {
                            true => report.tokens_after,
                            false => report.tokens_before,
                        }
                        .map(|n| n as u64),
                        bill: Bill::default(),
                        dropped_items: 0,
                        summary_call_tokens: report.summary_call_tokens,
                        reason: report.reason.map(|r| r.as_str().to_string()),
                    },
                });
        let metrics = self.compressor.metrics().clone();
        super::bill::metered(response, format, metrics, entry)
    }

    /// Refuses, before any work, a request without credentials of its own
    /// that would spend the operator's key for a caller without `provider`.
    pub fn authorize(
        &self,
        format: WireFormat,
        headers: &HeaderMap,
        may_spend: bool,
    ) -> Result<(), ProxyError> {
        let forwarded = headers::to_provider(headers);
        if may_spend || self.config.api_key.is_empty() || brings_credentials(format, &forwarded) {
            return Ok(());
        }
        Err(ProxyError::Forbidden(format!(
            "this API key may not use the operator's provider key (it lacks the `provider` permission); send your own provider key in {}",
            match format {
                WireFormat::Anthropic => "`x-api-key`",
                WireFormat::OpenAi | WireFormat::Responses => "`Authorization`",
            }
        )))
    }

    /// The operator's key for requests without credentials (checked again on the headers that go).
    fn inject_key(
        &self,
        format: WireFormat,
        headers: &mut HeaderMap,
        may_spend: bool,
    ) -> Result<(), ProxyError> {
        self.authorize(format, headers, may_spend)?;
        let key = &self.config.api_key;
        if key.is_empty() || brings_credentials(format, headers) {
            return Ok(());
        }
        let (name, value) = match format {
            WireFormat::OpenAi | WireFormat::Responses => {
                (AUTHORIZATION, format!("Bearer {}", key.expose()))
            }
            WireFormat::Anthropic => (
                HeaderName::from_static(ANTHROPIC_KEY),
                key.expose().to_string(),
            ),
        };
        if let Ok(mut v) = value.parse::<reqwest::header::HeaderValue>() {
            v.set_sensitive(true);
            headers.insert(name, v);
        }
        Ok(())
    }
}

impl Proxy {
    /// The credentials a compaction by the conversation's provider goes
    /// with: those the request itself is forwarded with (the client's, or
    /// the operator's key for a caller that may spend it), and the
    /// organization and project the item is encrypted for. Only for the
    /// Responses route, the only one `provider` compacts on.
    pub fn credentials(
        &self,
        format: WireFormat,
        headers: &HeaderMap,
        may_spend: bool,
    ) -> Vec<(String, Secret)> {
        let mut out = headers::to_provider(headers);
        if format != WireFormat::Responses || self.inject_key(format, &mut out, may_spend).is_err()
        {
            return Vec::new();
        }
        let names = [
            AUTHORIZATION.as_str(),
            AZURE_KEY,
            "openai-organization",
            "openai-project",
        ];
        names
            .into_iter()
            .filter_map(|n| {
                let v = out.get(n)?.to_str().ok()?;
                Some((n.to_string(), Secret::new(v)))
            })
            .collect()
    }
}

/// `Authorization`, Anthropic's `x-api-key`, or Azure OpenAI's `api-key`.
fn brings_credentials(format: WireFormat, headers: &HeaderMap) -> bool {
    headers.contains_key(AUTHORIZATION)
        || match format {
            WireFormat::Anthropic => headers.contains_key(ANTHROPIC_KEY),
            WireFormat::OpenAi | WireFormat::Responses => headers.contains_key(AZURE_KEY),
        }
}

const ANTHROPIC_KEY: &str = "x-api-key";
const AZURE_KEY: &str = "api-key";

/// The route a turn of the ledger was called on; the counting endpoints
/// bill nothing and are not turns, nor is a client's compaction (its bill
/// is counted in the metrics; condense reads no thread of it to name).
fn route(endpoint: Endpoint) -> Option<&'static str> {
    match endpoint {
        Endpoint::ChatCompletions => Some("/v1/chat/completions"),
        Endpoint::Responses => Some("/v1/responses"),
        Endpoint::Messages => Some("/v1/messages"),
        Endpoint::ResponsesInputTokens
        | Endpoint::ResponsesCompact
        | Endpoint::MessagesCountTokens => None,
    }
}

/// Base URL, the endpoint's path, the client's query string.
fn url(base: &str, call: &Call) -> String {
    let path = call.endpoint.path();
    match &call.query {
        Some(query) => format!("{base}{path}?{query}"),
        None => format!("{base}{path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_string_follows_the_endpoint_path() {
        let call = |endpoint, query: Option<&str>| Call {
            endpoint,
            query: query.map(str::to_string),
            request_id: None,
            may_spend: true,
        };
        let anthropic = "https://api.anthropic.com";
        assert_eq!(
            url(anthropic, &call(Endpoint::Messages, Some("beta=true"))),
            "https://api.anthropic.com/v1/messages?beta=true"
        );
        assert_eq!(
            url(anthropic, &call(Endpoint::MessagesCountTokens, None)),
            "https://api.anthropic.com/v1/messages/count_tokens"
        );
        let openai = "https://gw.example/openai/v1";
        assert_eq!(
            url(
                openai,
                &call(
                    Endpoint::ResponsesInputTokens,
                    Some("api-version=2025-04-01")
                )
            ),
            "https://gw.example/openai/v1/responses/input_tokens?api-version=2025-04-01"
        );
        assert_eq!(
            url(openai, &call(Endpoint::ChatCompletions, Some(""))),
            "https://gw.example/openai/v1/chat/completions?"
        );
    }
}
