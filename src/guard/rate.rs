//! The per-caller rate limit: one token bucket per API key (or client
//! address), in memory, per replica; full buckets are dropped, so memory is
//! bounded by [`MAX_BUCKETS`]. Hand-written rather than `governor`: it is
//! this file, and answers exactly what the `RateLimit-*` headers need.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Most buckets kept (about 64 bytes each: some 6 MB at most).
pub const MAX_BUCKETS: usize = 100_000;

/// Whose bucket a request takes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// An API key (the first 8 bytes of its digest).
    Key(u64),
    /// A client address without keys, by its [`client_block`].
    Ip(IpAddr),
    /// No key and no address known (a router driven in-process).
    Unknown,
}

impl Bucket {
    pub fn ip(ip: IpAddr) -> Self {
        Bucket::Ip(client_block(ip))
    }
}

/// The addresses one client usually holds, as one: an IPv6 address by its
/// /64, an IPv4-mapped one as its IPv4 address.
pub fn client_block(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !0u128 << 64).into()),
        },
    }
}

/// The answer for one request, with what the `RateLimit-*` headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    /// `RateLimit-Limit`: the burst.
    pub limit: u32,
    /// `RateLimit-Remaining`: whole tokens left after this request.
    pub remaining: u32,
    /// `RateLimit-Reset`: seconds until the bucket is full again.
    pub reset_secs: u64,
    /// `Retry-After` of a refused request: seconds until one token.
    pub retry_after_secs: u64,
}

#[derive(Debug, Clone, Copy)]
struct State {
    tokens: f64,
    at: Instant,
}

pub struct RateLimiter {
    per_sec: f64,
    burst: f64,
    max_buckets: usize,
    buckets: Mutex<HashMap<Bucket, State>>,
}

impl RateLimiter {
    /// A limiter of `per_sec` requests a second with bursts of `burst`;
    /// `None` (no limit) when `per_sec` is not positive.
    pub fn new(per_sec: f64, burst: u32) -> Option<Self> {
        (per_sec.is_finite() && per_sec > 0.0).then(|| Self {
            per_sec,
            burst: f64::from(burst.max(1)),
            max_buckets: MAX_BUCKETS,
            buckets: Mutex::default(),
        })
    }

    pub fn check(&self, bucket: Bucket) -> Verdict {
        self.check_at(bucket, Instant::now())
    }

    /// Takes a token from `bucket` at `now`, if it has one.
    pub fn check_at(&self, bucket: Bucket, now: Instant) -> Verdict {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !buckets.contains_key(&bucket) && buckets.len() >= self.max_buckets {
            self.evict(&mut buckets, now);
        }
        let state = buckets.entry(bucket).or_insert(State {
            tokens: self.burst,
            at: now,
        });
        let tokens = self.level(state, now);
        let allowed = tokens >= 1.0;
        state.tokens = if allowed { tokens - 1.0 } else { tokens };
        state.at = now;
        let secs = |missing: f64| (missing.max(0.0) / self.per_sec).ceil() as u64;
        Verdict {
            allowed,
            limit: self.burst as u32,
            remaining: state.tokens.floor() as u32,
            reset_secs: secs(self.burst - state.tokens),
            retry_after_secs: if allowed {
                0
            } else {
                secs(1.0 - tokens).max(1)
            },
        }
    }

    fn level(&self, s: &State, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(s.at).as_secs_f64();
        (s.tokens + elapsed * self.per_sec).min(self.burst)
    }

