//! The summary cache against real databases: PostgreSQL from `DATABASE_URL`
//! (run `scripts/with-postgres.sh cargo test --test suite cache::` to get a
//! throwaway server) and SQLite files in a temp dir.
//!
//! Every PostgreSQL test creates its own database (and drops it afterwards)
//! instead of using `#[sqlx::test]`, so that a missing `DATABASE_URL` fails
//! with instructions ([`live::postgres`]) instead of sqlx's bare panic, and
//! `CONDENSE_TEST_SKIP_LIVE=1` skips it visibly.
//! "Replicas" are independent `Cache` values on the same database.
use crate::support::live;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use condense::cache::{
    Cache, CacheError, CacheOptions, CachedSummary, Claim, PgCache, SqliteCache, spawn_pruner,
};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

// ---------------------------------------------------------------- helpers

/// A fresh database for one test, dropped (with its connections) afterwards.
struct TestDb {
    /// Keeps the database until the test ends.
    _db: live::TestDatabase,
    /// URL of the test database, for `Cache::connect`.
    url: String,
    /// Options for the test database, for `PgCache::new`.
    connect: PgConnectOptions,
}

impl TestDb {
    async fn create(test: &str) -> Option<TestDb> {
        let db = live::new_database(test).await?;
        Some(TestDb {
            url: db.url(),
            connect: db.options(),
            _db: db,
        })
    }

    /// A plain pool on the test database, to look behind the cache's back.
    async fn pool(&self) -> PgPool {
        PgPoolOptions::new()
            .max_connections(2)
            .connect_with(self.connect.clone())
            .await
            .unwrap()
    }

    fn cache(&self, opts: CacheOptions) -> Cache {
        Cache::Postgres(PgCache::new(self.connect.clone(), opts))
    }
}

/// A temp dir removed afterwards.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let p = std::env::temp_dir().join(format!("condense-cache-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bound on anything that should take milliseconds. The suite runs on a
/// loaded 2-core machine, so it only tells a hang from slowness; a timeout a
/// test needs to fire is made to fire (a closed port, a blackhole), never
/// raced against the machine.
const GENEROUS: Duration = Duration::from_secs(60);

/// A lease no test outlives: a wait that ends before it ended for another reason.
const LONG_LEASE: Duration = Duration::from_secs(600);

/// `fut`, or a panic naming `what` if it is still running after [`GENEROUS`].
async fn within_generous<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(GENEROUS, fut).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: still running after {GENEROUS:?}"),
    }
}

/// Options for caches that are meant to work: a connection wait no loaded
/// machine reaches.
fn opts() -> CacheOptions {
    CacheOptions {
        max_connections: 4,
        acquire_timeout: Duration::from_secs(30),
        ttl: Duration::from_secs(3600),
        max_rows: 1000,
        claim_lease: Duration::from_secs(30),
    }
}

fn entry(key: &str, prefix: &str, span_len: i64, content: &str) -> CachedSummary {
    CachedSummary {
        key: key.into(),
        prefix_hash: prefix.into(),
        span_len,
        content: content.into(),
        messages_summarized: span_len,
        token_count: 7,
        strategy: "heuristic".into(),
        model: None,
        created_at: "2025-06-01T12:00:00Z".into(),
        in_use_from: None,
        fidelity: None,
    }
}

