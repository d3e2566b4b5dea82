//! The screen, the first of the gates: a request a web page made through its
//! visitor's browser is refused (403) by its `Host` or its `Origin` (see
//! `guard::hosts`), on every route but the probes. The body readers refuse
//! any content type but JSON.

use axum::extract::Request;
use axum::http::header;

use crate::error::ApiError;
use crate::guard::origin_allowed;
use crate::state::AppState;
use crate::thread::echo;

pub(super) fn check(s: &AppState, req: &Request) -> Result<(), ApiError> {
    if matches!(req.uri().path(), "/healthz" | "/readyz") {
        return Ok(());
    }
    let text = |name| req.headers().get(name).map(|v| v.to_str().unwrap_or("?"));
    // RFC 9112: an absolute-form target names the host, whatever `Host`
    // says; two `Host` headers name none.
    if req.headers().get_all(header::HOST).iter().nth(1).is_some() {
        return Err(ApiError::Forbidden(
            "the request has more than one `Host` header".into(),
        ));
    }
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str())
        .or(text(header::HOST));
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