    /// Drops full buckets; if still too many, the least recently seen half
    /// (they get a full bucket back: more lenient, never unbounded).
    fn evict(&self, buckets: &mut HashMap<Bucket, State>, now: Instant) {
        buckets.retain(|_, s| self.level(s, now) < self.burst);
        if buckets.len() >= self.max_buckets {
            let mut seen: Vec<Instant> = buckets.values().map(|s| s.at).collect();
            let half = seen.len() / 2;
            let (_, &mut cutoff, _) = seen.select_nth_unstable(half);
            buckets.retain(|_, s| s.at > cutoff);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const K: Bucket = Bucket::Key(7);

    impl RateLimiter {
        /// [`RateLimiter::new`] keeping at most `max_buckets` buckets.
        fn bounded(per_sec: f64, burst: u32, max_buckets: usize) -> Option<Self> {
            let r = RateLimiter::new(per_sec, burst)?;
            Some(RateLimiter { max_buckets, ..r })
        }

        /// Buckets held.
        fn len(&self) -> usize {
            self.buckets.lock().map_or(0, |b| b.len())
        }

        /// How long a drained bucket takes to refill.
        fn refill_time(&self) -> Duration {
            Duration::from_secs_f64(self.burst / self.per_sec)
        }
    }

    #[test]
    fn a_burst_then_one_token_per_interval() {
        let r = RateLimiter::new(2.0, 3).unwrap();
        let t0 = Instant::now();
        let v: Vec<Verdict> = (0..4).map(|_| r.check_at(K, t0)).collect();
        assert_eq!(
            v.iter().map(|v| v.allowed).collect::<Vec<_>>(),
            [true, true, true, false]
        );
        assert_eq!(v[0].remaining, 2);
        assert_eq!(v[2].remaining, 0);
        assert_eq!((v[3].limit, v[3].retry_after_secs), (3, 1));
        // 3 tokens missing at 2 a second: full in 2 seconds (rounded up).
        assert_eq!(v[3].reset_secs, 2);
        // Half a second later one token is back, and taken.
        let later = r.check_at(K, t0 + Duration::from_millis(500));
        assert!(later.allowed);
        assert!(!r.check_at(K, t0 + Duration::from_millis(500)).allowed);
        // Another caller has its own bucket.
        assert!(r.check_at(Bucket::Key(8), t0).allowed);
    }

    #[test]
    fn retry_after_counts_the_wait_for_one_token() {
        let r = RateLimiter::new(0.1, 1).unwrap();
        let t0 = Instant::now();
        assert!(r.check_at(K, t0).allowed);
        let refused = r.check_at(K, t0 + Duration::from_secs(4));
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after_secs, 6);
        assert_eq!(refused.remaining, 0);
    }

    #[test]
    fn off_when_the_rate_is_not_positive() {
        assert!(RateLimiter::new(0.0, 10).is_none());
        assert!(RateLimiter::new(-1.0, 10).is_none());
        assert!(RateLimiter::new(f64::NAN, 10).is_none());
    }

    #[test]
    fn memory_is_bounded_and_idle_buckets_go_first() {
        let r = RateLimiter::bounded(1.0, 2, 100).unwrap();
        let t0 = Instant::now();
        // A busy caller, drained.
        r.check_at(K, t0);
        r.check_at(K, t0);
        for i in 0..99 {
            r.check_at(Bucket::Key(1000 + i), t0);
        }
        assert_eq!(r.len(), 100);
        // Much later the others have refilled; the busy one is drained again.
        let t1 = t0 + r.refill_time() * 10;
        r.check_at(K, t1);
        r.check_at(K, t1);
        r.check_at(Bucket::Key(1), t1);
        assert_eq!(r.len(), 2, "the full buckets were dropped");
        assert!(!r.check_at(K, t1).allowed, "the drained bucket was kept");
        // A thousand callers at the same moment never hold more than the bound.
        for i in 0..1000 {
            r.check_at(Bucket::Key(5000 + i), t1);
            assert!(r.len() <= 100);
        }
    }

    #[test]
    fn ipv6_callers_share_their_64_block() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Bucket::ip(a), Bucket::ip(b));
        assert_ne!(Bucket::ip(a), Bucket::ip(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(Bucket::ip(mapped), Bucket::Ip("10.0.0.1".parse().unwrap()));
    }
}
