//! Cross-cutting request handling: request ids, trace spans, metrics, time
//! limit, panics, and the log line of a 500.

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, Response};
use axum::middleware::Next;
use axum::response::IntoResponse;
use tracing::Span;

use super::extract::BodyLimit;
use crate::error::{ApiError, InternalCause, ProblemType};
use crate::metrics::Metrics;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The route label of a request no route matched (the 404 fallback): the
/// raw path is the caller's, and would make a series per path.
pub const UNMATCHED: &str = "unmatched";

/// The route a request matched (its template), or [`UNMATCHED`].
fn route(req: &Request) -> &str {
    req.extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
}

/// The span of one request: method, matched route and request id, never the body.
pub fn make_span(req: &Request) -> Span {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let id = req
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    tracing::info_span!(
        "request",
        method = %req.method(),
        route = route.as_deref().unwrap_or("unmatched"),
        request_id = %id,
    )
}

/// Counts and times every answer by route template and status, and its
/// problem type when it is a problem (see [`ProblemType`]). Time is to the
/// response head: a streamed proxy answer goes on after it.
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
    State(secs): State<u64>,
    req: Request,
    next: Next,
) -> axum::response::Response {
    match tokio::time::timeout(Duration::from_secs(secs), next.run(req)).await {
        Ok(res) => res,
        Err(_) => ApiError::Timeout(secs).into_response(),
    }
}

/// Lets the body extractor name the limit in its 413.
pub async fn body_limit_hint(
    State(limit): State<usize>,
    mut req: Request,
    next: Next,
) -> axum::response::Response {
    req.extensions_mut().insert(BodyLimit(limit));
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
