//! `/readyz` against a real PostgreSQL behind a relay we control: it reads
//! the cache's state from the background check and never asks the database
//! itself, so a flood of probes adds nothing to the database's load, and an
//! outage still shows. Needs `DATABASE_URL` (run it under
//! `scripts/with-postgres.sh`). Every wait is bounded generously: what is
//! asserted is what happens, never how fast.
use crate::support::{live, relay};

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::Value;
use sqlx::ConnectOptions;
use sqlx::postgres::PgConnectOptions;
use tower::ServiceExt;

use relay::Relay;

const GENEROUS: Duration = Duration::from_secs(60);

/// The app on a fresh database reached through a relay, pinging it every
/// `check_secs`; the database lives as long as the returned guard.
async fn app_behind_relay(
    test: &str,
    check_secs: u64,
) -> Option<(axum::Router, Relay, live::TestDatabase)> {
    let db = live::new_database(test).await?;
    let real = db.options();
    let upstream = tokio::net::lookup_host((real.get_host(), real.get_port()))
        .await
        .unwrap()
        .next()
        .unwrap();
    let relay = Relay::start(upstream).await;
    let via: PgConnectOptions = real.host("127.0.0.1").port(relay.addr().port());
    let config = condense::Config {
        cache: condense::config::CacheSettings {
            database_url: Some(via.to_url_lossy().to_string()),
            check_interval: Duration::from_secs(check_secs),
            ..Default::default()
        },
        ..Default::default()
    };
    let state = condense::AppState::connect(config).await.unwrap();
    Some((condense::http::router(state), relay, db))
}

async fn readyz(app: &axum::Router) -> Value {
    let req = Request::get("/readyz").body(Body::empty()).unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), 200);
    let body = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// Polls `/readyz` until its cache check says `want`; panics after [`GENEROUS`].
async fn until_cache_is(app: &axum::Router, want: &str) -> Value {
    let deadline = tokio::time::Instant::now() + GENEROUS;
    loop {
        let r = readyz(app).await;
        if r["checks"]["cache"] == want {
            return r;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "/readyz never said cache: {want}: {r}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_flood_of_readyz_sends_nothing_to_the_database() {
    // One check an hour: only the first, at start, within this test.
    let Some((app, relay, _db)) = app_behind_relay("readyz_flood", 3600).await else {
        return;
    };
    let ready = until_cache_is(&app, "ok").await;
    assert_eq!(ready["status"], "ready");
    assert!(ready["cache_checked_at"].is_string(), "{ready}");
    let before = relay.chunks();
    assert!(before > 0, "the first check went through the relay");
    let mut flood = tokio::task::JoinSet::new();
    for _ in 0..256 {
        let app = app.clone();
        flood.spawn(async move { readyz(&app).await });
    }
    while let Some(r) = flood.join_next().await {
        assert_eq!(r.unwrap()["checks"]["cache"], "ok");
    }
    assert_eq!(relay.chunks(), before, "a probe reached the database");
}

#[tokio::test]
async fn readyz_follows_the_database_down_and_back() {
    let Some((app, relay, _db)) = app_behind_relay("readyz_down_and_back", 1).await else {
        return;
    };
    until_cache_is(&app, "ok").await;
    relay.set_up(false);
    let down = until_cache_is(&app, "down").await;
    assert_eq!(down["status"], "degraded");
    relay.set_up(true);
    let back = until_cache_is(&app, "ok").await;
    assert_eq!(back["status"], "ready");
}
