//! Claims that hold exactly as long as the work they cover: a short lease,
//! renewed while the work runs ([`ClaimGuard::hold`]), so a crashed holder
//! loses it within one lease. Waiters are bounded by their request's timeout.

use std::convert::Infallible;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;

use tokio::time::{Instant, MissedTickBehavior};

use super::{Cache, CacheError, CachedSummary, Claim};

/// Shortest renewal and poll periods, so a zero from configuration cannot spin.
const MIN_RENEW_EVERY: Duration = Duration::from_millis(10);
const MIN_POLL: Duration = Duration::from_millis(1);

impl Cache {
    /// Takes the claim on `key` for `options.claim_lease`: None when another
    /// holder's claim is live (Off: always Some).
    pub async fn claim_lease(&self, key: &str) -> Result<Option<ClaimGuard>, CacheError> {
        let lease = self.options().map_or(Duration::ZERO, |o| o.claim_lease);
        Ok(match self.claim(key, lease).await? {
            Claim::Claimed => Some(ClaimGuard {
                cache: self.clone(),
                key: key.to_owned(),
                lease,
                // With no cache there is nothing to give up.
                armed: !matches!(self, Cache::Off),
            }),
            Claim::Busy => None,
        })
    }

    /// Waits while another holder's claim on `key` is live: the entry once
    /// stored, None when the claim ends without one (claim and compute yourself).
    pub async fn wait_for(
        &self,
        key: &str,
        poll: Duration,
    ) -> Result<Option<CachedSummary>, CacheError> {
        if matches!(self, Cache::Off) {
            return Ok(None);
        }
        let poll = poll.max(MIN_POLL);
        loop {
            if let Some(hit) = self.get(key).await? {
                return Ok(Some(hit));
            }
            if !self.claim_active(key).await? {
                // `put` stores the entry before it drops the claim: look once
                // more so a put landing between the two reads is not missed.
                return self.get(key).await;
            }
            tokio::time::sleep(poll).await;
        }
    }
}

/// This caller's claim on a key: run the work under [`hold`](Self::hold), then
/// `put` or `release`; dropped without either, it gives the claim up.
#[derive(Debug)]
#[must_use = "dropping the guard gives the claim up at once"]
pub struct ClaimGuard {
    cache: Cache,
    key: String,
    lease: Duration,
    /// Whether dropping the guard must still give the claim up.
    armed: bool,
}

impl ClaimGuard {
    /// Runs `work` while renewing the claim beside it in the same task; a
    /// failed renewal is logged and the work goes on.
    pub async fn hold<F: std::future::Future>(&self, work: F) -> F::Output {
        if matches!(self.cache, Cache::Off) {
            return work.await;
        }
        let work = std::pin::pin!(work);
        tokio::select! {
            biased;
            out = work => out,
            never = self.keep_renewing() => match never {},
        }
    }

    /// Every third of the lease, so two renewals may fail before it runs out;
    /// stops once the claim is lost.
    async fn keep_renewing(&self) -> Infallible {
        let every = (self.lease / 3).max(MIN_RENEW_EVERY);
        let mut tick = tokio::time::interval_at(Instant::now() + every, every);
        // After a stall, renew once, not once per missed tick.
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match self.cache.renew(&self.key, self.lease).await {
                Ok(true) => tracing::trace!(key = %self.key, "summary claim renewed"),
                Ok(false) => {
                    tracing::warn!(
                        key = %self.key,
                        "summary claim lost (its lease ran out and another replica took it); \
                         the work goes on, and the first result stored wins"
                    );
                    return std::future::pending().await;
                }
                Err(e) => tracing::warn!(
                    key = %self.key,
                    error = %e,
                    "summary claim renewal failed; the work goes on and renewal is retried"
                ),
            }
        }
    }

    /// Stores `entry` (which ends the claim) and disarms the guard; a failed
    /// put leaves it armed, so dropping it releases in the background.
    pub async fn put(mut self, entry: &CachedSummary) -> Result<CachedSummary, CacheError> {
        let stored = self.cache.put(entry).await?;
        self.armed = entry.key != self.key;
        Ok(stored)
    }

    /// Gives the claim up now (a failure is logged; the lease then ends it).
    pub async fn release(mut self) {
        release(&self.cache, &self.key).await;
        self.armed = false;
    }
}

async fn release(cache: &Cache, key: &str) {
    if let Err(e) = cache.release(key).await {
        tracing::warn!(%key, error = %e, "summary claim release failed; it ends with its lease");
    }
}

/// The releases of claims dropped unfinished, still running: a process
/// that stops waits for them ([`settle`]), so it leaves no claim to run out
/// its lease (another replica, or this one restarted, would wait for it).
static RELEASING: LazyLock<Mutex<JoinSet<()>>> = LazyLock::new(Mutex::default);

/// Waits, at most `wait`, for the releases of claims dropped unfinished.
pub async fn settle(wait: Duration) {
    let mut releasing = std::mem::take(&mut *RELEASING.lock().unwrap_or_else(|p| p.into_inner()));
    let all = async { while releasing.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(wait, all).await;
}

impl Drop for ClaimGuard {
    /// Still armed (cancelled, timed out, or `put` failed): released on the
    /// current runtime; without one, the claim ends with its lease.
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (cache, key) = (self.cache.clone(), std::mem::take(&mut self.key));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                tracing::debug!(%key, "summary claim dropped unfinished; releasing it");
                let mut releasing = RELEASING.lock().unwrap_or_else(|p| p.into_inner());
                // Finished releases leave their results behind until reaped.
                while releasing.try_join_next().is_some() {}
                releasing.spawn_on(async move { release(&cache, &key).await }, &runtime);
            }
            Err(_) => tracing::warn!(
                %key,
                "summary claim dropped outside a runtime; it ends with its lease"
            ),
        }
    }
}
