//! The summary cache through the HTTP API, against a real PostgreSQL
//! (`DATABASE_URL`, provided by `scripts/with-postgres.sh`) and SQLite files.

use std::time::Duration;

use serde_json::{Value, json};
use sqlx::postgres::PgConnectOptions;

use crate::support::common::{Reply, get, post, post_raw, thread};
use crate::support::live::{self, TestDatabase};
use crate::support::stub::{self, Fault};

/// The URLs of a SQLite file, and of a PostgreSQL database unless the run
/// opted out, each with the guard that drops that database: bind it
/// (`for (url, _db) in …`) so it lives through the loop's body.
pub(crate) async fn every_backend(test: &str) -> Vec<(String, Option<TestDatabase>)> {
    let mut backends = vec![(temp_sqlite(), None)];
    if let Some(db) = live::new_database(test).await {
        backends.push((db.url(), Some(db)));
    }
    backends
}

fn temp_sqlite() -> String {
    let dir =
        std::env::temp_dir().join(format!("condense-cache-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    format!("sqlite://{}?mode=rwc", dir.join("cache.sqlite3").display())
}

pub(crate) async fn app_on(url: &str, upstream: Option<&str>) -> axum::Router {
    let config = condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: upstream.map(str::to_string),
            model: "stub-model".into(),
            // Generous limits: under load a short one fires by itself and the
            // test fails for no reason. (The outage test's unreachable database
            // refuses connections at once: no limit has to fire there.)
            timeout: Duration::from_secs(60),
            retry_budget: Duration::from_secs(120),
            ..Default::default()
        },
        cache: condense::config::CacheSettings {
            database_url: Some(url.to_string()),
            db_acquire_timeout: Duration::from_millis(30_000),
            ..Default::default()
        },
        ..Default::default()
    };
    condense::http::router(
        condense::AppState::connect(config)
            .await
            .expect("state builds"),
    )
}

fn llm_request() -> Value {
    let t = thread("medium-03.openai");
    json!({"messages": t["messages"], "tools": t["tools"], "model": "gpt-4o", "force": true, "summarizer": {"strategy": "llm"}})
}

fn summary(r: &Reply) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["summary"].clone()
}

/// Hit after miss, the same bytes, no second upstream call: SQLite and PostgreSQL.
#[tokio::test]
async fn a_hit_costs_no_call_and_returns_the_same_bytes() {
    for (url, _db) in every_backend("a_hit_costs_no_call_and_returns_the_same_bytes").await {
        let s = stub::start(Fault::Ok, false).await;
        let app = app_on(&url, Some(&s.url)).await;
        let first = summary(&post(&app, "/v1/compress", &llm_request()).await);
        let second = summary(&post(&app, "/v1/compress", &llm_request()).await);
        assert_eq!(first["cached"], false, "{url}");
        assert_eq!(second["cached"], true, "{url}");
        assert_eq!(s.calls(), 1, "{url}: a hit makes no upstream call");
        let strip = |mut v: Value| {
            v["cached"] = Value::Null;
            v
        };
        assert_eq!(
            strip(first),
            strip(second),
            "{url}: identical summary, created_at included"
        );
    }
}

/// The key is the conversation, not its wire form: whitespace, key order and
/// the format do not change it.
#[tokio::test]
async fn the_key_survives_json_formatting_and_the_wire_format() {
    for (url, _db) in every_backend("the_key_survives_json_formatting_and_the_wire_format").await {
        the_key_survives_on(&url).await;
    }
}

