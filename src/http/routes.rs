//! The route table: every route condense serves, declared once in its module
//! with [`routes!`](super::access) (so it cannot be served without being in
//! the table), with who may call it ([`Access`]). The gates, the probe
//! listener and `tests/suite/openapi.rs` read it.

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
const GROUPS: [Group; 10] = [
    (super::health::ROUTES, super::health::router),
    (super::scrape::ROUTES, super::scrape::router),
    (super::tokens::ROUTES, super::tokens::router),
    (super::verdict::ROUTES, super::verdict::router),
    (super::compress::ROUTES, super::compress::router),
    (super::catalog::ROUTES, super::catalog::router),
    (super::conversations::ROUTES, super::conversations::router),
    (super::openapi::ROUTES, super::openapi::router),
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

/// The access of the route a request matched; the API's when none.
pub fn access(matched: Option<&MatchedPath>) -> Access {
    let path = matched.map(MatchedPath::as_str);
    all()
        .find(|r| Some(r.path) == path)
        .map_or(Access::Api, |r| r.access)
}

/// Lets only the probes and `/metrics` through on the probe listener.
pub async fn only_probes(req: Request, next: Next) -> Response {
    let matched = req.extensions().get::<MatchedPath>();
    if access(matched).probe() {
        next.run(req).await
    } else {
        ApiError::NotFound(echo(req.uri().path()).into_owned()).into_response()
    }
}
