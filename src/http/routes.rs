//! The route table: every route condense serves, declared once, in the
//! module that handles it, with who may call it ([`Access`]).
//!
//! Each resource module states its routes with [`routes!`](super::access),
//! which makes both its `router()` and its `ROUTES` entries from the same
//! lines, so a route cannot be served without being in the table. The gates
//! (`guard::admit`) look a request's matched route up here to choose its
//! key, rate limit and shedding; `tests/suite/openapi.rs` compares the table
//! with `openapi.yaml`; the probe listener serves the probes' rows.

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::access::{Access, Route};
use crate::error::ApiError;
use crate::state::AppState;
use crate::thread::echo;

/// One module's routes: its rows and its router.
type Group = (&'static [Route], fn() -> Router<AppState>);

/// Every module that serves routes.
const GROUPS: [Group; 8] = [
    (super::health::ROUTES, super::health::router),
    (super::scrape::ROUTES, super::scrape::router),
    (super::tokens::ROUTES, super::tokens::router),
    (super::verdict::ROUTES, super::verdict::router),
    (super::compress::ROUTES, super::compress::router),
    (super::catalog::ROUTES, super::catalog::router),
    (super::playground::ROUTES, super::playground::router),
    (super::proxy::ROUTES, super::proxy::router),
];

/// Every route condense serves.
pub fn all() -> impl Iterator<Item = &'static Route> {
    GROUPS.iter().flat_map(|(routes, _)| routes.iter())
}

/// The routes whose rows satisfy `keep`, as one router.
pub(super) fn router(keep: impl Fn(Access) -> bool) -> Router<AppState> {
    GROUPS
        .iter()
        .filter(|(routes, _)| routes.iter().all(|r| keep(r.access)))
        .fold(Router::new(), |app, (_, router)| app.merge(router()))
}

/// The access of the route a request matched; the API's when it matched
/// none (a 404 or 405 goes through the gates of the API).
pub fn access(matched: Option<&MatchedPath>) -> Access {
    let path = matched.map(MatchedPath::as_str);
    all()
        .find(|r| Some(r.path) == path)
        .map_or(Access::Api, |r| r.access)
}

/// Lets only the probes' routes (and `/metrics`) through on the probe
/// listener (`CONDENSE_PROBE_LISTEN`): its connections are few and kept
/// for probes, so nothing else may be served on them.
pub async fn only_probes(req: Request, next: Next) -> Response {
    let matched = req.extensions().get::<MatchedPath>();
    if access(matched).probe() {
        next.run(req).await
    } else {
        ApiError::NotFound(echo(req.uri().path()).into_owned()).into_response()
    }
}
