//! Whether the summary cache answers, known without asking it: a ping per
//! `/readyz` starved requests of the pool's connections, so one task pings
//! now and then, and requests report what their own calls found.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use super::error::bounded;
use super::{Cache, CacheError};

/// What is known of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// Nothing yet: the first check has not finished.
    Unknown,
    /// The last check or call reached the database.
    Up,
    /// The last check or call could not reach it in time.
    Down,
}

/// How the background check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthCheck {
    /// Time between pings.
    pub every: Duration,
    /// Longest a ping may take before the cache counts as down.
    pub timeout: Duration,
}

/// The cache's last known state, shared by the checker, the request path
/// and `/readyz`. Cheap to clone; reading it takes two atomic loads.
#[derive(Debug, Clone, Default)]
pub struct CacheHealth(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    /// A [`Status`] as `u8`.
    status: AtomicU8,
    /// When the state was last learned, in milliseconds since the epoch (0: never).
    learned_at_ms: AtomicU64,
}

impl CacheHealth {
    pub fn status(&self) -> Status {
        match self.0.status.load(Ordering::Relaxed) {
            1 => Status::Up,
            2 => Status::Down,
            _ => Status::Unknown,
        }
    }

    /// When the state was last learned (by a check or a request's call).
    pub fn learned_at(&self) -> Option<SystemTime> {
        match self.0.learned_at_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(UNIX_EPOCH + Duration::from_millis(ms)),
        }
    }

    /// Records what a cache call found: only whether it reached the database.
    pub fn observe<T>(&self, result: &Result<T, CacheError>) {
        match result {
            Ok(_) => self.set(Status::Up, None),
            Err(e) => self.failed(e),
        }
    }

    pub fn failed(&self, e: &CacheError) {
        if e.is_unavailable() {
            self.set(Status::Down, Some(e));
        }
    }

    fn set(&self, status: Status, cause: Option<&CacheError>) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_millis().max(1) as u64);
        self.0.learned_at_ms.store(now, Ordering::Relaxed);
        // Changes are logged once, not every check.
        match (self.0.status.swap(status as u8, Ordering::Relaxed), status) {
            (2, Status::Up) => tracing::info!("summary cache reachable again"),
            (0 | 1, Status::Down) => {
                let error = cause.map(ToString::to_string).unwrap_or_default();
                tracing::warn!(%error, "summary cache down: summaries are computed uncached until it answers");
            }
            _ => {}
        }
    }

    /// Pings `cache` now and every `check.every` (none when off); abort to stop.
    pub fn spawn_checker(&self, cache: Cache, check: HealthCheck) -> JoinHandle<()> {
        let health = self.clone();
        tokio::spawn(async move {
            if matches!(cache, Cache::Off) {
                return;
            }
            let mut tick = tokio::time::interval(check.every.max(Duration::from_millis(10)));
            tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                health.observe(&bounded(check.timeout, cache.ping()).await);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_that_reach_the_database_or_not_set_the_state() {
        let h = CacheHealth::default();
        assert_eq!((h.status(), h.learned_at()), (Status::Unknown, None));
        h.observe(&Err::<(), _>(CacheError::Unavailable("refused".into())));
        assert_eq!(h.status(), Status::Down);
        assert!(h.learned_at().is_some());
        h.observe(&Ok(()));
        assert_eq!(h.status(), Status::Up);
        // The database answered: still up.
        h.observe(&Err::<(), _>(CacheError::Query("syntax".into())));
        assert_eq!(h.status(), Status::Up);
        assert_eq!(h.clone().status(), Status::Up, "clones share the state");
    }

    #[tokio::test]
    async fn the_checker_of_a_sqlite_cache_finds_it_up() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("c.db").display());
        let cache = Cache::connect(&url, Default::default()).await.unwrap();
        let h = CacheHealth::default();
        let check = HealthCheck {
            every: Duration::from_secs(3600),
            timeout: Duration::from_secs(60),
        };
        let task = h.spawn_checker(cache, check);
        // Bounded generously; the first ping runs at once.
        for _ in 0..600 {
            if h.status() != Status::Unknown {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(h.status(), Status::Up);
        task.abort();
    }
}
