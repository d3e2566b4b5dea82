//! Retries with exponential backoff and jitter, inside a total time budget,
//! of what may succeed next time ([`UpstreamError::is_retryable`]).

use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use super::UpstreamError;

#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Most retries after the first attempt.
    pub max_retries: u32,
    /// Total time for all attempts and waits.
    pub budget: Duration,
    /// First backoff; doubles each retry.
    pub base: Duration,
    /// Longest single wait.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: Self::DEFAULT_MAX_RETRIES,
            budget: Self::DEFAULT_BUDGET,
            base: Duration::from_millis(250),
            cap: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    // Also the defaults of `--upstream-max-retries` and `--upstream-retry-budget`.
    pub const DEFAULT_MAX_RETRIES: u32 = 4;
    pub const DEFAULT_BUDGET: Duration = Duration::from_secs(90);

    /// The wait before retry number `attempt` (1-based): the server's
    /// `Retry-After` when it gave one, else exponential with ±50% jitter.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(self.cap);
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        // ±50%: std's per-call hasher keys are random enough for jitter.
        let jitter = 0.5 + (RandomState::new().hash_one(()) % 1000) as f64 / 1000.0;
        exp.mul_f64(jitter).min(self.cap)
    }

    /// Runs `attempt` until it succeeds or may not retry; the result and the attempts.
    pub async fn run<T, F, Fut>(&self, mut attempt: F) -> (Result<T, UpstreamError>, u32)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, UpstreamError>>,
    {
        let deadline = Instant::now() + self.budget;
        let mut tries = 0;
        loop {
            tries += 1;
            let left = deadline.saturating_duration_since(Instant::now());
            let result = match tokio::time::timeout(left, attempt()).await {
                Ok(r) => r,
                Err(_) => Err(UpstreamError::Timeout),
            };
            let err = match result {
                Ok(v) => return (Ok(v), tries),
                Err(e) => e,
            };
            if !err.is_retryable() || tries > self.max_retries {
                return (Err(err), tries);
            }
            let asked = match &err {
                UpstreamError::Status { retry_after, .. } => *retry_after,
                _ => None,
            };
            let wait = self.delay(tries, asked);
            if Instant::now() + wait >= deadline {
                return (Err(err), tries);
            }
            tracing::warn!(attempt = tries, wait_ms = wait.as_millis() as u64, error = %err, "upstream call failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_honours_retry_after() {
        let p = RetryPolicy::default();
        for attempt in 1..6 {
            let d = p.delay(attempt, None);
            let nominal = p.base * (1 << (attempt - 1));
            assert!(
                d >= nominal / 2 && d <= (nominal * 3 / 2).min(p.cap),
                "{attempt}: {d:?}"
            );
        }
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(p.delay(1, Some(Duration::from_secs(300))), p.cap);
    }
}
