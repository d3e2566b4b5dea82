//! The HTTP layer: routes, extractors and middleware. Handlers parse, call
//! one domain function and answer; no domain logic lives here.

mod access;
mod catalog;
mod compress;
mod conversations;
mod extract;
mod guard;
mod health;
mod input;
mod middleware;
pub mod openapi;
mod playground;
mod proxy;
mod routes;
mod scrape;
mod screen;
mod tokens;
mod verdict;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::Uri;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

pub use access::{Access, Route};
pub use input::MAX_MODEL_CHARS;
pub use routes::all as routes;

use crate::error::ApiError;
use crate::state::AppState;
use crate::thread::echo;
use middleware::REQUEST_ID;

/// Every route condense serves, with its middleware: the `Router` that the
/// binary serves and the tests drive.
pub fn router(state: AppState) -> Router {
    let limit = state.config.limits.body_limit;
    let timeout = state.config.limits.request_timeout;
    let cors = guard::cors_layer(state.cors.as_ref());
    let metrics = state.metrics.clone();
    // The proxy's routes have no time limit: a healthy stream runs on.
    let api = routes::router(Access::timed).route_layer(axum::middleware::from_fn_with_state(
        timeout,
        middleware::time_limit,
    ));
    api.merge(routes::router(|a| !a.timed()))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(
            // Outermost first.
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn(middleware::screen_request_id))
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(middleware::make_span)
                        .on_response(DefaultOnResponse::new().level(Level::INFO)),
                )
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                // Outside the gates: a preflight carries no key, and a page
                // must be able to read a 401, 429 or 503.
                .option_layer(cors)
                // Outside the gates, the panic catcher, the time limit and
                // the body limit: their answers are counted too.
                .layer(axum::middleware::from_fn_with_state(
                    metrics,
                    middleware::observe,
                ))
                .layer(CatchPanicLayer::custom(middleware::panic_response))
                .layer(axum::middleware::from_fn(middleware::log_internal_errors))
                .layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    guard::admit,
                ))
                .layer(axum::middleware::from_fn_with_state(
                    limit,
                    middleware::body_limit,
                ))
                .layer(DefaultBodyLimit::max(limit)),
        )
        .with_state(state)
}

/// What the probe listener serves: the probes and `/metrics`, through the
/// same middleware; any other path is 404.
pub fn probe_router(state: AppState) -> Router {
    router(state).layer(axum::middleware::from_fn(routes::only_probes))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(echo(uri.path()).into_owned())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
