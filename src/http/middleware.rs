//! Cross-cutting request handling: request ids, trace spans, metrics, time
//! limit, panics, and the log line of a 500.

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, Response};
use axum::middleware::Next;
use axum::response::IntoResponse;
use tracing::Span;

use super::extract::text;
use crate::error::{ApiError, InternalCause, ProblemType};
use crate::metrics::Metrics;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The route template a request matched, or `unmatched`: never the raw path.
fn route(req: &Request) -> &str {
    req.extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
}

/// Longest client request id kept, in bytes.
const MAX_REQUEST_ID: usize = 64;

/// Drops a client's `x-request-id` unless it is one short token of visible
/// ASCII (the id layer makes a new one): it goes into every log line.
pub async fn screen_request_id(mut req: Request, next: Next) -> axum::response::Response {
    let mut ids = req.headers().get_all(&REQUEST_ID).iter();
    let keep = match (ids.next(), ids.next()) {
        (None, _) => true,
        (Some(id), None) => acceptable_request_id(id.as_bytes()),
        // Two ids: which one the logs carry would be ambiguous.
        (Some(_), Some(_)) => false,
    };
    if !keep {
        req.headers_mut().remove(&REQUEST_ID);
    }
    next.run(req).await
}

/// Visible ASCII without the characters that end or escape a quoted log field.
fn acceptable_request_id(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b'\'' | b'`'))
}

/// The span of one request: method, matched route and request id, never the body.
pub fn make_span(req: &Request) -> Span {
    let id = text(req.headers(), &REQUEST_ID).unwrap_or_default();
    tracing::info_span!(
        "request",
        method = %req.method(),
        route = route(req),
        request_id = %id,
    )
}

/// Counts and times every answer by route, status and [`ProblemType`].
pub async fn observe(
    State(metrics): State<Metrics>,
    req: Request,
    next: Next,
) -> axum::response::Response {
    let route = route(&req).to_owned();
    let _in_flight = metrics.request_started();
    let started = Instant::now();
    let res = next.run(req).await;
    let problem = res.extensions().get::<ProblemType>().map(|p| p.0);
    metrics.request_finished(&route, res.status().as_u16(), problem, started.elapsed());
    res
}

/// Answers 503 problem+json when a request runs past the configured limit.
pub async fn time_limit(
    State(limit): State<Duration>,
    req: Request,
    next: Next,
) -> axum::response::Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(res) => res,
        Err(_) => ApiError::Timeout(limit.as_secs()).into_response(),
    }
}

/// Answers 413 from `Content-Length` before the body is polled, so a client
/// sending `Expect: 100-continue` never uploads it.
pub async fn body_limit(
    State(limit): State<usize>,
    req: Request,
    next: Next,
) -> axum::response::Response {
    let declared = text(req.headers(), axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return ApiError::PayloadTooLarge { limit }.into_response();
    }
    next.run(req).await
}

/// Logs the cause chain of a 500, which the client never sees.
pub async fn log_internal_errors(req: Request, next: Next) -> axum::response::Response {
    let res = next.run(req).await;
    if let Some(InternalCause(cause)) = res.extensions().get::<InternalCause>() {
        tracing::error!(cause = %cause, "request failed");
    }
    res
}

/// A panic in a handler becomes a 500 problem (logged); the server keeps serving.
pub fn panic_response(err: Box<dyn std::any::Any + Send + 'static>) -> Response<axum::body::Body> {
    let what = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = %what, "handler panicked");
    ApiError::Internal(anyhow::anyhow!("panic: {what}")).into_response()
}
