//! Compaction when the cache is cold (issue 34): a conversation idle past
//! the profile's `provider_cache_ttl` (by its ledger, shared by every
//! replica) gets the summary it would need soon on the cold turn, with
//! reason `cold_cache` in the ledger; a warm turn, a thread not yet near its
//! trigger, and a request that asks for the hour-long cache are left alone.
//! The idle time is made by back-dating the ledger in the test's database,
//! so no assertion hangs on the wall clock. In SQLite and in PostgreSQL
//! (`scripts/with-postgres.sh cargo test --test suite cold_cache::`).
use crate::proxy_ledger::{ledger, provider, sqlite_url, turn, user};
use crate::support::common::anthropic_proxy;
use crate::support::live;

use axum::Router;
use serde_json::{Value, json};

/// Due at 20 messages, so due soon (`precompute_at` 0.8) at 16; the cache
/// cold after a minute.
const PROFILE: &str = "[profiles.default]\nmax_messages_before_summary = 20\nmin_recent_messages = 2\nprovider_cache_ttl = \"1m\"\n";

/// A conversation opening with `topic`, `n` messages long (odd: it ends
/// with the user), each message long enough for a summary to save tokens.
fn body(topic: &str, n: usize, ttl: Option<&str>) -> Value {
    let messages: Vec<Value> = (0..n)
        .map(|i| {
            let text = format!(
                "{topic}, step {i}: {}",
                "the build reads the config and writes the assets. ".repeat(6)
            );
            match i % 2 {
                0 => {
                    let mut m = user(&text);
                    if let Some(ttl) = ttl {
                        m["content"][0]["cache_control"]["ttl"] = json!(ttl);
                    }
                    m
                }
                _ => json!({"role": "assistant", "content": text}),
            }
        })
        .collect();
    json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
           "system": "You are terse.", "messages": messages})
}

/// Sends a turn; answers whether condense compressed it, and the conversation.
async fn send(app: &Router, body: &Value) -> (bool, String) {
    let reply = turn(app, body).await;
    let h = |name: &str| reply.headers[name].to_str().unwrap().to_string();
    (
        h("x-condense-compressed") == "true",
        h("x-condense-conversation"),
    )
}

/// Every turn on record `secs` older, as if the conversations had idled.
async fn backdate(cache_url: &str, secs: i64) {
    if cache_url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(cache_url).await.unwrap();
        sqlx::query("UPDATE ledger SET at = at - $1")
            .bind(secs * 1000)
            .execute(&pool)
            .await
            .unwrap();
    } else {
        let pool = sqlx::PgPool::connect(cache_url).await.unwrap();
        sqlx::query("UPDATE ledger SET at = at - make_interval(secs => $1)")
            .bind(secs as f64)
            .execute(&pool)
            .await
            .unwrap();
    }
}

async fn a_cold_turn_gets_its_due_soon_summary(cache_url: &str) {
    let (url, _bills) = provider().await;
    let app = anthropic_proxy(&url, cache_url, PROFILE).await;
    // Warm turns do not summarize early: 15 messages, then 17 (due soon).
    let (compressed, soon) = send(&app, &body("the build", 15, None)).await;
    assert!(!compressed, "not near its trigger");
    ledger(&app, &soon, 1).await;
    let (compressed, id) = send(&app, &body("the build", 17, None)).await;
    assert_eq!(id, soon, "one conversation");
    assert!(!compressed, "due soon, but the cache is warm");
    ledger(&app, &soon, 2).await;
    // Not near its trigger, and one whose client caches for an hour.
    let (_, far) = send(&app, &body("the tests", 5, None)).await;
    ledger(&app, &far, 1).await;
    let (_, hour) = send(&app, &body("the docs", 17, Some("1h"))).await;
    ledger(&app, &hour, 1).await;

    // Two minutes idle: past the 1m lifetime, within the hour.
    backdate(cache_url, 120).await;
    let (compressed, _) = send(&app, &body("the build", 19, None)).await;
    assert!(compressed, "due soon on a cold cache: summarized now");
    let l = ledger(&app, &soon, 3).await;
    let reasons: Vec<&Value> = l["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["reason"])
        .collect();
    assert_eq!(reasons, [&Value::Null, &Value::Null, &json!("cold_cache")]);
    let t = &l["turns"][2];
    assert!(
        t["forwarded_tokens"].as_u64() < t["sent_tokens"].as_u64(),
        "{t}"
    );

    let (compressed, _) = send(&app, &body("the tests", 7, None)).await;
    assert!(!compressed, "cold, but not near its trigger");
    let (compressed, _) = send(&app, &body("the docs", 19, Some("1h"))).await;
    assert!(!compressed, "the hour-long cache is still warm");
    assert_eq!(
        ledger(&app, &hour, 2).await["turns"][1]["reason"],
        Value::Null
    );
}

#[tokio::test]
async fn sqlite_a_cold_turn_gets_its_due_soon_summary() {
    let dir = tempfile::tempdir().unwrap();
    a_cold_turn_gets_its_due_soon_summary(&sqlite_url(&dir)).await;
}

#[tokio::test]
async fn postgres_a_cold_turn_gets_its_due_soon_summary() {
    let Some(db) = live::new_database("cold_cache::postgres").await else {
        return;
    };
    a_cold_turn_gets_its_due_soon_summary(&db.url()).await;
}
