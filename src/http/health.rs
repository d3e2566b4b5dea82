//! Liveness and readiness probes.

use std::collections::BTreeMap;

use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use crate::cache::Cache;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

#[derive(Serialize)]
pub struct Health {
    pub status: &'static str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub checks: BTreeMap<&'static str, &'static str>,
}

/// Alive: the process answers.
async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        checks: BTreeMap::new(),
    })
}

/// Ready: the encoders and registry are loaded (before the listener opens)
/// and the dependencies answer. A summary cache that is down does not make
/// the service unready, since every request is still answered (uncached); it
/// shows as `cache: down` and `status: degraded`.
async fn readyz(State(app): State<AppState>) -> Json<Health> {
    let tokenizer = if app.models.models().is_empty() {
        "empty"
    } else {
        "ok"
    };
    let cache = app.summarizer.cache();
    let cache_state = match cache {
        Cache::Off => "off",
        _ => match tokio::time::timeout(Duration::from_secs(2), cache.ping()).await {
            Ok(Ok(())) => "ok",
            _ => "down",
        },
    };
    let upstream = if app.summarizer.upstream().is_some() {
        "configured"
    } else {
        "off"
    };
    let status = if cache_state == "down" {
        "degraded"
    } else {
        "ready"
    };
    Json(Health {
        status,
        checks: BTreeMap::from([
            ("tokenizer", tokenizer),
            ("cache", cache_state),
            ("upstream", upstream),
        ]),
    })
}
