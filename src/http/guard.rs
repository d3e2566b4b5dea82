//! The gates in front of the routes, in the order a request meets them:
//! its API key (401), its rate limit (429), a place among the requests at
//! work and room in the memory budget (503 `overloaded`). The probes (`/healthz`, `/readyz`) and
//! `/metrics` pass every gate but the key one (and that only when
//! `CONDENSE_METRICS_REQUIRE_KEY` asks for it): an orchestrator must see a
//! busy replica as alive, and a scraper must see what made it busy.
//!
//! Where each route stands:
//! - the API (`/v1/...` but the proxy): `Authorization: Bearer <key>`;
//! - the proxy routes: the key in `x-condense-api-key`, since their
//!   `Authorization` carries the provider's key (condense's own headers
//!   are never forwarded, so the key stays here). They take a place only
//!   while compressing, in their handler: a place held for the whole of a
//!   provider's answer (a stream may last minutes) would starve the API;
//! - the playground's files (`/`, `/playground...`) need no key: the page
//!   asks for one and sends it with its API calls;
//! - any other path needs a key, so a prober without one learns nothing of
//!   which paths exist.
//!
//! The rate limit's bucket is the caller's key; a request without one (all
//! of them when no keys are configured) takes from its client address's.

use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::HttpBody;
use axum::extract::MatchedPath;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::access::Access;
use crate::error::{ApiError, RATELIMIT_LIMIT, RATELIMIT_REMAINING, RATELIMIT_RESET};
use crate::guard::{Bucket, Caller, Cors, Held, Verdict, memory};
use crate::state::AppState;
use crate::tokens::cancel;

/// Where a proxy route's caller puts its condense key.
pub const PROXY_KEY: &str = "x-condense-api-key";

/// How a route takes its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Open,
    Bearer,
    ProxyHeader,
}

/// What a path asks of the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gates {
    key: Key,
    /// Takes from a rate-limit bucket.
    limited: bool,
    /// Needs a place among the requests at work.
    shed: bool,
}

/// The gates of a route's access (see [`super::routes`]); a request that
/// matched no route (a 404 or 405) goes through the API's.
fn gates(access: Option<Access>, metrics_require_key: bool) -> Gates {
    let probe = |key| Gates {
        key,
        limited: false,
        shed: false,
    };
    match access.unwrap_or(Access::Api) {
        Access::Probe => probe(Key::Open),
        Access::Metrics if metrics_require_key => probe(Key::Bearer),
        Access::Metrics => probe(Key::Open),
        Access::Proxy => Gates {
            key: Key::ProxyHeader,
            limited: true,
            shed: false,
        },
        Access::Page => Gates {
            key: Key::Open,
            limited: true,
            shed: true,
        },
        Access::Api => Gates {
            key: Key::Bearer,
            limited: true,
            shed: true,
        },
    }
}

/// The gates, as one middleware. Puts the [`Caller`] in the request's
/// extensions for the handlers that decide by it.
pub async fn admit(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    let access = super::routes::access(req.extensions().get::<MatchedPath>());
    let gates = gates(access, app.config.access.metrics_require_key);
    let caller = match authenticate(&app, gates.key, req.headers()) {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(caller);
    let verdict = match (&app.rate, gates.limited) {
        (Some(rate), true) => {
            let bucket = match caller.key {
                Some(id) => Bucket::Key(id),
                None => req
                    .extensions()
                    .get::<ConnectInfo<SocketAddr>>()
                    .map_or(Bucket::Unknown, |c| Bucket::ip(c.0.ip())),
            };
            Some((rate.check(bucket), caller.key.is_some()))
        }
        _ => None,
    };
    if let Some((v, by_key)) = verdict.filter(|(v, _)| !v.allowed) {
        let who = if by_key { "API key" } else { "client address" };
        let mut res = ApiError::RateLimited {
            who,
            retry_after: v.retry_after_secs,
        }
        .into_response();
        rate_headers(res.headers_mut(), &v);
        return res;
    }
    // Held until the answer is sent: see `hold_until_sent`.
    let held = match worst_case(&app, gates, &req) {
        None => None,
        Some((now, worst)) if app.memory.has_free(worst) => match app.memory.try_reserve(now) {
            Some(held) => Some(held),
            None => return ApiError::OverBudget(app.memory.total()).into_response(),
        },
        Some(_) => return ApiError::OverBudget(app.memory.total()).into_response(),
    };
    if let Some(held) = &held {
        req.extensions_mut().insert(held.clone());
    }
    // The place and the reservation are held until the answer is ready and
    // every CPU task of the request has stopped: a time limit drops the
    // handler before its tasks notice.
    let (mut res, busy) = match gates.shed {
        true => match app.overload.try_enter() {
            Some(place) => {
                let share: Arc<dyn Any + Send + Sync> = Arc::new((place, held.clone()));
                let res = cancel::holding(share.clone(), next.run(req)).await;
                (res, Arc::strong_count(&share) > 1)
            }
            None => return ApiError::Overloaded(app.overload.max()).into_response(),
        },
        false => (next.run(req).await, false),
    };
    if let Some(held) = held {
        res = hold_until_sent(res, held, busy);
    }
    // A provider's own `RateLimit-*` (relayed by the proxy) is the agent's
    // to read: condense's do not replace them.
    if let Some((v, _)) = verdict.filter(|_| !res.headers().contains_key(RATELIMIT_LIMIT)) {
        rate_headers(res.headers_mut(), &v);
    }
    res
}

/// What a request reserves as it is admitted, and the most memory it may
/// come to hold (see `guard::memory`), from its body's declared length (a
/// chunked body counts as one of the body limit). It reserves only its
/// body now, so a client that trickles its upload holds its bytes, not 24
/// times them; the worst case must be free all the same, and the body's
/// parser grows the reservation to it once the body is in (`ApiJson`).
/// None for the probes and `/metrics`, which are never refused, and for a
/// body over the limit, which the body limit refuses next (413, final,
/// rather than a 503 that asks for a retry). The proxy routes' handler
/// grows their reservation while it compresses.
fn worst_case(app: &AppState, gates: Gates, req: &Request) -> Option<(u64, u64)> {
    if !gates.limited {
        return None;
    }
    let limit = app.config.limits.body_limit as u64;
    let declared = req.body().size_hint().exact();
    if declared.is_some_and(|n| limit > 0 && n > limit) {
        return None;
    }
    let body = declared.unwrap_or(limit);
    Some(match gates.shed {
        true => (memory::body_bytes(body), memory::model_bytes(body)),
        false => (memory::body_bytes(body), memory::body_bytes(body)),
    })
}

/// Keeps what an answer's body needs reserved until the body is sent (a
/// compressed thread is as long as the request's, and a slow reader holds
/// it), and lets go of the rest now, unless a CPU task of the request is
/// still at work (`busy`: it holds the whole reservation until it stops).
fn hold_until_sent(res: Response, held: Held, busy: bool) -> Response {
    if !busy {
        let size = res.body().size_hint().exact().unwrap_or(0);
        held.shrink_to(memory::body_bytes(size));
    }
    res.map(|body| crate::serve::guarded(body, held))
}

/// The caller, or the one 401 every wrong credential gets.
fn authenticate(app: &AppState, key: Key, headers: &HeaderMap) -> Result<Caller, ApiError> {
    if !app.access.enabled() {
        return Ok(Caller::OPEN);
    }
    let presented = match key {
        Key::Open => return Ok(Caller::ANONYMOUS),
        Key::Bearer => headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer),
        Key::ProxyHeader => headers.get(PROXY_KEY).and_then(|v| v.to_str().ok()),
    };
    presented
        .and_then(|k| app.access.find(k.trim()))
        .ok_or(ApiError::Unauthorized {
            proxy: key == Key::ProxyHeader,
        })
}

