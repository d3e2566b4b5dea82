//! Liveness and readiness probes, without I/O: they come often, from anyone.

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
    /// When the cache's state was last learned (RFC 3339).
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

/// Ready. A cache that is down only degrades it (requests are answered
/// uncached); its state is the one last found (`cache::health`), not pinged.
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
