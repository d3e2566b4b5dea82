//! The background pruner: the only place the table shrinks (an expired row is
//! a miss), keeping it within its TTL and row cap. Replicas take turns.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use super::Cache;

/// Shortest interval accepted, so a zero from configuration cannot spin.
const MIN_EVERY: Duration = Duration::from_millis(10);

/// Prunes `cache` now and every `every` (a failure is logged); abort the handle to stop it.
pub fn spawn_pruner(cache: Cache, every: Duration, ttl: Duration, max_rows: u64) -> JoinHandle<()> {
    tokio::spawn(async move {
        if matches!(cache, Cache::Off) {
            return;
        }
        let mut tick = tokio::time::interval(every.max(MIN_EVERY));
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match cache.prune(ttl, max_rows).await {
                Ok(0) => {}
                Ok(deleted) => {
                    tracing::info!(backend = cache.backend(), deleted, "summary cache pruned")
                }
                Err(e) => {
                    tracing::warn!(backend = cache.backend(), error = %e, "summary cache prune failed")
                }
            }
        }
    })
}