/// The token of `Bearer <token>` (the scheme is case-insensitive, RFC 9110).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn rate_headers(h: &mut HeaderMap, v: &Verdict) {
    h.insert(RATELIMIT_LIMIT, HeaderValue::from(v.limit));
    h.insert(RATELIMIT_REMAINING, HeaderValue::from(v.remaining));
    h.insert(RATELIMIT_RESET, HeaderValue::from(v.reset_secs));
}

/// The CORS layer for `cors` (None: no CORS headers at all). Preflights are
/// answered before the key gate (a browser sends them without credentials);
/// the answers a page may read include the headers that say why it was
/// refused and when to come back.
pub fn cors_layer(cors: Option<&Cors>) -> Option<CorsLayer> {
    let origins = match cors? {
        Cors::Any => AllowOrigin::any(),
        Cors::Origins(list) => AllowOrigin::list(list.iter().cloned()),
    };
    let names = |list: &[&'static str]| {
        list.iter()
            .map(|n| header::HeaderName::from_static(n))
            .collect::<Vec<_>>()
    };
    Some(
        CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([axum::http::Method::GET, axum::http::Method::POST])
            .allow_headers(names(&[
                "authorization",
                "content-type",
                "x-request-id",
                PROXY_KEY,
                "x-condense-profile",
                "x-condense-shadow",
            ]))
            .expose_headers(names(&[
                "x-request-id",
                "retry-after",
                "www-authenticate",
                "ratelimit-limit",
                "ratelimit-remaining",
                "ratelimit-reset",
                "x-condense-compressed",
                "x-condense-tokens-before",
                "x-condense-tokens-after",
                "x-condense-summary-cached",
                "x-condense-shadow",
                "x-condense-would-compress",
                "x-condense-note",
                "x-condense-thinking",
                "x-condense-fidelity",
                "x-condense-tokens-removed",
                "x-condense-summary-call-tokens",
                "x-condense-prefix-reused",
                "x-condense-precompute",
                "x-provider-request-id",
            ]))
            .max_age(std::time::Duration::from_secs(600)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_whatever_the_case_of_the_scheme() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer   abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("abc"), None);
    }

    #[test]
    fn probes_and_metrics_pass_the_load_gates() {
        for access in [Access::Probe, Access::Metrics] {
            let g = gates(Some(access), true);
            assert!(!g.limited && !g.shed, "{access:?}");
        }
        assert_eq!(gates(Some(Access::Metrics), false).key, Key::Open);
        assert_eq!(gates(Some(Access::Metrics), true).key, Key::Bearer);
        let g = gates(Some(Access::Proxy), false);
        assert_eq!(g.key, Key::ProxyHeader);
        assert!(g.limited && !g.shed);
        assert_eq!(gates(Some(Access::Page), false).key, Key::Open);
        // A request that matched no route is gated like the API.
        assert_eq!(gates(None, false), gates(Some(Access::Api), false));
        assert_eq!(gates(None, false).key, Key::Bearer);
    }

    #[test]
    fn every_route_has_the_access_of_its_kind() {
        for r in super::super::routes::all() {
            let want = match r.path {
                "/healthz" | "/readyz" => Access::Probe,
                "/metrics" => Access::Metrics,
                p if p.starts_with("/v1/chat")
                    || p.starts_with("/v1/responses")
                    || p.starts_with("/v1/messages") =>
                {
                    Access::Proxy
                }
                p if p == "/" || p.starts_with("/playground") => Access::Page,
                _ => Access::Api,
            };
            assert_eq!(r.access, want, "{r:?}");
        }
    }
}
