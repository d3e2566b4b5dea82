//! The background pruner: keeps the cache within its TTL and row cap.
//!
//! Reads never delete (a `get` of an expired row is simply a miss), so the
//! table only shrinks here. Every replica may run a pruner: on PostgreSQL
//! they take turns through an advisory lock, and a round that finds the
//! database down just logs and waits for the next tick.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use super::Cache;

/// Shortest interval accepted, so a zero from configuration cannot spin.
const MIN_EVERY: Duration = Duration::from_millis(10);

/// Prunes `cache` now and then every `every`, deleting rows older than `ttl`
/// and the least recently hit rows beyond `max_rows`. Never panics; failures
/// are logged (`warn`) and retried on the next tick. Abort the handle to stop
/// it. With [`Cache::Off`] the task ends at once.
pub fn spawn_pruner(cache: Cache, every: Duration, ttl: Duration, max_rows: u64) -> JoinHandle<()> {
    tokio::spawn(async move {
        if matches!(cache, Cache::Off) {
            return;
        }
        let mut tick = tokio::time::interval(every.max(MIN_EVERY));
        // After a long outage, one round is enough; do not replay the missed ones.
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match cache.prune(ttl, max_rows).await {
                Ok(0) => tracing::trace!(
                    backend = cache.backend(),
                    "summary cache prune: nothing to delete"
                ),
                Ok(deleted) => {
                    tracing::info!(backend = cache.backend(), deleted, "summary cache pruned")
                }
                Err(e) if e.is_unavailable() => {
                    tracing::warn!(backend = cache.backend(), error = %e, "summary cache prune skipped: database unavailable")
                }
                Err(e) => {
                    tracing::warn!(backend = cache.backend(), error = %e, "summary cache prune failed")
                }
            }
        }
    })
}
