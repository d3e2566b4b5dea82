//! What a request costs in memory, for the budget (`admission`).
//!
//! A count of requests does not bound memory: a body of many small JSON
//! objects costs ~20 times its bytes once parsed. So a request is admitted,
//! from its declared `Content-Length` (a chunked body counts as one of the
//! body limit), only if the worst its body can cost is free ([`model_bytes`]
//! where the body is parsed, [`body_bytes`] where it is only held, as the
//! proxy holds a body it forwards); otherwise it is refused at once (503
//! `overloaded`) before its body is read. It reserves its body while the
//! body arrives and grows to the worst case once it is in. A replica's worst
//! case is then the idle process plus the budget, from which
//! `deploy/deployment.yaml`'s memory limit is derived ([`limit_for`];
//! `tests/suite/deploy.rs` checks it).
//!
//! The factors are measured: `examples/peak_heap.rs` (heap per body byte of
//! the worst shape) and `bench/hostile_memory.py` (RSS under 16 of them).

use std::sync::atomic::{AtomicBool, Ordering};

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

/// A ticket that once held this much gives its freed memory back to
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

/// Returns the heap freed by a large request to the system. glibc gives
/// back only the top of each arena, so a burst of large requests otherwise
/// leaves the process at its peak RSS for good (measured: 1.4 GB after 16
/// worst-shape requests, against 80 MB idle). `malloc_trim(0)` releases every
/// arena's free pages; it runs on the blocking pool a second after it is
/// asked for, at most one at a time (it locks each arena while it walks it).
/// `MALLOC_ARENA_MAX=2` was measured too: the same peak, more left after.
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
