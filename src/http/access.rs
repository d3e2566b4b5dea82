//! Who may call a route ([`Access`]), its row in the route table ([`Route`]),
//! and [`routes!`]. A leaf, so no handler imports the table.

/// Who may call a route, and what it may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Liveness and readiness: no key, never limited or shed.
    Probe,
    /// `/metrics`: a key when `metrics_require_key` is set; never limited.
    Metrics,
    /// The provider routes: a key in its own header; limited, never shed.
    Proxy,
    /// The playground's page, files and examples: no key; limited and shed.
    Page,
    /// The API: a key; limited and shed; within the request time limit.
    Api,
}

impl Access {
    /// Answers within the request time limit (a proxied stream may not).
    pub fn timed(self) -> bool {
        !matches!(self, Access::Proxy)
    }

    /// Served on the probe listener; passes every gate but the key one.
    pub fn probe(self) -> bool {
        matches!(self, Access::Probe | Access::Metrics)
    }

    /// Takes from a rate-limit bucket and reserves memory.
    pub fn limited(self) -> bool {
        !self.probe()
    }

    /// Needs a place among the requests at work.
    pub fn shed(self) -> bool {
        matches!(self, Access::Page | Access::Api)
    }
}

/// One route: its method (`get`, `post`), its path as axum matches it, its access.
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

/// `routes! { Access::Api; post "/v1/tokens" => count }` declares a module's
/// `ROUTES` and `router()`; a route may add a layer after a `;`.
macro_rules! routes {
    ($access:expr; $($method:ident $path:literal => $handler:expr $(; $layer:expr)?),+ $(,)?) => {
        /// This module's rows of the route table.
        pub(super) const ROUTES: &[crate::http::access::Route] = &[$(crate::http::access::Route {
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
