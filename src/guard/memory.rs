//! The memory budget: a request is admitted only if the memory it may come
//! to hold fits in what the budget has free; otherwise it is refused at
//! once (503 `overloaded`, `Retry-After`), before its body is read.
//!
//! A count of requests does not bound memory: a request's cost grows with
//! its body, and a body of many small JSON objects costs ~20 times its
//! bytes once parsed. So each request is admitted, from its declared
//! `Content-Length`, only if the worst its body can cost is free
//! ([`model_bytes`] where the body is parsed, [`body_bytes`] where it is
//! only held, as the proxy holds a body it forwards unchanged); it
//! reserves its body while the body arrives and grows to the worst case
//! once it is in (a trickled upload holds what it sent, not 24 times it).
//! A body without a length (chunked) counts as one of the body limit. The worst case of a replica is
//! then the idle process plus the budget, whatever arrives: that is how
//! `deploy/deployment.yaml`'s memory limit is derived (see the README's
//! "Memory sizing"; `tests/suite/deploy.rs` checks the arithmetic).
//!
//! The factors are measured, not guessed: `examples/peak_heap.rs` (heap per
//! body byte of the worst shape: one message of 100,000 small text parts)
//! and `bench/hostile_memory.py` (the process's RSS under 16 of them).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Memory per body byte of a request whose body is parsed into a thread and
/// compressed, at worst. The worst shape (a message of ~100,000 tiny text
/// parts, within every limit) measured 15.6 bytes of heap per body byte at
/// its peak (`examples/peak_heap.rs`: 6.3 for the `Value` tree, 2.7 more for
/// the thread model, the rest while compressing and answering), and 18 to
/// 20 of RSS per request (`bench/hostile_memory.py`: the allocator's own
/// overhead per small allocation comes on top of the heap). 24 leaves a
/// margin over both. An ordinary agent thread costs a third of it.
pub const MODEL_BYTES_PER_BODY_BYTE: u64 = 24;

/// What any admitted request may hold besides its body: its task, headers,
/// buffers, a small answer.
pub const REQUEST_BASE_BYTES: u64 = 64 * 1024;

/// A reservation that once held this much gives its freed memory back to
/// the system when it ends (see [`give_back`]).
pub const GIVE_BACK_AFTER_BYTES: u64 = 16 * 1024 * 1024;

/// The RSS of an idle replica (encoders loaded, nothing at work), rounded
/// up: `bench/hostile_memory.py` measured 80 MiB.
pub const IDLE_RSS_BYTES: u64 = 96 * 1024 * 1024;

/// The memory limit a replica needs with a budget of `budget` bytes: the
/// idle process, the budget, and a quarter of it for what reservations do
/// not count (the allocator's fragmentation between requests, idle
/// connections' buffers, the count memos).
pub fn limit_for(budget: u64) -> u64 {
    IDLE_RSS_BYTES + budget + budget / 4
}

/// Reservations count in KiB: a semaphore takes at most `u32` permits at once.
const UNIT: u64 = 1024;

/// The worst a request holds while its body of `body` bytes is parsed and
/// compressed (the API's thread routes, the proxy while it compresses).
pub fn model_bytes(body: u64) -> u64 {
    REQUEST_BASE_BYTES.saturating_add(body.saturating_mul(MODEL_BYTES_PER_BODY_BYTE))
}

/// The worst a request holds while it only holds its body of `body` bytes
/// (read into one buffer of its declared length).
pub fn body_bytes(body: u64) -> u64 {
    REQUEST_BASE_BYTES.saturating_add(body)
}

/// The budget, shared by every request of the process.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    /// None: no budget (`CONDENSE_MEMORY_BUDGET_BYTES=0`).
    units: Option<Arc<Semaphore>>,
    total: u32,
}

impl MemoryBudget {
    /// A budget of `bytes` (rounded down to KiB); `0` lifts it.
    pub fn new(bytes: u64) -> Self {
        let total = u32::try_from(bytes / UNIT).unwrap_or(u32::MAX);
        Self {
            units: (total > 0).then(|| Arc::new(Semaphore::new(total as usize))),
            total,
        }
    }

