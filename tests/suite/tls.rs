//! TLS to PostgreSQL, against a real server that speaks it: the throwaway
//! server of `scripts/with-postgres.sh` runs with `ssl=on` and a certificate
//! for 127.0.0.1 signed by a CA made for the run (`CONDENSE_TEST_PG_TLS_ROOT`).
//!
//! Hosted databases require TLS; a condense built without a TLS backend
//! failed every cache call against them and ran uncached without saying so.
//! Here the cache does a real round trip over `verify-full` and `require`,
//! the server itself confirms the connections are encrypted, a certificate
//! from another CA is refused with an error that says so, and the binary
//! names an unreachable or TLS-refusing database in its start-up log, without
//! its password.
use crate::support::live::{self, TestDatabase};
use crate::support::process;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use condense::cache::{Cache, CacheError, CacheOptions, CachedSummary};
use sqlx::{ConnectOptions, Executor};

/// A fresh database on the TLS server, and the CA.
async fn tls_database(test: &str) -> Option<(TestDatabase, String)> {
    let root = live::postgres_tls_root(test)?;
    let db = live::new_database(test).await?;
    Some((db, root))
}

/// The URL of `db` with `params` (such as `sslmode=verify-full&sslrootcert=…`)
/// in place of its TLS settings.
fn url(db: &TestDatabase, params: &str) -> String {
    let plain = db.url();
    let (base, query) = plain.split_once('?').unwrap_or((&plain, ""));
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| {
            !kv.is_empty() && !kv.starts_with("sslmode=") && !kv.starts_with("sslrootcert=")
        })
        .collect();
    let mut out = format!("{base}?{params}");
    for kv in kept {
        out.push('&');
        out.push_str(kv);
    }
    out
}

/// Options for caches that are meant to work: no loaded machine waits this long.
fn opts() -> CacheOptions {
    CacheOptions {
        max_connections: 2,
        acquire_timeout: Duration::from_secs(30),
        ..CacheOptions::default()
    }
}

fn entry(key: &str) -> CachedSummary {
    CachedSummary {
        key: key.into(),
        prefix_hash: format!("prefix-{key}"),
        span_len: 3,
        content: format!("## Task and progress\n- summary {key}"),
        messages_summarized: 3,
        token_count: 9,
        strategy: "heuristic".into(),
        model: None,
        created_at: "2025-06-01T12:00:00Z".into(),
        in_use_from: None,
        fidelity: None,
    }
}

/// Stores an entry through `cache` and reads it back.
async fn round_trip(cache: &Cache, key: &str) {
    let e = entry(key);
    let stored = cache.put(&e).await.expect("put over TLS");
    assert_eq!(stored, e);
    let got = cache.get(key).await.expect("get over TLS");
    assert_eq!(got, Some(e), "the entry comes back byte for byte");
}

/// `(connections, of which encrypted)` of condense's cache pool on `db`,
/// as the server sees them (`pg_stat_ssl`).
async fn cache_connections(db: &TestDatabase) -> (i64, i64) {
    let mut conn = db.admin().connect().await.unwrap();
    sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a \
         JOIN pg_stat_ssl s USING (pid) \
         WHERE a.datname = $1 AND a.application_name = 'condense-cache'",
    )
    .bind(db.name())
    .fetch_one(&mut conn)
    .await
    .unwrap()
}

