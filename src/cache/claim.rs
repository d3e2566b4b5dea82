//! Claims that hold exactly as long as the work they cover.
//!
//! A summary may take one upstream call or ten, so no lease picked up front
//! fits: a claim is taken for a short lease and renewed by its holder while
//! the work runs ([`ClaimGuard::hold`]); a crashed holder loses it within one
//! lease. Waiters ([`Cache::wait_for`]) have no deadline of their own: the
//! caller's request timeout bounds them, and a cancelled request drops its
//! guard, which gives the claim up at once.

use std::convert::Infallible;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};

use super::{Cache, CacheError, CachedSummary, Claim};

/// Shortest renewal period, so a zero lease from configuration cannot spin.
const MIN_RENEW_EVERY: Duration = Duration::from_millis(10);

/// Shortest poll period of [`Cache::wait_for`], for the same reason.
const MIN_POLL: Duration = Duration::from_millis(1);

impl Cache {
    /// Takes the claim on `key` for `options.claim_lease`: Some(guard) when
    /// this caller holds it, None when another holder's claim is live (Off:
    /// always Some). Dropped between the grant and the return, the claim ends
    /// with its lease.
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

    /// Waits while another holder's live claim on `key` exists, polling every
    /// `poll`: Some(entry) as soon as it is stored, None when the claim ends
    /// without an entry (the holder failed: claim and compute yourself).
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

/// This caller's claim on a key, from [`Cache::claim_lease`]. Run the work
/// under [`hold`](Self::hold), then [`put`](Self::put) the result or
/// [`release`](Self::release) the claim. Dropped without either (the request
/// was cancelled or timed out), it gives the claim up in the background.
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
    /// Runs `work` while renewing the claim every lease/3 (a renewal that
    /// fails or finds the claim lost is logged with tracing::warn and the work
    /// goes on). Renewal runs beside the work in the same task, so a slow
    /// database never delays the work.
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

    /// Renews the claim every third of the lease, so two renewals in a row
    /// may fail before it runs out. Stops once the claim is lost: it is then
    /// someone else's, and renewing can never succeed again.
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

    /// Stores `entry` (first write wins, ends the claim) and disarms the
    /// guard. When the put fails the guard stays armed, so dropping it gives
    /// the claim up in the background instead of making the caller wait on a
    /// database that just failed.
    pub async fn put(mut self, entry: &CachedSummary) -> Result<CachedSummary, CacheError> {
        let stored = self.cache.put(entry).await?;
        // `put` ended the claim on the entry's key; one on another key is
        // still ours to give up.
        self.armed = entry.key != self.key;
        Ok(stored)
    }

    /// Gives the claim up now and disarms the guard. A release that fails is
    /// logged; the claim then ends with its lease.
    pub async fn release(mut self) {
        if let Err(e) = self.cache.release(&self.key).await {
            tracing::warn!(key = %self.key, error = %e, "summary claim release failed; it ends with its lease");
        }
        self.armed = false;
    }
}

impl Drop for ClaimGuard {
    /// Still armed: the request was cancelled or timed out (or `put` failed).
    /// Releasing needs I/O, which `drop` cannot await, so it is spawned on the
    /// current runtime; without one, the claim ends with its lease.
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (cache, key) = (self.cache.clone(), std::mem::take(&mut self.key));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                tracing::debug!(%key, "summary claim dropped unfinished; releasing it");
                runtime.spawn(async move {
                    if let Err(e) = cache.release(&key).await {
                        tracing::warn!(%key, error = %e, "summary claim release failed; it ends with its lease");
                    }
                });
            }
            Err(_) => tracing::warn!(
                %key,
                "summary claim dropped outside a runtime; it ends with its lease"
            ),
        }
    }
}