    /// A reservation of `bytes`, or `None` when fewer are free. A request
    /// larger than the whole budget is admitted when the budget is all
    /// free (it runs alone) rather than never.
    pub fn try_reserve(&self, bytes: u64) -> Option<Held> {
        let permit = match &self.units {
            None => None,
            Some(s) => Some(
                s.clone()
                    .try_acquire_many_owned(self.units_of(bytes))
                    .ok()?,
            ),
        };
        Some(Held(Arc::new(Mutex::new(Reservation {
            permit,
            units: self.units.clone(),
            total: self.total,
            most: bytes,
        }))))
    }

    /// `bytes` could be reserved now (always without a budget; a request
    /// larger than the whole budget when all of it is free, as in
    /// [`MemoryBudget::try_reserve`]).
    pub fn has_free(&self, bytes: u64) -> bool {
        self.units
            .as_ref()
            .is_none_or(|s| s.available_permits() as u64 >= u64::from(self.units_of(bytes)))
    }

    /// Bytes reserved now (0 without a budget: nothing is counted).
    pub fn in_use(&self) -> u64 {
        self.units
            .as_ref()
            .map_or(0, |s| u64::from(self.total) - s.available_permits() as u64)
            * UNIT
    }

    /// The configured budget in bytes (0: none).
    pub fn total(&self) -> u64 {
        u64::from(self.total) * UNIT
    }

    fn units_of(&self, bytes: u64) -> u32 {
        units_of(bytes, self.total)
    }
}

/// `bytes` in whole units, at most the whole budget.
fn units_of(bytes: u64, total: u32) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT))
        .unwrap_or(u32::MAX)
        .min(total)
}

/// A request's reservation, shared between the gate that took it, the
/// handler that resizes it and the answer's body that ends it: the memory
/// is given back when the last of them lets go.
#[derive(Debug, Clone)]
pub struct Held(Arc<Mutex<Reservation>>);

#[derive(Debug)]
struct Reservation {
    permit: Option<OwnedSemaphorePermit>,
    units: Option<Arc<Semaphore>>,
    total: u32,
    /// The most it held, in bytes.
    most: u64,
}

impl Held {
    /// Grows the reservation to `bytes` if the budget has the difference
    /// free; false (and unchanged) otherwise.
    pub fn try_grow_to(&self, bytes: u64) -> bool {
        let mut r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let want = units_of(bytes, r.total);
        let units = r.units.clone();
        if let (Some(p), Some(units)) = (r.permit.as_mut(), units) {
            let have = p.num_permits() as u32;
            if want > have {
                let Ok(more) = units.try_acquire_many_owned(want - have) else {
                    return false;
                };
                p.merge(more);
            }
        }
        r.most = r.most.max(bytes);
        true
    }

    /// Lets go of all but `bytes` of the reservation.
    pub fn shrink_to(&self, bytes: u64) {
        let mut r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let total = r.total;
        if let Some(p) = r.permit.as_mut() {
            let keep = units_of(bytes, total) as usize;
            let extra = p.num_permits().saturating_sub(keep);
            drop(p.split(extra));
        }
    }

    /// The whole budget it is part of, in bytes (for the refusal's detail).
    pub fn budget(&self) -> u64 {
        let r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        u64::from(r.total) * UNIT
    }

    /// Bytes reserved now (0 without a budget).
    pub fn bytes(&self) -> u64 {
        let r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        r.permit
            .as_ref()
            .map_or(0, |p| p.num_permits() as u64 * UNIT)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.most >= GIVE_BACK_AFTER_BYTES {
            give_back();
        }
    }
}

