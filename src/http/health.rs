//! Liveness and readiness probes. Neither does I/O: probes come often and
//! from anyone allowed to reach the port, so what they cost must not grow
//! with how many there are.

use super::access::Access;
use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use crate::cache::{Cache, HealthStatus};
use crate::state::AppState;

super::access::routes! {
    Access::Probe;
    get "/healthz" => healthz,
    get "/readyz" => readyz,
}

#[derive(Serialize)]
pub struct Health {
    pub status: &'static str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub checks: BTreeMap<&'static str, &'static str>,
    /// When the cache's state was last learned (RFC 3339), by the
    /// background ping or by a request's cache call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_checked_at: Option<String>,
}

/// Alive: the process answers.
async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        checks: BTreeMap::new(),
        cache_checked_at: None,
    })
}

/// Ready: the encoders and registry are loaded (before the listener opens)
/// and the dependencies answer. A summary cache that is down does not make
/// the service unready, since every request is still answered (uncached); it
/// shows as `cache: down` and `status: degraded`. The cache's state is the
/// one last found by its background check or a request (`cache::health`):
/// this handler never pings it.
async fn readyz(State(app): State<AppState>) -> Json<Health> {
    let tokenizer = if app.models.models().is_empty() {
        "empty"
    } else {
        "ok"
    };
    let health = app.summarizer.cache_health();
    let cache = match (app.summarizer.cache(), health.status()) {
        (Cache::Off, _) => "off",
        (_, HealthStatus::Unknown) => "unknown",
        (_, HealthStatus::Up) => "ok",
        (_, HealthStatus::Down) => "down",
    };
    let upstream = if app.summarizer.upstream().is_some() {
        "configured"
    } else {
        "off"
    };
    let status = if cache == "down" { "degraded" } else { "ready" };
    Json(Health {
        status,
        checks: BTreeMap::from([
            ("tokenizer", tokenizer),
            ("cache", cache),
            ("upstream", upstream),
        ]),
        cache_checked_at: health
            .learned_at()
            .filter(|_| cache != "off")
            .map(|t| humantime::format_rfc3339_millis(t).to_string()),
    })
}