async fn the_key_survives_on(url: &str) {
    let app = app_on(url, None).await;
    let mut openai = vec![json!({"role": "system", "content": "be careful"})];
    let mut anthropic = Vec::new();
    for i in 0..8 {
        let (oid, aid) = (format!("call_{i}"), format!("toolu_{i}"));
        let text = format!("please check file src/m{i}.rs");
        openai.push(json!({"role": "user", "content": text}));
        anthropic.push(json!({"role": "user", "content": text}));
        openai.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": oid, "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\": \"src/m{i}.rs\"}}")}}]}));
        anthropic.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": aid, "name": "read_file", "input": {"path": format!("src/m{i}.rs")}}]}));
        openai.push(
            json!({"role": "tool", "tool_call_id": oid, "content": format!("fn m{i}() {{}}")}),
        );
        anthropic.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": aid, "content": format!("fn m{i}() {{}}")}]}));
    }
    let body = json!({"messages": openai, "force": true, "summarizer": {"strategy": "heuristic"}});
    let first = summary(&post(&app, "/v1/compress", &body).await);
    assert_eq!(first["cached"], false);

    // Same body, pretty-printed with the keys of every object reversed.
    fn reversed(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reversed(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }
    let pretty = serde_json::to_string_pretty(&reversed(&body)).unwrap();
    let again = summary(&post_raw(&app, "/v1/compress", "application/json", pretty).await);
    assert_eq!(again["cached"], true);
    assert_eq!(again["content_hash"], first["content_hash"]);

    let anthropic_body = json!({"system": "be careful", "messages": anthropic, "force": true, "summarizer": {"strategy": "heuristic"}});
    let other = summary(&post(&app, "/v1/compress", &anthropic_body).await);
    assert_eq!(
        other["content_hash"], first["content_hash"],
        "the same conversation in the other format"
    );
    assert_eq!(other["cached"], true);
}

/// A grown thread reuses the summary of its prefix and sends only the new messages.
#[tokio::test]
async fn a_grown_thread_summarizes_only_its_new_messages() {
    for (url, _db) in every_backend("a_grown_thread_summarizes_only_its_new_messages").await {
        a_grown_thread_on(&url).await;
    }
}

async fn a_grown_thread_on(url: &str) {
    let s = stub::start(Fault::Ok, false).await;
    let app = app_on(url, Some(&s.url)).await;
    let t = thread("medium-03.openai");
    let all = t["messages"].as_array().unwrap();
    let first_user = all[1]["content"].as_str().unwrap()[..40].to_string();
    let short = json!({"messages": all[..40], "force": true, "summarizer": {"strategy": "llm"}});
    let prefix = summary(&post(&app, "/v1/compress", &short).await);
    let long = json!({"messages": all, "force": true, "summarizer": {"strategy": "llm"}});
    let grown = summary(&post(&app, "/v1/compress", &long).await);
    assert_eq!(grown["cached"], false);
    assert_eq!(s.calls(), 2);
    let second = s.bodies.lock().unwrap()[1].clone();
    assert!(
        second.contains("Here is the summary so far"),
        "the cached prefix summary was extended"
    );
    assert!(second.contains("stub summary"), "with the prefix's content");
    // The prefix's summary quotes the first request (the fidelity repair
    // keeps it): it may appear there, and nowhere else.
    let in_prefix = prefix["content"]
        .as_str()
        .unwrap()
        .matches(&first_user)
        .count();
    assert_eq!(
        second.matches(&first_user).count(),
        in_prefix,
        "the prefix's messages were not sent again"
    );
}

/// Two replicas on one database, identical requests at the same moment: one upstream call.
#[tokio::test]
async fn two_replicas_make_one_upstream_call() {
    let Some(db) = live::new_database("two_replicas_make_one_upstream_call").await else {
        return;
    };
    let url = db.url();
    let s = stub::start(Fault::SlowOk, false).await;
    let (a, b) = (
        app_on(&url, Some(&s.url)).await,
        app_on(&url, Some(&s.url)).await,
    );
    let body = llm_request();
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let app = if i % 2 == 0 { a.clone() } else { b.clone() };
            let body = body.clone();
            tokio::spawn(async move { post(&app, "/v1/compress", &body).await })
        })
        .collect();
    let mut contents = Vec::new();
    for t in tasks {
        let s = summary(&t.await.unwrap());
        contents.push((s["content"].clone(), s["created_at"].clone()));
    }
    eprintln!(
        "cross-replica: 10 requests over 2 replicas made {} upstream call(s)",
        s.calls()
    );
    assert_eq!(s.calls(), 1, "one upstream call across both replicas");
    assert!(
        contents.windows(2).all(|w| w[0] == w[1]),
        "every replica answers the same summary"
    );
}

