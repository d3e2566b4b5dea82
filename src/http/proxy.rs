//! The drop-in proxy's routes: `POST /v1/chat/completions`,
//! `POST /v1/responses`, `POST /v1/messages`, and the counting ones,
//! `POST /v1/responses/input_tokens` and `POST /v1/messages/count_tokens`.
//! Parses the headers condense reads, hands the body to the proxy service,
//! and relays the provider's answer as it streams in.

use super::access::Access;
use std::time::Duration;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;

use super::extract::{RawBody, require_json};
use super::middleware::REQUEST_ID;
use crate::admission::{Ticket, memory};
use crate::error::{ApiError, Result};
use crate::guard::Caller;
use crate::proxy::{Call, Endpoint, Forwarded, Options, PROFILE, Prepared, SHADOW, Unchanged};
use crate::serve::EndWithClient;
use crate::state::AppState;

// One handler for every route, told by an extension which provider
// endpoint it forwards to.
super::access::routes! {
    Access::Proxy;
    post "/v1/chat/completions" => proxy; Extension(Endpoint::ChatCompletions),
    post "/v1/responses" => proxy; Extension(Endpoint::Responses),
    post "/v1/responses/input_tokens" => proxy; Extension(Endpoint::ResponsesInputTokens),
    post "/v1/messages" => proxy; Extension(Endpoint::Messages),
    post "/v1/messages/count_tokens" => proxy; Extension(Endpoint::MessagesCountTokens),
}

/// The note of a request forwarded unchanged because every place among
/// the requests at work was taken.
const OVERLOADED: &str = "condense is at its concurrency limit; forwarded unchanged";
/// The same when the memory budget has too little free to compress it.
const OVER_BUDGET: &str = "condense is at its memory budget; forwarded unchanged";

/// Compresses while holding a place among the requests at work (and the
/// memory compressing may take), then lets them go before the provider's
/// answer, however long that runs. When either is short the request goes
/// through unchanged rather than refused: the agent's call still reaches
/// its provider, condense only skips its own work. The body itself stays
/// reserved until the provider answers (the gate refused it if it did not fit).
async fn proxy(
    State(app): State<AppState>,
    Extension(endpoint): Extension<Endpoint>,
    caller: Option<Extension<Caller>>,
    ticket: Option<Extension<Ticket>>,
    tie: Option<Extension<EndWithClient>>,
    req: Request,
) -> Result<Response> {
    let query = req.uri().query().map(str::to_string);
    let format = endpoint.format();
    // Every refusal before the body is read.
    require_json(req.headers())?;
    app.proxy.target(format)?;
    // No caller means the gates did not run: no permission (fail closed).
    let caller = caller.map_or(Caller::ANONYMOUS, |c| c.0);
    app.proxy
        .authorize(format, req.headers(), caller.provider)?;
    let (headers, body) = read(&app, req).await?;
    // From here the work is the provider's, billed and maybe minutes long:
    // a client that leaves ends it (the connection closes, dropping this).
    if let Some(Extension(tie)) = tie {
        tie.tie();
    }
    let call = Call {
        endpoint,
        query,
        request_id: header(&headers, REQUEST_ID.as_str()).map(str::to_string),
        may_spend: caller.provider,
    };
    let options = Options {
        profile: header(&headers, PROFILE).map(str::to_string),
        shadow: header(&headers, SHADOW)
            .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1"),
        upstream_allowed: caller.llm,
    };
    // No ticket means the gates did not run: compressing holds nothing.
    let ticket = ticket.map(|t| t.0).unwrap_or_default();
    let prepared = if !ticket.enter(&app.overload) {
        Prepared::unchanged(body, Unchanged::Overloaded, OVERLOADED)
    } else if !ticket.try_grow_to(memory::model_bytes(body.len() as u64)) {
        Prepared::unchanged(body, Unchanged::Overloaded, OVER_BUDGET)
    } else {
        app.proxy.prepare(format, &options, body).await?
    };
    // Until the provider answers, the request holds the body it forwards
    // (and all it reserved while a timed-out compression still runs: see
    // `Ticket::done`).
    ticket.done(memory::body_bytes(prepared.body.len() as u64));
    let Forwarded { response, report } = app.proxy.send(&call, &headers, prepared).await?;
    let mut out = Response::builder().status(response.status());
    if let Some(h) = out.headers_mut() {
        *h = crate::proxy::to_client(response.headers());
        for (name, value) in report.headers() {
            if let Some(v) = value.and_then(|v| HeaderValue::from_str(&v).ok()) {
                h.insert(HeaderName::from_static(name), v);
            }
        }
    }
    // Relayed chunk by chunk: a streamed answer is never buffered whole, and
    // a client that goes away drops the stream (`EndWithClient`), which
    // ends the provider call.
    out.body(Body::from_stream(response.bytes_stream()))
        .map_err(|e| ApiError::Internal(e.into()))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The request's headers and body. The provider's answer may stream for as
/// long as it streams (these routes have no request time limit), but the
/// caller's body must arrive within it: a client that stops sending would
/// otherwise hold its connection forever.
async fn read(app: &AppState, req: Request) -> Result<(HeaderMap, Bytes)> {
    let headers = req.headers().clone();
    let limit = app
        .config
        .limits
        .request_timeout
        .max(Duration::from_secs(1));
    let body = tokio::time::timeout(limit, RawBody::from_request(req, app))
        .await
        .map_err(|_| ApiError::Timeout(limit.as_secs()))??;
    Ok((headers, body.0))
}
