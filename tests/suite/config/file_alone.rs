//! A `--config` file and nothing else (an empty environment, no flags)
//! runs the proxy with a PostgreSQL cache and an upstream LLM. Needs
//! PostgreSQL (`DATABASE_URL`, e.g. under `scripts/with-postgres.sh`) and
//! the local LLM (`CONDENSE_TEST_LLM_URL`).

use serde_json::{Value, json};
use sqlx::Connection;

use super::{file, live, process};

const MODEL: &str = "SmolLM2-135M-Instruct";

#[tokio::test]
async fn a_file_alone_runs_the_proxy_with_postgres_and_an_upstream() {
    let test = "a_file_alone_runs_the_proxy_with_postgres_and_an_upstream";
    let Some(llm) = live::llm(test) else { return };
    let Some(db) = live::new_database(test).await else {
        return;
    };
    let database = db.url();
    // A tiny model on a shared 2-core machine: generous limits, so that
    // only a hang fails the run.
    let (dir, path) = file(&format!(
        r#"
[server]
listen = "127.0.0.1:0"
log_format = "json"

[limits]
request_timeout = "20m"

[upstream]
url = "{llm}"
model = "{MODEL}"
context_window = 8192
timeout = "10m"
retry_budget = "15m"

[cache]
database_url = "{database}"
db_acquire_timeout = "30s"

[proxy]
openai_url = "{llm}"
"#
    ));
    let server = process::Process::start(&["--config", &path], &[], dir.path());
    let mut server = server;
    let cache = server.wait_for_line(|l| l.contains("summary cache reachable at start-up"));
    assert!(cache.contains("postgres"), "{cache}");
    server.wait_for_line(|l| l.contains("upstream LLM configured"));

    let client = reqwest::Client::new();
    let base = server.url();
    let ready: Value = client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["checks"]["cache"], "ok", "{ready}");

    // The proxy forwards to the provider of the file.
    let r = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": MODEL, "max_tokens": 5,
                      "messages": [{"role": "user", "content": "Say hi"}]}))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body["choices"][0]["message"].is_object(), "{body}");

    // The upstream of the file writes a summary, kept in the database of the file.
    let messages: Vec<Value> = (0..8)
        .map(|i| match i % 2 {
            0 => json!({"role": "user", "content": format!("Step {i}: rename parse_{i} to read_{i} in src/mod{i}.rs.")}),
            _ => json!({"role": "assistant", "content": format!("Done: read_{i} replaces parse_{i}; tests pass.")}),
        })
        .collect();
    let r = client
        .post(format!("{base}/v1/compress"))
        .json(&json!({"messages": messages, "force": true,
                      "summarizer": {"strategy": "llm"}, "config": {"max_summary_tokens": 80}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let mut db = sqlx::PgConnection::connect(&database).await.unwrap();
    let rows: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT strategy, model FROM summary_cache")
            .fetch_all(&mut db)
            .await
            .unwrap();
    assert_eq!(
        rows,
        [("llm".to_string(), Some(MODEL.to_string()))],
        "{}",
        server.output()
    );
}