async fn pg_hits(pool: &PgPool, key: &str) -> i64 {
    sqlx::query_scalar("SELECT hit_count FROM summary_cache WHERE key = $1")
        .bind(key)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn pg_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM summary_cache")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Makes `key` look stored (and last hit) two hours ago.
async fn pg_backdate(pool: &PgPool, key: &str) {
    sqlx::query(
        "UPDATE summary_cache SET stored_at = now() - interval '2 hours', \
         last_hit_at = now() - interval '2 hours' WHERE key = $1",
    )
    .bind(key)
    .execute(pool)
    .await
    .unwrap();
}

/// Makes the claim on `key` look run out, without waiting for a lease.
async fn pg_expire_claim(pool: &PgPool, key: &str) {
    sqlx::query(
        "UPDATE summary_claims SET expires_at = now() - interval '1 second' WHERE key = $1",
    )
    .bind(key)
    .execute(pool)
    .await
    .unwrap();
}

fn assert_unavailable<T: std::fmt::Debug>(
    r: Result<T, CacheError>,
    started: Instant,
    within: Duration,
) {
    let took = started.elapsed();
    assert!(
        matches!(r, Err(CacheError::Unavailable(_))),
        "expected Unavailable, got {r:?}"
    );
    assert!(took < within, "failing took {took:?}, allowed {within:?}");
}

// ------------------------------------------------------------ PostgreSQL

#[tokio::test]
async fn pg_miss_then_hits_are_counted() {
    let Some(db) = TestDb::create("pg_miss_then_hits_are_counted").await else {
        return;
    };
    let cache = db.cache(opts());
    let e = entry("k1", "p1", 3, "the summary");

    assert_eq!(cache.get("k1").await.unwrap(), None);
    assert_eq!(cache.put(&e).await.unwrap(), e);
    for _ in 0..3 {
        assert_eq!(cache.get("k1").await.unwrap(), Some(e.clone()));
    }
    let pool = db.pool().await;
    assert_eq!(pg_hits(&pool, "k1").await, 3);
    let hit_after_store: bool =
        sqlx::query_scalar("SELECT last_hit_at > stored_at FROM summary_cache WHERE key = 'k1'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(hit_after_store, "get bumps last_hit_at");
    cache.ping().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_put_twice_keeps_the_first_bytes() {
    let Some(db) = TestDb::create("pg_put_twice_keeps_the_first_bytes").await else {
        return;
    };
    let (a, b) = (db.cache(opts()), db.cache(opts()));
    let first = entry("k", "p", 2, "first");
    let mut second = entry("k", "p", 2, "second, different bytes");
    second.created_at = "2030-01-01T00:00:00Z".into();
    second.model = Some("gpt-x".into());

    assert_eq!(a.put(&first).await.unwrap(), first);
    assert_eq!(
        b.put(&second).await.unwrap(),
        first,
        "put returns the stored row"
    );
    assert_eq!(a.get("k").await.unwrap(), Some(first.clone()));
    assert_eq!(b.get("k").await.unwrap(), Some(first));

    // Racing writers on two replicas all end up with one and the same row.
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let c = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move {
                c.put(&entry("race", "p", 1, &format!("w{i}")))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut stored = Vec::new();
    for t in tasks {
        stored.push(t.await.unwrap());
    }
    assert!(stored.windows(2).all(|w| w[0] == w[1]), "{stored:?}");
    assert_eq!(a.get("race").await.unwrap().as_ref(), stored.first());
}

#[tokio::test]
async fn pg_expired_entries_miss_and_are_replaced() {
    let Some(db) = TestDb::create("pg_expired_entries_miss_and_are_replaced").await else {
        return;
    };
    let cache = db.cache(opts()); // TTL one hour
    let pool = db.pool().await;
    cache.put(&entry("old", "p-old", 4, "stale")).await.unwrap();
    cache.put(&entry("new", "p-new", 2, "fresh")).await.unwrap();
    pg_backdate(&pool, "old").await;

    assert_eq!(cache.get("old").await.unwrap(), None, "expired is a miss");
    assert_eq!(pg_hits(&pool, "old").await, 0, "a miss is not a hit");
    assert_eq!(cache.find_prefix(&["p-old".into()]).await.unwrap(), None);
    assert!(cache.get("new").await.unwrap().is_some());

    // A put over an expired row replaces it (first write wins only among live rows).
    let again = entry("old", "p-old", 4, "recomputed");
    assert_eq!(cache.put(&again).await.unwrap(), again);
    assert_eq!(cache.get("old").await.unwrap(), Some(again));

    pg_backdate(&pool, "old").await;
    assert_eq!(
        cache.prune(Duration::from_secs(3600), 1000).await.unwrap(),
        1
    );
    assert_eq!(pg_rows(&pool).await, 1);
}

#[tokio::test]
async fn pg_prune_caps_rows_least_recently_hit_first() {
    let Some(db) = TestDb::create("pg_prune_caps_rows_least_recently_hit_first").await else {
        return;
    };
    let cache = db.cache(opts());
    for i in 0..5 {
        cache
            .put(&entry(&format!("k{i}"), "p", 1, "x"))
            .await
            .unwrap();
    }
    // Recency is now k1 > k3 > k4 > k2 > k0.
    cache.get("k3").await.unwrap().unwrap();
    cache.get("k1").await.unwrap().unwrap();
    // An expired claim (a zero lease ends as it starts) is pruned too.
    assert_eq!(
        cache.claim("gone", Duration::ZERO).await.unwrap(),
        Claim::Claimed
    );

    assert_eq!(
        cache.prune(Duration::from_secs(3600), 3).await.unwrap(),
        2 + 1
    );
    let pool = db.pool().await;
    let mut left: Vec<String> = sqlx::query_scalar("SELECT key FROM summary_cache")
        .fetch_all(&pool)
        .await
        .unwrap();
    left.sort();
    assert_eq!(left, ["k1", "k3", "k4"]);
    let claims: i64 = sqlx::query_scalar("SELECT count(*) FROM summary_claims")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(claims, 0);
    assert_eq!(cache.prune(Duration::from_secs(3600), 3).await.unwrap(), 0);
}

#[tokio::test]
async fn pg_find_prefix_picks_the_longest_live_span() {
    let Some(db) = TestDb::create("pg_find_prefix_picks_the_longest_live_span").await else {
        return;
    };
    let cache = db.cache(opts());
    let pool = db.pool().await;
    for (key, prefix, len) in [
        ("a", "h2", 2),
        ("b", "h5", 5),
        ("c", "h9", 9),
        ("d", "h7", 7),
    ] {
        cache.put(&entry(key, prefix, len, key)).await.unwrap();
    }
    pg_backdate(&pool, "d").await; // the longest candidate, but expired

    let asked: Vec<String> = ["h2", "h5", "h7", "unknown"].map(String::from).to_vec();
    let found = cache.find_prefix(&asked).await.unwrap().unwrap();
    assert_eq!((found.key.as_str(), found.span_len), ("b", 5));
    assert_eq!(
        pg_hits(&pool, "b").await,
        1,
        "a prefix reuse counts as a hit"
    );
    assert_eq!(cache.find_prefix(&[]).await.unwrap(), None);
    assert_eq!(cache.find_prefix(&["unknown".into()]).await.unwrap(), None);
    let all: Vec<String> = ["h2", "h9", "h5"].map(String::from).to_vec();
    assert_eq!(cache.find_prefix(&all).await.unwrap().unwrap().key, "c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_claims_busy_release_and_lease_takeover() {
    let Some(db) = TestDb::create("pg_claims_busy_release_and_lease_takeover").await else {
        return;
    };
    let (a, b) = (db.cache(opts()), db.cache(opts()));
    // Two replicas migrating a fresh database at once (sqlx takes a lock).
    let (ma, mb) = tokio::join!(a.migrate(), b.migrate());
    ma.unwrap();
    mb.unwrap();
    let lease = Duration::from_secs(30);

    assert_eq!(a.claim("k", lease).await.unwrap(), Claim::Claimed);
    assert_eq!(b.claim("k", lease).await.unwrap(), Claim::Busy);
    assert_eq!(
        a.claim("k", lease).await.unwrap(),
        Claim::Busy,
        "not re-entrant"
    );
    assert!(b.claim_active("k").await.unwrap());
    b.release("k").await.unwrap(); // not b's claim: no effect
    assert_eq!(b.claim("k", lease).await.unwrap(), Claim::Busy);
    a.release("k").await.unwrap();
    assert!(!b.claim_active("k").await.unwrap());
    assert_eq!(b.claim("k", lease).await.unwrap(), Claim::Claimed);

    // A lease that runs out is taken over; the late release of the old holder
    // does not drop the new holder's claim.
    assert_eq!(a.claim("k2", lease).await.unwrap(), Claim::Claimed);
    assert_eq!(b.claim("k2", lease).await.unwrap(), Claim::Busy);
    pg_expire_claim(&db.pool().await, "k2").await;
    assert!(!a.claim_active("k2").await.unwrap());
    assert_eq!(b.claim("k2", lease).await.unwrap(), Claim::Claimed);
    a.release("k2").await.unwrap();
    assert_eq!(a.claim("k2", lease).await.unwrap(), Claim::Busy);
    // put ends the claim.
    b.put(&entry("k2", "p", 1, "done")).await.unwrap();
    assert!(!a.claim_active("k2").await.unwrap());

    // Many claimers at once on two replicas: exactly one wins.
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let c = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { c.claim("hot", Duration::from_secs(30)).await.unwrap() })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        won += usize::from(t.await.unwrap() == Claim::Claimed);
    }
    assert_eq!(won, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_wait_for_gets_what_another_replica_put() {
    let Some(db) = TestDb::create("pg_wait_for_gets_what_another_replica_put").await else {
        return;
    };
    let (me, other) = (db.cache(opts()), db.cache(opts()));
    let poll = Duration::from_millis(25);
    let e = entry("k", "p", 3, "computed elsewhere");

    // The other replica claims and, a moment later, stores.
    assert_eq!(other.claim("k", LONG_LEASE).await.unwrap(), Claim::Claimed);
    assert_eq!(me.claim("k", LONG_LEASE).await.unwrap(), Claim::Busy);
    let started = Instant::now();
    let writer = {
        let (other, e) = (other.clone(), e.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            other.put(&e).await.unwrap();
        })
    };
    let got = within_generous("wait for a put", me.wait_for("k", poll)).await;
    assert_eq!(got.unwrap(), Some(e));
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "not before the put"
    );
    writer.await.unwrap();

    // The holder gives up: waiters return None then, not when the lease ends
    // (which is past the generous bound).
    assert_eq!(other.claim("k2", LONG_LEASE).await.unwrap(), Claim::Claimed);
    let releaser = {
        let other = other.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            other.release("k2").await.unwrap();
        })
    };
    let got = within_generous("wait for a release", me.wait_for("k2", poll)).await;
    assert_eq!(got.unwrap(), None);
    releaser.await.unwrap();

    // The holder crashed: the wait ends when its lease does.
    assert_eq!(
        other.claim("k3", Duration::from_millis(300)).await.unwrap(),
        Claim::Claimed
    );
    let got = within_generous("wait for a lease to end", me.wait_for("k3", poll)).await;
    assert_eq!(got.unwrap(), None);
    assert_eq!(me.claim("k3", LONG_LEASE).await.unwrap(), Claim::Claimed);

    // The holder is slow: the wait has no deadline of its own; the caller's
    // timeout ends it by dropping the future. (Fires for sure: the claim
    // outlives the test.)
    assert_eq!(other.claim("k4", LONG_LEASE).await.unwrap(), Claim::Claimed);
    let waited = tokio::time::timeout(Duration::from_millis(300), me.wait_for("k4", poll)).await;
    assert!(waited.is_err(), "still waiting: {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_database_down_and_back() {
    let Some(db) = TestDb::create("pg_database_down_and_back").await else {
        return;
    };
    let upstream = upstream_addr(&db.connect).await;
    let mut proxy = Proxy::start(upstream).await;
    proxy.set(Net::Down).await; // down when the service starts
    // Calls against the outage fail by this timeout, which always fires (a
    // closed port, a blackhole); calls after recovery must fit in it, so it
    // is generous rather than short. Failing calls run side by side so the
    // test waits for it once per outage, not once per call.
    let acquire = Duration::from_secs(10);
    let bound = acquire * 2 + GENEROUS; // the call deadline, plus slack
    let cache = Cache::Postgres(PgCache::new(
        db.connect.clone().host("127.0.0.1").port(proxy.port),
        CacheOptions {
            acquire_timeout: acquire,
            ..opts()
        },
    ));

    // Down at start: construction did no I/O; calls fail, within their deadline.
    let t = Instant::now();
    let (get, ping, migrate) = tokio::join!(cache.get("k"), cache.ping(), cache.migrate());
    assert_unavailable(get, t, bound);
    assert_unavailable(ping, t, bound);
    assert_unavailable(migrate, t, bound);

    // Up: the schema is migrated on first use, everything works.
    proxy.set(Net::Up).await;
    let e = entry("k", "p", 1, "survives outages");
    assert_eq!(cache.get("k").await.unwrap(), None);
    cache.put(&e).await.unwrap();
    assert_eq!(cache.get("k").await.unwrap(), Some(e.clone()));

    // Down (server stopped: connections reset, port closed).
    proxy.set(Net::Down).await;
    let t = Instant::now();
    let (get1, get2, claim) =
        tokio::join!(cache.get("k"), cache.get("k"), cache.claim("k", LONG_LEASE));
    assert_unavailable(get1, t, bound);
    assert_unavailable(get2, t, bound);
    assert_unavailable(claim, t, bound);

    // Back: the same Cache recovers by itself.
    proxy.set(Net::Up).await;
    assert_eq!(cache.get("k").await.unwrap(), Some(e.clone()));

    // Network cut (packets vanish, no reset): still bounded by the timeouts.
    proxy.set(Net::Blackhole).await;
    let t = Instant::now();
    let late = entry("k9", "p", 1, "x");
    let (get, put) = tokio::join!(cache.get("k"), cache.put(&late));
    assert_unavailable(get, t, bound);
    assert_unavailable(put, t, bound);

    proxy.set(Net::Up).await;
    assert_eq!(cache.get("k").await.unwrap(), Some(e));
    cache.ping().await.unwrap();
}

#[tokio::test]
async fn pg_connections_killed_by_the_server_are_replaced() {
    let Some(db) = TestDb::create("pg_connections_killed_by_the_server_are_replaced").await else {
        return;
    };
    let cache = db.cache(opts());
    let e = entry("k", "p", 1, "x");
    cache.put(&e).await.unwrap();
    // What a server restart or an admin does to every open connection.
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = 'condense-cache' AND datname = current_database()",
    )
    .fetch_all(&db.pool().await)
    .await
    .unwrap();
    assert!(
        !killed.is_empty() && killed.iter().all(|k| *k),
        "{killed:?}"
    );
    assert_eq!(cache.get("k").await.unwrap(), Some(e));
}

#[tokio::test]
async fn pg_entries_survive_a_new_cache() {
    let Some(db) = TestDb::create("pg_entries_survive_a_new_cache").await else {
        return;
    };
    let e = entry("k", "p", 2, "persisted");
    let first = Cache::connect(&db.url, opts()).await.unwrap();
    assert_eq!(first.backend(), "postgres");
    first.put(&e).await.unwrap();
    first.get("k").await.unwrap().unwrap();
    if let Cache::Postgres(pg) = &first {
        pg.close().await;
    }
    drop(first);

    let second = Cache::connect(&db.url, opts()).await.unwrap();
    assert_eq!(second.get("k").await.unwrap(), Some(e));
    assert_eq!(pg_hits(&db.pool().await, "k").await, 2);
}

#[tokio::test]
async fn pg_pruner_runs_periodically() {
    let Some(db) = TestDb::create("pg_pruner_runs_periodically").await else {
        return;
    };
    let cache = db.cache(opts());
    let pool = db.pool().await;
    for i in 0..4 {
        cache
            .put(&entry(&format!("k{i}"), "p", 1, "x"))
            .await
            .unwrap();
    }
    pg_backdate(&pool, "k0").await;
    let pruner = spawn_pruner(
        cache.clone(),
        Duration::from_millis(50),
        Duration::from_secs(3600),
        2,
    );
    let deadline = Instant::now() + GENEROUS;
    while pg_rows(&pool).await != 2 {
        assert!(Instant::now() < deadline, "pruner did not prune");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Rows added later are pruned by a later round.
    for i in 4..7 {
        cache
            .put(&entry(&format!("k{i}"), "p", 1, "x"))
            .await
            .unwrap();
    }
    while pg_rows(&pool).await != 2 {
        assert!(
            Instant::now() < deadline,
            "pruner stopped after its first round"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!pruner.is_finished());
    pruner.abort();
}

// ---------------------------------------------------------------- SQLite

fn sqlite_url(dir: &TempDir) -> String {
    format!("sqlite://{}", dir.0.join("cache.db").display())
}

async fn sqlite_pool(dir: &TempDir) -> SqlitePool {
    SqlitePool::connect_with(SqliteConnectOptions::new().filename(dir.0.join("cache.db")))
        .await
        .unwrap()
}

/// Makes the claim on `key` look run out, without waiting for a lease.
async fn sqlite_expire_claim(dir: &TempDir, key: &str) {
    sqlx::query("UPDATE summary_claims SET expires_at = 0 WHERE key = ?1")
        .bind(key)
        .execute(&sqlite_pool(dir).await)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_hits_first_write_and_claims() {
    let dir = TempDir::new();
    let (a, b) = (
        Cache::connect(&sqlite_url(&dir), opts()).await.unwrap(),
        Cache::connect(&sqlite_url(&dir), opts()).await.unwrap(),
    );
    assert_eq!(a.backend(), "sqlite");
    assert!(dir.0.join("cache.db").exists(), "the file is created");
    let e = entry("k", "p", 2, "sqlite summary");

    assert_eq!(a.get("k").await.unwrap(), None);
    assert_eq!(a.put(&e).await.unwrap(), e);
    assert_eq!(b.put(&entry("k", "p", 2, "later")).await.unwrap(), e);
    assert_eq!(b.get("k").await.unwrap(), Some(e.clone()));
    assert_eq!(a.get("k").await.unwrap(), Some(e.clone()));
    let hits: i64 = sqlx::query_scalar("SELECT hit_count FROM summary_cache WHERE key = 'k'")
        .fetch_one(&sqlite_pool(&dir).await)
        .await
        .unwrap();
    assert_eq!(hits, 2);

    let lease = Duration::from_secs(30);
    assert_eq!(a.claim("c", lease).await.unwrap(), Claim::Claimed);
    assert_eq!(b.claim("c", lease).await.unwrap(), Claim::Busy);
    b.release("c").await.unwrap();
    assert_eq!(b.claim("c", lease).await.unwrap(), Claim::Busy);
    a.release("c").await.unwrap();
    assert_eq!(b.claim("c", lease).await.unwrap(), Claim::Claimed);

    assert_eq!(a.claim("t", lease).await.unwrap(), Claim::Claimed);
    assert_eq!(b.claim("t", lease).await.unwrap(), Claim::Busy);
    sqlite_expire_claim(&dir, "t").await;
    assert_eq!(
        b.claim("t", lease).await.unwrap(),
        Claim::Claimed,
        "lease takeover"
    );

    let done = entry("t", "p", 1, "from b");
    let writer = {
        let (b, done) = (b.clone(), done.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            b.put(&done).await.unwrap();
        })
    };
    let got = within_generous("wait for a put", a.wait_for("t", Duration::from_millis(20))).await;
    let got = got.unwrap();
    assert_eq!(got, Some(done));
    writer.await.unwrap();
    a.ping().await.unwrap();
}

#[tokio::test]
async fn sqlite_expiry_prefix_and_prune() {
    let dir = TempDir::new();
    let cache = Cache::connect(&sqlite_url(&dir), opts()).await.unwrap();
    let pool = sqlite_pool(&dir).await;
    for (key, prefix, len) in [
        ("a", "h2", 2),
        ("b", "h5", 5),
        ("d", "h7", 7),
        ("e", "h1", 1),
    ] {
        cache.put(&entry(key, prefix, len, key)).await.unwrap();
    }
    sqlx::query(
        "UPDATE summary_cache SET stored_at = stored_at - 7200000, \
         last_hit_at = last_hit_at - 7200000 WHERE key = 'd'",
    )
    .execute(&pool)
    .await
    .unwrap();

    assert_eq!(cache.get("d").await.unwrap(), None);
    let asked: Vec<String> = ["h2", "h5", "h7", "zz"].map(String::from).to_vec();
    assert_eq!(cache.find_prefix(&asked).await.unwrap().unwrap().key, "b");
    cache.get("a").await.unwrap().unwrap(); // recency now: a > b > e

    // d expired, then e is the least recently hit beyond 2 rows.
    assert_eq!(cache.prune(Duration::from_secs(3600), 2).await.unwrap(), 2);
    let mut left: Vec<String> = sqlx::query_scalar("SELECT key FROM summary_cache")
        .fetch_all(&pool)
        .await
        .unwrap();
    left.sort();
    assert_eq!(left, ["a", "b"]);
}

#[tokio::test]
async fn sqlite_entries_survive_a_restart() {
    let dir = TempDir::new();
    let e = entry("k", "p", 2, "on disk");
    {
        let first = Cache::connect(&sqlite_url(&dir), opts()).await.unwrap();
        first.put(&e).await.unwrap();
        if let Cache::Sqlite(s) = &first {
            s.close().await;
        }
    }
    let second = Cache::Sqlite(
        SqliteCache::open(
            SqliteConnectOptions::new().filename(dir.0.join("cache.db")),
            opts(),
        )
        .await
        .unwrap(),
    );
    assert_eq!(second.get("k").await.unwrap(), Some(e));
}

// ------------------------------------------ claim guards, on both backends

/// Behind the caches' back, for what the claim tests set up or inspect.
enum Backdoor {
    Pg(PgPool),
    Sqlite(SqlitePool),
}

impl Backdoor {
    /// Makes the claim on `key` look run out, without waiting for a lease.
    async fn expire_claim(&self, key: &str) {
        match self {
            Backdoor::Pg(pool) => pg_expire_claim(pool, key).await,
            Backdoor::Sqlite(pool) => {
                sqlx::query("UPDATE summary_claims SET expires_at = 0 WHERE key = ?1")
                    .bind(key)
                    .execute(pool)
                    .await
                    .unwrap();
            }
        }
    }

    /// Seconds until the claim on `key` runs out, by the database's clock.
    async fn claim_secs_left(&self, key: &str) -> f64 {
        match self {
            Backdoor::Pg(pool) => sqlx::query_scalar(
                "SELECT EXTRACT(EPOCH FROM expires_at - now())::float8 \
                 FROM summary_claims WHERE key = $1",
            )
            .bind(key)
            .fetch_one(pool)
            .await
            .unwrap(),
            Backdoor::Sqlite(pool) => {
                let expires_ms: i64 =
                    sqlx::query_scalar("SELECT expires_at FROM summary_claims WHERE key = ?1")
                        .bind(key)
                        .fetch_one(pool)
                        .await
                        .unwrap();
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap();
                (expires_ms as f64 - now.as_millis() as f64) / 1000.0
            }
        }
    }
}

/// Two replicas on one fresh PostgreSQL database (kept while the `TestDb` lives).
async fn pg_replicas(test: &str, opts: CacheOptions) -> Option<(TestDb, Cache, Cache, Backdoor)> {
    let db = TestDb::create(test).await?;
    let (a, b) = (db.cache(opts.clone()), db.cache(opts));
    let door = Backdoor::Pg(db.pool().await);
    Some((db, a, b, door))
}

/// Two replicas on one SQLite file (kept while the `TempDir` lives).
async fn sqlite_replicas(opts: CacheOptions) -> (TempDir, Cache, Cache, Backdoor) {
    let dir = TempDir::new();
    let a = Cache::connect(&sqlite_url(&dir), opts.clone())
        .await
        .unwrap();
    let b = Cache::connect(&sqlite_url(&dir), opts).await.unwrap();
    let door = Backdoor::Sqlite(sqlite_pool(&dir).await);
    (dir, a, b, door)
}

/// Waits for a release that runs in the background (a dropped guard's).
async fn until_claim_ends(cache: &Cache, key: &str) {
    within_generous("the background release of a dropped guard", async {
        while cache.claim_active(key).await.unwrap() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// `renew` extends the holder's claim, and only the holder's: it is false for
/// another replica, and for the holder once the claim was taken over or ended.
async fn renew_extends_only_a_held_claim(a: &Cache, b: &Cache, door: &Backdoor) {
    let lease = opts().claim_lease;
    let held = a.claim_lease("k").await.unwrap().expect("k is free");
    assert!(b.claim_lease("k").await.unwrap().is_none(), "k is a's");
    assert!(door.claim_secs_left("k").await <= lease.as_secs_f64());

    assert!(a.renew("k", LONG_LEASE).await.unwrap());
    assert!(door.claim_secs_left("k").await > LONG_LEASE.as_secs_f64() - 60.0);
    assert!(!b.renew("k", lease).await.unwrap(), "b never held k");
    assert!(
        door.claim_secs_left("k").await > LONG_LEASE.as_secs_f64() - 60.0,
        "b's renew left a's claim alone"
    );

    // Run out and taken over: lost for good.
    door.expire_claim("k").await;
    let taken = b.claim_lease("k").await.unwrap().expect("takeover");
    assert!(!a.renew("k", lease).await.unwrap(), "a lost k");
    assert!(b.renew("k", lease).await.unwrap());
    held.release().await; // a's release leaves b's claim alone
    assert!(a.claim_active("k").await.unwrap());
    // Ended by a put: nothing left to renew.
    taken.put(&entry("k", "p", 1, "b's")).await.unwrap();
    assert!(!b.claim_active("k").await.unwrap());
    assert!(!b.renew("k", lease).await.unwrap(), "put ended it");

    // Run out but nobody took it over: still a's, and renewed.
    let held = a.claim_lease("r").await.unwrap().expect("r is free");
    door.expire_claim("r").await;
    assert!(!b.claim_active("r").await.unwrap());
    assert!(a.renew("r", lease).await.unwrap());
    assert!(
        b.claim_lease("r").await.unwrap().is_none(),
        "renewed, so live"
    );
    held.release().await;
    assert!(!a.renew("r", lease).await.unwrap(), "released");
}

/// `hold` keeps a claim for work 1.5 times as long as its lease: the other
/// replica can never take it, and its waiter keeps waiting until the put.
async fn hold_outlasts_the_lease(a: &Cache, b: &Cache) {
    let lease = a.options().unwrap().claim_lease;
    let work = lease * 3 / 2;
    let held = a.claim_lease("slow").await.unwrap().expect("free");
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.wait_for("slow", Duration::from_millis(100)).await })
    };
    let started = Instant::now();
    let checks = held
        .hold(async {
            let mut checks = 0;
            while started.elapsed() < work {
                let stolen = b.claim_lease("slow").await.unwrap();
                let at = started.elapsed();
                assert!(
                    stolen.is_none(),
                    "b took the claim after {at:?} (lease {lease:?})"
                );
                checks += 1;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            checks
        })
        .await;
    assert!(checks > 1);
    assert!(
        !waiter.is_finished(),
        "the waiter kept waiting for {:?}, while the claim was renewed",
        started.elapsed()
    );
    assert!(b.claim_active("slow").await.unwrap());

    let stored = held.put(&entry("slow", "p", 2, "slow work")).await.unwrap();
    let got = within_generous("the waiter, after the put", waiter).await;
    assert_eq!(got.unwrap().unwrap(), Some(stored));
    assert!(
        !b.claim_active("slow").await.unwrap(),
        "put ended the claim"
    );
}

/// A guard dropped while armed (its request timed out) gives the claim up at
/// once, long before its lease ends: waiters stop waiting and another replica
/// can claim. A released guard frees it before `release` returns.
async fn dropped_guard_releases_at_once(a: &Cache, b: &Cache) {
    assert_eq!(a.options().unwrap().claim_lease, LONG_LEASE);
    let held = a.claim_lease("k").await.unwrap().expect("free");
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.wait_for("k", Duration::from_millis(20)).await })
    };
    // The request's timeout, which certainly fires: the work never ends.
    let request = async move { held.hold(std::future::pending::<()>()).await };
    let timed_out = tokio::time::timeout(Duration::from_millis(200), request).await;
    assert!(timed_out.is_err());

    until_claim_ends(b, "k").await;
    let got = within_generous("the waiter, after the drop", waiter).await;
    assert_eq!(got.unwrap().unwrap(), None, "claim ended without an entry");
    let mine = b.claim_lease("k").await.unwrap().expect("free again");

    // An explicit release: free by the time it returns.
    mine.release().await;
    let again = a.claim_lease("k").await.unwrap().expect("released");
    drop(again);
    until_claim_ends(b, "k").await;
}

fn lease_opts(claim_lease: Duration) -> CacheOptions {
    CacheOptions {
        claim_lease,
        ..opts()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_renew_extends_only_a_held_claim() {
    let test = "pg_renew_extends_only_a_held_claim";
    let Some((_db, a, b, door)) = pg_replicas(test, opts()).await else {
        return;
    };
    renew_extends_only_a_held_claim(&a, &b, &door).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_renew_extends_only_a_held_claim() {
    let (_dir, a, b, door) = sqlite_replicas(opts()).await;
    renew_extends_only_a_held_claim(&a, &b, &door).await;
}

/// The lease of the hold tests: renewed every third of it, so a renewal may
/// come 13 s late (a stalled machine) before the claim could be taken.
const HOLD_LEASE: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_hold_outlasts_the_lease() {
    let opts = lease_opts(HOLD_LEASE);
    let Some((_db, a, b, _)) = pg_replicas("pg_hold_outlasts_the_lease", opts).await else {
        return;
    };
    hold_outlasts_the_lease(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_hold_outlasts_the_lease() {
    let (_dir, a, b, _) = sqlite_replicas(lease_opts(HOLD_LEASE)).await;
    hold_outlasts_the_lease(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_dropped_guard_releases_at_once() {
    let test = "pg_dropped_guard_releases_at_once";
    let Some((_db, a, b, _)) = pg_replicas(test, lease_opts(LONG_LEASE)).await else {
        return;
    };
    dropped_guard_releases_at_once(&a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_dropped_guard_releases_at_once() {
    let (_dir, a, b, _) = sqlite_replicas(lease_opts(LONG_LEASE)).await;
    dropped_guard_releases_at_once(&a, &b).await;
}

// ------------------------------------------------------- no database needed

#[tokio::test]
async fn off_is_a_no_op() {
    let cache = Cache::connect("off", opts()).await.unwrap();
    let e = entry("k", "p", 1, "x");
    assert_eq!(cache.backend(), "off");
    assert_eq!(cache.put(&e).await.unwrap(), e);
    assert_eq!(cache.get("k").await.unwrap(), None);
    assert_eq!(cache.find_prefix(&["p".into()]).await.unwrap(), None);
    assert_eq!(
        cache.claim("k", Duration::from_secs(1)).await.unwrap(),
        Claim::Claimed
    );
    assert_eq!(
        cache.claim("k", Duration::from_secs(1)).await.unwrap(),
        Claim::Claimed
    );
    cache.release("k").await.unwrap();
    let first = cache.claim_lease("k").await.unwrap().expect("always");
    let second = cache
        .claim_lease("k")
        .await
        .unwrap()
        .expect("always, even twice");
    assert!(cache.renew("k", LONG_LEASE).await.unwrap());
    assert_eq!(first.hold(async { 7 }).await, 7);
    assert_eq!(first.put(&e).await.unwrap(), e);
    second.release().await;
    let waited = within_generous("wait with no cache", cache.wait_for("k", LONG_LEASE)).await;
    assert_eq!(waited.unwrap(), None, "nothing to wait for");
    assert_eq!(cache.prune(Duration::ZERO, 0).await.unwrap(), 0);
    cache.ping().await.unwrap();
    assert!(
        spawn_pruner(cache, Duration::ZERO, Duration::ZERO, 0)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn urls_are_checked_and_passwords_never_shown() {
    let err = Cache::connect("mysql://app:hunter2@db/x", opts())
        .await
        .unwrap_err();
    assert!(matches!(err, CacheError::Config(_)), "{err:?}");
    assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");

    let err = Cache::connect("postgres://app:hunter2@db/x?sslmode=bogus", opts())
        .await
        .unwrap_err();
    assert!(matches!(err, CacheError::Config(_)), "{err:?}");
    assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");

    // Nothing listens on port 1: lazy construction succeeds, calls fail (the
    // short timeout always fires: nothing can answer), and neither the Cache
    // nor the error shows the password.
    let opts = CacheOptions {
        acquire_timeout: Duration::from_millis(300),
        ..opts()
    };
    let cache = Cache::connect("postgresql://app:hunter2@127.0.0.1:1/x", opts)
        .await
        .unwrap();
    assert!(!format!("{cache:?}").contains("hunter2"));
    let t = Instant::now();
    let r = cache.get("k").await;
    assert!(!format!("{r:?}").contains("hunter2"));
    assert_unavailable(r, t, GENEROUS);

    // The pruner survives an unreachable database.
    let pruner = spawn_pruner(
        cache,
        Duration::from_millis(20),
        Duration::from_secs(60),
        10,
    );
    // Long enough for failed rounds (each ends within 600 ms); a pruner
    // that died of one would be finished by then.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!pruner.is_finished(), "the pruner must keep running");
    pruner.abort();
}

// ------------------------------------------- a TCP proxy we can cut at will

async fn upstream_addr(connect: &PgConnectOptions) -> SocketAddr {
    let host = connect.get_host();
    assert!(
        !host.starts_with('/'),
        "the outage test needs DATABASE_URL over TCP, not {host}"
    );
    tokio::net::lookup_host((host, connect.get_port()))
        .await
        .unwrap()
        .next()
        .unwrap()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Net {
    /// Forward both ways.
    Up,
    /// Nothing listens and open connections are reset: a stopped server.
    Down,
    /// Accept but never answer, and freeze open connections: a cut network.
    Blackhole,
}

/// A loopback TCP proxy in front of the real server, on a fixed port.
struct Proxy {
    port: u16,
    upstream: SocketAddr,
    mode: watch::Sender<Net>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: Option<JoinHandle<()>>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let port = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut proxy = Proxy {
            port,
            upstream,
            mode: watch::channel(Net::Down).0,
            conns: Arc::default(),
            accept: None,
        };
        proxy.set(Net::Up).await;
        proxy
    }

    async fn set(&mut self, mode: Net) {
        if mode != Net::Blackhole {
            for c in self.conns.lock().unwrap().drain(..) {
                c.abort(); // drops (closes) both sockets
            }
        }
        self.mode.send_replace(mode);
        match mode {
            Net::Down => {
                if let Some(accept) = self.accept.take() {
                    accept.abort();
                    let _ = accept.await; // the listener is closed once this returns
                }
            }
            Net::Up | Net::Blackhole if self.accept.is_none() => {
                self.accept = Some(self.listen().await);
            }
            Net::Up | Net::Blackhole => {}
        }
    }

    async fn listen(&self) -> JoinHandle<()> {
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(addr).await {
                Ok(l) => break l,
                Err(e) if tries < 500 => {
                    tries += 1;
                    eprintln!("proxy: rebinding {addr}: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("proxy: cannot rebind {addr}: {e}"),
            }
        };
        let (rx, conns, upstream) = (self.mode.subscribe(), self.conns.clone(), self.upstream);
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((client, _)) = listener.accept().await {
                if *rx.borrow() == Net::Up {
                    held.clear();
                    let pipe = tokio::spawn(pipe(client, upstream, rx.clone()));
                    conns.lock().unwrap().push(pipe);
                } else {
                    held.push(client); // never answered
                }
            }
        })
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
        }
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }
}

async fn pipe(client: TcpStream, upstream: SocketAddr, mode: watch::Receiver<Net>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    tokio::join!(pump(cr, sw, mode.clone()), pump(sr, cw, mode));
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut mode: watch::Receiver<Net>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        while *mode.borrow_and_update() == Net::Blackhole {
            if mode.changed().await.is_err() {
                return;
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

// ------------------------------------------ where a summary came into use

/// The first forwarded request that carried a summary is recorded once and
/// comes back with the entry, by key and by prefix; a later request cannot
/// move it, and an unknown key is no error.
async fn in_use_is_recorded_once(cache: &Cache) {
    cache.put(&entry("u", "hu", 3, "in use")).await.unwrap();
    assert_eq!(cache.get("u").await.unwrap().unwrap().in_use_from, None);
    cache.mark_in_use("u", 12).await.unwrap();
    cache.mark_in_use("u", 20).await.unwrap();
    cache.mark_in_use("nobody", 1).await.unwrap();
    assert_eq!(cache.get("u").await.unwrap().unwrap().in_use_from, Some(12));
    let found = cache.find_prefix(&["hu".into()]).await.unwrap().unwrap();
    assert_eq!(found.in_use_from, Some(12));
}

#[tokio::test]
async fn pg_in_use_is_recorded_once() {
    let Some(db) = TestDb::create("pg_in_use_is_recorded_once").await else {
        return;
    };
    in_use_is_recorded_once(&db.cache(opts())).await;
}

#[tokio::test]
async fn sqlite_in_use_is_recorded_once() {
    let dir = TempDir::new();
    let cache = Cache::connect(&sqlite_url(&dir), opts()).await.unwrap();
    in_use_is_recorded_once(&cache).await;
}
