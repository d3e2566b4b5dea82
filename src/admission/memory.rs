//! What a request costs in memory, for the budget: a body of many small JSON
//! objects costs ~20 times its bytes once parsed. A request is admitted from
//! its declared length only if its worst case is free, else 503 before its
//! body is read. `deploy/deployment.yaml`'s memory limit comes from
//! [`limit_for`]; factors measured by `examples/peak_heap.rs`.

use std::sync::atomic::{AtomicBool, Ordering};

/// Memory per body byte of a parsed and compressed request, at worst: the
/// worst shape measured 15.6 bytes of heap (`examples/peak_heap.rs`) and
/// 18 to 20 of RSS (`bench/hostile_memory.py`); 24 leaves a margin.
pub const MODEL_BYTES_PER_BODY_BYTE: u64 = 24;

/// What any request holds besides its body (task, headers, buffers).
pub const REQUEST_BASE_BYTES: u64 = 64 * 1024;

/// A ticket that once held this much calls [`give_back`] when it ends.
pub const GIVE_BACK_AFTER_BYTES: u64 = 16 * 1024 * 1024;

/// The RSS of an idle replica, rounded up from 80 MiB measured.
pub const IDLE_RSS_BYTES: u64 = 96 * 1024 * 1024;

/// The memory limit a replica needs: idle, the budget, and a quarter more
/// for what reservations do not count (fragmentation, buffers, memos).
pub fn limit_for(budget: u64) -> u64 {
    IDLE_RSS_BYTES + budget + budget / 4
}

/// The worst a request holds while its body is parsed and compressed.
pub fn model_bytes(body: u64) -> u64 {
    REQUEST_BASE_BYTES.saturating_add(body.saturating_mul(MODEL_BYTES_PER_BODY_BYTE))
}

/// The worst a request holds while it only holds its body.
pub fn body_bytes(body: u64) -> u64 {
    REQUEST_BASE_BYTES.saturating_add(body)
}

/// Returns a large request's freed heap to the system (glibc keeps all but
/// each arena's top: 1.4 GB left after a burst, 80 MB idle); at most one
/// `malloc_trim(0)` a second, on the blocking pool (it locks each arena).
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

/// A trim covers the requests that end in the second after the one that asked.
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
