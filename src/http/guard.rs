//! The gates in front of the routes, in order: the screen (403), the API key
//! (401), the rate limit (429, by key, else address), a place among the
//! requests at work and room in the memory budget (503). The probes and
//! `/metrics` pass all but the key one, so a busy replica is seen alive and a
//! scraper sees why; the proxy routes take a place only while compressing (a
//! provider's stream may last minutes).

use std::net::SocketAddr;

use axum::body::{Body, HttpBody};
use axum::extract::MatchedPath;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use super::access::Access;
use super::extract::text;
use crate::admission::{Ticket, memory};
use crate::error::{ApiError, RATELIMIT_LIMIT, RATELIMIT_REMAINING, RATELIMIT_RESET};
use crate::guard::{Bucket, Caller, Cors, Verdict};
use crate::proxy;
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

/// The key a route's access asks for.
fn key(access: Access, metrics_require_key: bool) -> Key {
    match access {
        Access::Probe | Access::Page => Key::Open,
        Access::Metrics if !metrics_require_key => Key::Open,
        Access::Metrics | Access::Api => Key::Bearer,
        Access::Proxy => Key::ProxyHeader,
    }
}

/// The gates, as one middleware; leaves the [`Caller`] and the [`Ticket`]
/// in the request's extensions.
pub async fn admit(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    let access = super::routes::access(req.extensions().get::<MatchedPath>());
    let key = key(access, app.config.access.metrics_require_key);
    let caller = match super::screen::check(&app, &req)
        .and_then(|()| authenticate(&app, key, req.headers()))
    {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(caller);
    if !access.limited() {
        return next.run(req).await;
    }
    let who = match caller.key {
        Some(id) => Bucket::Key(id),
        None => req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(Bucket::Unknown, |c| Bucket::ip(c.0.ip())),
    };
    let verdict = app.rate.as_ref().map(|rate| rate.check(who));
    if let Some(v) = verdict.filter(|v| !v.allowed) {
        let who = if caller.key.is_some() {
            "API key"
        } else {
            "client address"
        };
        let mut res = ApiError::RateLimited {
            who,
            retry_after: v.retry_after_secs,
        }
        .into_response();
        rate_headers(res.headers_mut(), &v);
        return res;
    }
    let Some(ticket) = reserve(&app, access.shed(), &req) else {
        return ApiError::OverBudget(app.memory.total()).into_response();
    };
    if access.shed() {
        req = match with_body(&app, req).await {
            Ok(req) => req,
            Err(e) => return e.into_response(),
        };
        if !ticket.enter(&app.overload, who) {
            return ApiError::Overloaded(app.overload.max()).into_response();
        }
    }
    req.extensions_mut().insert(ticket.clone());
    req.extensions_mut().insert(who);
    let res = cancel::holding(ticket.clone(), next.run(req)).await;
    // The answer's body stays reserved until sent; the rest goes once the
    // request's CPU tasks have stopped (a time limit does not stop them).
    ticket.done(memory::body_bytes(
        res.body().size_hint().exact().unwrap_or(0),
    ));
    let mut res = res.map(|body| crate::serve::guarded(body, ticket));
    // A provider's own `RateLimit-*` (relayed by the proxy) wins.
    if let Some(v) = verdict.filter(|_| !res.headers().contains_key(RATELIMIT_LIMIT)) {
        rate_headers(res.headers_mut(), &v);
    }
    res
}

/// The request's ticket holding its declared body, or None when the budget
/// lacks its worst case; a body over the limit is the body limit's (413).
fn reserve(app: &AppState, shed: bool, req: &Request) -> Option<Ticket> {
    let limit = app.config.limits.body_limit as u64;
    let declared = req.body().size_hint().exact();
    if declared.is_some_and(|n| limit > 0 && n > limit) {
        return Some(Ticket::default());
    }
    let body = declared.unwrap_or(limit);
    let worst = match shed {
        true => memory::model_bytes(body),
        false => memory::body_bytes(body),
    };
    let now = memory::body_bytes(body);
    app.memory
        .has_free(worst)
        .then(|| app.memory.try_reserve(now))?
}

/// The request with its body read whole, before it takes a place among the
/// requests at work: a slow upload holds only the memory reserved for it
/// (which the budget bounds), never a place another caller needs. A body
/// over the limit is left to the body limit's 413, answered from the head.
async fn with_body(app: &AppState, req: Request) -> Result<Request, ApiError> {
    let limits = &app.config.limits;
    let declared = req.body().size_hint().exact();
    if declared == Some(0) || declared.is_some_and(|n| n > limits.body_limit as u64) {
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    let body = super::extract::arrived(body, limits).await?;
    Ok(Request::from_parts(parts, Body::from(body)))
}

/// The caller, or the one 401 every wrong credential gets.
fn authenticate(app: &AppState, key: Key, headers: &HeaderMap) -> Result<Caller, ApiError> {
    if !app.access.enabled() {
        return Ok(Caller::OPEN);
    }
    let presented = match key {
        Key::Open => return Ok(Caller::ANONYMOUS),
        Key::Bearer => text(headers, header::AUTHORIZATION).and_then(bearer),
        Key::ProxyHeader => text(headers, PROXY_KEY),
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

/// The CORS layer for `cors` (None: no CORS headers at all); a page may read
/// why it was refused and when to come back.
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
                proxy::PROFILE,
                proxy::SHADOW,
            ]))
            .expose_headers(names(
                &[
                    "x-request-id",
                    "retry-after",
                    "www-authenticate",
                    "ratelimit-limit",
                    "ratelimit-remaining",
                    "ratelimit-reset",
                    proxy::PROVIDER_REQUEST_ID,
                ]
                .into_iter()
                .chain(proxy::report_names())
                .collect::<Vec<_>>(),
            ))
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
            assert!(!access.limited() && !access.shed(), "{access:?}");
        }
        assert_eq!(key(Access::Metrics, false), Key::Open);
        assert_eq!(key(Access::Metrics, true), Key::Bearer);
        assert_eq!(key(Access::Proxy, false), Key::ProxyHeader);
        assert!(Access::Proxy.limited() && !Access::Proxy.shed());
        assert_eq!(key(Access::Page, false), Key::Open);
        // A request that matched no route is gated like the API.
        assert_eq!(super::super::routes::access(None), Access::Api);
        assert_eq!(key(Access::Api, false), Key::Bearer);
        assert!(Access::Api.limited() && Access::Api.shed());
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
                p if p == "/" || p == "/openapi.json" || p.starts_with("/playground") => {
                    Access::Page
                }
                _ => Access::Api,
            };
            assert_eq!(r.access, want, "{r:?}");
        }
    }
}
