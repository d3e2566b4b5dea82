//! Liveness and readiness probes.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

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

/// Ready: everything a request needs is loaded. The encoders and registry
/// are built before the listener opens, so today this is always ready;
/// dependencies (cache, upstream) add their checks here.
async fn readyz(State(app): State<AppState>) -> Json<Health> {
    let tokenizer = if app.models.models().is_empty() {
        "empty"
    } else {
        "ok"
    };
    Json(Health {
        status: "ready",
        checks: BTreeMap::from([("tokenizer", tokenizer)]),
    })
}