/// A CA of its own, made on the spot, that signed nothing the server has.
fn other_ca(dir: &Path) -> String {
    let pem = dir.join("other-ca.pem");
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=another CA"])
        .arg("-keyout")
        .arg(dir.join("other-ca.key"))
        .arg("-out")
        .arg(&pem)
        .output()
        .expect("openssl runs (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    pem.to_string_lossy().into_owned()
}

#[tokio::test]
async fn verify_full_with_the_servers_ca_round_trips_over_tls() {
    let test = "verify_full_with_the_servers_ca_round_trips_over_tls";
    let Some((db, root)) = tls_database(test).await else {
        return;
    };
    let url = url(&db, &format!("sslmode=verify-full&sslrootcert={root}"));
    let cache = Cache::connect(&url, opts()).await.unwrap();
    cache.check().await.expect("the start-up check passes");
    round_trip(&cache, "verify-full").await;
    let (all, encrypted) = cache_connections(&db).await;
    assert!(all >= 1, "the cache's pool holds a connection");
    assert_eq!(encrypted, all, "every cache connection is encrypted");
}

#[tokio::test]
async fn require_encrypts_without_checking_the_certificate() {
    let test = "require_encrypts_without_checking_the_certificate";
    let Some((db, _root)) = tls_database(test).await else {
        return;
    };
    let cache = Cache::connect(&url(&db, "sslmode=require"), opts())
        .await
        .unwrap();
    round_trip(&cache, "require").await;
    let (all, encrypted) = cache_connections(&db).await;
    assert!(all >= 1);
    assert_eq!(encrypted, all, "require means encrypted");
}

#[tokio::test]
async fn plain_connections_still_work_on_the_same_server() {
    let test = "plain_connections_still_work_on_the_same_server";
    let Some((db, _root)) = tls_database(test).await else {
        return;
    };
    let cache = Cache::connect(&url(&db, "sslmode=disable"), opts())
        .await
        .unwrap();
    round_trip(&cache, "disable").await;
    let (all, encrypted) = cache_connections(&db).await;
    assert!(all >= 1);
    assert_eq!(encrypted, 0, "disable means plain: the check can tell");
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused() {
    let test = "a_certificate_from_another_ca_is_refused";
    let Some((db, _root)) = tls_database(test).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wrong = other_ca(dir.path());
    let url = url(&db, &format!("sslmode=verify-full&sslrootcert={wrong}"));
    let cache = Cache::connect(&url, opts()).await.unwrap();
    let err = cache
        .check()
        .await
        .expect_err("a server certificate that the given CA did not sign is refused");
    let text = err.to_string();
    assert!(
        matches!(err, CacheError::Unavailable(_))
            && text.contains("tls")
            && text.contains("certificate"),
        "the error names the TLS certificate problem: {text}"
    );
    // Every call fails the same way, and nothing reaches the database.
    assert!(cache.put(&entry("wrong-ca")).await.is_err());
    let mut conn = db.options().connect().await.unwrap();
    let tables: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'summary_cache'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(tables, 0, "not even the migration ran");
    conn.execute("SELECT 1").await.unwrap();
}

// ------------------------------------------------- what start-up tells the operator

/// The environment of a condense process whose cache is `database_url`.
fn env_with_database(database_url: &str) -> Vec<(String, String)> {
    vec![
        ("CONDENSE_LISTEN".into(), "127.0.0.1:0".into()),
        ("CONDENSE_LOG_FORMAT".into(), "json".into()),
        ("CONDENSE_DATABASE_URL".into(), database_url.into()),
    ]
}

/// Starts condense with `database_url` and returns its start-up report on the cache.
fn startup_report(database_url: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut p = process::Process::start(&[], &env_with_database(database_url), dir.path());
    let line = p.wait_for_line(|l| l.contains("summary cache") && l.contains("start-up"));
    (line, p.output())
}

const PASSWORD: &str = "pw-Zq8-never-logged";

#[test]
fn an_unreachable_database_is_named_at_start_up_without_its_password() {
    let port = process::unused_port();
    let (line, all) = startup_report(&format!(
        "postgres://condense:{PASSWORD}@127.0.0.1:{port}/condense?sslmode=verify-full"
    ));
    assert!(line.contains("\"WARN\""), "a warning: {line}");
    assert!(line.contains("unreachable"), "{line}");
    assert!(line.to_lowercase().contains("refused"), "the cause: {line}");
    assert!(!all.contains(PASSWORD), "the password leaked:\n{all}");
    assert!(
        all.contains(&format!("[redacted]@127.0.0.1:{port}")),
        "{all}"
    );
}

#[test]
fn a_server_that_refuses_tls_is_named_at_start_up() {
    // A server that answers PostgreSQL's TLS request with "N" (no TLS), as a
    // server with ssl=off does.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Every connection is answered at once, on its own thread, and held
    // until the client closes it: however many condense opens, and however
    // slow the machine, each one meets the refusal, never a queue.
    std::thread::spawn(move || {
        for conn in listener.incoming().map_while(Result::ok) {
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut conn = conn;
                let mut ssl_request = [0u8; 8];
                if conn.read_exact(&mut ssl_request).is_ok() {
                    let _ = conn.write_all(b"N");
                }
                let _ = std::io::copy(&mut conn, &mut std::io::sink());
            });
        }
    });
    let (line, all) = startup_report(&format!(
        "postgres://condense:{PASSWORD}@127.0.0.1:{port}/condense?sslmode=require"
    ));
    assert!(line.contains("\"WARN\""), "{line}");
    assert!(line.contains("does not support TLS"), "the cause: {line}");
    assert!(!all.contains(PASSWORD), "the password leaked:\n{all}");
}

#[tokio::test]
async fn a_wrong_root_certificate_is_named_at_start_up() {
    let test = "a_wrong_root_certificate_is_named_at_start_up";
    let Some((db, root)) = tls_database(test).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wrong = other_ca(dir.path());
    let bad = url(&db, &format!("sslmode=verify-full&sslrootcert={wrong}"));
    let good = url(&db, &format!("sslmode=verify-full&sslrootcert={root}"));
    let (bad_line, good_line) =
        tokio::task::spawn_blocking(move || (startup_report(&bad).0, startup_report(&good).0))
            .await
            .unwrap();
    assert!(bad_line.contains("\"WARN\""), "{bad_line}");
    assert!(bad_line.contains("certificate"), "the cause: {bad_line}");
    assert!(good_line.contains("\"INFO\""), "{good_line}");
    assert!(good_line.contains("reachable"), "{good_line}");
}
