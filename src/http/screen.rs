//! The screen in front of the gates: a request a web page made through
//! its visitor's browser is refused before anything else reads it (see
//! `guard::hosts` for the attack). Two checks, on every route but the
//! probes (an orchestrator names a pod by its address):
//! - its `Host` must be one condense answers to (403);
//! - its `Origin`, when it has one, must be condense's own or one
//!   `CONDENSE_CORS_ORIGINS` lists (403).
//!
//! The third check, a JSON content type, is each route's own: the API's
//! extractor and the proxy's body reader refuse anything else with 415, so
//! no body a page can send without a preflight is ever read.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::guard::origin_allowed;
use crate::state::AppState;
use crate::thread::echo;

pub async fn screen(State(app): State<AppState>, req: Request, next: Next) -> Response {
    match check(&app, &req) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

fn check(s: &AppState, req: &Request) -> Result<(), ApiError> {
    if matches!(req.uri().path(), "/healthz" | "/readyz") {
        return Ok(());
    }
    let text = |name| req.headers().get(name).map(|v| v.to_str().unwrap_or("?"));
    let host = text(header::HOST);
    if !s.hosts.allows(host) {
        return Err(ApiError::Forbidden(format!(
            "condense does not answer to the host `{}`; add it to CONDENSE_ALLOWED_HOSTS",
            echo(host.unwrap_or_default())
        )));
    }
    if let Some(origin) = text(header::ORIGIN)
        && !origin_allowed(s.cors.as_ref(), origin, host)
    {
        return Err(ApiError::Forbidden(format!(
            "requests from the origin `{}` are refused; list it in CONDENSE_CORS_ORIGINS to allow a page there to call condense",
            echo(origin)
        )));
    }
    Ok(())
}
