//! Liveness and readiness probes, without I/O: they come often, from anyone.

use super::access::Access;

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

/// `GET /healthz`: the process answers.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Health {
    #[schema(inline)]
    pub status: Alive,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Alive {
    Ok,
}

/// `GET /readyz`: whether requests can be answered, and what each part says.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Readiness {
    #[schema(inline)]
    pub status: Ready,
    #[schema(inline)]
    pub checks: Checks,
    /// When the summary cache's state was last learned, by the background
    /// ping or by a request's cache call (RFC 3339). Absent when caching is
    /// off or before the first check ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub cache_checked_at: Option<String>,
}

/// `ready`, or `degraded` when the summary cache is down (requests are then
/// answered uncached).
#[derive(Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Ready {
    Ready,
    Degraded,
}

/// What each part the service relies on says.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    #[schema(inline)]
    pub cache: CacheCheck,
    #[schema(inline)]
    pub tokenizer: TokenizerCheck,
    #[schema(inline)]
    pub upstream: UpstreamCheck,
}

/// The summary cache (PostgreSQL or SQLite) answered its last ping or call,
/// did not, has not been checked yet, or is disabled.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheCheck {
    Ok,
    Down,
    Unknown,
    Off,
}

/// `ok` once the encoders and the model registry are loaded.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenizerCheck {
    Ok,
    Empty,
}

/// Whether an upstream LLM is configured for `llm` and `hybrid` summaries.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamCheck {
    Configured,
    Off,
}

/// Alive: the process answers.
async fn healthz() -> Json<Health> {
    Json(Health { status: Alive::Ok })
}

/// Ready. A cache that is down only degrades it (requests are answered
/// uncached); its state is the one last found (`cache::health`), not pinged.
async fn readyz(State(app): State<AppState>) -> Json<Readiness> {
    let tokenizer = match app.models.models().is_empty() {
        true => TokenizerCheck::Empty,
        false => TokenizerCheck::Ok,
    };
    let health = app.summarizer.cache_health();
    let cache = match (app.summarizer.cache(), health.status()) {
        (Cache::Off, _) => CacheCheck::Off,
        (_, HealthStatus::Unknown) => CacheCheck::Unknown,
        (_, HealthStatus::Up) => CacheCheck::Ok,
        (_, HealthStatus::Down) => CacheCheck::Down,
    };
    let upstream = match app.summarizer.upstream() {
        Some(_) => UpstreamCheck::Configured,
        None => UpstreamCheck::Off,
    };
    let status = match cache {
        CacheCheck::Down => Ready::Degraded,
        _ => Ready::Ready,
    };
    Json(Readiness {
        status,
        checks: Checks {
            cache,
            tokenizer,
            upstream,
        },
        cache_checked_at: health
            .learned_at()
            .filter(|_| cache != CacheCheck::Off)
            .map(|t| humantime::format_rfc3339_millis(t).to_string()),
    })
}
