//! The drop-in proxy's routes: reads condense's headers, hands the body to
//! the proxy service (but a client's own compaction, which goes as it
//! came), and relays the provider's answer as it streams in.

use super::access::Access;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;

use super::extract::{RawBody, require_json, text};
use super::middleware::REQUEST_ID;
use crate::admission::{Ticket, memory};
use crate::error::{ApiError, Result};
use crate::guard::{Bucket, Caller};
use crate::proxy::{Call, Endpoint, Forwarded, Options, PROFILE, Prepared, SHADOW, Unchanged};
use crate::serve::EndWithClient;
use crate::state::AppState;
use crate::thread::{Shape, WireFormat};

super::access::routes! {
    Access::Proxy;
    post "/v1/chat/completions" => proxy; Extension(Endpoint::ChatCompletions),
    post "/v1/responses" => proxy; Extension(Endpoint::Responses),
    post "/v1/responses/input_tokens" => proxy; Extension(Endpoint::ResponsesInputTokens),
    post "/v1/responses/compact" => proxy; Extension(Endpoint::ResponsesCompact),
    post "/v1/messages" => proxy; Extension(Endpoint::Messages),
    post "/v1/messages/count_tokens" => proxy; Extension(Endpoint::MessagesCountTokens),
}

const OVERLOADED: &str = "condense is at its concurrency limit; forwarded unchanged";
const OVER_BUDGET: &str = "condense is at its memory budget; forwarded unchanged";

/// Compresses while holding a place and the memory it takes, and lets them
/// go before the provider answers. When either is short the request goes
/// through unchanged, not refused: condense only skips its own work.
async fn proxy(
    State(app): State<AppState>,
    Extension(endpoint): Extension<Endpoint>,
    caller: Caller,
    ticket: Option<Extension<Ticket>>,
    who: Option<Extension<Bucket>>,
    tie: Option<Extension<EndWithClient>>,
    req: Request,
) -> Result<Response> {
    let query = req.uri().query().map(str::to_string);
    let format = endpoint.format();
    // Every refusal before the body is read.
    require_json(req.headers())?;
    app.proxy.target(format)?;
    app.proxy
        .authorize(format, req.headers(), caller.provider)?;
    let (headers, body) = read(&app, req).await?;
    // The provider's work is billed and may be long: a client that leaves ends it.
    if let Some(Extension(tie)) = tie {
        tie.tie();
    }
    let call = Call {
        endpoint,
        query,
        request_id: text(&headers, REQUEST_ID.as_str()).map(str::to_string),
        may_spend: caller.provider,
    };
    let options = Options {
        profile: text(&headers, PROFILE).map(str::to_string),
        shadow: text(&headers, SHADOW).is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1"),
        upstream_allowed: caller.llm,
        credentials: app.proxy.credentials(format, &headers, caller.provider),
    };
    // No ticket means the gates did not run: compressing holds nothing.
    let ticket = ticket.map(|t| t.0).unwrap_or_default();
    let prepared = match endpoint.passed_through() {
        Some(note) => Prepared::unchanged(body, Unchanged::NothingToDo, note),
        None => {
            let who = who.map_or(Bucket::Unknown, |w| w.0);
            prepare(&app, format, &options, &ticket, who, body).await?
        }
    };
    // Until the provider answers, the request holds the body it forwards.
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
    // Relayed chunk by chunk, never buffered whole.
    let relayed = app.proxy.relay(&call, &report, response);
    out.body(Body::from_stream(relayed))
        .map_err(|e| ApiError::Internal(e.into()))
}

/// The body compressed when due, while holding a place and the memory it
/// takes; as it came, with a note, when either is short.
async fn prepare(
    app: &AppState,
    format: WireFormat,
    options: &Options,
    ticket: &Ticket,
    who: Bucket,
    body: Bytes,
) -> Result<Prepared> {
    let entered = ticket.enter(&app.overload, who);
    // One pass over the body: what it is charged, and what bounds its reading.
    let shape = entered.then(|| Shape::of(&body));
    Ok(match shape {
        None => Prepared::overloaded(format, body, OVERLOADED),
        Some(s) if !ticket.try_grow_to(memory::parsed_bytes(&s)) => {
            Prepared::overloaded(format, body, OVER_BUDGET)
        }
        Some(s) => app.proxy.prepare(format, options, body, s).await?,
    })
}

/// The request's headers and body, which must arrive as fast as the API's
/// (`extract::arrived`; these routes have no time limit otherwise).
async fn read(app: &AppState, req: Request) -> Result<(HeaderMap, Bytes)> {
    let headers = req.headers().clone();
    let body = RawBody::from_request(req, app).await?;
    Ok((headers, body.0))
}