/// Returns the heap freed by a large request to the system. glibc keeps
/// freed memory in its arenas (one per thread that allocated, up to 8 per
/// core) and gives back only the top of each: a burst of large requests
/// otherwise leaves the process at its peak RSS for good (measured: 1.4 GB
/// after 16 worst-shape requests, against 80 MB idle). `malloc_trim(0)`
/// walks every arena and releases their free pages; it runs on the blocking
/// pool a second after it is asked for, at most one at a time (a burst
/// ending asks for one, not sixteen; a steady stream of large requests for
/// one a second: a trim locks each arena while it walks it).
/// Capping the arenas instead (`MALLOC_ARENA_MAX=2`) was measured too: the
/// same peak, and more left resident after (1.6 GB), since the memory stays
/// in the arenas that remain.
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static SCHEDULED: AtomicBool = AtomicBool::new(false);
        if SCHEDULED.swap(true, Ordering::AcqRel) {
            return;
        }
        let trim = || {
            // Cleared first: memory freed while this trim runs asks for the next.
            SCHEDULED.store(false, Ordering::Release);
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe { libc::malloc_trim(0) };
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn(async move {
                tokio::time::sleep(TRIM_AFTER).await;
                let _ = tokio::task::spawn_blocking(trim).await;
            })),
            Err(_) => trim(),
        }
    }
}

/// How long a trim waits after the request that asked for it: the others
/// ending meanwhile are covered by the same trim, so there is at most one a
/// second, and always one after the last.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn refuses_what_is_not_free_and_admits_again_when_it_is() {
        let b = MemoryBudget::new(10 * MIB);
        let a = b.try_reserve(6 * MIB).unwrap();
        assert_eq!(b.in_use(), 6 * MIB);
        assert!(b.try_reserve(5 * MIB).is_none());
        let c = b.try_reserve(4 * MIB).unwrap();
        assert!(b.try_reserve(1).is_none(), "a byte is a whole unit");
        drop(a);
        assert!(b.try_reserve(5 * MIB).is_some());
        drop(c);
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn a_reservation_grows_only_into_free_memory_and_shrinks() {
        let b = MemoryBudget::new(10 * MIB);
        let held = b.try_reserve(2 * MIB).unwrap();
        let other = b.try_reserve(5 * MIB).unwrap();
        assert!(!held.try_grow_to(6 * MIB));
        assert_eq!(held.bytes(), 2 * MIB, "a failed growth changes nothing");
        assert!(held.try_grow_to(5 * MIB));
        assert_eq!(b.in_use(), 10 * MIB);
        held.shrink_to(MIB);
        assert_eq!(b.in_use(), 6 * MIB);
        // Held by several, given back when the last lets go.
        let again = held.clone();
        drop(held);
        assert_eq!(b.in_use(), 6 * MIB);
        drop(again);
        drop(other);
        assert_eq!(b.in_use(), 0);
    }

    #[test]
    fn a_request_larger_than_the_budget_runs_alone() {
        let b = MemoryBudget::new(4 * MIB);
        let big = b.try_reserve(100 * MIB).unwrap();
        assert_eq!(big.bytes(), 4 * MIB);
        assert!(b.try_reserve(1).is_none());
        drop(big);
        let small = b.try_reserve(1).unwrap();
        assert!(b.try_reserve(100 * MIB).is_none(), "not while another runs");
        drop(small);
    }

    #[test]
    fn no_budget_admits_everything() {
        let b = MemoryBudget::new(0);
        let held: Vec<_> = (0..100).map(|_| b.try_reserve(u64::MAX).unwrap()).collect();
        assert!(held[0].try_grow_to(u64::MAX));
        assert_eq!((b.in_use(), b.total(), held[0].bytes()), (0, 0, 0));
    }

    #[test]
    fn the_worst_case_is_a_function_of_the_body() {
        assert_eq!(model_bytes(0), REQUEST_BASE_BYTES);
        assert_eq!(
            model_bytes(MIB),
            REQUEST_BASE_BYTES + MODEL_BYTES_PER_BODY_BYTE * MIB
        );
        assert_eq!(body_bytes(MIB), REQUEST_BASE_BYTES + MIB);
        assert_eq!(model_bytes(u64::MAX), u64::MAX, "saturates");
    }
}
