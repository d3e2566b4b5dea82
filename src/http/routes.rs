//! The route table: every route condense serves, declared once, in the
//! module that handles it, with who may call it ([`Access`]).
//!
//! Each resource module states its routes with [`routes!`], which makes
//! both its `router()` and its `ROUTES` entries from the same lines, so a
//! route cannot be served without being in the table. The gates
//! (`guard::admit`) look a request's matched route up here to choose its
//! key, rate limit and shedding; `tests/suite/openapi.rs` compares the table
//! with `openapi.yaml`; the probe listener serves the probes' rows.

use axum::Router;
use axum::extract::MatchedPath;

use crate::state::AppState;

/// Who may call a route, and what it may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Liveness and readiness: no key, never limited or shed.
    Probe,
    /// `/metrics`: a key when `metrics_require_key` is set; never limited.
    Metrics,
    /// The provider routes: the key travels in the provider's own header;
    /// rate limited; never shed (a long stream holds no API place).
    Proxy,
    /// The playground's page, files and examples: no key; limited and shed.
    Page,
    /// The API: a key (when keys are configured); limited and shed; within
    /// the request time limit.
    Api,
}

impl Access {
    /// Answers within the request time limit (a proxied stream runs as
    /// long as it runs: its provider client cuts only a stream gone idle).
    pub fn timed(self) -> bool {
        !matches!(self, Access::Proxy)
    }

    /// Served on the probe listener.
    pub fn probe(self) -> bool {
        matches!(self, Access::Probe | Access::Metrics)
    }
}

/// One route: its method (as the `axum::routing` function is named:
/// `get`, `post`), its path as axum matches it, its access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub access: Access,
}

impl Route {
    /// The method as HTTP spells it (`GET`).
    pub fn http_method(&self) -> String {
        self.method.to_ascii_uppercase()
    }
}

/// `routes! { Access::Api; post "/v1/tokens" => count }` declares a
/// module's `ROUTES` and its `router()`. A route may add a layer of its own
/// after a `;` (`post "/v1/messages" => proxy; Extension(..)`).
macro_rules! routes {
    ($access:expr; $($method:ident $path:literal => $handler:expr $(; $layer:expr)?),+ $(,)?) => {
        /// This module's rows of the route table.
        pub(super) const ROUTES: &[crate::http::routes::Route] = &[$(crate::http::routes::Route {
            method: stringify!($method),
            path: $path,
            access: $access,
        }),+];

        /// This module's routes, as [`ROUTES`] lists them.
        pub(super) fn router() -> axum::Router<crate::state::AppState> {
            axum::Router::new()$(.route($path, axum::routing::$method($handler)$(.layer($layer))?))+
        }
    };
}
pub(super) use routes;

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

/// The access of the route a request matched; `None` when it matched none
/// (a 404 or 405 goes through the gates of the API).
pub fn access(matched: Option<&MatchedPath>) -> Option<Access> {
    let path = matched?.as_str();
    all().find(|r| r.path == path).map(|r| r.access)
}
