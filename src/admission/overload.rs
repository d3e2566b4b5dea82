//! The global concurrency limit: at most N requests at work at once, and
//! the next one is refused at once (503 `overloaded`, `Retry-After`) rather
//! than queued. A queue without bound turns a burst into memory and into
//! answers that come after their clients gave up; a refusal tells a client
//! (or its load balancer) to go elsewhere or come back.
//!
//! A semaphore's `try_acquire`, not tower's `ConcurrencyLimit`, which waits
//! for a permit instead of refusing.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The limit, shared by every request of the process.
#[derive(Debug, Clone)]
pub struct Overload {
    /// None: no limit (`CONDENSE_MAX_CONCURRENCY=0`).
    permits: Option<Arc<Semaphore>>,
    max: usize,
}

/// A place among the requests at work, held until dropped.
#[derive(Debug)]
pub struct Permit(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl Overload {
    /// At most `max` at once; `0` lifts the limit.
    pub fn new(max: usize) -> Self {
        Self {
            permits: (max > 0).then(|| Arc::new(Semaphore::new(max))),
            max,
        }
    }

    /// A permit, or `None` when `max` requests are already at work.
    pub fn try_enter(&self) -> Option<Permit> {
        match &self.permits {
            None => Some(Permit(None)),
            Some(s) => s.clone().try_acquire_owned().ok().map(|p| Permit(Some(p))),
        }
    }

    /// Requests at work now (0 without a limit: they are not counted).
    pub fn in_use(&self) -> usize {
        self.permits
            .as_ref()
            .map_or(0, |s| self.max - s.available_permits())
    }

    /// The configured limit (0: none).
    pub fn max(&self) -> usize {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::Overload;

    #[test]
    fn refuses_past_the_limit_and_admits_again_when_one_ends() {
        let o = Overload::new(2);
        let a = o.try_enter().unwrap();
        let _b = o.try_enter().unwrap();
        assert_eq!(o.in_use(), 2);
        assert!(o.try_enter().is_none());
        drop(a);
        assert!(o.try_enter().is_some());
        let unlimited = Overload::new(0);
        let held: Vec<_> = (0..1000).map(|_| unlimited.try_enter().unwrap()).collect();
        assert_eq!(held.len(), 1000);
    }
}
