//! `GET /metrics`: the Prometheus exposition of this process's metrics.

use super::access::Access;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use crate::metrics::Format;
use crate::state::AppState;

super::access::routes! { Access::Metrics; get "/metrics" => scrape }

/// OpenMetrics when the scraper asks for it, else the classic text format.
async fn scrape(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let format = Format::negotiate(super::extract::text(&headers, header::ACCEPT));
    (
        [(header::CONTENT_TYPE, format.content_type())],
        app.metrics.render(format),
    )
        .into_response()
}