/// A database that is down never stands in the way, and the service recovers when it returns.
#[tokio::test]
async fn database_down_then_back() {
    let Some(db) = live::new_database("database_down_then_back").await else {
        return;
    };
    let url = db.url();
    let real: PgConnectOptions = url.parse().unwrap();
    let target = format!("127.0.0.1:{}", real.get_port());
    // A port with nothing behind it yet: the database is "down".
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let via_proxy = url.replacen(&format!(":{}/", real.get_port()), &format!(":{port}/"), 1);
    // The pool retries a refused connection until its acquire timeout, so
    // this one must fire, and does every time: nothing listens on the port.
    let config = condense::Config {
        cache: condense::config::CacheSettings {
            database_url: Some(via_proxy),
            db_acquire_timeout: Duration::from_millis(3_000),
            ..Default::default()
        },
        ..Default::default()
    };
    let app = condense::http::router(condense::AppState::connect(config).await.unwrap());
    let body = json!({"messages": thread("small-01.openai")["messages"], "force": true});

    let r = post(&app, "/v1/compress", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    assert!(
        out["warnings"].to_string().contains("cache is unavailable"),
        "{}",
        out["warnings"]
    );
    assert_eq!(out["summary"]["cached"], false);
    assert_eq!(get(&app, "/readyz").await.json()["checks"]["cache"], "down");

    // The database comes back (a forwarder on that port).
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    // Ready again once the pool reaches it: poll, with a generous bound.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while get(&app, "/readyz").await.json()["checks"]["cache"] != "ok" {
        assert!(
            std::time::Instant::now() < deadline,
            "the cache did not come back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = post(&app, "/v1/compress", &body).await.json();
    assert!(
        !first["warnings"]
            .to_string()
            .contains("cache is unavailable"),
        "{}",
        first["warnings"]
    );
    let second = post(&app, "/v1/compress", &body).await.json();
    assert_eq!(second["summary"]["cached"], true);
}

/// A summary made before a restart is served from the cache after it.
#[tokio::test]
async fn summaries_survive_a_restart() {
    for (url, _db) in every_backend("summaries_survive_a_restart").await {
        let body = json!({"messages": thread("medium-02.openai")["messages"], "force": true});
        let before = summary(&post(&app_on(&url, None).await, "/v1/compress", &body).await);
        // A new process: a new state, pool and in-memory everything.
        let after = summary(&post(&app_on(&url, None).await, "/v1/compress", &body).await);
        assert_eq!(after["cached"], true, "{url}");
        assert_eq!(after["content"], before["content"]);
        assert_eq!(after["created_at"], before["created_at"]);
    }
}

/// With no configuration the cache is an embedded SQLite file (checked without
/// the environment: the test command itself sets DATABASE_URL).
#[tokio::test]
async fn the_default_cache_is_an_embedded_sqlite_file() {
    let dir = std::env::temp_dir().join(format!(
        "condense-default-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let config = condense::Config {
        cache: condense::config::CacheSettings {
            path: dir.join("c.sqlite3"),
            ..Default::default()
        },
        ..Default::default()
    };
    let url = config.cache.url_or(None);
    assert_eq!(
        url,
        format!("sqlite://{}?mode=rwc", dir.join("c.sqlite3").display())
    );
    let cache = condense::cache::Cache::connect(&url, config.cache.options())
        .await
        .unwrap();
    assert_eq!(cache.backend(), "sqlite");
    assert!(dir.join("c.sqlite3").exists());
    // An explicit setting wins over DATABASE_URL, and `off` disables caching.
    let off = condense::Config {
        cache: condense::config::CacheSettings {
            database_url: Some("off".into()),
            ..config.cache
        },
        ..config
    };
    assert_eq!(off.cache.url_or(Some("postgres://x/y".into())), "off");
    let state = condense::AppState::connect(off).await.unwrap();
    assert_eq!(state.summarizer.cache().backend(), "off");
}
